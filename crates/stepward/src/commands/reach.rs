//! `stepward reach FILE`: the panel "What each step can reach" (G27), as a table or JSON.

use storage::models::ModelProviderStore;

use crate::Outcome;
use crate::app::AccountReader;
use crate::cli::ReachArgs;
use crate::commands::{parse_workflow_file, print_json};
use crate::config::{Backend, Config};
use crate::definitions::{AgentLookup, load_agent};

pub fn run(args: &ReachArgs, config: &Config) -> anyhow::Result<Outcome> {
    let maxima = &config.limit_maxima;
    let Some(workflow) = parse_workflow_file(&args.file, maxima, "there is no reach to show")?
    else {
        return Ok(Outcome::Invalid);
    };
    // The local account (its model providers and workspace), when the data directory
    // already has a database: `reach` never creates one.
    // Read without the vault: `reach` needs no root key (newcomer 3, friction 1).
    let app = AccountReader::open_existing(config)?;
    let workspace = app.as_ref().map(AccountReader::workspace_agents);
    let agents = AgentLookup::new(&args.file, workspace, args.agents.as_deref());
    // Each agent (and its colleagues) from where `check` reads it: the workspace `run` uses
    // when it has the agent, else the folder beside the file.
    let mut rows = spec::reach(&workflow, &|agent| {
        let found = agents.find(agent)?;
        load_agent(&found.dir, agent, maxima).ok()
    });
    let providers = match &app {
        Some(app) => app.store.model_providers(&app.account)?,
        None => Vec::new(),
    };
    platform::views::with_model_hosts(&mut rows, &providers);
    let isolation =
        (config.backend == Backend::Unisolated).then_some(platform::views::NOT_ISOLATED);
    if args.json {
        print_json(&api_types::ReachReport {
            workflow: workflow.name().to_string(),
            caption: spec::REACH_CAPTION.to_string(),
            rows: rows
                .into_iter()
                .map(platform::views::reach_row_json)
                .collect(),
            isolation: isolation.map(str::to_owned),
        })?;
    } else {
        if let Some(isolation) = isolation {
            outln!("{isolation}\n");
        }
        out!("{}", spec::render_reach_table(&rows));
    }
    Ok(Outcome::Done)
}
