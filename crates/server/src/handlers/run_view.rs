//! What the run page shows, built from the run's typed journal: one card per step (its latest
//! attempt's status, inputs, output, printed text, error and refusals) and the timeline in
//! words. Pure functions of the journal, so every sentence is tested without a server.
//!
//! Everything here was scrubbed when it was written and is scrubbed again on its way out
//! (`served.rs`); the templates escape it.

use std::collections::BTreeMap;

use engine::journal::{Entry, Event, PrintedStream, RefusedBy, RefusedFiles, SupervisorChoice};
use serde_json::Value;
use storage::{Actor, AttemptStatus, DecisionKind, Door, NetworkMode, RunStatus};

use crate::html::when;

/// The most characters of a pretty-printed value a card shows; the rest is one click away in
/// the raw events.
const MAX_SHOWN_CHARS: usize = 20_000;

/// How the page scrubs what it shows, with the account's values as they are now: text as
/// text, and a JSON value leaf by leaf *before* it is pretty-printed and cut (a value's
/// JSON-then-HTML form is not one the served scrub of the page's bytes knows, and a cut could
/// halve a value).
pub(crate) struct Scrub<'a> {
    pub(crate) text: Box<dyn Fn(&str) -> String + 'a>,
    pub(crate) json: Box<dyn Fn(&Value) -> Value + 'a>,
}

impl<'a> Scrub<'a> {
    /// Scrubbing with `redactor`: the account's values as they are now (G16), applied to what a
    /// page shows before it is formatted.
    pub(crate) fn with(redactor: &'a redact::Redactor) -> Scrub<'a> {
        Scrub {
            text: Box::new(|text| redactor.scrub(text).get().clone()),
            json: Box::new(|value| redactor.scrub_json(value).get().clone()),
        }
    }

    pub(crate) fn text(&self, text: &str) -> String {
        (self.text)(text)
    }

    pub(crate) fn pretty(&self, value: &Value) -> String {
        pretty(&(self.json)(value))
    }
}

/// A status as people read it, and the name the stylesheet colours it by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Status {
    /// The stable name (`waiting_approval`), the badge's class.
    pub(crate) name: String,
    /// The words (`waiting for approval`).
    pub(crate) words: &'static str,
}

impl Status {
    pub(crate) fn of_run(status: &str) -> Status {
        let words = match status {
            "queued" => "queued",
            "running" => "running",
            "waiting_approval" => "waiting for approval",
            "needs_repair" => "needs repair",
            "needs_attention" => "needs attention",
            "succeeded" => "succeeded",
            "failed" => "failed",
            "stopped" => "stopped",
            _ => "in an unknown state",
        };
        Status {
            name: status.to_owned(),
            words,
        }
    }

    pub(crate) fn of_attempt(status: &str) -> Status {
        let words = match status {
            "running" => "running",
            "succeeded" => "succeeded",
            "failed" => "failed",
            "unknown" => "outcome unknown",
            "needs_repair" => "needs repair",
            "refused" => "refused",
            "not_started" => "not started",
            _ => "in an unknown state",
        };
        Status {
            name: status.to_owned(),
            words,
        }
    }
}

/// A file the copy-back refused, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) what: String,
    pub(crate) by: &'static str,
    pub(crate) reason: String,
}

/// What one stream of an attempt printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Printed {
    pub(crate) stream: &'static str,
    pub(crate) text: String,
    /// How many bytes the step printed before scrubbing and bounding.
    pub(crate) printed_bytes: u64,
}

/// An error the step's code raised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) kind: String,
    pub(crate) message: String,
    pub(crate) traceback: String,
}

/// One tool call of an agent step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ToolCallView {
    pub(crate) call: String,
    pub(crate) tool: String,
    pub(crate) arguments: String,
    /// `ok`, `error`, `refused`, ... as the agent runtime recorded it; `running` until then.
    pub(crate) outcome: String,
    pub(crate) result: String,
}

