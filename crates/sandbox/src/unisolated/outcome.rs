//! From what was observed of the unisolated child to an [`Outcome`]: only what the harness
//! reported before "started" is trusted, since the step shares its interpreter (G9, G14).

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use crate::unisolated::child::Watched;
use crate::{NetworkMode, Outcome, StepError, UnknownReason};

/// One line of the harness's report channel.
#[derive(serde::Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum ReportEvent {
    Started,
    Result {
        json: String,
    },
    Error {
        kind: String,
        message: String,
        #[serde(default)]
        traceback: Vec<String>,
    },
    HarnessError {
        detail: String,
    },
}

/// Turns what was observed into an outcome. Only what the harness reported before "started"
/// is trusted (the step shares its interpreter); for a networked step anything but one
/// well-formed result after "started" is unknown (G9, G14).
pub(crate) fn interpret(watched: &Watched, network: NetworkMode) -> Outcome {
    let networked = network == NetworkMode::PublicEgress;
    if watched.timed_out {
        return Outcome::Unknown {
            reason: UnknownReason::WallTimeout,
        };
    }
    let mut events = Vec::new();
    let mut malformed = watched.report_truncated;
    for line in watched
        .report
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
    {
        match serde_json::from_slice::<ReportEvent>(line) {
            Ok(event) => events.push(event),
            Err(_) => malformed = true,
        }
    }
    if watched.report.last().is_some_and(|byte| *byte != b'\n') {
        malformed = true;
    }
    let started = events
        .iter()
        .position(|event| matches!(event, ReportEvent::Started));
    if let Some(reason) = killed_reason(watched.status) {
        return if started.is_some() || networked {
            Outcome::Unknown { reason }
        } else {
            Outcome::Unknown {
                reason: UnknownReason::Crashed {
                    detail: String::from("the harness died before the step's code started"),
                },
            }
        };
    }
    match started {
        None => match (events.as_slice(), malformed) {
            (
                [
                    ReportEvent::Error {
                        kind,
                        message,
                        traceback,
                    },
                ],
                false,
            ) => Outcome::Failed {
                error: StepError {
                    kind: kind.clone(),
                    message: message.clone(),
                    traceback: traceback.clone(),
                },
                code_started: false,
            },
            ([ReportEvent::HarnessError { detail }], false) => Outcome::Unknown {
                reason: UnknownReason::Crashed {
                    detail: format!("the harness failed: {detail}"),
                },
            },
            _ => Outcome::Unknown {
                reason: UnknownReason::MalformedReport {
                    detail: String::from(
                        "the harness reported nothing usable before the step started",
                    ),
                },
            },
        },
        Some(index) => {
            let after = &events[index + 1..];
            let clean_exit = watched.status.is_some_and(|status| status.success());
            match (after, malformed, clean_exit) {
                ([ReportEvent::Result { json }], false, true)
                    if serde_json::from_str::<serde_json::Value>(json).is_ok() =>
                {
                    Outcome::Succeeded {
                        result_json: json.clone().into(),
                    }
                }
                (
                    [
                        ReportEvent::Error {
                            kind,
                            message,
                            traceback,
                        },
                    ],
                    false,
                    true,
                ) if !networked => Outcome::Failed {
                    error: StepError {
                        kind: kind.clone(),
                        message: message.clone(),
                        traceback: traceback.clone(),
                    },
                    code_started: true,
                },
                _ => Outcome::Unknown {
                    reason: UnknownReason::MalformedReport {
                        detail: String::from(
                            "after the step's code started, the report was not one well-formed \
                             result followed by a clean exit",
                        ),
                    },
                },
            }
        }
    }
}

/// Why the main process ended abnormally, if it did.
fn killed_reason(status: Option<ExitStatus>) -> Option<UnknownReason> {
    let status = status?;
    let signal = status.signal()?;
    Some(match signal {
        libc::SIGXCPU => UnknownReason::CpuLimit,
        libc::SIGXFSZ => UnknownReason::Crashed {
            detail: String::from("the step went over the file-size limit"),
        },
        other => UnknownReason::Killed { signal: other },
    })
}
