//! The run's journal: the closed vocabulary of events the engine writes, one payload struct
//! per kind, and the one way they are written and read.
//!
//! Every change of state the engine makes is also an event: the run's status, each attempt's
//! start and end, parking at a gate, every decision. So the events are enough to rebuild the
//! run ([`crate::reconstruct`], G25), and everything that shows a run's record (the console,
//! the API, the CLI) reads these types, never payload keys.
//!
//! The stored form is an [`storage::EventRecord`]: the kind's stable name
//! ([`EventKind::as_str`]), the journal schema version the payload was written in, and the
//! payload as JSON (scrubbed by the run's redactor before it is stored; the store only takes
//! `Redacted` values). [`VERSION`] is the newest version this engine writes; each event is
//! written in the oldest version whose shape holds it ([`Event::version`]), so a stepward that
//! reads only an older version (a worker not yet upgraded, a rollback) reads every event it
//! can read in full and refuses the rest, never reading one without a field that changes what
//! it means.
//!
//! - Version 1 is the shape the engine has written since the record existed (before the
//!   version was stored, every event is version 1): the payload structs were written to match
//!   it field for field, and a fixture database of events written by the untyped engine is read
//!   in the tests.
//! - Version 2 adds a person's retry's new inputs to a `decision`
//!   ([`PersonDecided::new_inputs`]): a retry read without them would run the step with the
//!   inputs the person corrected (G23). Version 1 events that hold the field (written before
//!   the version was raised) read with it.
//!
//! - Version 3 adds the models the agents of a run talk to, pinned with its definitions
//!   ([`DefinitionsPinned::models`]): a reader without them would let a run approved after its
//!   provider changed talk to the new endpoint.
//!
//! - Version 4 stores a repair proposal's code once per run: a later proposal of the same code
//!   holds its hash alone ([`RepairProposed::code_sha256`]); a reader without it would read an
//!   empty code.
//!
//! A change of a payload's shape is a new version: [`read`] then keeps a reader for each older
//! one, each tested against events written by that version.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use storage::{EventRecord, RunId, Timestamp};

pub use crate::journal::payloads::{
    AgentLimit, AgentTurn, AttemptFinished, AttemptStarted, CopyBackRefused, DefinitionsPinned,
    FileWritten, GateParked, PersonDecided, PinnedAgent, PinnedFile, PinnedModel, PrintedStream,
    Recovered, RefusedBy, RefusedFiles, RepairAccepted, RepairProposed, RunCreated,
    RunStatusChanged, SecretsResolved, SecretsUnavailable, StepFailure, StepPrinted, SupervisorBy,
    SupervisorChoice, SupervisorDecided, SupervisorRetryRefused, ToolCalled, ToolFinished,
    ToolRefused, UnavailableConnection, WorkspaceRevision,
};

mod payloads;

/// The newest journal schema version this engine writes (see [`Event::version`]).
pub const VERSION: u32 = 4;

/// Declares the vocabulary once: the event enum (adjacently tagged, so its serde form is
/// `{"kind": NAME, "payload": {...}}`), its kinds, and their stable names, which can then not
/// drift apart.
macro_rules! vocabulary {
    ($($(#[$doc:meta])* $variant:ident($payload:ident) => $name:literal,)+) => {
        /// One event of a run's journal.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind", content = "payload")]
        pub enum Event {
            $($(#[$doc])* #[serde(rename = $name)] $variant($payload),)+
        }

        /// The kind of an [`Event`], without its payload.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventKind {
            $($(#[$doc])* $variant,)+
        }

        impl EventKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant),+];

            /// The stable name stored in the journal and shown by the CLI and the console.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $name,)+
                }
            }

            /// The kind of a stored name, if this version has it.
            pub fn from_name(name: &str) -> Option<EventKind> {
                match name {
                    $($name => Some(EventKind::$variant),)+
                    _ => None,
                }
            }
        }

        impl Event {
            /// This event's kind.
            pub fn kind(&self) -> EventKind {
                match self {
                    $(Event::$variant(_) => EventKind::$variant,)+
                }
            }
        }
    };
}

