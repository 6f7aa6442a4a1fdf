//! Adapts a sandbox backend ([`sandbox::Isolation`]) to the engine's [`engine::StepExecutor`].
//!
//! The engine knows no Linux; the sandbox knows no runs. This is the one place that translates
//! between them, and it decides what an error of the sandbox itself means for the failure
//! policy: an error that can only happen before the step's code started is `refused`; any other
//! is `unknown` for a networked step (G14) and a failure after the code started otherwise.

use std::sync::Arc;

use engine::{
    CodePhase, CopyBackRefusal, ExecutionOutcome, ExecutionReport, ExecutionRequest, StepExecutor,
};
use redact::{Redactor, ScrubSets, SecretValue};
use sandbox::{EnvVar, Invocation, Isolation, Limits, NetworkMode, Outcome, PythonPin};
use zeroize::Zeroizing;

/// Runs code steps in a sandbox backend, and agent steps through the agent runtime (whose
/// scripts run in the same backend); without a runtime, agent steps are refused (failing
/// closed: nothing runs that could not be isolated as declared).
pub struct SandboxExecutor {
    backend: Arc<dyn Isolation>,
    agents: Option<Arc<crate::agent_step::AgentRuntime>>,
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
            agents: None,
            scrub_sets,
            limits,
        }
    }

    /// Agent steps run through `runtime`.
    pub fn with_agents(mut self, runtime: Arc<crate::agent_step::AgentRuntime>) -> SandboxExecutor {
        self.agents = Some(runtime);
        self
    }

    fn refused(&self, reason: String) -> ExecutionReport {
        ExecutionReport::outcome_only(ExecutionOutcome::Refused { reason }, self.backend.name())
    }

    /// The copy-back screen of `account`: every value of the account, not only the run's, so
    /// a file holding any of them never reaches its workspace.
    fn screen(
        &self,
        account: &storage::AccountId,
        holds_credentials: bool,
    ) -> Result<RedactorScreen, String> {
        match self.scrub_sets.for_account(account) {
            Ok(redactor) => Ok(RedactorScreen {
                redactor,
                holds_credentials,
            }),
            Err(error) => Err(format!(
                "the copy-back screen could not get the account's current values: {error}"
            )),
        }
    }

    /// Runs `invocation` in the backend and says what was observed: an error of the sandbox
    /// itself is judged by its invocation's network (G14).
    fn observe(&self, invocation: Invocation) -> ExecutionReport {
        let limits = invocation.limits.clone();
        let network = invocation.network;
        match self.backend.run(invocation) {
            Ok(observation) => report(observation, &limits),
            Err(error) => sandbox_error_report(&error, network, self.backend.name()),
        }
    }
}

