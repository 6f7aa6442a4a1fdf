//! The copy-back of a step's files: refusals recorded, accepted files written as a workspace
//! revision authored by the run's step (G12, G25).

use redact::Redactor;
use workspace::{
    Author, RelPath, Screened, SecretScreen, UnreadableArchives, Workspace, screen_contents,
};

use crate::Error;
use crate::context::RunContext;
use crate::engine::Engine;
use crate::executor::ExecutionReport;
use crate::journal::{
    CopyBackRefused, Event, FileWritten, RefusedBy, RefusedFiles, WorkspaceRevision,
};

/// Refuses content holding any value of the run's account (current, revoked or superseded
/// and still kept) or of the run: the run's redactor knows them all. An archive it cannot open
/// is refused when the step held credentials.
struct Screen<'a> {
    redactor: &'a Redactor,
    unreadable: UnreadableArchives,
}

impl SecretScreen for Screen<'_> {
    fn holds_secret(&self, content: &[u8]) -> bool {
        self.redactor.holds_secret(content)
    }

    fn unreadable_archives(&self) -> UnreadableArchives {
        self.unreadable
    }
}

/// What a step's revision is fenced on (issue 39): its attempt's token, current while the
/// runner holds the run queue's lease on it (as the store says) and the record still says the
/// attempt runs (recovery has not judged it from outside).
pub(crate) struct AttemptFence<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) run: &'a storage::RunId,
    pub(crate) step: &'a str,
    pub(crate) attempt: u32,
    pub(crate) claim: &'a dyn crate::jobs::JobClaim,
}

impl workspace::CommitFence for AttemptFence<'_> {
    fn token(&self) -> u32 {
        self.attempt
    }

    fn is_current(&self) -> bool {
        if !self.claim.still_held() {
            return false;
        }
        // A store that cannot answer lands nothing: the revision is never written for an
        // attempt that may have been judged without it.
        self.engine.store.attempts(self.run).is_ok_and(|attempts| {
            attempts.iter().any(|attempt| {
                attempt.step_id == self.step
                    && attempt.attempt == self.attempt
                    && attempt.status == storage::AttemptStatus::Running
            })
        })
    }
}

/// What an event says in place of a path that holds a credential value of the account.
const WITHHELD_PATH: &str = "(a path holding a current credential value, withheld)";

impl Engine {
    /// `text` with the host's workspaces folder named `<workspaces>`: a run's record is the
    /// account's to read, and the host's layout stays out of it.
    pub(crate) fn without_host_paths(&self, text: &str) -> String {
        self.options.workspaces.without_host_paths(text)
    }

