//! Definitions in the account's workspace (issue 16 §1, issue 17 §3): workflows are
//! `workflows/<name>.yaml` and agents `agents/<name>/`, written only by a person, a key or the
//! assistant a person accepted, each write parsed first (G1); a run pins, when it starts, the
//! workflow version it runs and every agent folder it can reach.
//!
//! **Versions are the workspace's revision log filtered to the file**, not a table of their
//! own: a workflow changes only through [`workspace::Workspace::commit`], which already records
//! who and when, all or nothing, with the text's bytes kept by hash. A second table would be a
//! second record of the same fact that a crash between the two writes could split (a version
//! whose file never changed, or a file whose change has no version); filtering the one log
//! cannot disagree with it. Numbers are the order of the writes of that path.
//!
//! **The pin** is a journal event of the run ([`journal::DefinitionsPinned`]): the workspace's
//! head revision, the workflow's version (when its text is a saved version), and for every
//! agent folder the run can reach (its steps' agents, their colleagues at any depth) each file
//! with its content hash, the bytes stored in the revision store's blobs. An agent step reads
//! its agent file and scripts from there ([`PinnedDefinitions`]), so an edit after the run
//! started, before or after a gate, changes nothing the run executes.

use std::collections::{BTreeMap, BTreeSet};

use redact::Redactor;
use spec::{StepBody, Workflow};
use storage::AccountId;
use workspace::{Author, Change, RelPath, Revision, Workspace};

use crate::Error;
use crate::engine::Engine;
use crate::journal::{self, DefinitionsPinned, Event, PinnedAgent, PinnedFile};

/// The most agent folders one run pins (its agents and their colleagues, at any depth).
pub const MAX_PINNED_AGENTS: usize = 64;
/// The largest definition text a save takes.
const MAX_DEFINITION_BYTES: usize = 1024 * 1024;

/// What a run pinned when it started, as an agent step reads it.
pub struct PinnedDefinitions {
    /// `None`: the run was started by a stepward that did not pin (it reads the working
    /// folder, as it did then).
    pin: Option<DefinitionsPinned>,
    workspace: Option<Workspace>,
}

impl std::fmt::Debug for PinnedDefinitions {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("PinnedDefinitions")
            .field("pin", &self.pin)
            .finish_non_exhaustive()
    }
}

impl PinnedDefinitions {
    /// A run that pinned nothing (started before runs pinned their definitions).
    pub fn unpinned() -> PinnedDefinitions {
        PinnedDefinitions {
            pin: None,
            workspace: None,
        }
    }

    /// What a step of the account whose definitions these are may see, when the workspace
    /// was opened.
    pub fn step_files(&self) -> Option<workspace::StepFiles> {
        self.workspace.as_ref().map(Workspace::step_files)
    }

    /// Whether the run pinned its definitions.
    pub fn is_pinned(&self) -> bool {
        self.pin.is_some()
    }

    /// The pin as recorded.
    pub fn record(&self) -> Option<&DefinitionsPinned> {
        self.pin.as_ref()
    }

    /// The workflow version the run runs, when its text is a saved version.
    pub fn workflow_version(&self) -> Option<u32> {
        self.pin.as_ref().and_then(|pin| pin.workflow_version)
    }

    /// The model the agent `name` was pinned to talk to; `None` when the run pinned no models
    /// (started before runs did, or the agent was not in reach).
    pub fn model_of(&self, name: &str) -> Option<&journal::PinnedModel> {
        self.pin
            .as_ref()
            .and_then(|pin| pin.models.iter().find(|model| model.agent == name))
    }

    /// Whether the run pinned the models of its agents (every run started since version 3 of
    /// the journal that has an agent step).
    pub fn pins_models(&self) -> bool {
        self.pin.as_ref().is_some_and(|pin| !pin.models.is_empty())
    }

    /// The pin with the models the executor named for it, before the run exists.
    pub(crate) fn set_models(&mut self, models: Vec<journal::PinnedModel>) {
        if let Some(pin) = &mut self.pin {
            pin.models = models;
        }
    }

    /// Whether the agent `name` was in the run's reach when it started.
    pub fn has_agent(&self, name: &str) -> bool {
        self.pin
            .as_ref()
            .is_some_and(|pin| pin.agents.iter().any(|agent| agent.name == name))
    }

