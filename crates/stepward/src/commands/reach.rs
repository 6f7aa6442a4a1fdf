//! `stepward reach FILE`: the panel "What each step can reach" (G27), as a table or JSON.

use crate::Outcome;
use crate::cli::ReachArgs;
use crate::commands::{parse_workflow_file, print_json};
use crate::definitions::{agents_dir, load_agent};

pub fn run(args: &ReachArgs, maxima: &spec::LimitMaxima) -> anyhow::Result<Outcome> {
    let Some(workflow) = parse_workflow_file(&args.file, maxima, "there is no reach to show")?
    else {
        return Ok(Outcome::Invalid);
    };
    let agents = agents_dir(&args.file, args.agents.as_deref());
    let rows = spec::reach(&workflow, &|agent| load_agent(&agents, agent, maxima).ok());
    if args.json {
        print_json(&api_types::ReachReport {
            workflow: workflow.name().to_string(),
            caption: spec::REACH_CAPTION.to_string(),
            rows: rows.iter().map(row_json).collect(),
        })?;
    } else {
        print!("{}", spec::render_reach_table(&rows));
    }
    Ok(Outcome::Done)
}

fn row_json(row: &spec::ReachRow) -> api_types::ReachRow {
    let (kind, agent) = match &row.kind {
        spec::ReachKind::Code => ("code", None),
        spec::ReachKind::Agent { agent } => ("agent", Some(agent.clone())),
    };
    let (internet, unknown_reason) = match &row.internet {
        spec::ReachInternet::Yes => (api_types::Internet::Yes, None),
        spec::ReachInternet::No => (api_types::Internet::No, None),
        spec::ReachInternet::Unknown { reason } => {
            (api_types::Internet::Unknown, Some(reason.clone()))
        }
    };
    api_types::ReachRow {
        step: row.step.clone(),
        gate: row.gate,
        kind: kind.to_string(),
        agent,
        internet,
        unknown_reason,
        connections: row.connections.clone(),
        secrets: row.secrets.clone(),
        limits: row
            .limits
            .iter()
            .map(|(key, value)| format!("{key}: {value}"))
            .collect(),
    }
}
