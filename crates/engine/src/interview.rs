//! The interview's proposals (issue 17 §4): what the assistant proposes is a workflow and the
//! agent files and scripts it needs, checked here before anyone is shown it, and saved as one
//! version only when a person who may save workflows confirms it.
//!
//! - **Checked before shown** ([`Engine::check_draft`]): the workflow and every `AGENT.md` are
//!   parsed (G1), against the account's names; every path is `workflows/NAME.yaml` (the
//!   workflow itself) or a file under `agents/NAME/`, never a protected entry; no file holds a
//!   current value of the account (named by its line); every agent a step names and every
//!   script a custom tool names exists (proposed, or in the workspace). What passes carries its
//!   reach rows (G27), from the proposed agents and, for the others, the workspace's, and the
//!   hash of every workspace file the check read to make them ([`CheckedDraft::read`]).
//! - **Nothing is executed**: this module reads text and the workspace, nothing else.
//! - **Saved as one version** ([`Engine::save_draft`]): the workflow and its agent files in one
//!   revision, parsed again (G1), written only when every file is still as the interview first
//!   saw it ([`workspace::Workspace::commit_expecting`], under the workspace's lock), so a
//!   proposal never overwrites a version saved meanwhile; and only when every workspace file
//!   the check shown to the person read (an agent the workflow uses without proposing it, at
//!   any depth, and the scripts its tools name) is still as it was then, so the reach rows the
//!   person approved are the reach saved.

use std::cell::RefCell;

use std::collections::BTreeMap;
use storage::AccountId;

use spec::{StepBody, Workflow};
use workspace::{Author, Change, RelPath};

use crate::definitions::{
    DefinitionWriteError, WorkflowVersion, is_definition_name, workflow_path,
};
use crate::engine::Engine;

/// The most bytes of a workspace agent file the check reads; a longer one is not an agent.
const MAX_AGENT_FILE_BYTES: u64 = 1024 * 1024;

/// What one check read of the workspace: each agent parsed once, and every file's hash.
#[derive(Default)]
struct Reads {
    agents: BTreeMap<String, Option<spec::Agent>>,
    files: BTreeMap<RelPath, Option<String>>,
}

/// The most files one proposal may hold besides its workflow.
pub const MAX_DRAFT_FILES: usize = 16;
/// The most bytes of one proposed file (a workflow or agent file is a few kilobytes).
pub const MAX_DRAFT_FILE_BYTES: usize = 256 * 1024;

/// A proposal as the assistant made it: the workflow's text and the other files by path.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Draft {
    pub workflow: String,
    /// `(path, text)`: files under `agents/NAME/` (an `AGENT.md`, a script).
    pub files: Vec<(String, String)>,
}

/// A proposal that passed every check: what is shown, and what a confirmation saves.
#[derive(Debug, Clone)]
pub struct CheckedDraft {
    /// The workflow's name, from its `name:`; it is saved as `workflows/NAME.yaml`.
    pub name: String,
    pub workflow: Workflow,
    /// Every file of the proposal, the workflow first.
    pub files: Vec<(RelPath, String)>,
    /// One row for every step (G27).
    pub reach: Vec<spec::ReachRow>,
    /// Every workspace file the check read besides the ones the proposal writes, with its
    /// SHA-256 (hex) as read, `None` where there was no such file: the `AGENT.md` of each agent
    /// it uses without proposing it (directly or as a colleague, at any depth) and each script
    /// a custom tool of those agents names. The reach rows were made from these files; a
    /// confirmation saves only while each is still so ([`Engine::save_draft`]).
    pub read: Vec<(RelPath, Option<String>)>,
}

impl CheckedDraft {
    /// The workspace paths the proposal writes.
    pub fn paths(&self) -> Vec<RelPath> {
        self.files.iter().map(|(path, _)| path.clone()).collect()
    }
}

/// What the interview read before a confirmation: the hashes a save compares again.
#[derive(Debug, Clone, Copy)]
pub struct AsRead<'a> {
    /// Each path a proposal writes, with its hash when the interview first read it (`None`
    /// for no file); every path of the proposal must be here.
    pub written: &'a [(RelPath, Option<String>)],
    /// The [`CheckedDraft::read`] of the check the person was shown.
    pub shown: &'a [(RelPath, Option<String>)],
}

