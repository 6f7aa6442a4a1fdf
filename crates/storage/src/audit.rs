//! The audit chain: each entry's hash covers its fields and the previous entry's hash, so an
//! edited, removed or reordered entry breaks every hash after it.

use sha2::{Digest, Sha256};

use crate::records::AuditEntry;
use crate::types::{AccountId, Actor, RunId, Timestamp};

/// The `prev_hash` of the first entry.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Where and why the chain is broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("audit entry {seq} is broken: {reason}")]
pub struct AuditBreak {
    pub seq: u64,
    pub reason: &'static str,
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

/// Checks a whole log, oldest first: sequence numbers 1.. without gaps, each entry pointing at
/// the hash before it, each hash matching its content. Returns the number of entries checked.
pub fn verify_audit_chain(entries: &[AuditEntry]) -> Result<u64, AuditBreak> {
    let mut previous = GENESIS_HASH.to_owned();
    for (index, entry) in entries.iter().enumerate() {
        let expected_seq = index as u64 + 1;
        if entry.seq != expected_seq {
            return Err(AuditBreak {
                seq: entry.seq,
                reason: "sequence number out of order",
            });
        }
        if entry.prev_hash != previous {
            return Err(AuditBreak {
                seq: entry.seq,
                reason: "previous hash does not match the entry before",
            });
        }
        let recomputed = audit_entry_hash(
            &entry.prev_hash,
            entry.seq,
            &entry.account,
            entry.run.as_ref(),
            &entry.actor,
            &entry.action,
            &entry.detail,
            entry.at,
        );
        if recomputed != entry.hash {
            return Err(AuditBreak {
                seq: entry.seq,
                reason: "content does not match its hash",
            });
        }
        previous = entry.hash.clone();
    }
    Ok(entries.len() as u64)
}