    /// The copy-back of the attempt `fence` names: refusals recorded, accepted files one
    /// revision fenced on that attempt.
    pub(crate) fn record_copy_back(
        &self,
        context: &RunContext,
        report: &ExecutionReport,
        workspace: &Workspace,
        unreadable: UnreadableArchives,
        fence: &AttemptFence<'_>,
    ) -> Result<(), Error> {
        let (step, attempt) = (fence.step, fence.attempt);
        // The run's redactor scrubs every event with every value of the account; a path naming
        // one of them is withheld from the record whole, not only masked.
        let screens = Screen {
            redactor: &context.redactor,
            unreadable,
        };
        let shown = |path: &str| {
            if screens.holds_secret(path.as_bytes()) {
                WITHHELD_PATH.to_owned()
            } else {
                path.to_owned()
            }
        };
        let refused = |refused: RefusedFiles, reason: String, by: RefusedBy| {
            Event::CopyBackRefused(CopyBackRefused {
                step: step.to_owned(),
                attempt,
                refused,
                reason,
                by,
            })
        };
        let file = |path: String| RefusedFiles::File { path };
        for refusal in &report.copy_back_refusals {
            self.event(
                context,
                refused(
                    file(shown(&refusal.path)),
                    refusal.reason.clone(),
                    RefusedBy::Sandbox,
                ),
            )?;
        }
        if report.file_changes.is_empty() {
            return Ok(());
        }
        let mut accepted = Vec::new();
        let mut files = Vec::new();
        // Matched by pattern, so a file not yet created is protected too (issue 16 §1).
        let rules = step_writer_rules(workspace);
        let caps = self.options.copy_back;
        let mut taken_bytes = 0u64;
        let mut taken_files = 0usize;
        let over_pin_limit = agent_folders_past_the_pin_limit(workspace, &report.file_changes);
        for change in &report.file_changes {
            let path_text = change.path.as_str();
            // A step's files come back as writes; a deletion is never copied back (the
            // sandbox reports what a step removed apart, and it is not applied).
            let Some(contents) = change.contents() else {
                self.event(
                    context,
                    refused(
                        file(shown(path_text)),
                        "a step's copy-back writes files and deletes none; the deletion was not \
                         kept"
                            .to_owned(),
                        RefusedBy::Engine,
                    ),
                )?;
                continue;
            };
            let size = u64::try_from(contents.len()).unwrap_or(u64::MAX);
            let capped = if size > caps.max_file_bytes {
                Some(format!(
                    "the file is {size} bytes; a step may return files of at most {} bytes",
                    caps.max_file_bytes
                ))
            } else if taken_files >= caps.max_files {
                Some(format!(
                    "the step returned more than {} files; the rest are refused",
                    caps.max_files
                ))
            } else if taken_bytes.saturating_add(size) > caps.max_total_bytes {
                Some(format!(
                    "the step returned more than {} bytes in all; the rest are refused",
                    caps.max_total_bytes
                ))
            } else {
                over_pin_limit
                    .iter()
                    .find(|folder| path_text.starts_with(&format!("{folder}/")))
                    .map(|folder| {
                        format!(
                            "it would take the folder {folder} past the {} files or {} bytes a \
                             run can pin, so the agent could not run again; write it under \
                             shared/ instead",
                            workspace::MAX_PINNED_FILES,
                            workspace::MAX_PINNED_BYTES
                        )
                    })
            };
            if let Some(reason) = capped {
                self.event(
                    context,
                    refused(file(shown(path_text)), reason, RefusedBy::Engine),
                )?;
                continue;
            }
            taken_files += 1;
            taken_bytes = taken_bytes.saturating_add(size);
            // The path is written into the history and the working folder as it is (G19).
            if screens.holds_secret(path_text.as_bytes()) {
                self.event(
                    context,
                    refused(
                        file(WITHHELD_PATH.to_owned()),
                        "the file's path holds a current credential value".to_owned(),
                        RefusedBy::Engine,
                    ),
                )?;
                continue;
            }
            let refusal = match screen_contents(&screens, contents, unreadable) {
                Screened::Clean => None,
                Screened::HoldsSecret { .. } => {
                    Some("the file holds a current credential value".to_owned())
                }
                Screened::Unscreenable { reason } => Some(reason),
            };
            if let Some(reason) = refusal {
                self.event(
                    context,
                    refused(file(path_text.to_owned()), reason, RefusedBy::Engine),
                )?;
                continue;
            }
            if let Some(refusal) = rules.refusal(&change.path) {
                self.event(
                    context,
                    refused(
                        file(path_text.to_owned()),
                        format!("{refusal}; no step may write it"),
                        RefusedBy::Engine,
                    ),
                )?;
                continue;
            }
            files.push(FileWritten {
                path: path_text.to_owned(),
                bytes: size,
            });
            accepted.push((change.path.clone(), change.change.clone()));
        }
        if accepted.is_empty() {
            return Ok(());
        }
        let author = Author::RunStep {
            run_id: context.run.id.clone(),
            step: step.to_owned(),
            attempt,
        };
        let message = format!("copy-back of step {step}, attempt {attempt}");
        // The revision is the record; the working folder (what the next step is staged from)
        // follows it, all or nothing, under the workspace's lock.
        match workspace.commit_fenced(&author, &message, accepted, &screens, fence) {
            Ok(revision) => {
                self.event(
                    context,
                    Event::WorkspaceRevision(WorkspaceRevision {
                        step: step.to_owned(),
                        attempt,
                        revision: revision.id.as_str().to_owned(),
                        files,
                    }),
                )?;
            }
            // The attempt is no longer this runner's: nothing of it lands, and nothing more is
            // recorded by a runner that lost its lease (the record is the rules' now).
            Err(workspace::Error::Fenced { attempt }) => {
                tracing::warn!(
                    run = %context.run.id,
                    step,
                    attempt,
                    files = files.len(),
                    "a late copy-back was fenced off: its attempt is no longer current, so \
                     nothing of it was written"
                );
            }
            Err(error) => {
                let reason = self.without_host_paths(&crate::with_causes(&error));
                self.event(
                    context,
                    refused(
                        RefusedFiles::Revision { files },
                        format!(
                            "the workspace refused the revision, nothing of it was written: \
                             {reason}"
                        ),
                        RefusedBy::Workspace,
                    ),
                )?;
            }
        }
        Ok(())
    }
}

