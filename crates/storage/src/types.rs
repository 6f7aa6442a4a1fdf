//! Plain identifiers and closed vocabularies shared by every backend and the engine.

use std::fmt;
use std::str::FromStr;

/// An account's id and a run's id, validated where they are made (the `ids` crate, below
/// every crate that names one).
pub use ids::{AccountId, InvalidId, RunId};

/// A step's id as the workflow parser validated it: lower case letters, digits and `_`,
/// starting with a letter (never the `!` of a gate). An identifier, not free text; a
/// definition whose ids hold a value of the account is refused before a run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StepId(String);

impl StepId {
    /// The id, if it has a step id's grammar.
    pub fn parse(text: &str) -> Result<StepId, UnknownName> {
        let mut characters = text.chars();
        let starts_with_letter = characters
            .next()
            .is_some_and(|first| first.is_ascii_lowercase());
        if starts_with_letter
            && characters.all(|character| {
                character.is_ascii_lowercase() || character.is_ascii_digit() || character == '_'
            })
        {
            Ok(StepId(text.to_owned()))
        } else {
            Err(UnknownName {
                vocabulary: "step id",
                name: text.to_owned(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StepId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One gate waiting for its decision: the account and run it belongs to, the gate's step, and
/// the attempt the decision is recorded against (the step's next attempt). The engine is the
/// one that derives it (`engine::Engine::pending_gate`); an approve link signs exactly these
/// four fields (G24).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GateRef {
    pub account: AccountId,
    pub run: RunId,
    pub step: StepId,
    pub attempt: u32,
}

/// A SHA-256 digest as 64 lower-case hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sha256Hex(String);

impl Sha256Hex {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Sha256Hex {
        use sha2::Digest;
        Sha256Hex(hex::encode(sha2::Sha256::digest(bytes)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Sha256Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Milliseconds since the Unix epoch, as the engine's clock reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

/// A stored name that this version does not know.
pub use ids::UnknownName;

/// Declares a closed vocabulary with its stable stored names.
macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident, $label:literal { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stable name stored in records and shown to people.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;
            fn from_str(text: &str) -> Result<Self, UnknownName> {
                match text {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownName { vocabulary: $label, name: text.to_owned() }),
                }
            }
        }
    };
}

vocabulary!(
    /// The status of a run.
    RunStatus, "run status" {
        Queued => "queued",
        Running => "running",
        WaitingApproval => "waiting_approval",
        NeedsRepair => "needs_repair",
        NeedsAttention => "needs_attention",
        Succeeded => "succeeded",
        Failed => "failed",
        Stopped => "stopped",
    }
);

vocabulary!(
    /// The status of one step attempt.
    AttemptStatus, "attempt status" {
        Running => "running",
        Succeeded => "succeeded",
        Failed => "failed",
        Unknown => "unknown",
        NeedsRepair => "needs_repair",
        Refused => "refused",
    }
);

/// What an attempt could reach on the network; recorded before the sandbox starts (G14). The
/// one network type of every layer (`ids::Network`).
pub use ids::Network as NetworkMode;

vocabulary!(
    /// The door a decision came through (G23).
    Door, "door" {
        Cli => "cli",
        Console => "console",
        Link => "link",
        Api => "api",
    }
);

vocabulary!(
    /// What a decision decided.
    DecisionKind, "decision" {
        Approve => "approve",
        Reject => "reject",
        Retry => "retry",
        Stop => "stop",
    }
);

impl RunStatus {
    /// Whether nothing more will happen to the run.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Succeeded | RunStatus::Failed | RunStatus::Stopped
        )
    }
}

/// Who did something. An API key never acts as a named person (G26).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Actor {
    Person { id: String, name: String },
    ApiKey { id: String },
    Cli { os_user: String },
    Engine,
    Supervisor,
}

/// A person's display name and an operating-system user are text someone chose: a record
/// holds them scrubbed (`Redacted<Actor>`, review N1). Ids are generated, kinds are fixed.
impl redact::ScrubFields for Actor {
    fn scrub_fields(self, scrub: &dyn Fn(&str) -> String) -> Actor {
        match self {
            Actor::Person { id, name } => Actor::Person {
                id,
                name: scrub(&name),
            },
            Actor::Cli { os_user } => Actor::Cli {
                os_user: scrub(&os_user),
            },
            Actor::ApiKey { id } => Actor::ApiKey { id },
            Actor::Engine => Actor::Engine,
            Actor::Supervisor => Actor::Supervisor,
        }
    }
}

impl Actor {
    /// The stable kind name stored beside the actor's id.
    pub fn kind(&self) -> &'static str {
        match self {
            Actor::Person { .. } => "person",
            Actor::ApiKey { .. } => "api_key",
            Actor::Cli { .. } => "cli",
            Actor::Engine => "engine",
            Actor::Supervisor => "supervisor",
        }
    }

    /// The id part (a person id, a key id, an operating-system user); empty for the engine and
    /// the supervisor.
    pub fn id(&self) -> &str {
        match self {
            Actor::Person { id, .. } | Actor::ApiKey { id } => id,
            Actor::Cli { os_user } => os_user,
            Actor::Engine | Actor::Supervisor => "",
        }
    }

    /// The display name of a person; empty for everyone else.
    pub fn display_name(&self) -> &str {
        match self {
            Actor::Person { name, .. } => name,
            Actor::ApiKey { .. } | Actor::Cli { .. } | Actor::Engine | Actor::Supervisor => "",
        }
    }

    /// Rebuilds an actor from its stored parts.
    pub fn from_parts(kind: &str, id: &str, name: &str) -> Result<Actor, UnknownName> {
        match kind {
            "person" => Ok(Actor::Person {
                id: id.to_owned(),
                name: name.to_owned(),
            }),
            "api_key" => Ok(Actor::ApiKey { id: id.to_owned() }),
            "cli" => Ok(Actor::Cli {
                os_user: id.to_owned(),
            }),
            "engine" => Ok(Actor::Engine),
            "supervisor" => Ok(Actor::Supervisor),
            _ => Err(UnknownName {
                vocabulary: "actor kind",
                name: kind.to_owned(),
            }),
        }
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::Person { id, name } => write!(f, "{name} ({id})"),
            Actor::ApiKey { id } => write!(f, "api key {id}"),
            Actor::Cli { os_user } => write!(f, "{os_user} (cli)"),
            Actor::Engine => f.write_str("engine"),
            Actor::Supervisor => f.write_str("supervisor"),
        }
    }
}
