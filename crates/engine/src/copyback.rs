//! The copy-back of a step's files: refusals recorded, accepted files written as a workspace
//! revision authored by the run's step (G12, G25).

use redact::Redactor;
use serde_json::json;
use workspace::{Author, Change, RelPath, SecretScreen, Workspace};

use crate::Error;
use crate::context::RunContext;
use crate::engine::Engine;
use crate::executor::ExecutionReport;
use crate::record::kind;

/// Refuses content holding a value of the run (current or rotated away) or any current value
/// of the account.
struct Screens(Vec<Redactor>);

impl SecretScreen for Screens {
    fn holds_secret(&self, content: &[u8]) -> bool {
        self.0.iter().any(|redactor| redactor.holds_secret(content))
    }
}

impl Engine {
    pub(crate) fn record_copy_back(
        &self,
        context: &RunContext,
        step: &str,
        attempt: u32,
        report: &ExecutionReport,
        workspace: &Workspace,
    ) -> Result<(), Error> {
        for refusal in &report.copy_back_refusals {
            self.event(
                context,
                kind::COPY_BACK_REFUSED,
                json!({"step": step, "attempt": attempt, "path": refusal.path, "reason": refusal.reason, "by": "sandbox"}),
            )?;
        }
        if report.file_changes.is_empty() {
            return Ok(());
        }
        // Fail closed: without the account's current values, no file can be shown to be free
        // of them, so none is written.
        let screens = match Redactor::for_account(
            context.run.account.as_str(),
            self.secrets.as_ref(),
        ) {
            Ok(account) => Screens(vec![context.redactor.clone(), account]),
            Err(error) => {
                for change in &report.file_changes {
                    self.event(
                        context,
                        kind::COPY_BACK_REFUSED,
                        json!({"step": step, "attempt": attempt, "path": change.path, "reason": format!("the account's secrets could not be checked: {error}"), "by": "engine"}),
                    )?;
                }
                return Ok(());
            }
        };
        let mut accepted = Vec::new();
        let mut paths = Vec::new();
        for change in &report.file_changes {
            if screens.holds_secret(&change.bytes) {
                self.event(
                    context,
                    kind::COPY_BACK_REFUSED,
                    json!({"step": step, "attempt": attempt, "path": change.path, "reason": "the file holds a current credential value", "by": "engine"}),
                )?;
                continue;
            }
            // The path is written into the history and the working folder as it is (G19).
            if screens.holds_secret(change.path.as_bytes()) {
                self.event(
                    context,
                    kind::COPY_BACK_REFUSED,
                    json!({"step": step, "attempt": attempt, "path": change.path, "reason": "the file's path holds a current credential value", "by": "engine"}),
                )?;
                continue;
            }
            match RelPath::parse(&change.path) {
                Ok(path) => {
                    paths.push(json!({"path": change.path, "bytes": change.bytes.len()}));
                    accepted.push((path, Change::Write(change.bytes.clone())));
                }
                Err(refusal) => {
                    self.event(
                        context,
                        kind::COPY_BACK_REFUSED,
                        json!({"step": step, "attempt": attempt, "path": change.path, "reason": refusal.to_string(), "by": "engine"}),
                    )?;
                }
            }
        }
        if accepted.is_empty() {
            return Ok(());
        }
        let author = Author::RunStep {
            run_id: context.run.id.to_string(),
            step: step.to_owned(),
            attempt,
        };
        let message = format!("copy-back of step {step}, attempt {attempt}");
        // The revision is the record; the working folder (what the next step is staged from)
        // follows it, under the workspace's lock.
        let written = workspace.commit(&author, &message, accepted, &screens);
        match written {
            Ok(revision) => {
                self.event(
                    context,
                    kind::WORKSPACE_REVISION,
                    json!({"step": step, "attempt": attempt, "revision": revision.as_str(), "files": paths}),
                )?;
            }
            Err(error) => {
                self.event(
                    context,
                    kind::COPY_BACK_REFUSED,
                    json!({"step": step, "attempt": attempt, "files": paths, "reason": format!("the workspace refused the revision: {error}"), "by": "workspace"}),
                )?;
            }
        }
        Ok(())
    }
}
