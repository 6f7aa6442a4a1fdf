//! Adapts a sandbox backend ([`sandbox::Isolation`]) to the engine's [`engine::StepExecutor`].
//!
//! The engine knows no Linux; the sandbox knows no runs. This is the one place that translates
//! between them, and it decides what an error of the sandbox itself means for the failure
//! policy: an error that can only happen before the step's code started is `refused`; any other
//! is `unknown` for a networked step (G14) and a failure after the code started otherwise.

use std::sync::Arc;

use engine::{
    CodePhase, CopyBackRefusal, ExecutionOutcome, ExecutionReport, ExecutionRequest, FileChange,
    StepExecutor,
};
use redact::{Redactor, ScrubSets};
use sandbox::{EnvVar, Invocation, Isolation, Limits, NetworkMode, Outcome, PythonPin};
use zeroize::Zeroizing;

/// Runs code steps in a sandbox backend; agent steps are refused until an agent runtime and a
/// model provider exist (failing closed: nothing runs that could not be isolated as declared).
pub struct SandboxExecutor {
    backend: Arc<dyn Isolation>,
    /// Where the copy-back screen gets every value of the run's account (G12).
    scrub_sets: ScrubSets,
    limits: Limits,
}

impl SandboxExecutor {
    pub fn new(
        backend: Arc<dyn Isolation>,
        scrub_sets: ScrubSets,
        limits: Limits,
    ) -> SandboxExecutor {
        SandboxExecutor {
            backend,
            scrub_sets,
            limits,
        }
    }

    fn refused(&self, reason: String) -> ExecutionReport {
        ExecutionReport::outcome_only(ExecutionOutcome::Refused { reason }, self.backend.name())
    }
}

/// Lets the copy-back filter ask the redactor, without handing it any plaintext; an archive it
/// cannot open is refused when the step held credentials.
struct RedactorScreen {
    redactor: Redactor,
    holds_credentials: bool,
}

impl sandbox::copyback::SecretScreen for RedactorScreen {
    fn holds_secret(&self, content: &[u8]) -> bool {
        self.redactor.holds_secret(content)
    }

    fn unreadable_archives(&self) -> workspace::UnreadableArchives {
        if self.holds_credentials {
            workspace::UnreadableArchives::Refuse
        } else {
            workspace::UnreadableArchives::Accept
        }
    }
}

impl StepExecutor for SandboxExecutor {
    fn execute(&self, request: ExecutionRequest<'_>) -> ExecutionReport {
        let code = match request.step.body() {
            spec::StepBody::Code { source } => source.clone(),
            spec::StepBody::Agent { agent, .. } => {
                return self.refused(format!(
                    "step `{}` hands its task to the agent `{agent}`, and this server has no \
                     agent runtime or model provider configured yet; nothing was run",
                    request.step.id()
                ));
            }
        };
        // The screen knows every value of the run's account, not only the run's: a file
        // holding any of them must not reach the account's workspace.
        let screen = match self.scrub_sets.for_account(request.account) {
            Ok(redactor) => RedactorScreen {
                redactor,
                holds_credentials: !request.env.is_empty(),
            },
            Err(error) => {
                return self.refused(format!(
                    "the copy-back screen could not get the account's current values: {error}"
                ));
            }
        };
        let network = match request.step.network() {
            spec::Network::None => NetworkMode::None,
            spec::Network::PublicEgress => NetworkMode::PublicEgress,
        };
        let invocation = Invocation {
            python: PythonPin {
                major: request.python.major,
                minor: request.python.minor,
            },
            code,
            inputs_json: request.inputs.to_string(),
            env: request
                .env
                .iter()
                .map(|(name, value)| EnvVar {
                    name: name.clone(),
                    value: Zeroizing::new(value.dangerously_expose().to_owned()),
                })
                .collect(),
            network,
            limits: self.limits.clone(),
            work_dir: request.work_dir.to_path_buf(),
            screen: Arc::new(screen),
        };
        match self.backend.run(invocation) {
            Ok(observation) => report(observation),
            Err(error) => sandbox_error_report(&error, network, self.backend.name()),
        }
    }
}