    /// Every pinned file of the agent `name`: its path inside the agent's folder and its hash.
    pub fn agent_files(&self, name: &str) -> Vec<(String, String)> {
        let prefix = format!("agents/{name}/");
        self.pin
            .iter()
            .flat_map(|pin| &pin.agents)
            .filter(|agent| agent.name == name)
            .flat_map(|agent| &agent.files)
            .filter_map(|file| {
                file.path
                    .strip_prefix(&prefix)
                    .map(|relative| (relative.to_owned(), file.sha256.clone()))
            })
            .collect()
    }

    /// The pinned bytes of `relative` (a path inside the agent's folder, `AGENT.md` or a
    /// script); `Ok(None)` when the folder held no such file when the run started.
    pub fn agent_file(&self, name: &str, relative: &str) -> Result<Option<Vec<u8>>, String> {
        let Some(workspace) = &self.workspace else {
            return Err("the run pinned no definitions".to_owned());
        };
        let Some((_, hash)) = self
            .agent_files(name)
            .into_iter()
            .find(|(path, _)| path == relative)
        else {
            return Ok(None);
        };
        workspace.pinned_bytes(&hash).map(Some).map_err(|error| {
            format!(
                "the pinned agents/{name}/{relative} cannot be read ({}); the step was not run",
                crate::with_causes(&error)
            )
        })
    }

    /// The pinned agent `name`, parsed (G1); `None` when it was not in reach or did not parse.
    pub fn agent(&self, name: &str, maxima: &spec::LimitMaxima) -> Option<spec::Agent> {
        let bytes = self.agent_file(name, "AGENT.md").ok()??;
        let text = String::from_utf8(bytes).ok()?;
        spec::parse_agent_within(&format!("agents/{name}/AGENT.md"), &text, maxima).ok()
    }
}

/// One saved version of a workflow, for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowVersion {
    pub name: String,
    pub number: u32,
    pub revision: String,
    pub author: Author,
    pub unix_millis: u64,
    pub message: String,
}

/// Why a person's or key's write of definitions was refused; nothing of it was written.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionWriteError {
    /// A workflow or agent file that does not parse (G1), with its diagnostics.
    #[error(
        "{path} is invalid ({} problem(s)), so nothing was written; the first: {}",
        diagnostics.len(),
        diagnostics.first().map(ToString::to_string).unwrap_or_default()
    )]
    Invalid {
        path: String,
        diagnostics: Vec<spec::Diagnostic>,
    },
    /// A file under `workflows/` that is not `workflows/<name>.yaml`.
    #[error(
        "{path} is not a workflow file: `workflows/` holds only `workflows/NAME.yaml` (NAME of \
         letters, digits, `-` and `_`), so nothing was written"
    )]
    NotAWorkflowPath { path: String },
    /// A definition that is not UTF-8 text, or too large.
    #[error("{path} {reason}, so nothing was written")]
    Unreadable { path: String, reason: String },
    /// A definition holding a current value of the account, named by its line.
    #[error(
        "{path}:{line}:{column}: this definition holds a current value of the account (a secret, \
         a connection field or a model key), so nothing was written; name a connection in the \
         step's `connections` and read it from its environment variable instead"
    )]
    HoldsValue {
        path: String,
        line: usize,
        column: usize,
    },
    /// A key or the CLI tried to write as the assistant, or the assistant without a person.
    #[error("{0}")]
    Author(String),
    /// The workspace refused or failed.
    #[error("the workspace refused the write")]
    Workspace(#[source] workspace::Error),
    /// The account's names could not be read to check the write (fails closed).
    #[error("the account's people and model providers could not be read to check the write: {0}")]
    AccountNames(String),
    /// The account's values could not be read to screen the write (fails closed).
    #[error("the account's values could not be read to check the write")]
    Values(#[source] redact::Error),
    /// The write would change what saved workflows may reach or run, and the writer did not
    /// confirm each of them (G27).
    #[error(
        "nothing was written: this changes what {} saved workflow(s) may reach or run, and each \
         needs your confirmation by name: {}",
        workflows.len(),
        workflows.iter().map(ToString::to_string).collect::<Vec<_>>().join(" | ")
    )]
    ChangesReach {
        workflows: Vec<crate::reach_change::AffectedWorkflow>,
    },
}

