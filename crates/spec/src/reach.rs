//! The reach report (G27): what each step is permitted to reach, one row for every step.
//!
//! Every step runs code (its own, or its agent's scripts and tools), so every step gets a row,
//! including those that reach nothing. An agent step whose agent file is not available says
//! "unknown" with the reason: an absent answer must never read as "reaches nothing".

use crate::model::{Agent, Network, StepBody, Workflow};

/// The caption above the table, word for word.
pub const REACH_CAPTION: &str =
    "This is what each step is permitted to reach, not a review of what its code does.";

/// One step's reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReachRow {
    /// The step id, without the gate mark.
    pub step: String,
    /// Whether a person decides before the step runs.
    pub gate: bool,
    pub kind: ReachKind,
    pub internet: ReachInternet,
    /// Connection aliases granted to the step (code steps; agent steps have none).
    pub connections: Vec<String>,
    /// Secret names the step's scripts receive (agent steps: those of the agent and of every
    /// colleague it can consult, each once).
    pub secrets: Vec<String>,
    /// Agent steps: each secret with the agent that holds it, as `(secret, agent)`.
    pub secret_holders: Vec<(String, String)>,
    /// Agent steps: every colleague the agent can consult, at any depth.
    pub colleagues: Vec<String>,
    /// Agent steps: the models that receive the step's data, one per agent that names one.
    pub models: Vec<ModelUse>,
    /// The limits the step (or its agent file, for each script and tool call) declared, as
    /// `key: value`; empty when it runs under the defaults.
    pub limits: Vec<(String, u64)>,
}

/// A model an agent of the step talks to (G27): the provider (by name, and its host once the
/// caller knows the account's providers) receives the step's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelUse {
    pub agent: String,
    /// The provider the agent file names; `None`: the account's default.
    pub provider: Option<String>,
    pub model: String,
    /// The provider's host, filled by [`fill_model_hosts`].
    pub host: Option<String>,
}

/// What runs in the step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReachKind {
    /// The step's own code.
    Code,
    /// The named agent's tools and scripts.
    Agent { agent: String },
}

/// Whether the step may reach the public internet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReachInternet {
    Yes,
    No,
    /// Not known, and so not to be read as "no": the reason says why.
    Unknown {
        reason: String,
    },
}

/// One row per step, in order. `agent` looks up an agent by name (`agents/<name>/AGENT.md`)
/// and returns `None` when the file is missing or does not parse.
pub fn reach(workflow: &Workflow, agent: &dyn Fn(&str) -> Option<Agent>) -> Vec<ReachRow> {
    workflow
        .steps()
        .iter()
        .map(|step| match step.body() {
            StepBody::Code { .. } => ReachRow {
                step: step.id().to_string(),
                gate: step.is_gate(),
                kind: ReachKind::Code,
                internet: internet_of(step.network()),
                connections: step.connections().to_vec(),
                secrets: Vec::new(),
                secret_holders: Vec::new(),
                colleagues: Vec::new(),
                models: Vec::new(),
                limits: declared(step.limits()),
            },
            StepBody::Agent { agent: name, .. } => {
                let kind = ReachKind::Agent {
                    agent: name.clone(),
                };
                match agent(name) {
                    Some(found) => agent_row(step, kind, &found, agent),
                    None => ReachRow {
                        step: step.id().to_string(),
                        gate: step.is_gate(),
                        kind,
                        internet: ReachInternet::Unknown {
                            reason: format!(
                                "the agent file agents/{name}/AGENT.md is missing or invalid"
                            ),
                        },
                        connections: Vec::new(),
                        secrets: Vec::new(),
                        secret_holders: Vec::new(),
                        colleagues: Vec::new(),
                        models: Vec::new(),
                        limits: Vec::new(),
                    },
                }
            }
        })
        .collect()
}

/// An agent step's row: the union over the agent and every colleague it can consult (G27).
fn agent_row(
    step: &crate::Step,
    kind: ReachKind,
    found: &Agent,
    agent: &dyn Fn(&str) -> Option<Agent>,
) -> ReachRow {
    let closure = crate::colleague_closure(found, &|name| {
        agent(name).ok_or_else(|| format!("agents/{name}/AGENT.md is missing or invalid"))
    });
    let internet = match closure.problems.first() {
        Some(problem) => ReachInternet::Unknown {
            reason: problem.to_string(),
        },
        None => internet_of(closure.network()),
    };
    let secret_holders = closure.secrets();
    let mut secrets: Vec<String> = Vec::new();
    for (secret, _) in &secret_holders {
        if !secrets.contains(secret) {
            secrets.push(secret.clone());
        }
    }
    let models = closure
        .agents
        .iter()
        .filter_map(|member| {
            let reference = crate::ModelRef::parse(member.model()?);
            Some(ModelUse {
                agent: member.name().to_owned(),
                provider: reference.provider.map(str::to_owned),
                model: reference.model.to_owned(),
                host: None,
            })
        })
        .collect();
    ReachRow {
        step: step.id().to_string(),
        gate: step.is_gate(),
        kind,
        internet,
        connections: Vec::new(),
        secrets,
        secret_holders,
        colleagues: closure
            .agents
            .iter()
            .skip(1)
            .map(|colleague| colleague.name().to_owned())
            .collect(),
        models,
        limits: declared(found.limits()),
    }
}

