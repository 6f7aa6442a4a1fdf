//! Secret values and names, what a run asks for, and the source (the vault) that answers.

use ids::AccountId;
use std::fmt;

use zeroize::Zeroizing;

/// A credential value. Derives nothing (no `Clone`, `Debug`, `Serialize`) and zeroizes on drop,
/// so it can only leave this type through a call whose name says it is dangerous.
pub struct SecretValue {
    value: Zeroizing<String>,
}

impl SecretValue {
    /// Wraps a value; the `String` is moved in, so no second copy stays behind.
    pub fn new(value: String) -> Self {
        Self {
            value: Zeroizing::new(value),
        }
    }

    /// The plaintext, for the two places that need it: the sandbox environment and the scrubber.
    pub fn dangerously_expose(&self) -> &str {
        &self.value
    }

    /// Whether two values hold the same plaintext, without exposing either.
    pub(crate) fn same_value_as(&self, other: &SecretValue) -> bool {
        self.value.as_str() == other.value.as_str()
    }
}

/// What a value is, by name only (names are not secret).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SecretName {
    /// One field of a connection granted to a step (`alias.field`).
    ConnectionField { alias: String, field: String },
    /// A secret the agent stored by name.
    AgentSecret { name: String },
    /// The model key paying for a run's model calls.
    ModelKey { provider: String },
}

impl fmt::Display for SecretName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretName::ConnectionField { alias, field } => {
                write!(formatter, "connection:{alias}.{field}")
            }
            SecretName::AgentSecret { name } => write!(formatter, "secret:{name}"),
            SecretName::ModelKey { provider } => write!(formatter, "model_key:{provider}"),
        }
    }
}

/// What a run asks for.
#[derive(Clone, Debug, Default)]
pub struct SecretRequest {
    /// Connection aliases: every field of each is resolved.
    pub connections: Vec<String>,
    /// Agent secrets by name.
    pub secrets: Vec<String>,
    /// Model providers whose key the run pays with.
    pub model_keys: Vec<String>,
}

/// Implemented by the vault. Missing names are an error that names them.
pub trait SecretSource: Send + Sync {
    /// Every value the request names, with its name.
    fn resolve(
        &self,
        account_id: &AccountId,
        request: &SecretRequest,
    ) -> Result<Vec<(SecretName, SecretValue)>, SourceError>;

    /// Every value of the account that must never be in a record or a workspace: every current
    /// value (revoked ones included) and every superseded value still kept. Every writer scrubs
    /// with these; the copy-back screen and every workspace writer refuse them.
    fn account_values(&self, account_id: &AccountId) -> Result<Vec<SecretValue>, SourceError>;

    /// A number that changes with every change of the account's values (in the same
    /// transaction as the change), so a writer knows whether the set it compiled is still
    /// current, also after a change made by another process.
    fn generation(&self, account_id: &AccountId) -> Result<u64, SourceError>;

    /// Values of the names `request` names that stopped being current (replaced, removed or
    /// revoked) at or after `since_millis` (milliseconds since the Unix epoch), with their
    /// names. A run resumed in a process that never saw its first values asks for these with
    /// the run's start, so a value it may have printed before a change is still scrubbed
    /// (G16). They are only ever scrubbed, never handed to code. Names that no longer exist
    /// are not an error. The default knows no history and returns nothing.
    fn superseded_values(
        &self,
        account_id: &AccountId,
        request: &SecretRequest,
        since_millis: i64,
    ) -> Result<Vec<(SecretName, SecretValue)>, SourceError> {
        let _ = (account_id, request, since_millis);
        Ok(Vec::new())
    }
}

/// Why a source could not answer. Carries names only, never values.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// The request named things the account does not have.
    #[error("missing: {}", names.join(", "))]
    Missing { names: Vec<String> },
    /// The request named connections or secrets that were revoked.
    #[error("revoked: {}", names.join(", "))]
    Revoked { names: Vec<String> },
    /// The source itself could not be reached or opened (the detail must hold no value).
    #[error("unavailable: {detail}")]
    Unavailable { detail: String },
}