/// The agent folders (`agents/NAME`) that `changes` would take past what a run can pin
/// (`workspace::MAX_PINNED_FILES`, `MAX_PINNED_BYTES`), counting what the working folder holds
/// now with the changes applied.
fn agent_folders_past_the_pin_limit(
    workspace: &Workspace,
    changes: &[crate::executor::FileChange],
) -> Vec<String> {
    use std::collections::BTreeMap;
    let mut touched: BTreeMap<String, BTreeMap<&str, u64>> = BTreeMap::new();
    for change in changes {
        let mut parts = change.path.as_str().splitn(3, '/');
        if let (Some("agents"), Some(agent), Some(_)) = (parts.next(), parts.next(), parts.next()) {
            touched
                .entry(format!("agents/{agent}"))
                .or_default()
                .insert(
                    change.path.as_str(),
                    change
                        .contents()
                        .map_or(0, |contents| contents.len() as u64),
                );
        }
    }
    let Ok(tree) = workspace.step_files().reader() else {
        return touched.into_keys().collect();
    };
    let mut past = Vec::new();
    for (folder, changed) in touched {
        let mut sizes: BTreeMap<String, u64> = BTreeMap::new();
        if let Ok(path) = RelPath::parse(&folder)
            && tree.kind(&path).ok() == Some("folder")
        {
            match tree.walk(Some(&path), workspace::MAX_PINNED_FILES * 2) {
                Ok((entries, cut)) if !cut => {
                    for entry in entries.into_iter().filter(|entry| entry.kind == "file") {
                        sizes.insert(entry.path.to_string(), entry.size);
                    }
                }
                _ => {
                    past.push(folder);
                    continue;
                }
            }
        }
        for (path, size) in changed {
            sizes.insert(path.to_owned(), size);
        }
        let bytes: u64 = sizes.values().sum();
        if sizes.len() > workspace::MAX_PINNED_FILES || bytes > workspace::MAX_PINNED_BYTES {
            past.push(folder);
        }
    }
    past
}

/// What no step may write in `workspace`: the fixed patterns, and every script an agent file
/// of the working folder names (an agent file that does not parse protects its whole folder).
pub(crate) fn step_writer_rules(workspace: &Workspace) -> workspace::StepWriterRules {
    let mut scripts = Vec::new();
    let mut broken = Vec::new();
    let tree = workspace.step_files().reader();
    let files = tree
        .as_ref()
        .ok()
        .and_then(|tree| crate::definitions::agent_files(tree).ok())
        .unwrap_or_default();
    let maxima = spec::LimitMaxima::UNBOUNDED;
    for (agent, file) in files {
        let Ok(folder) = RelPath::parse(&format!("agents/{agent}")) else {
            continue;
        };
        let parsed = tree
            .as_ref()
            .ok()
            .and_then(|tree| tree.read(&file, 0, 1024 * 1024).ok())
            .and_then(|(bytes, _)| String::from_utf8(bytes).ok())
            .and_then(|text| spec::parse_agent_within(file.as_str(), &text, &maxima).ok());
        match parsed {
            Some(parsed) => {
                for tool in parsed.custom_tools() {
                    if let Ok(path) = folder.join_path(tool.script()) {
                        scripts.push(path);
                    }
                }
            }
            None => broken.push(folder),
        }
    }
    broken
        .iter()
        .fold(workspace::StepWriterRules::new(scripts), |rules, folder| {
            rules.with_folder(folder)
        })
}
