//! `stepward schema`: the JSON Schema of the workflow format.

use crate::Outcome;
use crate::commands::print_json;

pub fn run() -> anyhow::Result<Outcome> {
    print_json(&spec::workflow_json_schema())?;
    Ok(Outcome::Done)
}