vocabulary! {
    /// The run was created: workflow name, file, hash, inputs, who started it.
    RunCreated(RunCreated) => "run.created",
    /// The run's status changed.
    RunStatus(RunStatusChanged) => "run.status",
    /// What the run pinned at its start: the workflow version, every agent folder in reach.
    DefinitionsPinned(DefinitionsPinned) => "definitions.pinned",
    /// The credential names the run holds (names only, never values).
    SecretsResolved(SecretsResolved) => "secrets.resolved",
    /// A connection could not be resolved (names only).
    SecretsUnavailable(SecretsUnavailable) => "secrets.unavailable",
    /// The run parked before a gate.
    GateParked(GateParked) => "gate.parked",
    /// A person's decision: approve, reject, retry, stop (G23).
    Decision(PersonDecided) => "decision",
    /// An attempt was recorded as running, before the executor was called (G14).
    AttemptStarted(AttemptStarted) => "attempt.started",
    /// An attempt ended (status, output or error).
    AttemptFinished(AttemptFinished) => "attempt.finished",
    /// What a step printed (scrubbed, then bounded, G17).
    StepPrinted(StepPrinted) => "step.printed",
    /// A file the copy-back filter, the engine or the workspace refused (G12).
    CopyBackRefused(CopyBackRefused) => "copy_back.refused",
    /// The copy-back written as a workspace revision (G25).
    WorkspaceRevision(WorkspaceRevision) => "workspace.revision",
    /// The supervisor's decision after a failure (G15).
    SupervisorDecision(SupervisorDecided) => "supervisor.decision",
    /// A supervisor retry the engine refused (an `unknown` attempt, a spent budget).
    SupervisorRetryRefused(SupervisorRetryRefused) => "supervisor.retry_refused",
    /// Recovery after a restart found this attempt running (G14).
    Recovery(Recovered) => "recovery",
    /// One model turn of an agent step.
    AgentTurn(AgentTurn) => "agent.turn",
    /// A tool call of an agent step, before it runs (G14).
    ToolCalled(ToolCalled) => "tool.called",
    /// A tool call's end: ok, error or refused.
    ToolFinished(ToolFinished) => "tool.finished",
    /// A call refused before it could run (G21).
    ToolRefused(ToolRefused) => "tool.refused",
    /// A `loop:` limit tripped.
    AgentLimit(AgentLimit) => "agent.limit",
    /// A person accepted the assistant's repair: the run runs a new workflow version from
    /// that step on (G9).
    RepairAccepted(RepairAccepted) => "repair.accepted",
    /// The assistant proposed a repair that passed the checks; nothing is saved yet (G9).
    RepairProposed(RepairProposed) => "repair.proposed",
}

impl Event {
    /// The journal version this event is written in: the oldest whose shape holds it.
    pub fn version(&self) -> u32 {
        match self {
            Event::Decision(decided) if decided.new_inputs.is_some() => 2,
            Event::DefinitionsPinned(pinned) if !pinned.models.is_empty() => 3,
            Event::RepairProposed(proposed) if proposed.code_sha256.is_some() => 4,
            _ => 1,
        }
    }

    /// The payload as the journal stores it (before scrubbing).
    pub fn payload_json(&self) -> Result<Value, serde_json::Error> {
        let Value::Object(mut tagged) = serde_json::to_value(self)? else {
            return Err(serde::ser::Error::custom(
                "an event did not encode as a kind and a payload",
            ));
        };
        Ok(tagged.remove("payload").unwrap_or(Value::Null))
    }

    /// The event of a payload in this version's shape.
    fn from_payload(kind: EventKind, payload: &Value) -> Result<Event, serde_json::Error> {
        let mut tagged = serde_json::Map::new();
        tagged.insert("kind".to_owned(), Value::from(kind.as_str()));
        tagged.insert("payload".to_owned(), payload.clone());
        serde_json::from_value(Value::Object(tagged))
    }
}

/// One event of a run's journal, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// 1, 2, 3, ... without gaps, per run.
    pub seq: u64,
    pub at: Timestamp,
    /// The journal version it was stored in ([`VERSION`] for what this stepward writes).
    pub version: u32,
    pub event: Event,
}

/// Why a stored event cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Written by a newer stepward than this one.
    #[error(
        "run {run} event {seq}: written in journal version {version}, newer than this \
         stepward's version {VERSION}; a newer stepward reads it"
    )]
    NewerVersion { run: RunId, seq: u64, version: u32 },
    /// A version no stepward ever wrote (0).
    #[error("run {run} event {seq}: journal version {version} was never written by stepward")]
    UnknownVersion { run: RunId, seq: u64, version: u32 },
    /// A kind the event's version does not have.
    #[error("run {run} event {seq}: `{kind}` is not an event kind of journal version {version}")]
    UnknownKind {
        run: RunId,
        seq: u64,
        kind: String,
        version: u32,
    },
    /// A payload that does not have its kind's shape in its version.
    #[error(
        "run {run} event {seq}: the payload of `{kind}` does not have the shape of journal \
         version {version}"
    )]
    Payload {
        run: RunId,
        seq: u64,
        kind: &'static str,
        version: u32,
        #[source]
        source: serde_json::Error,
    },
}