/// Which saved workflows' changed reach a write is confirmed for (G27).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReachConfirmation {
    /// The workflows the writer was shown and confirmed, by name.
    pub confirmed: Vec<String>,
    /// The workflow the write is about (the interview's proposal, whose own reach it shows).
    pub except: Option<String>,
}

/// Every agent file `reader` holds (`agents/NAME/AGENT.md`, the name's case as found), with
/// its agent's folder name: what the step-writer rules and the agents' listing read. At most
/// [`workspace::MAX_LISTED_ENTRIES`] entries of `agents/` are walked; none when there is no
/// such folder.
pub(crate) fn agent_files(
    reader: &workspace::FilesReader,
) -> Result<Vec<(String, RelPath)>, workspace::TreeError> {
    let Ok(agents) = RelPath::parse("agents") else {
        return Ok(Vec::new());
    };
    if reader.kind(&agents).ok() != Some("folder") {
        return Ok(Vec::new());
    }
    let (entries, _) = reader.walk(Some(&agents), workspace::MAX_LISTED_ENTRIES)?;
    Ok(entries
        .into_iter()
        .filter_map(|entry| {
            let agent = match entry.path.components().collect::<Vec<_>>().as_slice() {
                ["agents", agent, file] if file.eq_ignore_ascii_case("AGENT.md") => {
                    (*agent).to_owned()
                }
                _ => return None,
            };
            Some((agent, entry.path))
        })
        .collect())
}

/// Whether `name` may be a workflow's or an agent's file name.
pub fn is_definition_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// The workspace path of the workflow `name`.
pub fn workflow_path(name: &str) -> Option<RelPath> {
    is_definition_name(name)
        .then(|| RelPath::parse(&format!("workflows/{name}.yaml")).ok())
        .flatten()
}

/// What a path of a person's write is, for the parse it needs first.
enum DefinitionPath {
    Workflow,
    Agent,
    NotADefinition,
}

fn definition_path(path: &RelPath) -> Result<DefinitionPath, DefinitionWriteError> {
    let components: Vec<&str> = path.components().collect();
    // `Workflows/` or `AGENTS/` is the same folder on a case-insensitive file system: a
    // definition in another case is a definition (written in the canonical case only).
    let folded: Vec<String> = components
        .iter()
        .map(|component| component.to_ascii_lowercase())
        .collect();
    let folded: Vec<&str> = folded.iter().map(String::as_str).collect();
    match folded.as_slice() {
        ["workflows", ..] if components.first() != Some(&"workflows") => {
            return Err(DefinitionWriteError::NotAWorkflowPath {
                path: path.to_string(),
            });
        }
        ["agents", _, "agent.md"] if components.first() != Some(&"agents") => {
            return Ok(DefinitionPath::Agent);
        }
        _ => {}
    }
    match components.as_slice() {
        ["workflows", file] => match file.strip_suffix(".yaml") {
            Some(name) if is_definition_name(name) => Ok(DefinitionPath::Workflow),
            _ => Err(DefinitionWriteError::NotAWorkflowPath {
                path: path.to_string(),
            }),
        },
        ["workflows", ..] => Err(DefinitionWriteError::NotAWorkflowPath {
            path: path.to_string(),
        }),
        ["agents", _, file] if file.eq_ignore_ascii_case("AGENT.md") => Ok(DefinitionPath::Agent),
        _ => Ok(DefinitionPath::NotADefinition),
    }
}

/// Where in `text` a value of the account starts, as a line and column.
fn value_position(redactor: &Redactor, text: &str) -> Option<(usize, usize)> {
    let found = redactor.find_secret(text.as_bytes())?;
    let before = text.get(..found.start).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |newline| before.len() - newline - 1)
        + 1;
    Some((line, column))
}

impl Engine {
    fn account_workspace(&self, account: &AccountId) -> Result<Workspace, DefinitionWriteError> {
        self.options
            .workspaces
            .for_account(account)
            .map_err(DefinitionWriteError::Workspace)
    }

