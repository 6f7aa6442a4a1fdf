//! Test-only: an in-memory [`SecretSource`] for this crate's and other crates' tests.
//!
//! Behind the `testing` cargo feature, which only dev-dependencies enable; a shipped binary gets
//! its secrets from the vault.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::secret::{SecretName, SecretRequest, SecretSource, SecretValue, SourceError};
use ids::AccountId;

/// Its own setters take an account's id as text, for tests' brevity; what it answers as a
/// [`SecretSource`] is keyed by the validated [`AccountId`].
///
/// Secrets of any number of accounts, held in plain memory; values can be rotated, revoked and
/// removed while a run waits, to test resume. Like the vault, it remembers every value that
/// stopped being current and when (the system clock, or the time a test gives).
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
    /// account id -> (name, value, milliseconds when it stopped being current)
    superseded: BTreeMap<String, Vec<(SecretName, String, i64)>>,
    /// Moves with every change, like the vault's generation.
    generation: u64,
    /// Superseded values are forgotten (as the vault's retention would) when set.
    forget_superseded: bool,
}

impl MemoryState {
    fn supersede(&mut self, account_id: &str, name: &SecretName, value: String, at_millis: i64) {
        if self.forget_superseded {
            return;
        }
        self.superseded
            .entry(account_id.to_owned())
            .or_default()
            .push((name.clone(), value, at_millis));
    }
}

/// The system clock in milliseconds since the Unix epoch.
fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Whether `name` is one of the names `request` names.
fn requested(request: &SecretRequest, name: &SecretName) -> bool {
    match name {
        SecretName::ConnectionField { alias, .. } => request.connections.contains(alias),
        SecretName::AgentSecret { name } => request.secrets.contains(name),
        SecretName::ModelKey { provider } => request.model_keys.contains(provider),
    }
}

impl MemorySource {
    /// An empty source.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets (or rotates) one value; a replaced value is remembered as superseded now.
    pub fn set(&self, account_id: &str, name: SecretName, value: &str) {
        self.set_at(account_id, name, value, now_millis());
    }

    /// Sets (or rotates) one value; a replaced value is remembered as superseded at
    /// `at_millis`.
    pub fn set_at(&self, account_id: &str, name: SecretName, value: &str, at_millis: i64) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.generation += 1;
        if let Some(revoked) = state.revoked.get_mut(account_id) {
            revoked.remove(&name);
        }
        let previous = state
            .values
            .entry(account_id.to_owned())
            .or_default()
            .insert(name.clone(), value.to_owned());
        if let Some(previous) = previous {
            state.supersede(account_id, &name, previous, at_millis);
        }
    }

    /// Removes one value; it is remembered as superseded now.
    pub fn remove(&self, account_id: &str, name: &SecretName) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.generation += 1;
        let previous = state
            .values
            .get_mut(account_id)
            .and_then(|values| values.remove(name));
        if let Some(revoked) = state.revoked.get_mut(account_id) {
            revoked.remove(name);
        }
        if let Some(previous) = previous {
            state.supersede(account_id, name, previous, now_millis());
        }
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

    /// Marks a name revoked: resolving it fails with `SourceError::Revoked`, and its value
    /// counts as superseded now.
    pub fn revoke(&self, account_id: &str, name: SecretName) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.generation += 1;
        let current = state
            .values
            .get(account_id)
            .and_then(|values| values.get(&name))
            .cloned();
        let newly_revoked = state
            .revoked
            .entry(account_id.to_owned())
            .or_default()
            .insert(name.clone());
        if let (true, Some(current)) = (newly_revoked, current) {
            state.supersede(account_id, &name, current, now_millis());
        }
    }
}

impl MemorySource {
    /// From now on, a replaced or removed value is forgotten at once, as if the vault's
    /// retention had passed (it no longer scrubs anything).
    pub fn forget_superseded_values(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.generation += 1;
        state.forget_superseded = true;
        state.superseded.clear();
    }
}

impl SecretSource for MemorySource {
    fn resolve(
        &self,
        account_id: &AccountId,
        request: &SecretRequest,
    ) -> Result<Vec<(SecretName, SecretValue)>, SourceError> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let empty_values = BTreeMap::new();
        let empty_revoked = BTreeSet::new();
        let values = state
            .values
            .get(account_id.as_str())
            .unwrap_or(&empty_values);
        let revoked = state
            .revoked
            .get(account_id.as_str())
            .unwrap_or(&empty_revoked);

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

    fn superseded_values(
        &self,
        account_id: &AccountId,
        request: &SecretRequest,
        since_millis: i64,
    ) -> Result<Vec<(SecretName, SecretValue)>, SourceError> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(state
            .superseded
            .get(account_id.as_str())
            .map(|superseded| {
                superseded
                    .iter()
                    .filter(|(name, _, at_millis)| {
                        *at_millis >= since_millis && requested(request, name)
                    })
                    .map(|(name, value, _)| (name.clone(), SecretValue::new(value.clone())))
                    .collect()
            })
            .unwrap_or_default())
    }

    fn account_values(&self, account_id: &AccountId) -> Result<Vec<SecretValue>, SourceError> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let current = state
            .values
            .get(account_id.as_str())
            .into_iter()
            .flat_map(|values| values.values());
        let superseded = state
            .superseded
            .get(account_id.as_str())
            .into_iter()
            .flat_map(|superseded| superseded.iter().map(|(_, value, _)| value));
        Ok(current
            .chain(superseded)
            .map(|value| SecretValue::new(value.clone()))
            .collect())
    }

    fn generation(&self, _account_id: &AccountId) -> Result<u64, SourceError> {
        Ok(self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .generation)
    }
}