/// One step of the run page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StepCard {
    pub(crate) step: String,
    pub(crate) status: Status,
    /// 0 before the step's first attempt.
    pub(crate) attempt: u32,
    pub(crate) network: Option<&'static str>,
    pub(crate) duration: Option<String>,
    /// When the running attempt started (milliseconds since the epoch), for the page's clock.
    pub(crate) running_since: Option<i64>,
    /// What the running attempt printed so far, scrubbed as the record is (issue 38).
    pub(crate) live: Vec<Printed>,
    pub(crate) inputs: Option<String>,
    /// What the attempt produced, shaped for reading (issue 42, point 2).
    pub(crate) output: Option<crate::handlers::value_view::ValueView>,
    pub(crate) reason: Option<String>,
    pub(crate) error: Option<Failure>,
    pub(crate) printed: Vec<Printed>,
    pub(crate) refusals: Vec<Refusal>,
    /// Files the attempt wrote to the workspace.
    pub(crate) wrote: Vec<String>,
    /// An agent step's tool calls, in order.
    pub(crate) tool_calls: Vec<ToolCallView>,
    /// Every refusal of the attempt: copy-back files, refused tool calls and paths, a
    /// refused attempt, a refused supervisor retry (G22: counted per step).
    pub(crate) refusal_count: usize,
    /// An agent loop limit the attempt reached.
    pub(crate) limit: Option<String>,
    /// What the supervisor decided about this attempt, and why.
    pub(crate) supervisor: Option<String>,
    /// The step's earlier attempts, oldest first: each stays reachable from the card (issue
    /// 42, point 4).
    pub(crate) earlier: Vec<EarlierAttempt>,
}

/// An attempt of a step before its latest: how it ended and why, what it produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EarlierAttempt {
    pub(crate) attempt: u32,
    pub(crate) status: Status,
    pub(crate) duration: Option<String>,
    pub(crate) reason: Option<String>,
    pub(crate) error: Option<Failure>,
    pub(crate) output: Option<crate::handlers::value_view::ValueView>,
    pub(crate) supervisor: Option<String>,
}

impl StepCard {
    fn new(step: &str) -> StepCard {
        StepCard {
            step: step.to_owned(),
            status: Status::of_attempt("not_started"),
            attempt: 0,
            network: None,
            duration: None,
            running_since: None,
            live: Vec::new(),
            inputs: None,
            output: None,
            reason: None,
            error: None,
            printed: Vec::new(),
            refusals: Vec::new(),
            wrote: Vec::new(),
            tool_calls: Vec::new(),
            refusal_count: 0,
            limit: None,
            supervisor: None,
            earlier: Vec::new(),
        }
    }
}

/// One line of the timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TimelineLine {
    pub(crate) at: String,
    pub(crate) text: String,
}

/// A value pretty-printed for a card, cut with a note when it is very long.
fn pretty(value: &Value) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    if text.chars().count() <= MAX_SHOWN_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(MAX_SHOWN_CHARS).collect();
    cut.push_str("\n… (cut here; the whole value is in the raw events)");
    cut
}

pub(crate) fn duration(millis: i64) -> String {
    match millis {
        ..0 => "0 ms".to_owned(),
        0..1_000 => format!("{millis} ms"),
        1_000..60_000 => format!("{:.1} s", millis as f64 / 1_000.0),
        _ => format!("{} min {} s", millis / 60_000, (millis % 60_000) / 1_000),
    }
}

/// How long a run took from `created` to `updated`; one that has not `ended`, how long so far
/// at `now` (milliseconds since the epoch).
pub(crate) fn took(created: i64, updated: i64, now: i64, ended: bool) -> String {
    if ended {
        duration(updated.saturating_sub(created).max(0))
    } else {
        format!("{} so far", duration(now.saturating_sub(created).max(0)))
    }
}

