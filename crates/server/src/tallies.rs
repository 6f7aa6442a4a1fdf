//! Audit entries that count instead of growing (issue 11, findings 2 and 6).
//!
//! Every use of an API key, reads too, is one entry per key, route class (`read /api/runs`)
//! and minute, whose count says how many uses it stands for: the first use appends the entry
//! before the request goes on (so a key that cannot be audited is refused), every later one
//! adds to its count in the store.
//!
//! Refused attempts (sign-ins, welcome links, keys) are one entry per client address (an IPv6
//! address by its /64), reason and minute, in the chain of the account they named, or in the
//! server's own chain ([`SERVER_CHAIN`]) when that account does not exist; attacker text is cut
//! to [`MAX_TEXT_CHARS`] characters and the cut is marked. A flood of refusals is what an
//! attacker controls, so after the first one of a window (appended at once) the server holds
//! their count in memory and adds it to the entry at most once a second and when the window
//! ends ([`Refusals`], also from a ticker once a second when no further refusal comes, and
//! all of them when the server stops): a flood costs no write per request. A crash loses at
//! most the last second's count, never the entry.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use engine::Clock;

use serde_json::{Map, Value, json};
use storage::{AccountId, Actor, NewAuditEntry, Timestamp};

use crate::Error;
use crate::handlers::account_redactor;
use crate::state::{ServerStore, Shared};

/// The length of a tally's window.
pub(crate) const WINDOW_MILLIS: i64 = 60_000;

/// The most characters of text an attacker typed that an entry keeps.
pub(crate) const MAX_TEXT_CHARS: usize = 128;

/// How long a held count of refusals waits before it is added to its entry.
const FLUSH_MILLIS: i64 = 1_000;

/// The most client addresses that get entries of their own per chain, action, reason and
/// window; the refusals of every further address are counted in one entry for them all, so
/// an attacker holding many addresses (a /48 holds 65,536 /64s) cannot grow the log with them.
pub(crate) const MAX_ADDRESSES: usize = 256;

/// The most windows whose counts are held at once; beyond it, refusals are counted in the
/// store one by one (slower, never lost).
const MAX_HELD: usize = 10_000;

/// Where the window of `at` starts.
pub(crate) fn window_start(at: Timestamp) -> i64 {
    at.0.div_euclid(WINDOW_MILLIS) * WINDOW_MILLIS
}

/// `text` cut to [`MAX_TEXT_CHARS`] characters, a cut marked with `…`, and whether it was cut.
pub(crate) fn capped(text: &str) -> (String, bool) {
    let mut characters = text.chars();
    let kept: String = characters.by_ref().take(MAX_TEXT_CHARS).collect();
    if characters.next().is_some() {
        (format!("{kept}…"), true)
    } else {
        (kept, false)
    }
}

/// The tally key of an entry: its parts joined by a separator no part contains.
fn tally_key(parts: &[&str]) -> String {
    parts.join("\u{1f}")
}

/// Records one use of an API key by a request to `route` (its pattern): tallied in the
/// store, so the first use of the window is written before this returns.
pub(crate) fn key_use(
    shared: &Shared,
    account: &AccountId,
    key_id: &str,
    changes_state: bool,
    method: &str,
    route: &str,
) -> Result<(), Error> {
    let at = shared.now();
    let window = window_start(at);
    let class = format!("{} {route}", if changes_state { "write" } else { "read" });
    let redactor = account_redactor(shared, account)?;
    let entry = NewAuditEntry {
        account: account.clone(),
        run: None,
        actor: redactor.scrub_fields(Actor::ApiKey {
            id: key_id.to_owned(),
        }),
        action: storage::AuditAction::ApiKeyUse,
        detail: redactor.scrub_json(&json!({
            "key": key_id,
            "route_class": class,
            "method": method,
            "window_start": window,
            "window_seconds": WINDOW_MILLIS / 1000,
        })),
        at,
    };
    let key = tally_key(&[
        storage::AuditAction::ApiKeyUse.as_str(),
        key_id,
        &class,
        &window.to_string(),
    ]);
    shared
        .store
        .tally_audit(&entry, &key)
        .map_err(Error::storage("record API key use"))?;
    Ok(())
}

/// A refused attempt to record.
pub(crate) struct Refusal<'a> {
    /// The account the attempt named, if it exists; otherwise the server's own chain.
    pub(crate) account: Option<&'a AccountId>,
    pub(crate) action: storage::AuditAction,
    pub(crate) reason: &'static str,
    /// The person the attempt matched, if any.
    pub(crate) actor: Actor,
    pub(crate) remote: IpAddr,
    /// The address the limits count by (an IPv6 address by its /64).
    pub(crate) counted: IpAddr,
    /// Text the client typed, by field name; each is cut to [`MAX_TEXT_CHARS`].
    pub(crate) typed: &'a [(&'static str, &'a str)],
    /// Further detail (fixed words, never typed text).
    pub(crate) detail: Map<String, Value>,
}