/// A provider's name and host, by the name an agent file gives (`None`: the default).
pub type ProviderLookup<'a> = &'a dyn Fn(Option<&str>) -> Option<(String, String)>;

/// Fills each model's host (and the default provider's name for a bare model id) from the
/// account's providers: `provider` answers `(name, host)` for a name, or for `None` the
/// default. A provider the account does not have keeps no host.
pub fn fill_model_hosts(rows: &mut [ReachRow], provider: ProviderLookup<'_>) {
    for model in rows.iter_mut().flat_map(|row| row.models.iter_mut()) {
        if let Some((name, host)) = provider(model.provider.as_deref()) {
            model.provider = Some(name);
            model.host = Some(host);
        }
    }
}

/// A model as the panel writes it: `provider/model at host`.
pub fn model_cell(models: &[ModelUse]) -> String {
    if models.is_empty() {
        return "none".to_string();
    }
    models
        .iter()
        .map(|model| {
            let provider = model.provider.as_deref().unwrap_or("the default provider");
            let host = model
                .host
                .as_deref()
                .map(|host| format!(" at {host}"))
                .unwrap_or_default();
            format!("{provider}/{}{host} ({})", model.model, model.agent)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Secrets as the panel writes them: each with the agent that holds it, for an agent step.
pub fn secrets_cell(row: &ReachRow) -> String {
    if row.secret_holders.is_empty() {
        return list_or_none(&row.secrets);
    }
    row.secret_holders
        .iter()
        .map(|(secret, agent)| format!("{secret} ({agent})"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn declared(limits: &crate::StepLimits) -> Vec<(String, u64)> {
    limits
        .declared()
        .into_iter()
        .map(|(key, value)| (key.to_string(), value))
        .collect()
}

fn internet_of(network: Network) -> ReachInternet {
    match network {
        Network::None => ReachInternet::No,
        Network::PublicEgress => ReachInternet::Yes,
    }
}

/// The rows as a plain-text table under the caption (caption first, word for word). A LIMITS
/// column appears when some step declares limits (non-default ones only).
pub fn render_reach_table(rows: &[ReachRow]) -> String {
    let with_limits = rows.iter().any(|row| !row.limits.is_empty());
    let with_agents = rows
        .iter()
        .any(|row| matches!(row.kind, ReachKind::Agent { .. }));
    let mut header = ["STEP", "GATE", "RUNS", "INTERNET", "CONNECTIONS", "SECRETS"]
        .map(String::from)
        .to_vec();
    if with_agents {
        header.push(String::from("COLLEAGUES"));
        header.push(String::from("MODEL"));
    }
    if with_limits {
        header.push(String::from("LIMITS"));
    }
    let mut table = vec![header];
    for row in rows {
        let unknown_secrets = matches!(row.internet, ReachInternet::Unknown { .. });
        let mut cells = vec![
            row.step.clone(),
            if row.gate { "yes" } else { "no" }.to_string(),
            match &row.kind {
                ReachKind::Code => "its own code".to_string(),
                ReachKind::Agent { agent } => format!("agent {agent}"),
            },
            match &row.internet {
                ReachInternet::Yes => "yes".to_string(),
                ReachInternet::No => "no".to_string(),
                ReachInternet::Unknown { reason } => format!("unknown ({reason})"),
            },
            list_or_none(&row.connections),
            if unknown_secrets {
                "unknown".to_string()
            } else {
                secrets_cell(row)
            },
        ];
        if with_agents {
            cells.push(list_or_none(&row.colleagues));
            cells.push(model_cell(&row.models));
        }
        if with_limits {
            cells.push(limits_cell(&row.limits));
        }
        table.push(cells);
    }
    let mut widths = vec![0usize; table[0].len()];
    for cells in &table {
        for (width, cell) in widths.iter_mut().zip(cells) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut rendered = format!("{REACH_CAPTION}\n\n");
    for cells in &table {
        let line: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}", width = *width))
            .collect();
        rendered.push_str(line.join("  ").trim_end());
        rendered.push('\n');
    }
    rendered
}

/// `memory_mib: 512, timeout_s: 60`, or `default`.
pub fn limits_cell(limits: &[(String, u64)]) -> String {
    if limits.is_empty() {
        return "default".to_string();
    }
    limits
        .iter()
        .map(|(key, value)| format!("{key}: {value}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A list of names as the reach panel writes it: joined with commas, or `none`.
pub fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}
