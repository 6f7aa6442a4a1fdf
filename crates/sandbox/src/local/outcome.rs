//! From what was observed outside the sandbox to an [`Outcome`]. The report channel is
//! written by the harness, but the step's code shares the harness's interpreter, so after
//! "started" nothing on it is trusted for policy: only a well-formed result counts as success,
//! a needs_repair is never believed, and for a networked step anything else is `unknown`
//! (G9, G14). How the sandbox ended (timeout, OOM, signal) always wins over what it said.

use serde::Deserialize;

use crate::{NetworkMode, Outcome, StepError, UnknownReason};

/// How the sandbox's first process ended, as the helper saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Termination {
    Exited {
        code: i32,
    },
    Signaled {
        signal: i32,
    },
    /// The helper vanished without saying.
    Unobserved,
}

/// Everything the classification looks at.
#[derive(Debug, Clone)]
pub(crate) struct Observed<'a> {
    pub network: NetworkMode,
    pub termination: Termination,
    /// CPU seconds the first process used, from the helper's wait4.
    pub cpu_millis: u64,
    pub cpu_limit_seconds: u64,
    pub timed_out: bool,
    pub oom_killed: bool,
    pub report_overflow: bool,
    /// The report channel's bytes.
    pub report: &'a [u8],
    /// The end of stderr, for a crash's detail.
    pub stderr_tail: String,
}

/// One line of the report channel.
#[derive(Debug, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
enum Event {
    /// The harness loaded and waits for its request (no bearing on the outcome).
    Ready,
    Started,
    Result {
        json: String,
    },
    Error {
        kind: String,
        message: String,
        traceback: Vec<String>,
    },
    HarnessError {
        detail: String,
    },
}

pub(crate) fn classify(observed: &Observed<'_>) -> Outcome {
    let unknown = |reason| Outcome::Unknown { reason };
    if observed.timed_out {
        return unknown(UnknownReason::WallTimeout);
    }
    if observed.oom_killed {
        return unknown(UnknownReason::MemoryLimit);
    }
    if observed.report_overflow {
        return unknown(UnknownReason::OutputLimit);
    }
    match observed.termination {
        Termination::Signaled { signal } => {
            // Only the platform (timeout, output flood: flagged above), the OOM killer
            // (flagged above) and RLIMIT_CPU can SIGKILL a pid namespace's first process. The
            // kernel enforces RLIMIT_CPU on tick-sampled time while wait4 reports precise
            // runtime, which on a loaded or virtual machine can be well below the limit at the
            // moment of the kill: half the limit is the threshold.
            let cpu_exhausted = observed.cpu_millis.saturating_mul(2)
                >= observed.cpu_limit_seconds.saturating_mul(1000);
            if signal == libc::SIGXCPU || (signal == libc::SIGKILL && cpu_exhausted) {
                return unknown(UnknownReason::CpuLimit);
            }
            return unknown(UnknownReason::Killed { signal });
        }
        Termination::Unobserved => {
            return unknown(UnknownReason::Crashed {
                detail: String::from(
                    "the jail helper ended without reporting how the sandbox ended",
                ),
            });
        }
        Termination::Exited { .. } => {}
    }
    let mut lines: Vec<&[u8]> = observed
        .report
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .collect();
    // The harness's first line says it is loaded; it carries nothing about the step.
    if lines
        .first()
        .is_some_and(|line| matches!(serde_json::from_slice::<Event>(line), Ok(Event::Ready)))
    {
        lines.remove(0);
    }
    let started_at = lines
        .iter()
        .position(|line| matches!(serde_json::from_slice::<Event>(line), Ok(Event::Started)));
    let Some(started_at) = started_at else {
        return before_start(&lines, observed);
    };
    after_start(&lines[started_at + 1..], observed)
}

/// Nothing of the step ran; the harness was intact while it wrote, so its word holds.
fn before_start(lines: &[&[u8]], observed: &Observed<'_>) -> Outcome {
    let Some(first) = lines.first() else {
        return Outcome::Failed {
            error: StepError {
                kind: String::from("SandboxStartFailed"),
                message: format!(
                    "the runtime ended before the step's code started ({:?}): {}",
                    observed.termination, observed.stderr_tail
                ),
                traceback: Vec::new(),
            },
            code_started: false,
        };
    };
    match serde_json::from_slice::<Event>(first) {
        Ok(Event::Error {
            kind,
            message,
            traceback,
        }) => Outcome::Failed {
            error: StepError {
                kind,
                message,
                traceback,
            },
            code_started: false,
        },
        Ok(Event::HarnessError { detail }) => Outcome::Failed {
            error: StepError {
                kind: String::from("HarnessError"),
                message: detail,
                traceback: Vec::new(),
            },
            code_started: false,
        },
        Ok(Event::Ready | Event::Started | Event::Result { .. }) | Err(_) => Outcome::Failed {
            error: StepError {
                kind: String::from("MalformedReport"),
                message: String::from(
                    "the harness reported something other than a start or an error",
                ),
                traceback: Vec::new(),
            },
            code_started: false,
        },
    }
}

