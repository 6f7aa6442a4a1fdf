//! The model providers an account configured: which API, where, which model the platform's
//! own assistant uses, and which provider is the default. None of it is secret: the key is a
//! vault model key of the same name.

use crate::error::Error;
use crate::types::{AccountId, Timestamp};

/// One provider of an account, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelProvider {
    pub account: AccountId,
    /// The name agent files use (`model: NAME/MODEL_ID`), and the name of its vault key.
    pub name: String,
    /// The wire format: `anthropic` or `openai`.
    pub kind: String,
    /// `None`: the kind's default URL.
    pub base_url: Option<String>,
    /// The model the platform's own assistant uses on this provider.
    pub assistant_model: Option<String>,
    /// Bare model ids in agent files mean this provider; at most one per account.
    pub is_default: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A provider to add, or the new settings of one that exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewModelProvider {
    pub account: AccountId,
    pub name: String,
    pub kind: String,
    pub base_url: Option<String>,
    pub assistant_model: Option<String>,
    pub at: Timestamp,
}

/// What saving a provider did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedModelProvider {
    pub provider: ModelProvider,
    /// It existed and its settings were replaced.
    pub replaced: bool,
}

/// The providers of every account.
pub trait ModelProviderStore: Send + Sync {
    /// Adds the provider, or replaces the settings of the one with its name (keeping whether
    /// it is the default). A provider added while the account has no default becomes the
    /// default, atomically.
    fn save_model_provider(&self, provider: &NewModelProvider)
    -> Result<SavedModelProvider, Error>;
    /// The account's providers, by name.
    fn model_providers(&self, account: &AccountId) -> Result<Vec<ModelProvider>, Error>;
    /// Removes it; `false` when there is none. Removing the default leaves the account
    /// without one: no other provider is picked behind the owner's back.
    fn remove_model_provider(&self, account: &AccountId, name: &str) -> Result<bool, Error>;
    /// Makes it the account's default; `false` when there is none.
    fn set_default_model_provider(
        &self,
        account: &AccountId,
        name: &str,
        at: Timestamp,
    ) -> Result<bool, Error>;
}
