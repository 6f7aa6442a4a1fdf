//! `ScrubSets`: every account's live scrub set, shared by every writer of the process.
//!
//! A record must never hold any value of its account, whether or not the run it belongs to was
//! granted that value (an agent secret typed into an input, a model key a step found in a file).
//! So every redactor scrubs with its account's whole set: every current value (revoked ones
//! included) and every superseded value the vault still keeps. The set is compiled once per
//! account and shared; before each use the writer asks the source for the account's
//! generation, a counter the vault moves with every write in the same transaction, so a
//! `stepward secrets set` in another process reaches this process's writers before their next
//! write.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::redactor::Redactor;
use crate::scope::Scope;
use crate::scrub_set::ScrubSet;
use crate::secret::SecretSource;
use ids::AccountId;

/// The live scrub sets of every account this process has scrubbed for. Cheap to clone; clones
/// share the compiled sets.
#[derive(Clone)]
pub struct ScrubSets {
    source: Arc<dyn SecretSource>,
    accounts: Arc<Mutex<BTreeMap<AccountId, Arc<AccountSet>>>>,
}

/// One account's compiled set and the generation it was built at.
pub(crate) struct AccountSet {
    account_id: AccountId,
    source: Arc<dyn SecretSource>,
    built: RwLock<Arc<Built>>,
    /// Held while rebuilding, so two writers that see a new generation build it once.
    rebuilding: Mutex<()>,
}

/// A compiled account set.
pub(crate) struct Built {
    pub(crate) generation: u64,
    pub(crate) set: Arc<ScrubSet>,
    /// SHA-256 of each value, so a run's own values that the account set already holds are
    /// not searched twice.
    digests: HashSet<[u8; 32]>,
}

/// A run's own values: compiled, with their digests, and the account generation at which
/// every one of them was last seen in the account's set.
pub(crate) struct OwnValues {
    pub(crate) set: Arc<ScrubSet>,
    digests: Vec<[u8; 32]>,
    covered_at_generation: AtomicU64,
}

/// No generation has been seen to cover a run's values yet.
const NOT_COVERED: u64 = u64::MAX;

impl OwnValues {
    pub(crate) fn new<'value>(
        label: &str,
        values: impl Iterator<Item = &'value str> + Clone,
    ) -> Result<OwnValues, Error> {
        Ok(OwnValues {
            set: Arc::new(ScrubSet::build(label, values.clone())?),
            digests: values.map(digest).collect(),
            covered_at_generation: AtomicU64::new(NOT_COVERED),
        })
    }

    /// Whether every one of these values is in `account`'s set too (so searching the account
    /// set alone finds them all).
    pub(crate) fn covered_by(&self, account: &Built) -> bool {
        if self.covered_at_generation.load(Ordering::Acquire) == account.generation {
            return true;
        }
        let covered = self
            .digests
            .iter()
            .all(|value| account.digests.contains(value));
        if covered {
            self.covered_at_generation
                .store(account.generation, Ordering::Release);
        }
        covered
    }
}

fn digest(value: &str) -> [u8; 32] {
    Sha256::digest(value.as_bytes()).into()
}

impl ScrubSets {
    /// The live sets over `source` (the vault, in the binary).
    pub fn new(source: Arc<dyn SecretSource>) -> ScrubSets {
        ScrubSets {
            source,
            accounts: Arc::new(Mutex::new(BTreeMap::new())),
        }
    }

    /// Where the values come from.
    pub fn source(&self) -> &Arc<dyn SecretSource> {
        &self.source
    }

    /// A redactor for the records of `account_id` that belong to no run (an audit entry of a
    /// vault write, a sign-in, an answer served to a person of the account).
    pub fn for_account(&self, account_id: &AccountId) -> Result<Redactor, Error> {
        let account = self.account(account_id)?;
        Ok(Redactor::new(Scope::account(account_id), None, account))
    }

    /// The account's set, compiled on first use and checked against the account's generation
    /// on every later one; fails (closed) when the source cannot give the account's values.
    pub(crate) fn account(&self, account_id: &AccountId) -> Result<Arc<AccountSet>, Error> {
        let existing = self
            .accounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(account_id)
            .cloned();
        if let Some(existing) = existing {
            existing.refreshed()?;
            return Ok(existing);
        }
        let built = build(self.source.as_ref(), account_id)?;
        let mut accounts = self.accounts.lock().unwrap_or_else(PoisonError::into_inner);
        let set = accounts.entry(account_id.clone()).or_insert_with(|| {
            Arc::new(AccountSet {
                account_id: account_id.clone(),
                source: Arc::clone(&self.source),
                built: RwLock::new(Arc::new(built)),
                rebuilding: Mutex::new(()),
            })
        });
        Ok(Arc::clone(set))
    }

    /// Checks every known account's generation and rebuilds what changed; a server calls this
    /// now and then so its logs scrub values set by another process before any write happens.
    pub fn refresh_all(&self) {
        let accounts: Vec<Arc<AccountSet>> = self
            .accounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for account in accounts {
            // A failed refresh keeps the last set; the next writer tries again.
            let _ = account.refreshed();
        }
    }

    /// Every known account's set as it was last built, without asking the source (for logs
    /// and panic messages, which must never wait on the database).
    pub(crate) fn cached_sets(&self) -> Vec<Arc<ScrubSet>> {
        self.accounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|account| Arc::clone(&account.cached().set))
            .collect()
    }
}

impl AccountSet {
    pub(crate) fn account_id(&self) -> &AccountId {
        &self.account_id
    }

    /// The set as last built.
    pub(crate) fn cached(&self) -> Arc<Built> {
        Arc::clone(&self.built.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The set for the account's current generation: rebuilt first when the vault changed
    /// since it was built. An error (the source could not be asked) makes the redactor fail
    /// closed: it masks everything and refuses every screened content.
    pub(crate) fn refreshed(&self) -> Result<Arc<Built>, Error> {
        let generation =
            self.source
                .generation(&self.account_id)
                .map_err(|source| Error::Source {
                    account_id: self.account_id.clone(),
                    source,
                })?;
        {
            let built = self.built.read().unwrap_or_else(PoisonError::into_inner);
            if built.generation == generation {
                return Ok(Arc::clone(&built));
            }
        }
        let _rebuilding = self
            .rebuilding
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        {
            let built = self.built.read().unwrap_or_else(PoisonError::into_inner);
            if built.generation >= generation {
                return Ok(Arc::clone(&built));
            }
        }
        let fresh = Arc::new(build(self.source.as_ref(), &self.account_id)?);
        *self.built.write().unwrap_or_else(PoisonError::into_inner) = Arc::clone(&fresh);
        Ok(fresh)
    }
}

/// Reads the generation first and the values after it, so the set holds at least every value
/// of that generation (a write in between only makes the next check rebuild again).
fn build(source: &dyn SecretSource, account_id: &AccountId) -> Result<Built, Error> {
    let source_error = |source| Error::Source {
        account_id: account_id.clone(),
        source,
    };
    let generation = source.generation(account_id).map_err(source_error)?;
    let values = source.account_values(account_id).map_err(source_error)?;
    let set = ScrubSet::build(
        &format!("account {account_id}"),
        values.iter().map(|value| value.dangerously_expose()),
    )?;
    Ok(Built {
        generation,
        set: Arc::new(set),
        digests: values
            .iter()
            .map(|value| digest(value.dangerously_expose()))
            .collect(),
    })
}
