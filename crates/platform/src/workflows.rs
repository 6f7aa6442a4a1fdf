//! Where every door finds an account's workflows and agents: [`WorkspaceWorkflows`], the
//! accounts' workspaces (the server's pages and `stepward workflows list` read the same
//! names), and [`WorkflowDirectories`], a plain directory layout
//! (`<root>/<account>/workflows/<name>.yaml`, `<root>/<account>/agents/<name>/AGENT.md`).
//!
//! Names reach file paths, so only plain names are looked up (letters, digits, `_`, `-`; at
//! most 64 characters): `..`, slashes and anything else are simply not found.

use std::path::{Path, PathBuf};
use storage::AccountId;

/// A workflow's file name and text, as the parser will see them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowText {
    pub file_name: String,
    pub text: String,
}

/// Reading an account's workflows failed.
#[derive(Debug, thiserror::Error)]
#[error("reading {what} of account {account} failed")]
pub struct WorkflowSourceError {
    pub account: AccountId,
    pub what: String,
    #[source]
    pub source: std::io::Error,
}

/// An account's workflows and agents, by name. Also an authoring lint: the checks that read
/// a workflow's code with the machine's Python are [`AuthoringLints`].
pub trait WorkflowSource: Send + Sync {
    /// The names of the account's workflows, sorted.
    fn workflow_names(&self, account: &AccountId) -> Result<Vec<String>, WorkflowSourceError>;
    /// One workflow's file name and text; `None` if there is no such workflow.
    fn workflow(
        &self,
        account: &AccountId,
        name: &str,
    ) -> Result<Option<WorkflowText>, WorkflowSourceError>;
    /// An agent by name for the reach of agent steps; `None` when missing or invalid (the
    /// reach then says "unknown", never "no").
    fn agent(&self, account: &AccountId, name: &str) -> Option<spec::Agent>;
}

/// Whether `name` is a plain name that may be joined to a path.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// Workflows in plain directories, one per account under `root`.
#[derive(Debug, Clone)]
pub struct WorkflowDirectories {
    root: PathBuf,
}

impl WorkflowDirectories {
    /// The accounts' directories are `<root>/<account id>`.
    pub fn new(root: PathBuf) -> WorkflowDirectories {
        WorkflowDirectories { root }
    }

    fn account_dir(&self, account: &AccountId) -> Option<PathBuf> {
        (!account.is_server_chain()).then(|| self.root.join(account.as_str()))
    }
}

fn read_optional(path: &Path) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