/// The cards of a run's steps, in `order` (the workflow's steps; a step the journal names that
/// is not in `order` is added after them). A running attempt's card says how long it has run
/// at `now` (milliseconds since the epoch), and shows what it printed so far (`live`).
pub(crate) fn step_cards(
    scrub: &Scrub<'_>,
    order: &[String],
    entries: &[Entry],
    now: i64,
    live: &[storage::LiveOutput],
) -> Vec<StepCard> {
    let mut cards: Vec<StepCard> = order.iter().map(|step| StepCard::new(step)).collect();
    let mut started_at: BTreeMap<(String, u32), i64> = BTreeMap::new();
    for entry in entries {
        let (step, attempt) = match &entry.event {
            Event::AttemptStarted(started) => (&started.step, started.attempt),
            Event::AttemptFinished(finished) => (&finished.step, finished.attempt),
            Event::StepPrinted(printed) => (&printed.step, printed.attempt),
            Event::CopyBackRefused(refused) => (&refused.step, refused.attempt),
            Event::WorkspaceRevision(revision) => (&revision.step, revision.attempt),
            Event::Recovery(recovered) => (&recovered.step, recovered.attempt),
            Event::ToolCalled(called) => (&called.step, called.attempt),
            Event::ToolFinished(finished) => (&finished.step, finished.attempt),
            Event::ToolRefused(refused) => (&refused.step, refused.attempt),
            Event::AgentLimit(limit) => (&limit.step, limit.attempt),
            Event::SupervisorRetryRefused(refused) => (&refused.step, refused.attempt),
            Event::SupervisorDecision(decided) => (&decided.step, decided.attempt),
            _ => continue,
        };
        let index = match cards.iter().position(|card| &card.step == step) {
            Some(index) => index,
            None => {
                cards.push(StepCard::new(step));
                cards.len() - 1
            }
        };
        let card = &mut cards[index];
        if attempt > card.attempt {
            // A new attempt: the card shows the latest one, the earlier ones folded under it.
            let step = card.step.clone();
            let before = std::mem::replace(card, StepCard::new(&step));
            card.earlier = before.earlier;
            if before.attempt > 0 {
                card.earlier.push(EarlierAttempt {
                    attempt: before.attempt,
                    status: before.status,
                    duration: before.duration,
                    reason: before.reason,
                    error: before.error,
                    output: before.output,
                    supervisor: before.supervisor,
                });
            }
            card.attempt = attempt;
        } else if attempt < card.attempt {
            continue;
        }
        match &entry.event {
            Event::AttemptStarted(started) => {
                started_at.insert((step.clone(), attempt), entry.at.0);
                card.status = Status::of_attempt("running");
                card.network = Some(match started.network {
                    NetworkMode::None => "no network",
                    NetworkMode::PublicEgress => "the public internet",
                });
                card.inputs = Some(scrub.pretty(&started.inputs));
            }
            Event::AttemptFinished(finished) => {
                if finished.status == AttemptStatus::Refused {
                    card.refusal_count += 1;
                }
                card.status = Status::of_attempt(finished.status.as_str());
                card.output = finished.output.as_ref().map(|output| {
                    crate::handlers::value_view::ValueView::of(&(scrub.json)(output))
                });
                card.reason = finished
                    .reason
                    .as_deref()
                    .map(|reason| crate::handlers::console::prose(&scrub.text(reason)));
                card.error = finished.error.as_ref().map(|error| Failure {
                    kind: scrub.text(&error.kind),
                    message: scrub.text(&error.message),
                    traceback: scrub.text(&error.traceback),
                });
                if let Some(start) = started_at.get(&(step.clone(), attempt)) {
                    card.duration = Some(duration(entry.at.0 - start));
                }
            }
            Event::StepPrinted(printed) => card.printed.push(Printed {
                stream: match printed.stream {
                    PrintedStream::Stdout => "standard output",
                    PrintedStream::Stderr => "standard error",
                },
                text: scrub.text(&printed.text),
                printed_bytes: printed.printed_bytes,
            }),
            Event::CopyBackRefused(refused) => {
                card.refusal_count += 1;
                card.refusals.push(Refusal {
                    what: match &refused.refused {
                        RefusedFiles::File { path } => scrub.text(&format!("file {path}")),
                        RefusedFiles::Revision { files } => {
                            format!("every file of the revision ({})", files.len())
                        }
                    },
                    by: match refused.by {
                        RefusedBy::Sandbox => "the sandbox's copy-back filter",
                        RefusedBy::Engine => "the engine's screen",
                        RefusedBy::Workspace => "the workspace",
                    },
                    reason: scrub.text(&refused.reason),
                });
            }
            Event::WorkspaceRevision(revision) => card
                .wrote
                .extend(revision.files.iter().map(|file| scrub.text(&file.path))),
            Event::ToolCalled(called) => card.tool_calls.push(ToolCallView {
                call: called.call.clone(),
                tool: called.tool.clone(),
                arguments: scrub.pretty(&called.arguments),
                outcome: "running".to_owned(),
                result: String::new(),
            }),
            Event::ToolFinished(finished) => {
                if finished.outcome == "refused" {
                    card.refusal_count += 1;
                }
                let result = scrub.text(&finished.result);
                match card
                    .tool_calls
                    .iter_mut()
                    .find(|call| call.call == finished.call)
                {
                    Some(call) => {
                        call.outcome = finished.outcome.clone();
                        call.result = result;
                    }
                    None => card.tool_calls.push(ToolCallView {
                        call: finished.call.clone(),
                        tool: finished.tool.clone(),
                        arguments: String::new(),
                        outcome: finished.outcome.clone(),
                        result,
                    }),
                }
            }
            Event::ToolRefused(refused) => {
                card.refusal_count += 1;
                card.tool_calls.push(ToolCallView {
                    call: refused.call.clone(),
                    tool: refused.tool.clone(),
                    arguments: String::new(),
                    outcome: "refused".to_owned(),
                    result: scrub.text(&refused.reason),
                });
            }
            Event::AgentLimit(limit) => {
                card.limit = Some(scrub.text(&format!("{}: {}", limit.limit, limit.detail)));
            }
            Event::SupervisorRetryRefused(_) => card.refusal_count += 1,
            // The supervisor's reasoning on the card of the attempt it judged (issue 42,
            // point 4), not only in the timeline.
            Event::SupervisorDecision(decided) => {
                card.supervisor = Some(scrub.text(&supervisor_sentence(decided)));
            }
            Event::Recovery(recovered) => {
                card.status = Status::of_attempt(recovered.now.as_str());
                card.reason = Some(format!(
                    "after a restart this attempt was found {} and recorded as {}",
                    Status::of_attempt(recovered.found.as_str()).words,
                    Status::of_attempt(recovered.now.as_str()).words
                ));
            }
            _ => {}
        }
    }
    for card in &mut cards {
        if card.status.name != "running" {
            continue;
        }
        if let Some(view) = live
            .iter()
            .find(|view| view.step == card.step && view.attempt == card.attempt)
        {
            for (stream, text) in [
                ("standard output", &view.stdout),
                ("standard error", &view.stderr),
            ] {
                if !text.is_empty() {
                    card.live.push(Printed {
                        stream,
                        text: scrub.text(text),
                        printed_bytes: u64::try_from(text.len()).unwrap_or(u64::MAX),
                    });
                }
            }
        }
        if let Some(start) = started_at.get(&(card.step.clone(), card.attempt)) {
            card.running_since = Some(*start);
            card.duration = Some(format!(
                "running for {}",
                duration(now.saturating_sub(*start).max(0))
            ));
        }
    }
    cards
}