/// Records a refused attempt, tallied per chain, address, reason, person and window.
pub(crate) fn refused(shared: &Shared, refusal: Refusal<'_>) -> Result<(), Error> {
    let chain = refusal
        .account
        .cloned()
        .unwrap_or_else(AccountId::server_chain);
    let at = shared.now();
    let window = window_start(at);
    let mut detail = refusal.detail;
    let mut cut = Vec::new();
    for (field, text) in refusal.typed {
        let (kept, was_cut) = capped(text);
        if was_cut {
            cut.push(Value::from(*field));
        }
        detail.insert((*field).to_owned(), Value::from(kept));
    }
    if !cut.is_empty() {
        detail.insert("cut".to_owned(), Value::Array(cut));
    }
    detail.insert("reason".to_owned(), Value::from(refusal.reason));
    let group = tally_key(&[
        chain.as_str(),
        refusal.action.as_str(),
        refusal.reason,
        &window.to_string(),
    ]);
    let counted = if shared
        .refusals
        .admits(group, window + WINDOW_MILLIS, refusal.counted)
    {
        detail.insert("remote".to_owned(), Value::from(refusal.remote.to_string()));
        refusal.counted.to_string()
    } else {
        detail.insert(
            "remote".to_owned(),
            Value::from(format!(
                "one of more than {MAX_ADDRESSES} addresses in this minute"
            )),
        );
        "other addresses".to_owned()
    };
    detail.insert("window_start".to_owned(), Value::from(window));
    detail.insert(
        "window_seconds".to_owned(),
        Value::from(WINDOW_MILLIS / 1000),
    );
    // The chain is part of the key: the held counts of every chain share one map.
    let key = tally_key(&[
        chain.as_str(),
        refusal.action.as_str(),
        &counted,
        refusal.reason,
        refusal.actor.kind(),
        refusal.actor.id(),
        &window.to_string(),
    ]);
    let redactor = account_redactor(shared, &chain)?;
    let entry = NewAuditEntry {
        account: chain,
        run: None,
        actor: redactor.scrub_fields(refusal.actor),
        action: refusal.action,
        detail: redactor.scrub_json(&Value::Object(detail)),
        at,
    };
    shared.refusals.start_ticker(&shared.store, &shared.clock);
    shared
        .refusals
        .record(shared.store.as_ref(), entry, key, window + WINDOW_MILLIS)
        .map_err(Error::storage("record a refused attempt"))
}

/// The counts of refused attempts held between writes.
#[derive(Default)]
pub(crate) struct Refusals {
    held: Arc<Mutex<Held>>,
    /// The ticker that writes held counts when no further refusal comes, started with the
    /// first refusal (inside the server's runtime).
    ticker: OnceLock<()>,
}

#[derive(Default)]
struct Held {
    by_key: HashMap<String, HeldCount>,
    /// The addresses that have entries of their own, per chain, action, reason and window,
    /// with the window's end.
    addresses: HashMap<String, (i64, HashSet<IpAddr>)>,
    last_sweep: i64,
}

impl Held {
    /// Takes every held count that waited long enough or whose window ended, and forgets the
    /// windows that ended.
    fn sweep(&mut self, now: i64) -> Vec<(NewAuditEntry, String, u64)> {
        self.last_sweep = now;
        let mut due = Vec::new();
        for (key, count) in self.by_key.iter_mut() {
            if count.uses > 0 && (now - count.written_at >= FLUSH_MILLIS || now >= count.window_end)
            {
                due.push(take(key, count, now));
            }
        }
        self.by_key.retain(|_, count| now < count.window_end);
        self.addresses
            .retain(|_, (window_end, _)| now < *window_end);
        due
    }
}

struct HeldCount {
    /// The window's entry as first written; a flush adds to it with the time of the flush.
    entry: NewAuditEntry,
    /// Uses not yet added to the entry.
    uses: u64,
    written_at: i64,
    window_end: i64,
}

/// Writes the held counts that are due.
fn flush_due(held: &Mutex<Held>, store: &dyn ServerStore, now: i64) -> Result<(), storage::Error> {
    let due = held
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .sweep(now);
    for (entry, key, uses) in due {
        store.tally_audit_uses(&entry, &key, uses)?;
    }
    Ok(())
}