impl WorkflowSource for WorkflowDirectories {
    fn workflow_names(&self, account: &AccountId) -> Result<Vec<String>, WorkflowSourceError> {
        let Some(dir) = self.account_dir(account) else {
            return Ok(Vec::new());
        };
        let failed = |source| WorkflowSourceError {
            account: account.clone(),
            what: "the workflows folder".to_owned(),
            source,
        };
        let entries = match std::fs::read_dir(dir.join("workflows")) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(failed(error)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(failed)?;
            let file_name = entry.file_name();
            let Some(name) = file_name
                .to_str()
                .and_then(|file_name| file_name.strip_suffix(".yaml"))
            else {
                continue;
            };
            if is_plain_name(name) {
                names.push(name.to_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    fn workflow(
        &self,
        account: &AccountId,
        name: &str,
    ) -> Result<Option<WorkflowText>, WorkflowSourceError> {
        let Some(dir) = self.account_dir(account) else {
            return Ok(None);
        };
        if !is_plain_name(name) {
            return Ok(None);
        }
        let file_name = format!("{name}.yaml");
        let text = read_optional(&dir.join("workflows").join(&file_name)).map_err(|source| {
            WorkflowSourceError {
                account: account.clone(),
                what: format!("workflow {name}"),
                source,
            }
        })?;
        Ok(text.map(|text| WorkflowText { file_name, text }))
    }

    fn agent(&self, account: &AccountId, name: &str) -> Option<spec::Agent> {
        let dir = self.account_dir(account)?;
        if !is_plain_name(name) {
            return None;
        }
        let path = dir.join("agents").join(name).join("AGENT.md");
        let text = read_optional(&path).ok()??;
        spec::parse_agent(&format!("agents/{name}/AGENT.md"), &text).ok()
    }
}

/// The accounts' workflows and agents in their workspaces:
/// `workflows/<name>.yaml` and `agents/<name>/AGENT.md` of each account's working folder, read
/// beneath it without following a link.
#[derive(Debug, Clone)]
pub struct WorkspaceWorkflows {
    workspaces: workspace::Workspaces,
}

/// The largest workflow or agent file read.
const MAX_DEFINITION_BYTES: u64 = 1024 * 1024;

impl WorkspaceWorkflows {
    pub fn new(workspaces: workspace::Workspaces) -> WorkspaceWorkflows {
        WorkspaceWorkflows { workspaces }
    }

    fn read(&self, account: &AccountId, path: &str) -> Result<Option<String>, WorkflowSourceError> {
        let failed = |source| WorkflowSourceError {
            account: account.clone(),
            what: path.to_owned(),
            source,
        };
        let Ok(workspace) = self.workspaces.for_account(account) else {
            return Ok(None);
        };
        let Ok(relative) = workspace::RelPath::parse(path) else {
            return Ok(None);
        };
        let contents = workspace
            .read_file(&relative, MAX_DEFINITION_BYTES + 1)
            .map_err(|error| failed(std::io::Error::other(error.to_string())))?;
        let Some(contents) = contents else {
            return Ok(None);
        };
        if contents.total_bytes > MAX_DEFINITION_BYTES {
            return Err(failed(std::io::Error::other(
                "larger than 1 MiB; a definition is a few kilobytes",
            )));
        }
        String::from_utf8(contents.bytes)
            .map(Some)
            .map_err(|_| failed(std::io::Error::other("not UTF-8 text")))
    }
}

impl WorkflowSource for WorkspaceWorkflows {
    fn workflow_names(&self, account: &AccountId) -> Result<Vec<String>, WorkflowSourceError> {
        let Ok(workspace) = self.workspaces.for_account(account) else {
            return Ok(Vec::new());
        };
        let failed = |detail: String| WorkflowSourceError {
            account: account.clone(),
            what: "the workflows folder".to_owned(),
            source: std::io::Error::other(detail),
        };
        let tree = workspace
            .step_files()
            .reader()
            .map_err(|error| failed(error.to_string()))?;
        let Ok(folder) = workspace::RelPath::parse("workflows") else {
            return Ok(Vec::new());
        };
        if tree.kind(&folder).ok() != Some("folder") {
            return Ok(Vec::new());
        }
        let (entries, _) = tree
            .walk(Some(&folder), workspace::MAX_LISTED_ENTRIES)
            .map_err(|error| failed(error.to_string()))?;
        let mut names: Vec<String> = entries
            .iter()
            .filter(|entry| entry.kind == "file")
            .filter_map(|entry| {
                let components: Vec<&str> = entry.path.components().collect();
                match components.as_slice() {
                    ["workflows", file] => file.strip_suffix(".yaml").map(str::to_owned),
                    _ => None,
                }
            })
            .filter(|name| is_plain_name(name))
            .collect();
        names.sort();
        Ok(names)
    }

    fn workflow(
        &self,
        account: &AccountId,
        name: &str,
    ) -> Result<Option<WorkflowText>, WorkflowSourceError> {
        if !is_plain_name(name) {
            return Ok(None);
        }
        let file_name = format!("workflows/{name}.yaml");
        Ok(self
            .read(account, &file_name)?
            .map(|text| WorkflowText { file_name, text }))
    }

    fn agent(&self, account: &AccountId, name: &str) -> Option<spec::Agent> {
        if !is_plain_name(name) {
            return None;
        }
        let path = format!("agents/{name}/AGENT.md");
        let text = self.read(account, &path).ok()??;
        spec::parse_agent(&path, &text).ok()
    }
}

/// The authoring lints of a workflow's code steps (`stepward check`'s warnings), which read
/// the code with the machine's Python (`worker::python_check`); nothing is executed.
pub trait AuthoringLints: Send + Sync {
    /// The warnings of `workflow`; `None` when they cannot be run here.
    fn lint(&self, workflow: &spec::Workflow) -> Option<Vec<spec::Diagnostic>>;
}

#[cfg(test)]
mod tests {
    use super::is_plain_name;

    #[test]
    fn only_plain_names_reach_a_path() {
        for good in ["refund", "monthly_invoices", "a-b", "X9"] {
            assert!(is_plain_name(good), "{good}");
        }
        for bad in ["", "..", "../etc", "a/b", "a.yaml", "a b", &"x".repeat(65)] {
            assert!(!is_plain_name(bad), "{bad}");
        }
    }
}
