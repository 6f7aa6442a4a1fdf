//! The audit chain: each entry's hash covers its fields and the previous entry's hash, so an
//! edited, removed or reordered entry breaks every hash after it.

use sha2::{Digest, Sha256};

use crate::records::AuditEntry;
use crate::types::{AccountId, Actor, RunId, Timestamp};

/// The `prev_hash` of the first entry.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The chain of audit entries that attempts at accounts that do not exist go to (refused
/// sign-ins, refused keys): no account id starts with `_`, so it is no account's chain.
pub use ids::SERVER_CHAIN;

/// Where and why a chain is broken: the first broken link of one account's chain (or of the
/// one chain the log had before each account got its own, [`AuditBreak::legacy`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.words())]
pub struct AuditBreak {
    pub account: AccountId,
    /// The entry's sequence number in its account's chain (or in the old shared chain when
    /// `legacy` is set).
    pub seq: u64,
    pub reason: &'static str,
    /// Set when the break is in the old shared chain of entries written before each account
    /// had its own.
    pub legacy: bool,
}

impl AuditBreak {
    /// The break in plain words, naming the account and the entry.
    pub fn words(&self) -> String {
        let chain = if self.account.is_server_chain() {
            "the server's own chain (attempts at accounts that do not exist)".to_owned()
        } else {
            format!("account {}", self.account)
        };
        if self.legacy {
            format!(
                "entry {} of the audit log as it was before each account had its own chain \
                 (now in {chain}) is broken: {}; it and every entry after it cannot be trusted",
                self.seq, self.reason
            )
        } else {
            format!(
                "entry {} of {chain} is broken: {}; it and every entry after it cannot be \
                 trusted",
                self.seq, self.reason
            )
        }
    }
}

