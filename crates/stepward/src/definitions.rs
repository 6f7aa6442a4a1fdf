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

/// Where agent folders are for a workflow: the given folder, or `agents/` beside the folder
/// that holds the workflow (a workspace keeps `workflows/` and `agents/` side by side).
pub fn agents_dir(workflow: &Path, explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_path_buf();
    }
    let folder = workflow.parent().unwrap_or(Path::new("."));
    let workspace = folder.parent().unwrap_or(Path::new("."));
    workspace.join("agents")
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
