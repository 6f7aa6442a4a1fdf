//! `stepward schema`: the JSON Schema of the workflow format, every number with the maximum
//! this command's settings hold it to (`--max-step-*`).

use crate::Outcome;
use crate::commands::print_json;
use crate::config::Config;

pub fn run(config: &Config) -> anyhow::Result<Outcome> {
    print_json(&spec::workflow_json_schema_within(&config.limit_maxima))?;
    Ok(Outcome::Done)
}