/// The hash of one entry: SHA-256 over the previous hash and each field, every field
/// length-prefixed so that no two different entries encode the same bytes.
#[allow(clippy::too_many_arguments)]
pub fn audit_entry_hash(
    prev_hash: &str,
    seq: u64,
    account: &AccountId,
    run: Option<&RunId>,
    actor: &Actor,
    action: &str,
    detail: &serde_json::Value,
    at: Timestamp,
) -> String {
    let mut hasher = Sha256::new();
    let detail_text = detail.to_string();
    let seq_text = seq.to_string();
    let at_text = at.0.to_string();
    let run_text = run.map(RunId::as_str).unwrap_or("");
    let has_run = if run.is_some() { "1" } else { "0" };
    for field in [
        prev_hash,
        seq_text.as_str(),
        account.as_str(),
        has_run,
        run_text,
        actor.kind(),
        actor.id(),
        actor.display_name(),
        action,
        detail_text.as_str(),
        at_text.as_str(),
    ] {
        hasher.update((field.len() as u64).to_be_bytes());
        hasher.update(field.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// Checks one account's chain entry by entry, oldest first, without holding it in memory:
/// sequence numbers 1.. without gaps, each entry pointing at the hash before it, each hash
/// matching its content.
///
/// Entries written before each account had its own chain (`legacy_seq` set) come first and
/// keep the hash they were written with: it covers their number in the old shared chain, and
/// their `prev_hash` is the hash of the entry before them there, whichever account that was.
/// The caller looks that entry up and hands its hash in (`legacy_previous`) without showing
/// it to anyone; the first entry written after them points at the last of them.
#[derive(Debug, Clone)]
pub struct ChainCheck {
    account: AccountId,
    checked: u64,
    previous: String,
    last_legacy: Option<u64>,
    seen_new: bool,
}

impl ChainCheck {
    pub fn new(account: AccountId) -> ChainCheck {
        ChainCheck {
            account,
            checked: 0,
            previous: GENESIS_HASH.to_owned(),
            last_legacy: None,
            seen_new: false,
        }
    }

    /// How many entries passed so far.
    pub fn checked(&self) -> u64 {
        self.checked
    }

    fn broken(&self, seq: u64, reason: &'static str) -> AuditBreak {
        AuditBreak {
            account: self.account.clone(),
            seq,
            reason,
            legacy: false,
        }
    }

    /// Checks the next entry. `legacy_previous` is, for an entry with a `legacy_seq`, the hash
    /// of the entry before it in the old shared chain ([`GENESIS_HASH`] for its first), or
    /// `None` when that entry is gone.
    pub fn check(
        &mut self,
        entry: &AuditEntry,
        legacy_previous: Option<&str>,
    ) -> Result<(), AuditBreak> {
        let expected_seq = self.checked + 1;
        if entry.account != self.account {
            return Err(self.broken(entry.seq, "it belongs to another account's chain"));
        }
        if entry.seq != expected_seq {
            return Err(self.broken(
                entry.seq,
                "its sequence number is not the next one (an entry before it is missing)",
            ));
        }
        let hashed_seq = match entry.legacy_seq {
            Some(legacy_seq) => {
                if self.seen_new {
                    return Err(self.broken(
                        entry.seq,
                        "an entry of the old shared chain comes after a newer entry",
                    ));
                }
                if self.last_legacy.is_some_and(|last| legacy_seq <= last) {
                    return Err(
                        self.broken(entry.seq, "it is out of order in the old shared chain")
                    );
                }
                match legacy_previous {
                    Some(previous) if previous == entry.prev_hash => {}
                    Some(_) => {
                        return Err(self.broken(
                            entry.seq,
                            "its previous hash does not match the entry before it in the old \
                             shared chain",
                        ));
                    }
                    None => {
                        return Err(self.broken(
                            entry.seq,
                            "the entry before it in the old shared chain is missing",
                        ));
                    }
                }
                self.last_legacy = Some(legacy_seq);
                legacy_seq
            }
            None => {
                self.seen_new = true;
                if entry.prev_hash != self.previous {
                    return Err(self.broken(
                        entry.seq,
                        "its previous hash does not match the entry before it",
                    ));
                }
                entry.seq
            }
        };
        let recomputed = audit_entry_hash(
            &entry.prev_hash,
            hashed_seq,
            &entry.account,
            entry.run.as_ref(),
            &entry.actor,
            &entry.action,
            &entry.detail,
            entry.at,
        );
        if recomputed != entry.hash {
            return Err(self.broken(entry.seq, "its content does not match its hash"));
        }
        self.previous = entry.hash.clone();
        self.checked += 1;
        Ok(())
    }
}

/// Checks the old shared chain (the entries written before each account had its own, every
/// account's, in their old order) link by link: numbers 1.. without gaps, each pointing at
/// the hash before it. Their contents are checked with each account's chain
/// ([`ChainCheck`]); this finds an old entry removed from between two others.
#[derive(Debug, Clone)]
pub struct LegacyChainCheck {
    checked: u64,
    previous: String,
}

impl Default for LegacyChainCheck {
    fn default() -> Self {
        LegacyChainCheck {
            checked: 0,
            previous: GENESIS_HASH.to_owned(),
        }
    }
}

impl LegacyChainCheck {
    pub fn checked(&self) -> u64 {
        self.checked
    }

    /// The next old entry: its account, old number, `prev_hash` and `hash`.
    pub fn check(
        &mut self,
        account: &AccountId,
        legacy_seq: u64,
        prev_hash: &str,
        hash: &str,
    ) -> Result<(), AuditBreak> {
        let broken = |reason| AuditBreak {
            account: account.clone(),
            seq: legacy_seq,
            reason,
            legacy: true,
        };
        if legacy_seq != self.checked + 1 {
            return Err(broken(
                "its number is not the next one (an entry before it is missing)",
            ));
        }
        if prev_hash != self.previous {
            return Err(broken(
                "its previous hash does not match the entry before it",
            ));
        }
        self.previous = hash.to_owned();
        self.checked += 1;
        Ok(())
    }
}

/// The result of checking every chain of the log: each account's, and the old shared chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditVerification {
    /// Each chain, by account: how many entries it holds, or its first broken link.
    pub chains: Vec<(AccountId, Result<u64, AuditBreak>)>,
    /// The old shared chain: how many entries it held, or its first broken link.
    pub legacy: Result<u64, AuditBreak>,
}

impl AuditVerification {
    /// The first broken link of any chain, the old shared one first.
    pub fn first_break(&self) -> Option<&AuditBreak> {
        self.legacy.as_ref().err().or_else(|| {
            self.chains
                .iter()
                .find_map(|(_, result)| result.as_ref().err())
        })
    }
}

/// Checks whole chains held in memory (every entry of the log, any order): each account's
/// chain in sequence order, and the old shared chain. For stores that hold few entries and
/// for tests; a database backend streams instead.
pub fn verify_audit_entries(entries: &[AuditEntry]) -> AuditVerification {
    let mut by_legacy: Vec<&AuditEntry> = entries
        .iter()
        .filter(|entry| entry.legacy_seq.is_some())
        .collect();
    by_legacy.sort_by_key(|entry| entry.legacy_seq);
    let legacy_hash = |legacy_seq: u64| -> Option<String> {
        if legacy_seq == 1 {
            return Some(GENESIS_HASH.to_owned());
        }
        by_legacy
            .binary_search_by_key(&Some(legacy_seq - 1), |entry| entry.legacy_seq)
            .ok()
            .map(|index| by_legacy[index].hash.clone())
    };
    let mut legacy_check = LegacyChainCheck::default();
    let legacy = by_legacy
        .iter()
        .try_for_each(|entry| {
            legacy_check.check(
                &entry.account,
                entry.legacy_seq.unwrap_or_default(),
                &entry.prev_hash,
                &entry.hash,
            )
        })
        .map(|()| legacy_check.checked());
    let mut accounts: Vec<&AccountId> = entries.iter().map(|entry| &entry.account).collect();
    accounts.sort();
    accounts.dedup();
    let chains = accounts
        .into_iter()
        .map(|account| {
            let mut chain: Vec<&AuditEntry> = entries
                .iter()
                .filter(|entry| entry.account == *account)
                .collect();
            chain.sort_by_key(|entry| entry.seq);
            let mut check = ChainCheck::new(account.clone());
            let result = chain
                .iter()
                .try_for_each(|entry| {
                    let previous = entry.legacy_seq.and_then(legacy_hash);
                    check.check(entry, previous.as_deref())
                })
                .map(|()| check.checked());
            (account.clone(), result)
        })
        .collect();
    AuditVerification { chains, legacy }
}
