//! Test-only: an in-memory [`SecretSource`] for this crate's and other crates' tests.
//!
//! Behind the `testing` cargo feature, which only dev-dependencies enable; a shipped binary gets
//! its secrets from the vault.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, PoisonError};

use crate::secret::{SecretName, SecretRequest, SecretSource, SecretValue, SourceError};

/// Secrets of any number of accounts, held in plain memory; values can be rotated and revoked
/// while a run waits, to test resume.
#[derive(Default)]
pub struct MemorySource {
    state: Mutex<MemoryState>,
}

#[derive(Default)]
struct MemoryState {
    /// account id -> name -> plaintext
    values: BTreeMap<String, BTreeMap<SecretName, String>>,
    /// account id -> revoked names
    revoked: BTreeMap<String, BTreeSet<SecretName>>,
}

impl MemorySource {
    /// An empty source.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets (or rotates) one value.
    pub fn set(&self, account_id: &str, name: SecretName, value: &str) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(revoked) = state.revoked.get_mut(account_id) {
            revoked.remove(&name);
        }
        state
            .values
            .entry(account_id.to_owned())
            .or_default()
            .insert(name, value.to_owned());
    }

    /// Sets a connection field.
    pub fn set_connection_field(&self, account_id: &str, alias: &str, field: &str, value: &str) {
        let name = SecretName::ConnectionField {
            alias: alias.to_owned(),
            field: field.to_owned(),
        };
        self.set(account_id, name, value);
    }

    /// Sets an agent secret.
    pub fn set_secret(&self, account_id: &str, secret_name: &str, value: &str) {
        let name = SecretName::AgentSecret {
            name: secret_name.to_owned(),
        };
        self.set(account_id, name, value);
    }

    /// Sets a model key.
    pub fn set_model_key(&self, account_id: &str, provider: &str, value: &str) {
        let name = SecretName::ModelKey {
            provider: provider.to_owned(),
        };
        self.set(account_id, name, value);
    }

    /// Marks a name revoked: resolving it fails with `SourceError::Revoked`.
    pub fn revoke(&self, account_id: &str, name: SecretName) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .revoked
            .entry(account_id.to_owned())
            .or_default()
            .insert(name);
    }
}

impl SecretSource for MemorySource {
    fn resolve(
        &self,
        account_id: &str,
        request: &SecretRequest,
    ) -> Result<Vec<(SecretName, SecretValue)>, SourceError> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let empty_values = BTreeMap::new();
        let empty_revoked = BTreeSet::new();
        let values = state.values.get(account_id).unwrap_or(&empty_values);
        let revoked = state.revoked.get(account_id).unwrap_or(&empty_revoked);

        let mut wanted: Vec<SecretName> = Vec::new();
        let mut missing: Vec<String> = Vec::new();
        for alias in &request.connections {
            let fields: Vec<SecretName> = values
                .keys()
                .chain(revoked.iter())
                .filter(|name| matches!(name, SecretName::ConnectionField { alias: found, .. } if found == alias))
                .cloned()
                .collect();
            if fields.is_empty() {
                missing.push(format!("connection:{alias}"));
            }
            wanted.extend(fields);
        }
        for secret_name in &request.secrets {
            wanted.push(SecretName::AgentSecret {
                name: secret_name.clone(),
            });
        }
        for provider in &request.model_keys {
            wanted.push(SecretName::ModelKey {
                provider: provider.clone(),
            });
        }
        wanted.sort();
        wanted.dedup();

        let mut revoked_names: Vec<String> = Vec::new();
        let mut resolved = Vec::new();
        for name in wanted {
            if revoked.contains(&name) {
                revoked_names.push(name.to_string());
            } else if let Some(value) = values.get(&name) {
                resolved.push((name, SecretValue::new(value.clone())));
            } else {
                missing.push(name.to_string());
            }
        }
        if !missing.is_empty() {
            return Err(SourceError::Missing { names: missing });
        }
        if !revoked_names.is_empty() {
            return Err(SourceError::Revoked {
                names: revoked_names,
            });
        }
        Ok(resolved)
    }

    fn current_values(&self, account_id: &str) -> Result<Vec<SecretValue>, SourceError> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(state
            .values
            .get(account_id)
            .map(|values| {
                values
                    .values()
                    .map(|value| SecretValue::new(value.clone()))
                    .collect()
            })
            .unwrap_or_default())
    }
}