    /// Checks every definition among `changes` as a person's or key's write must be (G1): a
    /// workflow or agent file parses, holds no current value of the account (named by its
    /// line), and is UTF-8 text.
    pub fn check_definition_writes(
        &self,
        account: &AccountId,
        changes: &[(RelPath, Change)],
    ) -> Result<(), DefinitionWriteError> {
        let redactor = self
            .scrub_sets
            .for_account(account)
            .map_err(DefinitionWriteError::Values)?;
        let names = self
            .options
            .account_names
            .as_ref()
            .map(|source| (source.0)(account))
            .transpose()
            .map_err(DefinitionWriteError::AccountNames)?;
        for (path, change) in changes {
            let Change::Write(bytes) = change else {
                continue;
            };
            let kind = definition_path(path)?;
            if matches!(kind, DefinitionPath::NotADefinition) {
                continue;
            }
            let unreadable = |reason: &str| DefinitionWriteError::Unreadable {
                path: path.to_string(),
                reason: reason.to_owned(),
            };
            if bytes.len() > MAX_DEFINITION_BYTES {
                return Err(unreadable("is larger than 1 MiB"));
            }
            let text = std::str::from_utf8(bytes).map_err(|_| unreadable("is not UTF-8 text"))?;
            if let Some((line, column)) = value_position(&redactor, text) {
                return Err(DefinitionWriteError::HoldsValue {
                    path: path.to_string(),
                    line,
                    column,
                });
            }
            let parsed = match kind {
                DefinitionPath::Workflow => match &names {
                    // Checked against the account where it is saved: `notify:` names people
                    // of the account who may decide (issue 41), no step is handed a model key.
                    Some(names) => spec::parse_workflow_for_account(
                        path.as_str(),
                        text,
                        &self.options.limit_maxima,
                        names,
                    ),
                    None => {
                        spec::parse_workflow_within(path.as_str(), text, &self.options.limit_maxima)
                    }
                }
                .and_then(|workflow| name_matches_file(path.as_str(), text, &workflow)),
                _ => spec::parse_agent_within(path.as_str(), text, &self.options.limit_maxima)
                    .map(|_| ()),
            };
            parsed.map_err(|diagnostics| DefinitionWriteError::Invalid {
                path: path.to_string(),
                diagnostics,
            })?;
        }
        Ok(())
    }

    /// A person's, key's or accepted assistant's write of the account's workspace: every
    /// definition parsed first (G1), then one revision, screened for the account's values.
    pub fn write_definitions(
        &self,
        account: &AccountId,
        author: &Author,
        message: &str,
        changes: Vec<(RelPath, Change)>,
    ) -> Result<Revision, DefinitionWriteError> {
        self.write_definitions_expecting(account, author, message, changes, &[])
    }

    /// [`Engine::write_definitions`], written only when each of `expected` is still as the
    /// writer read it ([`workspace::Workspace::commit_expecting`]).
    pub fn write_definitions_expecting(
        &self,
        account: &AccountId,
        author: &Author,
        message: &str,
        changes: Vec<(RelPath, Change)>,
        expected: &[(RelPath, Option<String>)],
    ) -> Result<Revision, DefinitionWriteError> {
        self.write_definitions_confirming(
            account,
            author,
            message,
            changes,
            expected,
            &ReachConfirmation::default(),
        )
    }

    /// [`Engine::write_definitions_expecting`], with the saved workflows whose changed reach
    /// the writer confirmed (`confirmation`): a write that changes what another saved workflow
    /// may reach or run is refused with the list unless each is confirmed by name (G27).
    pub fn write_definitions_confirming(
        &self,
        account: &AccountId,
        author: &Author,
        message: &str,
        changes: Vec<(RelPath, Change)>,
        expected: &[(RelPath, Option<String>)],
        confirmation: &ReachConfirmation,
    ) -> Result<Revision, DefinitionWriteError> {
        if matches!(
            author,
            Author::RunStep { .. } | Author::Agent { .. } | Author::Platform { .. }
        ) {
            return Err(DefinitionWriteError::Author(
                "definitions are written only by a person, a key, the command line, or the \
                 assistant with a person's acceptance"
                    .to_owned(),
            ));
        }
        if let Author::Assistant { accepted_by } = author
            && accepted_by.trim().is_empty()
        {
            return Err(DefinitionWriteError::Author(
                "the assistant's change is written only when a person accepts it".to_owned(),
            ));
        }
        self.check_definition_writes(account, &changes)?;
        let workspace = self.account_workspace(account)?;
        let unconfirmed: Vec<_> = self
            .affected_workflows(
                account,
                &workspace,
                &changes,
                confirmation.except.as_deref(),
            )
            .into_iter()
            .filter(|affected| !confirmation.confirmed.contains(&affected.workflow))
            .collect();
        if !unconfirmed.is_empty() {
            return Err(DefinitionWriteError::ChangesReach {
                workflows: unconfirmed,
            });
        }
        let redactor = self
            .scrub_sets
            .for_account(account)
            .map_err(DefinitionWriteError::Values)?;
        workspace
            .commit_expecting(
                author,
                message,
                changes,
                &|content: &[u8]| redactor.holds_secret(content),
                expected,
            )
            .map_err(DefinitionWriteError::Workspace)
    }

