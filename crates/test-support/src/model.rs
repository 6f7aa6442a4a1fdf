//! A fake model server (the `fake-model` crate, on an ephemeral loopback port) as an account's
//! provider, saved as a person would save it.

use redact::testing::MemorySource;
use storage::models::{ModelProviderStore, NewModelProvider};
use storage::{AccountId, Timestamp};

/// Saves the model server at `url` as `account`'s default provider `name` (the Anthropic wire
/// format, which the fake speaks), with `assistant` as its assistant model and `key` as its
/// key in `secrets`.
pub fn add_default_provider(
    store: &dyn ModelProviderStore,
    secrets: &MemorySource,
    account: &AccountId,
    name: &str,
    url: &str,
    assistant: &str,
    key: &str,
) {
    store
        .save_model_provider(&NewModelProvider {
            account: account.clone(),
            name: name.into(),
            kind: "anthropic".into(),
            base_url: Some(url.to_owned()),
            assistant_model: Some(assistant.to_owned()),
            at: Timestamp(0),
        })
        .unwrap();
    store
        .set_default_model_provider(account, name, Timestamp(0))
        .unwrap();
    secrets.set_model_key(account.as_str(), name, key);
}