/// Why a confirmed proposal was not saved; nothing of it was written.
#[derive(Debug, thiserror::Error)]
pub enum DraftSaveError {
    /// It no longer passes the checks it passed when it was shown.
    #[error("the proposal no longer passes its checks: {}", .0.join("; "))]
    Invalid(Vec<String>),
    /// A workspace file the check shown to the person read (an agent the workflow uses, a
    /// script of one) changed since, so the reach rows shown may no longer be true.
    #[error(
        "{path} changed since you were shown the check: look again. The reach rows you saw were \
         made from it, so the proposal was not saved; send a message and the assistant shows \
         it again, checked against the workspace as it is now"
    )]
    ReachChanged { path: String },
    /// A file it writes changed since the interview first read it.
    #[error(
        "{path} was changed by someone else since the interview read it, so the proposal was \
         not saved; ask the assistant to start again from the current version"
    )]
    Conflict { path: String },
    #[error("the proposal was not saved")]
    Write(#[source] DefinitionWriteError),
}

fn at(path: &str, message: impl std::fmt::Display) -> String {
    format!("{path}: {message}")
}

/// The agent folder of a proposed path (`agents/NAME/...`), or why the assistant may not write
/// there.
fn agent_of_path(path: &RelPath) -> Result<String, String> {
    if let Some(kind) = workspace::is_protected(path) {
        return Err(at(
            path.as_str(),
            format!("this is {kind}, which no proposal may write"),
        ));
    }
    let components: Vec<&str> = path.components().collect();
    match components.as_slice() {
        ["agents", agent, _, ..] if is_definition_name(agent) => Ok((*agent).to_owned()),
        ["workflows", ..] => Err(at(
            path.as_str(),
            "a proposal holds one workflow, in `workflow`; it writes no other file under \
             `workflows/`",
        )),
        _ => Err(at(
            path.as_str(),
            "the assistant writes only `workflows/NAME.yaml` and files under `agents/NAME/` (NAME \
             of letters, digits, `-` and `_`); put the file in an agent's folder",
        )),
    }
}

impl Engine {
    /// The SHA-256 (hex) of each of `paths` in the account's working folder now, `None` where
    /// there is no such file: what an interview records when it first reads a file.
    pub fn current_hashes(
        &self,
        account: &AccountId,
        paths: &[RelPath],
    ) -> Result<Vec<(RelPath, Option<String>)>, DefinitionWriteError> {
        let workspace = self
            .options
            .workspaces
            .for_account(account)
            .map_err(DefinitionWriteError::Workspace)?;
        paths
            .iter()
            .map(|path| {
                let hash = workspace
                    .file_hash(path)
                    .map_err(DefinitionWriteError::Workspace)?;
                Ok((path.clone(), hash))
            })
            .collect()
    }