    /// Saves `text` as the next version of the workflow `name` (`workflows/NAME.yaml`),
    /// authored by `author`, parsed first (G1) and refused, naming the line, when it holds a
    /// current value of the account. The assistant's proposal (issue 17 §2) is saved with
    /// `Author::Assistant { accepted_by: PERSON_ID }` once that person accepted it.
    pub fn save_workflow_version(
        &self,
        account: &AccountId,
        name: &str,
        text: &str,
        author: &Author,
        message: &str,
    ) -> Result<WorkflowVersion, DefinitionWriteError> {
        self.save_workflow_version_over(account, name, text, author, message, None)
    }

    /// As [`Engine::save_workflow_version`]; with `over` (the SHA-256, hex, of the text it
    /// replaces), only if `workflows/NAME.yaml` still holds that text, compared under the
    /// workspace's lock: a version saved meanwhile is never overwritten.
    pub fn save_workflow_version_over(
        &self,
        account: &AccountId,
        name: &str,
        text: &str,
        author: &Author,
        message: &str,
        over: Option<&str>,
    ) -> Result<WorkflowVersion, DefinitionWriteError> {
        let path = workflow_path(name).ok_or_else(|| DefinitionWriteError::NotAWorkflowPath {
            path: format!("workflows/{name}.yaml"),
        })?;
        let changes = vec![(path.clone(), Change::Write(text.as_bytes().to_vec()))];
        match over {
            Some(hash) => {
                self.write_definitions_expecting(
                    account,
                    author,
                    message,
                    changes,
                    &[(path, Some(hash.to_owned()))],
                )?;
            }
            None => {
                self.write_definitions(account, author, message, changes)?;
            }
        }
        self.workflow_versions(account, name)?.pop().ok_or_else(|| {
            DefinitionWriteError::Unreadable {
                path: format!("workflows/{name}.yaml"),
                reason: "has no version after it was saved".to_owned(),
            }
        })
    }

    /// Every version of the workflow `name`, oldest first.
    pub fn workflow_versions(
        &self,
        account: &AccountId,
        name: &str,
    ) -> Result<Vec<WorkflowVersion>, DefinitionWriteError> {
        let Some(path) = workflow_path(name) else {
            return Ok(Vec::new());
        };
        let workspace = self.account_workspace(account)?;
        Ok(workspace
            .file_versions(&path)
            .map_err(DefinitionWriteError::Workspace)?
            .into_iter()
            .map(|version| WorkflowVersion {
                name: name.to_owned(),
                number: version.number,
                revision: version.revision.to_string(),
                author: version.author,
                unix_millis: version.unix_millis,
                message: version.message,
            })
            .collect())
    }

    /// Version `number` of the workflow `name` (the newest for `None`) and its text, scrubbed
    /// of every current value of the account: what is shown or exported holds connection
    /// references only.
    pub fn workflow_version_text(
        &self,
        account: &AccountId,
        name: &str,
        number: Option<u32>,
    ) -> Result<Option<(WorkflowVersion, String)>, DefinitionWriteError> {
        let versions = self.workflow_versions(account, name)?;
        let Some(version) = (match number {
            Some(number) => versions.into_iter().find(|v| v.number == number),
            None => versions.into_iter().last(),
        }) else {
            return Ok(None);
        };
        let Some(path) = workflow_path(name) else {
            return Ok(None);
        };
        let workspace = self.account_workspace(account)?;
        let Some((_, bytes)) = workspace
            .file_version(&path, version.number)
            .map_err(DefinitionWriteError::Workspace)?
        else {
            return Ok(None);
        };
        let redactor = self
            .scrub_sets
            .for_account(account)
            .map_err(DefinitionWriteError::Values)?;
        let text = redactor
            .scrub(&String::from_utf8_lossy(&bytes))
            .into_inner();
        Ok(Some((version, text)))
    }