impl Refusals {
    /// Whether `address` gets entries of its own in `group` (chain, action, reason, window):
    /// the first [`MAX_ADDRESSES`] of a window do, later ones share one entry.
    fn admits(&self, group: String, window_end: i64, address: IpAddr) -> bool {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (_, seen) = held
            .addresses
            .entry(group)
            .or_insert_with(|| (window_end, HashSet::new()));
        if seen.contains(&address) {
            return true;
        }
        if seen.len() < MAX_ADDRESSES {
            seen.insert(address);
            return true;
        }
        false
    }

    /// Writes every held count now, due or not: the server is stopping, and nothing else
    /// would write them.
    pub(crate) fn flush_all(
        &self,
        store: &dyn ServerStore,
        now: i64,
    ) -> Result<(), storage::Error> {
        let due: Vec<(NewAuditEntry, String, u64)> = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .by_key
            .iter_mut()
            .filter(|(_, count)| count.uses > 0)
            .map(|(key, count)| take(key, count, now))
            .collect();
        for (entry, key, uses) in due {
            store.tally_audit_uses(&entry, &key, uses)?;
        }
        Ok(())
    }

    /// Starts, once, the ticker that writes held counts every second.
    fn start_ticker(&self, store: &Arc<dyn ServerStore>, clock: &Arc<dyn Clock>) {
        self.ticker.get_or_init(|| {
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            let held = Arc::downgrade(&self.held);
            let store = Arc::clone(store);
            let clock = Arc::clone(clock);
            runtime.spawn(async move {
                let mut every =
                    tokio::time::interval(Duration::from_millis(FLUSH_MILLIS.unsigned_abs()));
                loop {
                    every.tick().await;
                    // The server is gone: nothing is held any more.
                    let Some(held) = held.upgrade() else { break };
                    let store = Arc::clone(&store);
                    let now = clock.now().0;
                    let flushed =
                        tokio::task::spawn_blocking(move || flush_due(&held, store.as_ref(), now))
                            .await;
                    if let Ok(Err(error)) = flushed {
                        tracing::error!(%error, "the held counts of refused attempts could not be written");
                    }
                }
            });
        });
    }

    fn record(
        &self,
        store: &dyn ServerStore,
        entry: NewAuditEntry,
        key: String,
        window_end: i64,
    ) -> Result<(), storage::Error> {
        let now = entry.at.0;
        let mut due: Vec<(NewAuditEntry, String, u64)> = Vec::new();
        let first = {
            let mut held = self
                .held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if now.abs_diff(held.last_sweep) >= FLUSH_MILLIS.unsigned_abs() {
                due = held.sweep(now);
            }
            match held.by_key.get_mut(&key) {
                Some(count) => {
                    count.uses += 1;
                    if now - count.written_at >= FLUSH_MILLIS {
                        due.push(take(&key, count, now));
                    }
                    None
                }
                None => {
                    if held.by_key.len() < MAX_HELD {
                        held.by_key.insert(
                            key.clone(),
                            HeldCount {
                                entry: entry.clone(),
                                uses: 0,
                                written_at: now,
                                window_end,
                            },
                        );
                    }
                    Some((entry, key))
                }
            }
        };
        for (entry, key, uses) in due {
            store.tally_audit_uses(&entry, &key, uses)?;
        }
        if let Some((entry, key)) = first
            && let Err(error) = store.tally_audit(&entry, &key)
        {
            // Not written: the next refusal of the window tries again.
            self.held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .by_key
                .remove(&key);
            return Err(error);
        }
        Ok(())
    }
}

/// Takes a held count to be added to its entry now.
fn take(key: &str, count: &mut HeldCount, now: i64) -> (NewAuditEntry, String, u64) {
    let mut entry = count.entry.clone();
    entry.at = Timestamp(now);
    let uses = std::mem::take(&mut count.uses);
    count.written_at = now;
    (entry, key.to_owned(), uses)
}

#[cfg(test)]
mod tests {
    use super::{MAX_TEXT_CHARS, capped, window_start};
    use storage::Timestamp;

    #[test]
    fn typed_text_is_cut_to_128_characters_and_the_cut_is_marked() {
        let (kept, cut) = capped(&"é".repeat(300));
        assert!(cut);
        assert_eq!(kept.chars().count(), MAX_TEXT_CHARS + 1);
        assert!(kept.ends_with('…'));
        assert_eq!(capped("short"), ("short".to_owned(), false));
        assert!(!capped(&"x".repeat(128)).1);
    }

    #[test]
    fn windows_start_on_the_minute() {
        assert_eq!(window_start(Timestamp(125_000)), 120_000);
        assert_eq!(window_start(Timestamp(-1)), -60_000);
    }
}