/// One variable of a step's or a tool's environment, its value copied into memory that is
/// zeroed when dropped.
pub(crate) fn env_var(name: &str, value: &SecretValue) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Zeroizing::new(value.dangerously_expose().to_owned()),
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
    fn network_of(
        &self,
        query: engine::NetworkQuery<'_>,
    ) -> Result<spec::Network, engine::StepRefusal> {
        match (query.step.body(), &self.agents) {
            (spec::StepBody::Agent { agent, .. }, Some(runtime)) => {
                runtime.network_of(query.account, query.files, query.definitions, agent)
            }
            _ => Ok(query.step.network()),
        }
    }

    /// Runs one custom tool once (issue 40): its script in a fresh sandbox of this backend,
    /// with the agent's network and limits, the arguments checked as a model's call is, and
    /// in its environment the agent's `secrets:` only when asked, nothing else.
    fn test_tool(
        &self,
        run: engine::ToolTestRun<'_>,
    ) -> Result<ExecutionReport, engine::StepRefusal> {
        // The arguments were checked against the tool's declaration by the engine.
        let network = run.agent.network();
        let python = sandbox_python(run.python);
        self.backend
            .availability(python, network)
            .map_err(|missing| {
                engine::StepRefusal::Unavailable(unavailable_message(
                    &format!("the tool test of {}", run.tool),
                    &missing,
                ))
            })?;
        let env: Vec<EnvVar> = if run.with_secrets {
            let Some(runtime) = &self.agents else {
                return Err(engine::StepRefusal::Setting(
                    "this server has no agent runtime, so an agent's secrets cannot be read"
                        .to_owned(),
                ));
            };
            runtime
                .agent_secrets(run.account, run.agent)
                .map_err(engine::StepRefusal::Store)?
                .iter()
                .map(|(name, value)| env_var(name, value))
                .collect()
        } else {
            Vec::new()
        };
        let screen = self
            .screen(run.account, !env.is_empty())
            .map_err(engine::StepRefusal::Store)?;
        let limits = declared_limits(&self.limits, run.agent.limits());
        let invocation = Invocation {
            python,
            code: run.script.to_owned(),
            inputs_json: serde_json::Value::Object(run.arguments.clone()).to_string(),
            env,
            network,
            limits: limits.clone(),
            files: run.files.clone(),
            screen: Arc::new(screen),
            live: None,
        };
        Ok(self.observe(invocation))
    }

    fn execute(&self, request: ExecutionRequest<'_>) -> ExecutionReport {
        let code = match request.step.body() {
            spec::StepBody::Code { source } => source.clone(),
            spec::StepBody::Agent { agent, task } if self.agents.is_some() => {
                if let Some(runtime) = &self.agents {
                    return runtime.execute(request, agent, task);
                }
                return self.refused(String::new());
            }
            spec::StepBody::Agent { agent, .. } => {
                return self.refused(format!(
                    "step `{}` hands its task to the agent `{agent}`, and this server has no \
                     agent runtime or model provider configured yet; nothing was run",
                    request.step.id()
                ));
            }
        };
        let screen = match self.screen(request.account, !request.env.is_empty()) {
            Ok(screen) => screen,
            Err(reason) => return self.refused(reason),
        };
        let limits = declared_limits(&self.limits, request.step.limits());
        let network = request.step.network();
        let invocation = Invocation {
            python: sandbox_python(request.python),
            code,
            inputs_json: request.inputs.to_string(),
            env: request
                .env
                .iter()
                .map(|(name, value)| env_var(name, value))
                .collect(),
            network,
            limits: limits.clone(),
            files: request.files.clone(),
            screen: Arc::new(screen),
            live: request.live.clone().map(|sink| {
                let live: sandbox::LiveOutput = Arc::new(move |stream, bytes: &[u8]| {
                    sink.printed(
                        match stream {
                            sandbox::OutputStream::Stdout => engine::journal::PrintedStream::Stdout,
                            sandbox::OutputStream::Stderr => engine::journal::PrintedStream::Stderr,
                        },
                        bytes,
                    );
                });
                live
            }),
        };
        self.observe(invocation)
    }

    /// A code step's pinned Python and declared network, asked of the backend; an agent
    /// step's, its pinned agent's (the agent runtime judges it); each refusal names the setting
    /// that would fix it. An agent step on a server without an agent runtime is left to
    /// `execute`, which refuses it with a record.
    fn availability(
        &self,
        query: engine::NetworkQuery<'_>,
        python: spec::PythonVersion,
    ) -> Result<(), engine::StepRefusal> {
        let pin = sandbox_python(python);
        match (query.step.body(), &self.agents) {
            (spec::StepBody::Code { .. }, _) => self
                .backend
                .availability(pin, query.step.network())
                .map_err(|missing| {
                    engine::StepRefusal::Unavailable(unavailable_message(query.step.id(), &missing))
                }),
            (spec::StepBody::Agent { agent, .. }, Some(runtime)) => runtime.availability(
                query.account,
                query.files,
                query.definitions,
                query.step,
                agent,
                pin,
            ),
            (spec::StepBody::Agent { .. }, None) => Ok(()),
        }
    }

    fn models_of(
        &self,
        query: engine::NetworkQuery<'_>,
    ) -> Result<Vec<engine::journal::PinnedModel>, engine::StepRefusal> {
        match (query.step.body(), &self.agents) {
            (spec::StepBody::Agent { agent, .. }, Some(runtime)) => {
                runtime.models_of(query.account, query.files, query.definitions, agent)
            }
            _ => Ok(Vec::new()),
        }
    }
}

/// The sandbox's interpreter pin for a workflow's `python:`.
pub fn sandbox_python(python: spec::PythonVersion) -> PythonPin {
    PythonPin {
        major: python.major,
        minor: python.minor,
    }
}

/// How a server gets an egress network, said in every refusal that lacks one.
const EGRESS_SETTING: &str = "start it with --egress-resolver IP (the one DNS server such \
                              steps may use; env STEPWARD_EGRESS_RESOLVER), and the host \
                              forwarding IPv4";

/// What a step needs and this server lacks, with the setting that would give it.
pub fn unavailable_message(step: &str, missing: &sandbox::Unavailable) -> String {
    match missing {
        sandbox::Unavailable::Python {
            requested,
            available,
        } => format!(
            "step {step} needs Python {requested} (the workflow's `python:`), and this server has \
             {available}: install python{requested} where runtime discovery looks \
             (/usr/bin/python3* and /usr/local/bin/python3*), or pin a version this server has"
        ),
        sandbox::Unavailable::EgressNotConfigured => format!(
            "step {step} declares `network: public_egress`, and this server has no egress \
             network: {EGRESS_SETTING}"
        ),
    }
}

