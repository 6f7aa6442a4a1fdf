//! `stepward reach FILE`: the panel "What each step can reach" (G27), as a table or JSON.

use storage::models::ModelProviderStore;

use crate::Outcome;
use crate::app::App;
use crate::cli::ReachArgs;
use crate::commands::{parse_workflow_file, print_json};
use crate::config::Config;
use crate::definitions::{agents_dir, load_agent};

pub fn run(args: &ReachArgs, config: &Config) -> anyhow::Result<Outcome> {
    let maxima = &config.limit_maxima;
    let Some(workflow) = parse_workflow_file(&args.file, maxima, "there is no reach to show")?
    else {
        return Ok(Outcome::Invalid);
    };
    let agents = agents_dir(&args.file, args.agents.as_deref());
    let mut rows = spec::reach(&workflow, &|agent| load_agent(&agents, agent, maxima).ok());
    server::reach::with_model_hosts(&mut rows, &providers(config)?);
    if args.json {
        print_json(&api_types::ReachReport {
            workflow: workflow.name().to_string(),
            caption: spec::REACH_CAPTION.to_string(),
            rows: rows
                .into_iter()
                .map(server::reach::reach_row_json)
                .collect(),
        })?;
    } else {
        print!("{}", spec::render_reach_table(&rows));
    }
    Ok(Outcome::Done)
}

/// The local account's model providers, when the data directory already has a database:
/// `reach` never creates one.
fn providers(config: &Config) -> anyhow::Result<Vec<storage::models::ModelProvider>> {
    if !config.database_path().exists() {
        return Ok(Vec::new());
    }
    let app = App::open(config.clone())?;
    Ok(app.store.model_providers(&app.account)?)
}
