//! The agents a step can reach through `Consult` (G21, G27): the step's agent and every
//! colleague it can consult at any depth. An agent holds whatever any colleague it can consult
//! holds, so the reach row, the network of the step's attempt and `apply-before-gate` are all
//! read from this closure. A cycle, a chain deeper than [`MAX_CONSULT_DEPTH`] and a colleague
//! whose file is missing or invalid are problems, reported by `stepward check` and refused at
//! run time.

use crate::model::{Agent, Network};

/// How many consults deep a chain may go: the step's agent, then at most three colleagues.
pub const MAX_CONSULT_DEPTH: usize = 3;

/// What is wrong with an agent's colleagues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColleagueProblem {
    /// `by` names `name`, whose file is missing or invalid (`reason`).
    Unavailable {
        by: String,
        name: String,
        reason: String,
    },
    /// The chain comes back to an agent already on it: `path` ends with the repeated one.
    Cycle { path: Vec<String> },
    /// The chain is deeper than [`MAX_CONSULT_DEPTH`] consults.
    TooDeep { path: Vec<String> },
}

impl std::fmt::Display for ColleagueProblem {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ColleagueProblem::Unavailable { by, name, reason } => write!(
                formatter,
                "the agent `{by}` names the colleague `{name}`, which cannot be used: {reason}"
            ),
            ColleagueProblem::Cycle { path } => write!(
                formatter,
                "the colleagues form a cycle: {}",
                path.join(" → ")
            ),
            ColleagueProblem::TooDeep { path } => write!(
                formatter,
                "the colleagues go deeper than {MAX_CONSULT_DEPTH} consults: {}",
                path.join(" → ")
            ),
        }
    }
}

/// The step's agent and every colleague it can consult, each once, in the order met
/// (breadth first), with what is wrong along the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closure {
    pub agents: Vec<Agent>,
    pub problems: Vec<ColleagueProblem>,
}

impl Closure {
    /// Whether any agent of the closure has `public_egress`.
    pub fn network(&self) -> Network {
        if self
            .agents
            .iter()
            .any(|agent| agent.network() == Network::PublicEgress)
        {
            Network::PublicEgress
        } else {
            Network::None
        }
    }

    /// Every applying tool of the closure, as `agent: tool` (G21).
    pub fn applying_tools(&self) -> Vec<String> {
        self.agents
            .iter()
            .flat_map(|agent| {
                agent
                    .applying_tools()
                    .into_iter()
                    .map(move |tool| format!("{}: {tool}", agent.name()))
            })
            .collect()
    }

    /// Every secret of the closure with the agent that holds it, in order, as `(secret, agent)`.
    pub fn secrets(&self) -> Vec<(String, String)> {
        self.agents
            .iter()
            .flat_map(|agent| {
                agent
                    .secrets()
                    .iter()
                    .map(move |secret| (secret.clone(), agent.name().to_owned()))
            })
            .collect()
    }
}

/// The closure of `root` under `colleagues:`; `lookup` reads an agent by name (`Err`: why it
/// cannot be used).
pub fn colleague_closure(root: &Agent, lookup: &dyn Fn(&str) -> Result<Agent, String>) -> Closure {
    let mut closure = Closure {
        agents: vec![root.clone()],
        problems: Vec::new(),
    };
    let mut cycles_seen = std::collections::BTreeSet::new();
    walk(
        root,
        &mut vec![root.name().to_owned()],
        lookup,
        &mut closure,
        &mut cycles_seen,
    );
    closure
}

fn walk(
    agent: &Agent,
    path: &mut Vec<String>,
    lookup: &dyn Fn(&str) -> Result<Agent, String>,
    closure: &mut Closure,
    cycles_seen: &mut std::collections::BTreeSet<Vec<String>>,
) {
    for name in agent.colleagues() {
        let mut next = path.clone();
        next.push(name.clone());
        if path.contains(name) {
            if cycles_seen.insert(next.clone()) {
                closure
                    .problems
                    .push(ColleagueProblem::Cycle { path: next });
            }
            continue;
        }
        if path.len() > MAX_CONSULT_DEPTH {
            closure
                .problems
                .push(ColleagueProblem::TooDeep { path: next });
            continue;
        }
        let colleague = match lookup(name) {
            Ok(colleague) => colleague,
            Err(reason) => {
                let problem = ColleagueProblem::Unavailable {
                    by: agent.name().to_owned(),
                    name: name.clone(),
                    reason,
                };
                if !closure.problems.contains(&problem) {
                    closure.problems.push(problem);
                }
                continue;
            }
        };
        if !closure.agents.iter().any(|known| known.name() == name) {
            closure.agents.push(colleague.clone());
        }
        path.push(name.clone());
        walk(&colleague, path, lookup, closure, cycles_seen);
        path.pop();
    }
}