    /// The unified diff from version `from` to version `to` of the workflow `name`, each text
    /// scrubbed first; `None` when either version does not exist.
    pub fn workflow_diff(
        &self,
        account: &AccountId,
        name: &str,
        from: u32,
        to: u32,
    ) -> Result<Option<String>, DefinitionWriteError> {
        let (Some((_, old)), Some((_, new))) = (
            self.workflow_version_text(account, name, Some(from))?,
            self.workflow_version_text(account, name, Some(to))?,
        ) else {
            return Ok(None);
        };
        Ok(Some(
            similar::TextDiff::from_lines(&old, &new)
                .unified_diff()
                .header(
                    &format!("workflows/{name}.yaml version {from}"),
                    &format!("workflows/{name}.yaml version {to}"),
                )
                .to_string(),
        ))
    }

    /// Pins what a new run of `workflow` can reach: its version when its text is a saved
    /// version of `workflows/<name>.yaml`, and every agent folder of its agent steps and their
    /// colleagues at any depth, seen at one moment.
    pub(crate) fn pin_definitions(
        &self,
        account: &AccountId,
        workflow: &Workflow,
    ) -> Result<(PinnedDefinitions, DefinitionsPinned), Error> {
        let pin_error = |detail: String| Error::Pin { detail };
        let workspace = self
            .options
            .workspaces
            .for_account(account)
            .map_err(|error| pin_error(crate::with_causes(&error)))?;
        let (workflow_path, workflow_version) = self.saved_version_of(&workspace, workflow);
        let mut pending: Vec<String> = workflow
            .steps()
            .iter()
            .filter_map(|step| match step.body() {
                StepBody::Agent { agent, .. } => Some(agent.clone()),
                StepBody::Code { .. } => None,
            })
            .collect();
        let mut seen = BTreeSet::new();
        let mut agents = Vec::new();
        let session = workspace
            .pin_session()
            .map_err(|error| pin_error(crate::with_causes(&error)))?;
        let revision = session
            .head()
            .map_err(|error| pin_error(crate::with_causes(&error)))?
            .map(|id| id.to_string());
        while let Some(name) = pending.pop() {
            if !is_definition_name(&name) || !seen.insert(name.clone()) {
                continue;
            }
            if seen.len() > MAX_PINNED_AGENTS {
                return Err(pin_error(format!(
                    "the workflow reaches more than {MAX_PINNED_AGENTS} agents through colleagues"
                )));
            }
            let folder = RelPath::parse(&format!("agents/{name}"))
                .map_err(|refusal| pin_error(refusal.to_string()))?;
            let files: BTreeMap<String, String> = session
                .pin_folder(&folder)
                .map_err(|error| pin_error(crate::with_causes(&error)))?;
            // Its colleagues are in reach too, at any depth (a cycle ends at `seen`).
            if let Some(hash) = files.get(&format!("agents/{name}/AGENT.md"))
                && let Ok(bytes) = session.pinned_bytes(hash)
                && let Ok(text) = String::from_utf8(bytes)
                && let Ok(agent) = spec::parse_agent_within(
                    &format!("agents/{name}/AGENT.md"),
                    &text,
                    &self.options.limit_maxima,
                )
            {
                pending.extend(agent.colleagues().iter().cloned());
            }
            agents.push(PinnedAgent {
                name,
                files: files
                    .into_iter()
                    .map(|(path, sha256)| PinnedFile { path, sha256 })
                    .collect(),
            });
        }
        drop(session);
        agents.sort_by(|left, right| left.name.cmp(&right.name));
        let pin = DefinitionsPinned {
            revision,
            workflow_path,
            workflow_version,
            agents,
            models: Vec::new(),
        };
        Ok((
            PinnedDefinitions {
                pin: Some(pin.clone()),
                workspace: Some(workspace),
            },
            pin,
        ))
    }