/// Reads one stored event in the shape of the version it was written in.
pub fn read(record: &EventRecord) -> Result<Entry, ReadError> {
    let run = || record.run.clone();
    match record.version {
        // Versions 2 to 4 only add optional fields to version 1's shape, so one reader reads
        // them all. A version that changes a shape adds an arm here that reads the older shape
        // (or rewrites its payload into the new one), tested against events of that version.
        1..=VERSION => {}
        0 => {
            return Err(ReadError::UnknownVersion {
                run: run(),
                seq: record.seq,
                version: record.version,
            });
        }
        _ => {
            return Err(ReadError::NewerVersion {
                run: run(),
                seq: record.seq,
                version: record.version,
            });
        }
    }
    let kind = EventKind::from_name(&record.kind).ok_or_else(|| ReadError::UnknownKind {
        run: run(),
        seq: record.seq,
        kind: record.kind.clone(),
        version: record.version,
    })?;
    let event =
        Event::from_payload(kind, &record.payload).map_err(|source| ReadError::Payload {
            run: run(),
            seq: record.seq,
            kind: kind.as_str(),
            version: record.version,
            source,
        })?;
    Ok(Entry {
        seq: record.seq,
        at: record.at,
        version: record.version,
        event,
    })
}

/// Reads a run's stored events, in order; the first that cannot be read is the error.
pub fn read_all(records: &[EventRecord]) -> Result<Vec<Entry>, ReadError> {
    records.iter().map(read).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use storage::{EventRecord, RunId, RunStatus, Timestamp};

    use crate::journal::{Event, EventKind, ReadError, RunStatusChanged, VERSION, read};

    fn record(kind: &str, version: u32, payload: serde_json::Value) -> EventRecord {
        EventRecord {
            run: RunId::parse("run-1").unwrap(),
            seq: 4,
            kind: kind.into(),
            version,
            payload,
            at: Timestamp(7),
        }
    }

    #[test]
    fn every_kind_has_its_own_stable_name() {
        let names: std::collections::BTreeSet<&str> =
            EventKind::ALL.iter().map(|kind| kind.as_str()).collect();
        assert_eq!(names.len(), EventKind::ALL.len());
        for kind in EventKind::ALL {
            assert_eq!(EventKind::from_name(kind.as_str()), Some(*kind));
        }
    }

    #[test]
    fn g25_an_event_reads_back_as_it_was_written() {
        let event = Event::RunStatus(RunStatusChanged {
            status: RunStatus::NeedsAttention,
            reason: Some("a person decides".into()),
        });
        let payload = event.payload_json().unwrap();
        assert_eq!(
            payload,
            json!({"status": "needs_attention", "reason": "a person decides"})
        );
        let read = read(&record("run.status", VERSION, payload)).unwrap();
        assert_eq!((read.seq, read.at, read.event), (4, Timestamp(7), event));
    }

    #[test]
    fn g25_an_event_of_a_newer_version_an_unknown_kind_or_shape_is_refused() {
        let newer = read(&record("run.status", VERSION + 1, json!({}))).unwrap_err();
        assert!(matches!(newer, ReadError::NewerVersion { .. }), "{newer}");
        assert!(newer.to_string().contains("a newer stepward reads it"));
        let zero = read(&record("run.status", 0, json!({}))).unwrap_err();
        assert!(matches!(zero, ReadError::UnknownVersion { .. }), "{zero}");
        let unknown = read(&record("tool.invented", VERSION, json!({}))).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "run run-1 event 4: `tool.invented` is not an event kind of journal version 4"
        );
        let shape = read(&record("run.status", VERSION, json!({"status": "asleep"}))).unwrap_err();
        assert!(matches!(shape, ReadError::Payload { .. }), "{shape}");
        let cause = std::error::Error::source(&shape).unwrap().to_string();
        assert!(cause.contains("asleep"), "{cause}");
    }

    #[test]
    fn g27_pinned_models_are_version_3_and_read_back() {
        use crate::journal::{DefinitionsPinned, PinnedModel};
        let pinned = Event::DefinitionsPinned(DefinitionsPinned {
            revision: None,
            workflow_path: None,
            workflow_version: None,
            agents: Vec::new(),
            models: vec![PinnedModel {
                agent: "noter".into(),
                provider: "fake".into(),
                kind: "anthropic".into(),
                base_url: "https://models.example".into(),
                model: "fake-large".into(),
            }],
        });
        assert_eq!(pinned.version(), 3);
        let stored = record("definitions.pinned", 3, pinned.payload_json().unwrap());
        assert_eq!(read(&stored).unwrap().event, pinned);
        // A pin without models is the shape version 1 wrote, and reads as one.
        let old = record(
            "definitions.pinned",
            1,
            json!({"revision": null, "workflow_path": null, "workflow_version": null, "agents": []}),
        );
        let Event::DefinitionsPinned(read_back) = read(&old).unwrap().event else {
            panic!("not a pin");
        };
        assert!(read_back.models.is_empty());
    }
}