/// Who did something, as a sentence names them.
pub(crate) fn who(actor: &Actor) -> String {
    match actor {
        Actor::Person { name, id } if name.is_empty() => format!("person {id}"),
        Actor::Person { name, .. } => name.clone(),
        Actor::ApiKey { id } => format!("API key {id}"),
        Actor::Cli { os_user } => format!("{os_user} on the command line"),
        Actor::Engine => "the engine".to_owned(),
        Actor::Supervisor => "the supervisor".to_owned(),
    }
}

fn door(door: Door) -> &'static str {
    match door {
        Door::Cli => "from the command line",
        Door::Console => "from the console",
        Door::Link => "through an approve link",
        Door::Api => "through the API",
    }
}

fn decided(kind: DecisionKind) -> &'static str {
    match kind {
        DecisionKind::Approve => "approved",
        DecisionKind::Reject => "rejected",
        DecisionKind::Retry => "retried",
        DecisionKind::Stop => "stopped",
    }
}

fn quoted_note(note: &str) -> String {
    if note.is_empty() {
        String::new()
    } else {
        format!(": “{note}”")
    }
}

fn reason_suffix(reason: Option<&str>) -> String {
    reason
        .map(|reason| format!(": {reason}"))
        .unwrap_or_default()
}

fn run_status_words(status: RunStatus) -> &'static str {
    Status::of_run(status.as_str()).words
}

