//! Reading definition files from disk for the parser, which itself does no IO.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// Larger files are refused before they reach the parser, which has its own, smaller limit
/// and reports it as a diagnostic; this one only keeps a huge file out of memory.
const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;

/// Which parser a file goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefinitionKind {
    Workflow,
    Agent,
}

impl DefinitionKind {
    /// Agent files are Markdown (`AGENT.md`); everything else is read as a workflow.
    pub fn of(path: &Path) -> DefinitionKind {
        let is_markdown = path
            .extension()
            .is_some_and(|extension| extension.eq_ignore_ascii_case("md"));
        if is_markdown {
            DefinitionKind::Agent
        } else {
            DefinitionKind::Workflow
        }
    }
}

/// Reads a definition file as UTF-8 text, bounded in size.
pub fn read_text(path: &Path) -> anyhow::Result<String> {
    let file = fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_READ_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        bail!(
            "{} is larger than {} bytes; a definition file is a few kilobytes",
            path.display(),
            MAX_READ_BYTES
        );
    }
    String::from_utf8(bytes)
        .with_context(|| format!("{} is not UTF-8 text; save it as UTF-8", path.display()))
}

/// The name diagnostics use for a file: the path as the person typed it.
pub fn display_name(path: &Path) -> String {
    path.display().to_string()
}

/// Where the agents a workflow names are looked for. `stepward run` takes them from the
/// account's workspace (issue 16 §1), so `check` and `reach` do too when this data directory
/// has one; a file checked with no data directory here (meant for another server, or checked
/// in a repository) has its agents in `agents/` beside the folder that holds it, as in a
/// workspace.
pub struct AgentLookup {
    /// The local account's `agents/` folder, when the data directory has a database.
    pub workspace: Option<PathBuf>,
    /// `agents/` beside the workflow's folder, or the folder `--agents` names.
    pub beside: PathBuf,
    /// Whether `beside` is the folder `--agents` named.
    explicit: bool,
}

/// Where one agent was found, and what a person should know about it.
pub struct FoundAgent {
    /// The agents folder the agent (and its colleagues) are read from.
    pub dir: PathBuf,
    pub note: Option<AgentNote>,
}

/// Why the agent `check` read is not the one `run` here would take.
pub enum AgentNote {
    /// The workspace has no such agent; the file's copy beside it was read instead.
    NotInWorkspace { beside: PathBuf },
    /// Both have it, and the bytes differ: the workspace's copy was read, as `run` would.
    DiffersFromBeside { beside: PathBuf },
}

impl AgentLookup {
    /// For `workflow`: the workspace's agents (when given), and the folder beside the file
    /// (or `explicit`, which then is the only place looked).
    pub fn new(workflow: &Path, workspace: Option<PathBuf>, explicit: Option<&Path>) -> Self {
        match explicit {
            Some(dir) => AgentLookup {
                workspace: None,
                beside: dir.to_path_buf(),
                explicit: true,
            },
            None => {
                let folder = workflow.parent().unwrap_or(Path::new("."));
                let parent = folder.parent().unwrap_or(Path::new("."));
                AgentLookup {
                    workspace,
                    beside: parent.join("agents"),
                    explicit: false,
                }
            }
        }
    }

    /// Where `name` is read from, or `None` when neither place has it.
    pub fn find(&self, name: &str) -> Option<FoundAgent> {
        let file = |dir: &Path| dir.join(name).join("AGENT.md");
        let beside = file(&self.beside);
        let Some(workspace) = &self.workspace else {
            return beside.is_file().then(|| FoundAgent {
                dir: self.beside.clone(),
                note: None,
            });
        };
        let in_workspace = file(workspace);
        if in_workspace == beside {
            // The file lies in the workspace itself.
            return in_workspace.is_file().then(|| FoundAgent {
                dir: workspace.clone(),
                note: None,
            });
        }
        match (in_workspace.is_file(), beside.is_file()) {
            (true, true) => {
                let differs = fs::read(&in_workspace).ok() != fs::read(&beside).ok();
                Some(FoundAgent {
                    dir: workspace.clone(),
                    note: differs.then_some(AgentNote::DiffersFromBeside { beside }),
                })
            }
            (true, false) => Some(FoundAgent {
                dir: workspace.clone(),
                note: None,
            }),
            (false, true) => Some(FoundAgent {
                dir: self.beside.clone(),
                note: Some(AgentNote::NotInWorkspace { beside }),
            }),
            (false, false) => None,
        }
    }

    /// How to make an agent found in neither place: where `run` here would take it from.
    pub fn create_help(&self, name: &str) -> String {
        match &self.workspace {
            Some(_) => format!(
                "put it in the account's workspace with `stepward files put \
                 agents/{name}/AGENT.md --from FILE`, or name an agent that exists"
            ),
            None => format!(
                "create {} (and make it pass `stepward check`), or name an agent that exists",
                self.beside.join(name).join("AGENT.md").display()
            ),
        }
    }

    /// The places looked, for a message about an agent found in neither.
    pub fn places(&self) -> String {
        match &self.workspace {
            Some(workspace) => format!(
                "{} (the account's workspace, which `stepward run` here uses) and {} (beside the \
                 workflow's folder)",
                workspace.display(),
                self.beside.display()
            ),
            None if self.explicit => {
                format!("{} (the folder --agents names)", self.beside.display())
            }
            None => format!(
                "{} (`agents/` beside the workflow's folder, as in a workspace)",
                self.beside.display()
            ),
        }
    }
}

/// Reads and parses `<agents>/<name>/AGENT.md`; `Err` says why it is unavailable.
pub fn load_agent(
    agents: &Path,
    name: &str,
    maxima: &spec::LimitMaxima,
) -> Result<spec::Agent, String> {
    let path = agents.join(name).join("AGENT.md");
    let text = read_text(&path).map_err(|error| format!("{error:#}"))?;
    spec::parse_agent_within(&display_name(&path), &text, maxima).map_err(|diagnostics| {
        format!(
            "{} is invalid ({} problem(s)); run `stepward check {}`",
            path.display(),
            diagnostics.len(),
            path.display()
        )
    })
}