    /// The saved version whose text is exactly `workflow`'s, newest first: of
    /// `workflows/<file stem>.yaml`, else of `workflows/<name>.yaml`.
    fn saved_version_of(
        &self,
        workspace: &Workspace,
        workflow: &Workflow,
    ) -> (Option<String>, Option<u32>) {
        let hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(
            workflow.source().as_bytes(),
        ));
        let stem = std::path::Path::new(workflow.file_name())
            .file_stem()
            .and_then(|stem| stem.to_str())
            .unwrap_or_default()
            .to_owned();
        for name in [stem.as_str(), workflow.name()] {
            let Some(path) = workflow_path(name) else {
                continue;
            };
            let Ok(versions) = workspace.file_versions(&path) else {
                continue;
            };
            if let Some(version) = versions.iter().rev().find(|version| version.blob == hash) {
                return (Some(path.to_string()), Some(version.number));
            }
        }
        (None, None)
    }

    /// What the run `run` pinned when it started, read from its journal.
    pub fn pinned_definitions(
        &self,
        account: &AccountId,
        run: &storage::RunId,
    ) -> Result<PinnedDefinitions, Error> {
        let records = self.store.events(run)?;
        let pin = journal::read_all(&records)?
            .into_iter()
            .find_map(|entry| match entry.event {
                Event::DefinitionsPinned(pin) => Some(pin),
                _ => None,
            });
        let Some(pin) = pin else {
            return Ok(PinnedDefinitions::unpinned());
        };
        let workspace = self
            .options
            .workspaces
            .for_account(account)
            .map_err(|error| Error::Pin {
                detail: crate::with_causes(&error),
            })?;
        Ok(PinnedDefinitions {
            pin: Some(pin),
            workspace: Some(workspace),
        })
    }

    /// The reach rows of the run `run` as pinned at its start (what a gate shows): its stored
    /// workflow with the agents it pinned, never the files as they are now. `None` for a run
    /// that pinned nothing.
    pub fn pinned_reach(
        &self,
        account: &AccountId,
        run: &storage::RunId,
    ) -> Result<Option<(DefinitionsPinned, Vec<spec::ReachRow>)>, Error> {
        let pinned = self.pinned_definitions(account, run)?;
        self.reach_of_pinned(&pinned, run)
    }

    /// [`Engine::pinned_reach`] from the run's [`PinnedDefinitions`], read already.
    pub fn reach_of_pinned(
        &self,
        pinned: &PinnedDefinitions,
        run: &storage::RunId,
    ) -> Result<Option<(DefinitionsPinned, Vec<spec::ReachRow>)>, Error> {
        let Some(record) = pinned.record().cloned() else {
            return Ok(None);
        };
        let stored = self
            .store
            .run(run)?
            .ok_or_else(|| Error::UnknownRun { run: run.clone() })?;
        let workflow = self.parse_stored_workflow(&stored)?;
        let maxima = self.options.limit_maxima;
        let rows = spec::reach(&workflow, &|name| pinned.agent(name, &maxima));
        Ok(Some((record, rows)))
    }
}

/// A saved workflow is run, listed and repaired by the name its file has, so its `name:` is
/// that name (newcomer 3, friction 11: a text saved under another name was listed under one
/// and run under the other).
fn name_matches_file(
    path: &str,
    text: &str,
    workflow: &Workflow,
) -> Result<(), Vec<spec::Diagnostic>> {
    let Some(file_name) = path
        .strip_prefix("workflows/")
        .and_then(|rest| rest.strip_suffix(".yaml"))
    else {
        return Ok(());
    };
    if workflow.name() == file_name {
        return Ok(());
    }
    let line = text
        .lines()
        .position(|line| line.starts_with("name:"))
        .map_or(1, |index| index + 1);
    Err(vec![spec::Diagnostic {
        file: path.to_owned(),
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: 7,
        code: "name-differs-from-file",
        message: format!(
            "the workflow is named `{}`, but it is saved as {path}",
            workflow.name()
        ),
        help: format!(
            "write `name: {file_name}`, or save it as workflows/{}.yaml",
            workflow.name()
        ),
    }])
}