fn attempt_words(status: AttemptStatus) -> &'static str {
    Status::of_attempt(status.as_str()).words
}

/// What a run pinned at its start, in words: the workflow version and each agent folder.
pub(crate) fn pinned_sentence(pinned: &engine::journal::DefinitionsPinned) -> String {
    let version = match (pinned.workflow_version, &pinned.workflow_path) {
        (Some(number), Some(path)) => format!("version {number} of {path}"),
        _ => "a workflow text that is no saved version".to_owned(),
    };
    if pinned.agents.is_empty() {
        return format!("The run pinned {version}");
    }
    let agents: Vec<String> = pinned
        .agents
        .iter()
        .map(|agent| match agent.files.len() {
            0 => format!("{} (missing when the run started)", agent.name),
            1 => format!("{} (1 file)", agent.name),
            count => format!("{} ({count} files)", agent.name),
        })
        .collect();
    format!(
        "The run pinned {version} and the agent folders {}",
        agents.join(", ")
    )
}

/// One event in words.
pub(crate) fn sentence(event: &Event) -> String {
    match event {
        Event::RunCreated(created) => format!(
            "{} started a run of “{}”",
            who(&created.started_by),
            created.workflow
        ),
        Event::RunStatus(changed) => format!(
            "The run is {}{}",
            run_status_words(changed.status),
            reason_suffix(changed.reason.as_deref())
        ),
        Event::DefinitionsPinned(pinned) => pinned_sentence(pinned),
        Event::SecretsResolved(resolved) if resolved.names.is_empty() => {
            "The run holds no credentials".to_owned()
        }
        Event::SecretsResolved(resolved) => format!(
            "The run holds the credentials {} (names only)",
            resolved.names.join(", ")
        ),
        Event::SecretsUnavailable(unavailable) => format!(
            "Connections could not be resolved: {}",
            unavailable
                .connections
                .iter()
                .map(|connection| format!("{} ({})", connection.alias, connection.reason))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Event::GateParked(parked) => format!(
            "The run waits for a person's decision before “{}”",
            parked.step
        ),
        Event::Decision(decision) => format!(
            "{} {} {}{} {}{}",
            who(&decision.who),
            decided(decision.decision),
            decision
                .step
                .as_deref()
                .map(|step| format!("“{step}”"))
                .unwrap_or_else(|| "the run".to_owned()),
            match &decision.new_inputs {
                Some(Value::Object(inputs)) => {
                    // Names only, the first few: the values are in the attempt's record.
                    let mut names: Vec<String> = inputs
                        .keys()
                        .take(8)
                        .map(|name| format!("“{}”", name.chars().take(64).collect::<String>()))
                        .collect();
                    if inputs.len() > names.len() {
                        names.push(format!("{} more", inputs.len() - names.len()));
                    }
                    format!(" with new inputs for {}", names.join(", "))
                }
                _ => String::new(),
            },
            door(decision.door),
            quoted_note(&decision.note)
        ),
        Event::AttemptStarted(started) => format!(
            "“{}” attempt {} started, with {}",
            started.step,
            started.attempt,
            match started.network {
                NetworkMode::None => "no network",
                NetworkMode::PublicEgress => "the public internet",
            }
        ),
        Event::AttemptFinished(finished) => format!(
            "“{}” attempt {} {}{}",
            finished.step,
            finished.attempt,
            attempt_words(finished.status),
            reason_suffix(finished.reason.as_deref())
        ),
        Event::StepPrinted(printed) => format!(
            "“{}” printed {} bytes on {}",
            printed.step,
            printed.printed_bytes,
            match printed.stream {
                PrintedStream::Stdout => "standard output",
                PrintedStream::Stderr => "standard error",
            }
        ),
        Event::CopyBackRefused(refused) => format!(
            "A file of “{}” was not copied back: {}",
            refused.step, refused.reason
        ),
        Event::WorkspaceRevision(revision) => format!(
            "“{}” wrote {} {} to the workspace (revision {})",
            revision.step,
            revision.files.len(),
            if revision.files.len() == 1 {
                "file"
            } else {
                "files"
            },
            revision.revision
        ),
        Event::SupervisorDecision(decided) => supervisor_sentence(decided),
        Event::SupervisorRetryRefused(refused) => format!(
            "The supervisor's retry of “{}” was refused: {}",
            refused.step, refused.reason
        ),
        Event::AgentTurn(turn) => format!(
            "“{}” asked the model (turn {}, {} tokens in, {} out)",
            turn.step, turn.turn, turn.input_tokens, turn.output_tokens
        ),
        Event::ToolCalled(called) => format!(
            "“{}” called the tool {} (turn {})",
            called.step, called.tool, called.turn
        ),
        Event::ToolFinished(finished) => format!(
            "“{}”'s call of {} ended: {}",
            finished.step, finished.tool, finished.outcome
        ),
        Event::ToolRefused(refused) => format!(
            "“{}”'s call of {} was refused, never run: {}",
            refused.step, refused.tool, refused.reason
        ),
        Event::AgentLimit(limit) => format!(
            "“{}” reached its {} limit: {}",
            limit.step, limit.limit, limit.detail
        ),
        Event::RepairAccepted(accepted) => format!(
            "{} accepted the assistant's repair of “{}” ({}, model {}): the run runs workflow \
             version {} from “{}” on, and the outputs before it stand ({})",
            who(&accepted.accepted_by),
            accepted.step,
            accepted.provider,
            accepted.model,
            accepted.version,
            accepted.step,
            accepted.note
        ),
        Event::RepairProposed(proposed) => format!(
            "The assistant ({}, model {}) proposed new code for “{}” (standard library only, \
             checked before it was shown; nothing saved until a person accepts it): {}",
            proposed.provider, proposed.model, proposed.step, proposed.note
        ),
        Event::Recovery(recovered) => format!(
            "After a restart, “{}” attempt {} was found {} and recorded as {}",
            recovered.step,
            recovered.attempt,
            attempt_words(recovered.found),
            attempt_words(recovered.now)
        ),
    }
}

/// The timeline in words, oldest first.
pub(crate) fn timeline(scrub: &Scrub<'_>, entries: &[Entry]) -> Vec<TimelineLine> {
    entries
        .iter()
        .map(|entry| TimelineLine {
            at: when(entry.at.0),
            text: crate::handlers::console::prose(&scrub.text(&sentence(&entry.event))),
        })
        .collect()
}

/// A supervisor's decision in words (G15): what, who (the provider and model, or why no model
/// decided), its note and which inputs a retry changed.
fn supervisor_sentence(decided: &engine::journal::SupervisorDecided) -> String {
    use engine::journal::SupervisorBy;
    let who = match &decided.by {
        Some(SupervisorBy::Model { provider, model }) => {
            format!("The supervisor ({provider}, model {model})")
        }
        Some(SupervisorBy::NoModel { .. }) | None => "The supervisor".to_owned(),
    };
    let mut sentence = match &decided.decision {
        SupervisorChoice::Retry { .. } if decided.changed.is_empty() => {
            format!("{who} retried “{}” with the same inputs", decided.step)
        }
        SupervisorChoice::Retry { .. } => format!(
            "{who} retried “{}”, changing {}",
            decided.step,
            decided.changed.join(", ")
        ),
        SupervisorChoice::Stop { reason } => format!("{who} stopped the run: {reason}"),
        SupervisorChoice::AskPerson => match &decided.by {
            Some(SupervisorBy::NoModel { why }) => {
                format!("“{}” went to a person: {why}", decided.step)
            }
            _ => format!("{who} asked a person to look at “{}”", decided.step),
        },
    };
    if let Some(note) = decided.note.as_deref().filter(|note| !note.is_empty())
        && !matches!(decided.decision, SupervisorChoice::Stop { .. })
    {
        sentence.push_str(&format!(" (note: {note})"));
    }
    sentence
}

#[cfg(test)]
mod tests {
    use engine::journal::{AttemptFinished, AttemptStarted, PersonDecided, StepFailure};
    use serde_json::json;
    use storage::Timestamp;

    use super::*;

    fn entry(seq: u64, at: i64, event: Event) -> Entry {
        Entry {
            seq,
            at: Timestamp(at),
            version: engine::journal::VERSION,
            event,
        }
    }

    #[test]
    fn a_decision_reads_as_a_sentence_with_who_door_and_note() {
        let event = Event::Decision(PersonDecided {
            decision: DecisionKind::Approve,
            step: Some("file_summary".into()),
            attempt: Some(1),
            who: Actor::Person {
                id: "p1".into(),
                name: "owner".into(),
            },
            door: Door::Console,
            note: "totals match".into(),
            new_inputs: None,
        });
        assert_eq!(
            sentence(&event),
            "owner approved “file_summary” from the console: “totals match”"
        );
        let retried = Event::Decision(PersonDecided {
            decision: DecisionKind::Retry,
            step: Some("send".into()),
            attempt: Some(1),
            who: Actor::Person {
                id: "p1".into(),
                name: "owner".into(),
            },
            door: Door::Api,
            note: "right address".into(),
            new_inputs: Some(serde_json::json!({"to": "ops@example.com"})),
        });
        let said = sentence(&retried);
        assert!(said.contains("“send” with new inputs for “to”"), "{said}");
        assert!(!said.contains("ops@example.com"), "{said}");
    }

    #[test]
    fn a_card_shows_the_latest_attempt_with_its_duration_inputs_and_error() {
        let started = |attempt| {
            Event::AttemptStarted(AttemptStarted {
                step: "load".into(),
                attempt,
                network: NetworkMode::None,
                inputs: json!({"n": attempt}),
            })
        };
        let failed = Event::AttemptFinished(AttemptFinished {
            step: "load".into(),
            attempt: 2,
            status: AttemptStatus::Failed,
            output: None,
            error: Some(StepFailure {
                kind: "ValueError".into(),
                message: "bad".into(),
                traceback: "Traceback ...".into(),
                code_started: true,
            }),
            reason: Some("the step raised ValueError".into()),
            interpreter_version: None,
            backend: None,
            isolation_notes: None,
        });
        let entries = vec![
            entry(1, 0, started(1)),
            entry(2, 1_000, started(2)),
            entry(3, 3_500, failed),
        ];
        let text = |text: &str| text.replace("bad", "[REDACTED]");
        let json = |value: &Value| value.clone();
        let scrub = Scrub {
            text: Box::new(text),
            json: Box::new(json),
        };
        let cards = step_cards(&scrub, &["load".into(), "later".into()], &entries, 0, &[]);
        assert_eq!(cards.len(), 2);
        let load = &cards[0];
        assert_eq!(load.attempt, 2);
        assert_eq!(load.status.words, "failed");
        assert_eq!(load.duration.as_deref(), Some("2.5 s"));
        assert_eq!(load.inputs.as_deref(), Some("{\n  \"n\": 2\n}"));
        assert_eq!(
            load.error.as_ref().map(|e| e.kind.as_str()),
            Some("ValueError")
        );
        assert_eq!(
            load.error.as_ref().map(|e| e.message.as_str()),
            Some("[REDACTED]"),
            "what a card shows passes the account's scrub"
        );
        assert_eq!(cards[1].status.words, "not started");
        // The same step while its second attempt still runs: how long, by the page's clock.
        let printed_so_far = storage::LiveOutput {
            step: "load".into(),
            attempt: 2,
            stdout: "loaded bad rows\n".into(),
            stderr: String::new(),
            updated_at: Timestamp(13_000),
        };
        let running = step_cards(
            &scrub,
            &["load".into()],
            &entries[..2],
            13_500,
            std::slice::from_ref(&printed_so_far),
        );
        assert_eq!(running[0].live.len(), 1, "standard error printed nothing");
        assert_eq!(
            running[0].live[0].text, "loaded [REDACTED] rows\n",
            "what the step printed so far, through the page's scrub too"
        );
        assert_eq!(running[0].status.words, "running");
        assert_eq!(running[0].duration.as_deref(), Some("running for 12.5 s"));
        assert_eq!(running[0].running_since, Some(1_000));
        assert_eq!(load.running_since, None, "an ended attempt counts nothing");
    }

    #[test]
    fn g22_refusals_are_counted_per_step_and_tool_calls_shown_in_order() {
        use engine::journal::{ToolCalled, ToolFinished, ToolRefused};
        let entries = vec![
            entry(
                1,
                0,
                Event::ToolCalled(ToolCalled {
                    step: "triage".into(),
                    attempt: 1,
                    turn: 1,
                    call: "c1".into(),
                    tool: "Read".into(),
                    arguments: json!({"path": "../etc/passwd"}),
                }),
            ),
            entry(
                2,
                1,
                Event::ToolFinished(ToolFinished {
                    step: "triage".into(),
                    attempt: 1,
                    call: "c1".into(),
                    tool: "Read".into(),
                    outcome: "refused".into(),
                    result: "outside the folder".into(),
                    refused_path: Some("../etc/passwd".into()),
                    suggestion: None,
                }),
            ),
            entry(
                3,
                2,
                Event::ToolRefused(ToolRefused {
                    step: "triage".into(),
                    attempt: 1,
                    turn: 2,
                    call: "c2".into(),
                    tool: "Bash".into(),
                    reason: "the agent file names no tool Bash".into(),
                }),
            ),
        ];
        let text = |text: &str| text.to_owned();
        let json = |value: &Value| value.clone();
        let scrub = Scrub {
            text: Box::new(text),
            json: Box::new(json),
        };
        let cards = step_cards(&scrub, &["triage".into()], &entries, 0, &[]);
        assert_eq!(cards[0].refusal_count, 2);
        let calls: Vec<(&str, &str)> = cards[0]
            .tool_calls
            .iter()
            .map(|call| (call.tool.as_str(), call.outcome.as_str()))
            .collect();
        assert_eq!(calls, [("Read", "refused"), ("Bash", "refused")]);
    }

    #[test]
    fn every_status_has_words() {
        for status in RunStatus::ALL {
            assert_ne!(Status::of_run(status.as_str()).words, "in an unknown state");
        }
        for status in AttemptStatus::ALL {
            assert_ne!(
                Status::of_attempt(status.as_str()).words,
                "in an unknown state"
            );
        }
    }

    /// G15: the run page says who decided (provider and model), the note and what changed.
    #[test]
    fn g15_a_supervisor_decision_reads_with_who_its_note_and_what_changed() {
        use engine::journal::{SupervisorBy, SupervisorChoice, SupervisorDecided};
        let decided = SupervisorDecided {
            step: "halve".into(),
            attempt: 1,
            decision: SupervisorChoice::Retry {
                inputs: json!({"n": 8}),
            },
            note: Some("8 was meant".into()),
            by: Some(SupervisorBy::Model {
                provider: "claude".into(),
                model: "sonnet".into(),
            }),
            changed: vec!["n".into()],
        };
        assert_eq!(
            supervisor_sentence(&decided),
            "The supervisor (claude, model sonnet) retried “halve”, changing n (note: 8 was meant)"
        );
        let to_person = SupervisorDecided {
            decision: SupervisorChoice::AskPerson,
            by: Some(SupervisorBy::NoModel {
                why: "no model provider is configured".into(),
            }),
            note: None,
            changed: Vec::new(),
            ..decided
        };
        assert_eq!(
            supervisor_sentence(&to_person),
            "“halve” went to a person: no model provider is configured"
        );
    }
}