    /// An agent of the account's workspace, parsed, for a proposal that names it without
    /// proposing it; read once per check (`reads` keeps it), and its hash recorded from the
    /// very bytes parsed.
    fn workspace_agent(
        &self,
        account: &AccountId,
        name: &str,
        names: &spec::AccountNames,
        reads: &RefCell<Reads>,
    ) -> Option<spec::Agent> {
        if let Some(agent) = reads.borrow().agents.get(name) {
            return agent.clone();
        }
        let path = RelPath::parse(&format!("agents/{name}/AGENT.md")).ok()?;
        let workspace = self.options.workspaces.for_account(account).ok()?;
        let (hash, agent) = match workspace.read_file(&path, MAX_AGENT_FILE_BYTES) {
            Ok(Some(found)) if found.total_bytes > found.bytes.len() as u64 => {
                // Too long to be an agent file: not one, and its hash is the whole file's.
                (workspace.file_hash(&path).ok().flatten(), None)
            }
            Ok(Some(found)) => {
                let hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&found.bytes));
                let agent = String::from_utf8(found.bytes).ok().and_then(|text| {
                    spec::parse_agent_for_account(
                        path.as_str(),
                        &text,
                        &self.options.limit_maxima,
                        names,
                    )
                    .ok()
                });
                (Some(hash), agent)
            }
            Ok(None) => (None, None),
            // Unreadable: no agent, and no hash that a confirmation could ever match.
            Err(_) => (Some(String::new()), None),
        };
        let mut reads = reads.borrow_mut();
        reads.files.insert(path, hash);
        reads.agents.insert(name.to_owned(), agent.clone());
        agent
    }

    /// Whether the workspace has the script at `path`, its hash recorded in `reads`.
    fn workspace_script(&self, account: &AccountId, path: &str, reads: &RefCell<Reads>) -> bool {
        let Ok(path) = RelPath::parse(path) else {
            return false;
        };
        if let Some(hash) = reads.borrow().files.get(&path) {
            return hash.is_some();
        }
        let hash = match self.options.workspaces.for_account(account) {
            Ok(workspace) => workspace.file_hash(&path).unwrap_or(Some(String::new())),
            Err(_) => Some(String::new()),
        };
        let found = hash.is_some();
        reads.borrow_mut().files.insert(path, hash);
        found
    }

    /// Checks a proposal (see the module documentation); `Err` holds every problem found, each
    /// naming its file (and line and column where the parser gives them), for the assistant to
    /// fix and, after its last try, for the person.
    pub fn check_draft(
        &self,
        account: &AccountId,
        names: &spec::AccountNames,
        expected_name: Option<&str>,
        draft: &Draft,
    ) -> Result<CheckedDraft, Vec<String>> {
        let maxima = &self.options.limit_maxima;
        let redactor = self.scrub_sets.for_account(account).map_err(|_| {
            vec![
                "the account's values could not be read to check the proposal; nothing is shown"
                    .to_owned(),
            ]
        })?;
        let mut problems = Vec::new();
        if draft.files.len() > MAX_DRAFT_FILES {
            return Err(vec![format!(
                "the proposal holds {} files besides the workflow; at most {MAX_DRAFT_FILES}",
                draft.files.len()
            )]);
        }
        // The workflow's name decides its path, so it is read first.
        let provisional = expected_name.unwrap_or("proposal");
        let file_name = format!("workflows/{provisional}.yaml");
        let workflow =
            match spec::parse_workflow_for_account(&file_name, &draft.workflow, maxima, names) {
                Ok(workflow) => Some(workflow),
                Err(diagnostics) => {
                    problems.extend(diagnostics.iter().map(ToString::to_string));
                    None
                }
            };
        let mut files: Vec<(RelPath, String)> = Vec::new();
        let mut agents: BTreeMap<String, spec::Agent> = BTreeMap::new();
        if let Some(workflow) = &workflow {
            let name = workflow.name();
            match (workflow_path(name), expected_name) {
                (_, Some(expected)) if expected != name => problems.push(at(
                    &file_name,
                    format!(
                        "the workflow is named `{name}`, and this interview is about `{expected}`; \
                         keep `name: {expected}`"
                    ),
                )),
                (Some(path), _) => files.push((path, draft.workflow.clone())),
                (None, _) => problems.push(at(
                    &file_name,
                    format!(
                        "`{}` cannot name a workflow file: use letters, digits, `-` and `_`, at \
                         most 64",
                        name.chars().take(64).collect::<String>()
                    ),
                )),
            }
        }
        for (requested, text) in &draft.files {
            let shown: String = requested.chars().take(200).collect();
            let path = match RelPath::parse(requested) {
                Ok(path) => path,
                Err(refusal) => {
                    problems.push(at(&shown, refusal));
                    continue;
                }
            };
            let agent = match agent_of_path(&path) {
                Ok(agent) => agent,
                Err(problem) => {
                    problems.push(problem);
                    continue;
                }
            };
            if files.iter().any(|(seen, _)| seen == &path) {
                problems.push(at(path.as_str(), "named twice in the proposal"));
                continue;
            }
            if text.len() > MAX_DRAFT_FILE_BYTES {
                problems.push(at(
                    path.as_str(),
                    format!("larger than {MAX_DRAFT_FILE_BYTES} bytes"),
                ));
                continue;
            }
            let is_agent_file = path.components().nth(2) == Some("AGENT.md") && path.depth() == 3;
            if is_agent_file {
                match spec::parse_agent_for_account(path.as_str(), text, maxima, names) {
                    Ok(parsed) if parsed.name() != agent => problems.push(at(
                        path.as_str(),
                        format!(
                            "the agent is named `{}` and lives in agents/{agent}/; keep `name: \
                             {agent}`",
                            parsed.name()
                        ),
                    )),
                    Ok(parsed) => {
                        agents.insert(agent.clone(), parsed);
                    }
                    Err(diagnostics) => {
                        problems.extend(diagnostics.iter().map(ToString::to_string));
                    }
                }
            }
            files.push((path, text.clone()));
        }
        // No file may hold a value of the account; it is named by its line, never shown.
        for (path, text) in &files {
            if let Some(found) = redactor.find_secret(text.as_bytes()) {
                let before = text.get(..found.start).unwrap_or(text);
                problems.push(at(
                    &format!("{path}:{}", before.matches('\n').count() + 1),
                    "this line holds a current value of the account (a secret, a connection \
                     field or a model key); name a connection in the step's `connections` and \
                     read it from its environment variable instead",
                ));
            }
        }
        let Some(workflow) = workflow else {
            return Err(problems);
        };
        let proposed = |path: &str| files.iter().any(|(seen, _)| seen.as_str() == path);
        let reads = RefCell::new(Reads::default());
        let lookup = |name: &str| -> Option<spec::Agent> {
            agents
                .get(name)
                .cloned()
                .or_else(|| self.workspace_agent(account, name, names, &reads))
        };
        for step in workflow.steps() {
            let StepBody::Agent { agent, .. } = step.body() else {
                continue;
            };
            if lookup(agent).is_none() {
                problems.push(at(
                    workflow.file_name(),
                    format!(
                        "step {} hands its task to the agent `{agent}`, and neither the proposal \
                         nor the workspace has a valid agents/{agent}/AGENT.md; propose it",
                        step.id()
                    ),
                ));
            }
        }
        for (name, agent) in &agents {
            for tool in agent.custom_tools() {
                let script = format!("agents/{name}/{}", tool.script());
                if !proposed(&script) && !self.workspace_script(account, &script, &reads) {
                    problems.push(at(
                        &format!("agents/{name}/AGENT.md"),
                        format!(
                            "the custom tool `{}` runs {script}, which neither the proposal nor \
                             the workspace has; propose the script too",
                            tool.name()
                        ),
                    ));
                }
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let name = workflow.name().to_owned();
        // Parsed again under its own path, so every diagnostic later names the saved file.
        let workflow = match spec::parse_workflow_for_account(
            &format!("workflows/{name}.yaml"),
            &draft.workflow,
            maxima,
            names,
        ) {
            Ok(workflow) => workflow,
            Err(diagnostics) => return Err(diagnostics.iter().map(ToString::to_string).collect()),
        };
        // A proposal changes only the agents its own workflow hands tasks to, directly or as
        // colleagues at any depth: a file of any other agent would change what other
        // workflows run, and no reach row shown here would say so.
        let mut in_reach = std::collections::BTreeSet::new();
        for step in workflow.steps() {
            let StepBody::Agent { agent, .. } = step.body() else {
                continue;
            };
            if let Some(root) = lookup(agent) {
                let closure = spec::colleague_closure(&root, &|name| {
                    lookup(name).ok_or_else(|| format!("no agent {name}"))
                });
                in_reach.extend(closure.agents.iter().map(|agent| agent.name().to_owned()));
            }
        }
        let outside: Vec<String> = files
            .iter()
            .filter_map(|(path, _)| {
                let agent = path.components().nth(1)?;
                (path.components().next() == Some("agents") && !in_reach.contains(agent)).then(
                    || {
                        at(
                            path.as_str(),
                            format!(
                                "the workflow hands no task to the agent `{agent}`, directly or \
                                 through a colleague; a proposal changes only the agents its \
                                 workflow uses, so that what it shows is all it changes"
                            ),
                        )
                    },
                )
            })
            .collect();
        if !outside.is_empty() {
            return Err(outside);
        }
        // Nor one another saved workflow uses: what that workflow may reach or run would
        // change, and nothing shown here would say so (G27). The proposal is refused with the
        // list; a person changes such an agent through a door that shows it and asks.
        if let Ok(workspace) = self.options.workspaces.for_account(account) {
            let changes: Vec<(RelPath, Change)> = files
                .iter()
                .map(|(path, text)| (path.clone(), Change::Write(text.as_bytes().to_vec())))
                .collect();
            let affected = self.affected_workflows(account, &workspace, &changes, Some(&name));
            if !affected.is_empty() {
                return Err(affected
                    .iter()
                    .map(|workflow| {
                        format!(
                            "the proposal changes an agent the saved {workflow}; propose a new \
                             agent for this workflow instead, and leave the ones other \
                             workflows use as they are"
                        )
                    })
                    .collect());
            }
        }
        let reach = spec::reach(&workflow, &lookup);
        // The scripts of the agents in reach that the proposal does not write: what those
        // steps run, read here so that a confirmation sees a change of them too.
        for name in &in_reach {
            if let Some(agent) = lookup(name) {
                for tool in agent.custom_tools() {
                    let script = format!("agents/{name}/{}", tool.script());
                    if !proposed(&script) {
                        self.workspace_script(account, &script, &reads);
                    }
                }
            }
        }
        let read = reads
            .into_inner()
            .files
            .into_iter()
            .filter(|(path, _)| !files.iter().any(|(seen, _)| seen == path))
            .collect();
        Ok(CheckedDraft {
            name,
            workflow,
            files,
            reach,
            read,
        })
    }

    /// Saves a confirmed proposal as one version: the workflow and its agent files in one
    /// revision by `author` (the assistant, accepted by a person), checked again (G1) and
    /// written only when each path is still as `as_read.written` says and every workspace file
    /// the check made now reads is as `as_read.shown` says: otherwise
    /// [`DraftSaveError::ReachChanged`], nothing written. Both are compared again under the
    /// workspace's lock as the revision is written.
    pub fn save_draft(
        &self,
        account: &AccountId,
        names: &spec::AccountNames,
        draft: &Draft,
        as_read: AsRead<'_>,
        author: &Author,
        message: &str,
    ) -> Result<WorkflowVersion, DraftSaveError> {
        let AsRead {
            written: expected,
            shown,
        } = as_read;
        let checked = self
            .check_draft(account, names, None, draft)
            .map_err(DraftSaveError::Invalid)?;
        // A file this check read that the shown one did not, or read otherwise: the reach
        // rows are not the ones the person saw.
        if let Some((path, _)) = checked
            .read
            .iter()
            .find(|read| !shown.iter().any(|seen| seen == *read))
        {
            return Err(DraftSaveError::ReachChanged {
                path: path.to_string(),
            });
        }
        if let Some((path, _)) = checked
            .files
            .iter()
            .find(|(path, _)| !expected.iter().any(|(seen, _)| seen == path))
        {
            return Err(DraftSaveError::Conflict {
                path: path.to_string(),
            });
        }
        let changes = checked
            .files
            .iter()
            .map(|(path, text)| (path.clone(), Change::Write(text.as_bytes().to_vec())))
            .collect();
        let expected: Vec<(RelPath, Option<String>)> = expected
            .iter()
            .filter(|(path, _)| checked.files.iter().any(|(seen, _)| seen == path))
            .chain(checked.read.iter())
            .cloned()
            .collect();
        let confirmation = crate::definitions::ReachConfirmation {
            confirmed: Vec::new(),
            except: Some(checked.name.clone()),
        };
        match self.write_definitions_confirming(
            account,
            author,
            message,
            changes,
            &expected,
            &confirmation,
        ) {
            Ok(_) => {}
            Err(DefinitionWriteError::Workspace(workspace::Error::Changed { path }))
                if checked.read.iter().any(|(read, _)| read.as_str() == path) =>
            {
                return Err(DraftSaveError::ReachChanged { path });
            }
            Err(DefinitionWriteError::Workspace(workspace::Error::Changed { path })) => {
                return Err(DraftSaveError::Conflict { path });
            }
            Err(other) => return Err(DraftSaveError::Write(other)),
        }
        self.workflow_versions(account, &checked.name)
            .map_err(DraftSaveError::Write)?
            .pop()
            .ok_or_else(|| {
                DraftSaveError::Write(DefinitionWriteError::Unreadable {
                    path: format!("workflows/{}.yaml", checked.name),
                    reason: "has no version after it was saved".to_owned(),
                })
            })
    }
}