/// What an agent step needs and this server lacks: `networked` names the agents of its
/// closure (the agent and the colleagues it may consult, G21) that declare `public_egress`.
pub fn agent_unavailable_message(
    step: &str,
    agent: &str,
    networked: &[&str],
    missing: &sandbox::Unavailable,
) -> String {
    match missing {
        sandbox::Unavailable::Python { .. } => unavailable_message(step, missing),
        sandbox::Unavailable::EgressNotConfigured => format!(
            "step {step} uses the agent `{agent}`, whose scripts and tools need \
             `network: public_egress` (declared by {}), and this server has no egress network: \
             {EGRESS_SETTING}",
            networked
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The executor's limits with what the step declared put over them (the spec held every
/// declared value to the operator's maxima already).
fn declared_limits(base: &Limits, declared: &spec::StepLimits) -> Limits {
    const MIB: u64 = 1024 * 1024;
    let mut limits = base.clone();
    if let Some(memory_mib) = declared.memory_mib {
        limits.memory_bytes = memory_mib.saturating_mul(MIB);
    }
    if let Some(timeout_s) = declared.timeout_s {
        limits.wall = std::time::Duration::from_secs(timeout_s);
    }
    if let Some(cpu_s) = declared.cpu_s {
        limits.cpu_seconds = cpu_s;
    }
    if let Some(output_kib) = declared.output_kib {
        limits.output_bytes =
            usize::try_from(output_kib.saturating_mul(1024)).unwrap_or(usize::MAX);
    }
    if let Some(work_mib) = declared.work_mib {
        limits.work_bytes = work_mib.saturating_mul(MIB);
    }
    limits
}

/// The limits an attempt ran under, as the note its record carries.
fn limits_note(limits: &Limits) -> String {
    format!(
        "limits: memory_mib {}, timeout_s {}, cpu_s {}, output_kib {}, work_mib {}",
        limits.memory_bytes / (1024 * 1024),
        limits.wall.as_secs(),
        limits.cpu_seconds,
        limits.output_bytes / 1024,
        limits.work_bytes / (1024 * 1024)
    )
}

fn report(observation: sandbox::Observation, limits: &Limits) -> ExecutionReport {
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
            reason: unknown_reason(&reason, limits),
        },
        Outcome::Refused { reason } => ExecutionOutcome::Refused { reason },
    };
    // The record states the limits the attempt ran under (issue 13), first.
    let mut isolation_notes = vec![limits_note(limits)];
    isolation_notes.extend(observation.isolation_notes);
    if observation.output_truncated {
        isolation_notes.push(format!(
            "printed output went over the limit (output_kib {}) and was cut",
            limits.output_bytes / 1024
        ));
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
        file_changes: observation.copy_back.files.into_iter().collect(),
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

/// Why an outcome is unknown; a step killed by a limit says which (issue 13).
pub(crate) fn unknown_reason(reason: &sandbox::UnknownReason, limits: &Limits) -> String {
    match reason {
        sandbox::UnknownReason::WallTimeout => format!(
            "the step ran past its wall-clock limit (timeout_s {})",
            limits.wall.as_secs()
        ),
        sandbox::UnknownReason::CpuLimit => format!(
            "the step used up its CPU time limit (cpu_s {})",
            limits.cpu_seconds
        ),
        sandbox::UnknownReason::MemoryLimit => format!(
            "the step ran out of memory: it reached its memory limit (memory_mib {})",
            limits.memory_bytes / (1024 * 1024)
        ),
        sandbox::UnknownReason::Killed { signal } => {
            format!("the step was killed by signal {signal}")
        }
        sandbox::UnknownReason::Crashed { detail } => format!("the sandbox crashed: {detail}"),
        sandbox::UnknownReason::MalformedReport { detail } => {
            format!("the step's report could not be trusted: {detail}")
        }
        sandbox::UnknownReason::OutputLimit => format!(
            "the step's result went over the output limit (output_kib {})",
            limits.output_bytes / 1024
        ),
    }
}

/// What an error of the sandbox itself means for the step.
fn sandbox_error_report(
    error: &sandbox::Error,
    network: NetworkMode,
    backend: &str,
) -> ExecutionReport {
    // The whole chain: each sandbox error states its own context and leaves its cause to
    // `source()` (issue 18 §2).
    let reason = error.with_causes();
    let outcome = if before_code(error) {
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

/// Whether an error of the sandbox can only happen before any of the step's code started.
pub fn before_code(error: &sandbox::Error) -> bool {
    matches!(
        error,
        sandbox::Error::RuntimeNotAvailable { .. }
            | sandbox::Error::RuntimeDiscovery { .. }
            | sandbox::Error::CgroupControllerMissing { .. }
            | sandbox::Error::SlotsExhausted { .. }
            | sandbox::Error::HelperSpawn { .. }
            | sandbox::Error::LayerFailed { .. }
            | sandbox::Error::Plan { .. }
            | sandbox::Error::Net(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed_refusal(path: &str) -> sandbox::Observation {
        sandbox::Observation {
            outcome: Outcome::Succeeded {
                result_json: "1".to_owned().into(),
            },
            stdout: Zeroizing::default(),
            stderr: Zeroizing::default(),
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
        let report = report(observed_refusal(path), &Limits::default());
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