fn report(observation: sandbox::Observation) -> ExecutionReport {
    let outcome = match observation.outcome {
        Outcome::Succeeded { result_json } => match engine::StepOutput::from_json_text(result_json)
        {
            Ok(output) => ExecutionOutcome::Succeeded { output },
            // The backend only reports well-formed JSON; anything else is not a result.
            Err(error) => ExecutionOutcome::Unknown {
                reason: format!("the sandbox reported a result that is not JSON: {error}"),
            },
        },
        // Code that does not compile never started: it goes to repair like a third-party
        // import (DESIGN: the assistant repairs "a third-party import, a syntax error").
        Outcome::Failed {
            error,
            code_started: false,
        } if error.kind == "SyntaxError" => ExecutionOutcome::NeedsRepair {
            module: String::new(),
            detail: format!("{}: {}", error.kind, error.message),
        },
        Outcome::Failed {
            error,
            code_started,
        } => ExecutionOutcome::Failed {
            error: engine::StepError {
                kind: error.kind,
                message: error.message,
                traceback: error.traceback.join("\n"),
            },
            phase: if code_started {
                CodePhase::CodeStarted
            } else {
                CodePhase::BeforeCode
            },
        },
        Outcome::NeedsRepair { module, detail } => ExecutionOutcome::NeedsRepair { module, detail },
        Outcome::Unknown { reason } => ExecutionOutcome::Unknown {
            reason: unknown_reason(&reason),
        },
        Outcome::Refused { reason } => ExecutionOutcome::Refused { reason },
    };
    let mut isolation_notes = observation.isolation_notes;
    if observation.output_truncated {
        isolation_notes.push("printed output went over the limit and was cut".to_owned());
    }
    if !observation.copy_back.deleted.is_empty() {
        // Deletions are not carried into the workspace: a step can add and change files only.
        isolation_notes.push(format!(
            "{} file(s) removed inside the sandbox stay in the workspace",
            observation.copy_back.deleted.len()
        ));
    }
    ExecutionReport {
        outcome,
        stdout: observation.stdout,
        stderr: observation.stderr,
        interpreter_version: Some(observation.interpreter),
        backend: observation.backend.to_owned(),
        isolation_notes,
        file_changes: observation
            .copy_back
            .files
            .into_iter()
            .map(|file| FileChange {
                path: file.path.to_string(),
                bytes: file.contents,
            })
            .collect(),
        copy_back_refusals: observation
            .copy_back
            .refusals
            .into_iter()
            .map(|refusal| CopyBackRefusal {
                // The reason alone: the engine may withhold the path, and must not find it
                // again in the reason.
                reason: refusal.reason.to_string(),
                path: refusal.path,
            })
            .collect(),
    }
}

fn unknown_reason(reason: &sandbox::UnknownReason) -> String {
    match reason {
        sandbox::UnknownReason::WallTimeout => "the step ran past its wall-clock limit".to_owned(),
        sandbox::UnknownReason::CpuLimit => "the step used up its CPU time".to_owned(),
        sandbox::UnknownReason::MemoryLimit => "the step ran out of memory".to_owned(),
        sandbox::UnknownReason::Killed { signal } => {
            format!("the step was killed by signal {signal}")
        }
        sandbox::UnknownReason::Crashed { detail } => format!("the sandbox crashed: {detail}"),
        sandbox::UnknownReason::MalformedReport { detail } => {
            format!("the step's report could not be trusted: {detail}")
        }
        sandbox::UnknownReason::OutputLimit => {
            "the step's result went over the output limit".to_owned()
        }
    }
}

/// What an error of the sandbox itself means for the step.
fn sandbox_error_report(
    error: &sandbox::Error,
    network: NetworkMode,
    backend: &str,
) -> ExecutionReport {
    let reason = error.to_string();
    let before_code = matches!(
        error,
        sandbox::Error::RuntimeNotAvailable { .. }
            | sandbox::Error::RuntimeDiscovery { .. }
            | sandbox::Error::CgroupControllerMissing { .. }
            | sandbox::Error::SlotsExhausted { .. }
            | sandbox::Error::HelperSpawn { .. }
            | sandbox::Error::LayerFailed { .. }
            | sandbox::Error::Plan { .. }
            | sandbox::Error::Net(_)
    );
    let outcome = if before_code {
        ExecutionOutcome::Refused { reason }
    } else if network == NetworkMode::PublicEgress {
        ExecutionOutcome::Unknown { reason }
    } else {
        ExecutionOutcome::Failed {
            error: engine::StepError {
                kind: "SandboxError".to_owned(),
                message: reason,
                traceback: String::new(),
            },
            phase: CodePhase::CodeStarted,
        }
    };
    ExecutionReport::outcome_only(outcome, backend)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed_refusal(path: &str) -> sandbox::Observation {
        sandbox::Observation {
            outcome: Outcome::Succeeded {
                result_json: "1".to_owned(),
            },
            stdout: Vec::new(),
            stderr: Vec::new(),
            output_truncated: false,
            copy_back: sandbox::copyback::CopyBack {
                refusals: vec![sandbox::copyback::Refusal {
                    path: path.to_owned(),
                    reason: sandbox::copyback::RefusalReason::SymlinkOrHardlink,
                }],
                ..sandbox::copyback::CopyBack::default()
            },
            interpreter: "3.11.2".to_owned(),
            backend: "local",
            isolation_notes: Vec::new(),
        }
    }

    /// G12 (review "credentials" A2): the engine withholds a refused path that holds a value of
    /// the account, so the refusal's reason must not repeat the path.
    #[test]
    fn g12_a_copy_back_refusal_reason_never_repeats_its_path() {
        let path = "link_named-after-a-value-3Fq9";
        let report = report(observed_refusal(path));
        let refusal = &report.copy_back_refusals[0];
        assert_eq!(refusal.path, path);
        assert!(!refusal.reason.contains(path), "{}", refusal.reason);
        assert!(
            refusal.reason.contains("symbolic link"),
            "{}",
            refusal.reason
        );
    }
}
