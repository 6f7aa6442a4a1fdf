//! What no writer a step controls may change (G22, issue 16 §1): the file tools of an agent and
//! the copy-back of every step, code or agent. Beyond the protected entries every writer is
//! refused ([`crate::is_protected`]), a step may not write `workflows/`, the read-only
//! `library/`, any agent's `AGENT.md`, or any script an agent file names. These change only
//! through a person or a key (console, API, CLI), each write parsed first (G1).
//!
//! Matched by pattern on the path, so a file that does not exist yet is protected as well (the
//! lesson of CVE-2026-25725), and on the folded form too, as [`crate::is_protected`] does.

use std::collections::BTreeSet;
use std::fmt;

use crate::path::RelPath;
use crate::protected::{ProtectedKind, fold, is_protected};

/// Why a step may not write a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepWriteRefusal {
    Protected(ProtectedKind),
    Workflows,
    Library,
    AgentFile,
    AgentScript,
}

impl fmt::Display for StepWriteRefusal {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepWriteRefusal::Protected(kind) => write!(formatter, "it is {kind}"),
            StepWriteRefusal::Workflows => formatter.write_str(
                "it is under `workflows/`, which only a person or a key changes (console, API, CLI)",
            ),
            StepWriteRefusal::Library => {
                formatter.write_str("it is under `library/`, the account library, which is read-only")
            }
            StepWriteRefusal::AgentFile => formatter.write_str(
                "it is an agent file (`AGENT.md`), which only a person or a key changes",
            ),
            StepWriteRefusal::AgentScript => formatter.write_str(
                "it is a script an agent file names, which only a person or a key changes",
            ),
        }
    }
}

/// The rules, with the scripts every agent file of the workspace names (workspace paths).
#[derive(Debug, Clone, Default)]
pub struct StepWriterRules {
    scripts: BTreeSet<String>,
    /// Agent folders whose file does not parse: its scripts are not known, so all of the
    /// folder is protected (failing closed).
    folders: Vec<Vec<String>>,
}

fn folded(path: &RelPath) -> Vec<String> {
    path.components().map(fold).collect()
}

impl StepWriterRules {
    pub fn new(scripts: impl IntoIterator<Item = RelPath>) -> StepWriterRules {
        StepWriterRules {
            scripts: scripts
                .into_iter()
                .flat_map(|path| [path.as_str().to_owned(), folded(&path).join("/")])
                .collect(),
            folders: Vec::new(),
        }
    }

    /// Also protects everything under `folder` (an agent folder whose file does not parse).
    pub fn with_folder(mut self, folder: &RelPath) -> StepWriterRules {
        self.folders.push(folded(folder));
        self
    }

    /// Why a step may not write the workspace path `path`, or `None` when it may.
    pub fn refusal(&self, path: &RelPath) -> Option<StepWriteRefusal> {
        if let Some(kind) = is_protected(path) {
            return Some(StepWriteRefusal::Protected(kind));
        }
        let exact: Vec<&str> = path.components().collect();
        let folded = folded(path);
        for components in [
            exact.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>(),
            folded.clone(),
        ] {
            match components.first().map(String::as_str) {
                Some("workflows") => return Some(StepWriteRefusal::Workflows),
                Some("library") => return Some(StepWriteRefusal::Library),
                _ => {}
            }
            if components.len() == 3
                && components[0] == "agents"
                && (components[2] == "AGENT.md" || components[2] == "agent.md")
            {
                return Some(StepWriteRefusal::AgentFile);
            }
        }
        if self.scripts.contains(path.as_str()) || self.scripts.contains(&folded.join("/")) {
            return Some(StepWriteRefusal::AgentScript);
        }
        if self
            .folders
            .iter()
            .any(|folder| folded.len() > folder.len() && folded[..folder.len()] == folder[..])
        {
            return Some(StepWriteRefusal::AgentScript);
        }
        None
    }
}

/// An agent's view of the workspace (G22): one tree whose root is the agent's folder, with the
/// workspace's `shared/` and the account `library/` inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentView {
    agent: String,
}

impl AgentView {
    /// The view of the agent `agent` (a plain agent name: checked by the spec).
    pub fn new(agent: &str) -> AgentView {
        AgentView {
            agent: agent.to_owned(),
        }
    }

    /// The workspace path a path of the view names.
    pub fn to_workspace(&self, view_path: &RelPath) -> Result<RelPath, crate::Refusal> {
        match view_path.components().next() {
            Some("shared") | Some("library") => Ok(view_path.clone()),
            _ => RelPath::parse(&format!("agents/{}/{}", self.agent, view_path.as_str())),
        }
    }

    /// The agent's own folder in the workspace.
    pub fn agent_folder(&self) -> String {
        format!("agents/{}", self.agent)
    }
}