/// The step's code ran: only a single well-formed result is success.
fn after_start(lines: &[&[u8]], observed: &Observed<'_>) -> Outcome {
    let offline = observed.network == NetworkMode::None;
    let untrusted = |detail: String| {
        if offline {
            Outcome::Failed {
                error: StepError {
                    kind: String::from("MalformedReport"),
                    message: detail,
                    traceback: Vec::new(),
                },
                code_started: true,
            }
        } else {
            Outcome::Unknown {
                reason: UnknownReason::MalformedReport { detail },
            }
        }
    };
    let [line] = lines else {
        return untrusted(format!(
            "expected exactly one report after the step started, got {}",
            lines.len()
        ));
    };
    match serde_json::from_slice::<Event>(line) {
        Ok(Event::Result { json }) => {
            if serde_json::from_str::<serde_json::Value>(&json).is_ok() {
                Outcome::Succeeded {
                    result_json: json.into(),
                }
            } else {
                untrusted(String::from("the result is not valid JSON"))
            }
        }
        Ok(Event::Error {
            kind,
            message,
            traceback,
        }) => {
            if offline {
                Outcome::Failed {
                    error: StepError {
                        kind,
                        message,
                        traceback,
                    },
                    code_started: true,
                }
            } else {
                Outcome::Unknown {
                    reason: UnknownReason::Crashed {
                        detail: format!(
                            "the step raised {kind} after its code started with network access: {message}"
                        ),
                    },
                }
            }
        }
        Ok(Event::Ready | Event::Started | Event::HarnessError { .. }) | Err(_) => untrusted(
            String::from("the report after the step started is not a well-formed result"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(network: NetworkMode, report: &[u8]) -> Observed<'_> {
        Observed {
            network,
            termination: Termination::Exited { code: 0 },
            cpu_millis: 10,
            cpu_limit_seconds: 30,
            timed_out: false,
            oom_killed: false,
            report_overflow: false,
            report,
            stderr_tail: String::new(),
        }
    }

    const STARTED: &str = "{\"event\":\"started\"}\n";

    /// G9: needs_repair is decided on the platform before any sandbox exists
    /// (`crate::imports`); the sandbox's word for it is never taken, before the start or after.
    #[test]
    fn g9_needs_repair_is_never_taken_from_the_sandbox() {
        let before = b"{\"event\":\"needs_repair\",\"module\":\"requests\",\"detail\":\"x\"}\n";
        assert!(matches!(
            classify(&observed(NetworkMode::None, before)),
            Outcome::Failed {
                code_started: false,
                ..
            }
        ));
        let after = format!(
            "{STARTED}{{\"event\":\"needs_repair\",\"module\":\"requests\",\"detail\":\"x\"}}\n"
        );
        assert!(matches!(
            classify(&observed(NetworkMode::None, after.as_bytes())),
            Outcome::Failed {
                code_started: true,
                ..
            }
        ));
        assert!(matches!(
            classify(&observed(NetworkMode::PublicEgress, after.as_bytes())),
            Outcome::Unknown {
                reason: UnknownReason::MalformedReport { .. }
            }
        ));
    }

    #[test]
    fn g14_networked_error_after_start_is_unknown() {
        let report = format!(
            "{STARTED}{{\"event\":\"error\",\"kind\":\"ValueError\",\"message\":\"m\",\"traceback\":[]}}\n"
        );
        assert!(matches!(
            classify(&observed(NetworkMode::PublicEgress, report.as_bytes())),
            Outcome::Unknown {
                reason: UnknownReason::Crashed { .. }
            }
        ));
        assert!(matches!(
            classify(&observed(NetworkMode::None, report.as_bytes())),
            Outcome::Failed {
                code_started: true,
                ..
            }
        ));
    }

    #[test]
    fn g14_a_second_report_after_the_result_is_not_trusted() {
        let report = format!(
            "{STARTED}{{\"event\":\"result\",\"json\":\"1\"}}\n{{\"event\":\"result\",\"json\":\"2\"}}\n"
        );
        assert!(matches!(
            classify(&observed(NetworkMode::PublicEgress, report.as_bytes())),
            Outcome::Unknown { .. }
        ));
        let single = format!("{STARTED}{{\"event\":\"result\",\"json\":\"[1, 2]\"}}\n");
        assert_eq!(
            classify(&observed(NetworkMode::PublicEgress, single.as_bytes())),
            Outcome::Succeeded {
                result_json: String::from("[1, 2]").into()
            }
        );
    }

    #[test]
    fn g10_how_the_sandbox_ended_wins_over_what_it_said() {
        let report = format!("{STARTED}{{\"event\":\"result\",\"json\":\"1\"}}\n");
        let mut timed_out = observed(NetworkMode::None, report.as_bytes());
        timed_out.timed_out = true;
        assert_eq!(
            classify(&timed_out),
            Outcome::Unknown {
                reason: UnknownReason::WallTimeout
            }
        );
        let mut killed = observed(NetworkMode::None, report.as_bytes());
        killed.termination = Termination::Signaled {
            signal: libc::SIGKILL,
        };
        assert_eq!(
            classify(&killed),
            Outcome::Unknown {
                reason: UnknownReason::Killed {
                    signal: libc::SIGKILL
                }
            }
        );
        killed.cpu_millis = 30_000;
        assert_eq!(
            classify(&killed),
            Outcome::Unknown {
                reason: UnknownReason::CpuLimit
            }
        );
    }
}
