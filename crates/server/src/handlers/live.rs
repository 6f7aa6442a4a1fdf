//! `GET /runs/{id}/stream`: the run page's live updates, as server-sent events (axum's `Sse`).
//!
//! The stream says only *that* the run moved (`changed`), that it ended (`ended`) or that the
//! stream is over (`closed`, with a fixed sentence); the page then fetches itself, through the
//! same policy, scope check and served scrub as any page. So the stream carries nothing of a
//! record, which is why it is the one answer the served scrub passes through
//! ([`RecordFreeStream`]).
//!
//! A look reads only what the stream has not seen: the events after the newest one it knew
//! (the page says which it was rendered with, `?after=SEQ`), one search of the events' key in
//! the store (`EventLog::events_after`), never the whole log.
//!
//! A stream checks its session again at least every [`REAUTH_EVERY`] and closes when the
//! session was revoked or expired, the person removed, or their account changed; it ends after
//! [`MAX_STREAM_LIFETIME`]; the server holds at most [`MAX_LIVE_STREAMS`] at once, and one
//! person at most [`MAX_LIVE_STREAMS_PER_PERSON`] of them (a page past a cap is told to
//! reload by hand).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream};
use serde::Deserialize;
use storage::{AccountId, RunId};
use tokio::time::Instant;

use crate::authn::{Authenticated, authenticate};
use crate::handlers::blocking;
use crate::handlers::runs::run_in_scope;
use crate::served::RecordFreeStream;
use crate::state::Shared;
use crate::{AppState, Error};

/// How often a stream looks at the run.
pub(crate) const POLL_EVERY: Duration = Duration::from_secs(1);
/// How often a stream checks its session again (the issue asks for at most 30 s).
pub(crate) const REAUTH_EVERY: Duration = Duration::from_secs(15);
/// How long one stream lives; the page reconnects (EventSource does by itself).
pub(crate) const MAX_STREAM_LIFETIME: Duration = Duration::from_secs(30 * 60);
/// How many streams the server holds at once.
pub(crate) const MAX_LIVE_STREAMS: usize = 256;
/// How many of them one person holds at once, over all their sessions (a few tabs of run
/// pages), so no one person takes every stream of the server.
pub(crate) const MAX_LIVE_STREAMS_PER_PERSON: usize = 8;

static OPEN_STREAMS: AtomicUsize = AtomicUsize::new(0);

/// The open streams of each person, by account and person id (one with none has no entry).
fn open_by_person() -> &'static Mutex<HashMap<String, usize>> {
    static OPEN: OnceLock<Mutex<HashMap<String, usize>>> = OnceLock::new();
    OPEN.get_or_init(|| Mutex::new(HashMap::new()))
}

/// One open stream's place under both caps, given back when the stream is dropped.
struct Slot {
    person: String,
}

/// Why a stream got no place.
enum Full {
    Server,
    Person,
}

impl Slot {
    fn take(person: String) -> Result<Slot, Full> {
        let mut by_person = open_by_person()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mine = by_person.get(&person).copied().unwrap_or(0);
        if mine >= MAX_LIVE_STREAMS_PER_PERSON {
            return Err(Full::Person);
        }
        OPEN_STREAMS
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < MAX_LIVE_STREAMS).then_some(open + 1)
            })
            .map_err(|_| Full::Server)?;
        by_person.insert(person.clone(), mine + 1);
        Ok(Slot { person })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        OPEN_STREAMS.fetch_sub(1, Ordering::AcqRel);
        let mut by_person = open_by_person()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = by_person.get_mut(&self.person) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                by_person.remove(&self.person);
            }
        }
    }
}

/// What a look at the run needs (cloned into the blocking pool for each look).
#[derive(Clone)]
struct Probe {
    shared: Arc<Shared>,
    headers: HeaderMap,
    session: String,
    account: AccountId,
    run: RunId,
}

/// What a stream knows between two looks.
struct Watch {
    probe: Probe,
    /// The sequence number of the newest event the page has been told of.
    seen_seq: u64,
    /// The newest change of a running step's live output the page has been told of.
    seen_live: i64,
    opened: Instant,
    checked: Instant,
    done: bool,
    _slot: Slot,
}

/// What one look found.
enum Look {
    Same,
    /// The run moved, or a running step printed more; the newest event and the newest live
    /// output's time are now these.
    Changed(u64, i64),
    Ended,
    Closed(&'static str),
}

fn closed(sentence: &'static str) -> Event {
    Event::default().event("closed").data(sentence)
}

/// Whether the request's credentials are still those of the stream's session and account.
fn still_signed_in(probe: &Probe) -> Result<bool, Error> {
    Ok(
        authenticate(&probe.shared, &probe.headers)?.is_some_and(|authenticated| {
            authenticated
                .session
                .as_ref()
                .is_some_and(|session| session.id == probe.session)
                && authenticated.principal.account_id() == &probe.account
        }),
    )
}

fn look(probe: &Probe, seen_seq: u64, seen_live: i64, reauth: bool) -> Result<Look, Error> {
    if reauth && !still_signed_in(probe)? {
        return Ok(Look::Closed(
            "Your session has ended; sign in again to follow this run.",
        ));
    }
    let store = &probe.shared.store;
    // At most one row: whether anything came after what the page was told of.
    let moved = !store
        .events_after(&probe.run, seen_seq, 1)
        .map_err(Error::storage("read a run's new events for its live page"))?
        .is_empty();
    let ended = store
        .run(&probe.run)
        .map_err(Error::storage("read a run for its live page"))?
        .is_none_or(|run| run.status.is_terminal());
    // What a running step printed so far moves the page too (issue 38).
    let live = store
        .live_output(&probe.run)
        .map_err(Error::storage("read a run's live output for its live page"))?
        .iter()
        .map(|view| view.updated_at.0)
        .max()
        .unwrap_or(seen_live);
    Ok(if ended {
        Look::Ended
    } else if moved || live > seen_live {
        Look::Changed(
            store.last_event_seq(&probe.run).map_err(Error::storage(
                "read a run's newest event for its live page",
            ))?,
            live.max(seen_live),
        )
    } else {
        Look::Same
    })
}

/// The stream's events, one look every [`POLL_EVERY`].
fn events(watch: Watch) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(watch, |mut watch| async move {
        loop {
            if watch.done {
                return None;
            }
            tokio::time::sleep(POLL_EVERY).await;
            if watch.opened.elapsed() >= MAX_STREAM_LIFETIME {
                watch.done = true;
                return Some((
                    Ok(closed("Live updates paused; reload the page to go on.")),
                    watch,
                ));
            }
            let reauth = watch.checked.elapsed() >= REAUTH_EVERY;
            let probe = watch.probe.clone();
            let seen = watch.seen_seq;
            let seen_live = watch.seen_live;
            let found = blocking("look at a live run", move || {
                look(&probe, seen, seen_live, reauth)
            })
            .await
            .and_then(|found| found);
            if reauth {
                watch.checked = Instant::now();
            }
            let event = match found {
                Ok(Look::Same) => continue,
                // A browser drops an event whose data is empty: each carries some.
                Ok(Look::Changed(newest, live)) => {
                    watch.seen_seq = newest;
                    watch.seen_live = live;
                    Event::default()
                        .event("changed")
                        .id(newest.to_string())
                        .data(newest.to_string())
                }
                Ok(Look::Ended) => {
                    watch.done = true;
                    Event::default().event("ended").data("ended")
                }
                Ok(Look::Closed(sentence)) => {
                    watch.done = true;
                    closed(sentence)
                }
                Err(error) => {
                    tracing::warn!(%error, "a live run page stopped");
                    watch.done = true;
                    closed("Live updates stopped; reload the page to see the latest.")
                }
            };
            return Some((Ok(event), watch));
        }
    })
}

/// `?after=SEQ`: the newest event the page was rendered with.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StreamQuery {
    after: Option<u64>,
}

/// `GET /runs/{id}/stream[?after=SEQ]`; without `after`, from the run's newest event.
pub(crate) async fn run_stream(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    headers: HeaderMap,
    Path(run_id): Path<String>,
    Query(query): Query<StreamQuery>,
) -> Result<Response, Error> {
    let record = run_in_scope(&state.shared, &authenticated, &run_id)?;
    let Some(session) = authenticated.session.as_ref() else {
        return Err(Error::NotFound {
            what: "live stream",
            id: run_id,
        });
    };
    let stream: std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>> =
        match Slot::take(format!(
            "{}/{}",
            authenticated.principal.account_id(),
            authenticated.actor.id()
        )) {
            Ok(slot) => {
                let seen_seq =
                    match query.after {
                        Some(after) => after,
                        None => state.shared.store.last_event_seq(&record.id).map_err(
                            Error::storage("read a run's newest event for its live page"),
                        )?,
                    };
                Box::pin(events(Watch {
                    probe: Probe {
                        shared: state.shared.clone(),
                        headers,
                        session: session.id.clone(),
                        account: authenticated.principal.account_id().clone(),
                        run: record.id,
                    },
                    seen_seq,
                    seen_live: 0,
                    opened: Instant::now(),
                    checked: Instant::now(),
                    done: false,
                    _slot: slot,
                }))
            }
            Err(Full::Server) => Box::pin(stream::once(async {
                Ok(closed(
                    "Too many live pages are open on this server; reload the page to see the latest.",
                ))
            })),
            Err(Full::Person) => Box::pin(stream::once(async {
                Ok(closed(
                    "You follow too many runs live at once; close some of their pages, or reload this one to see the latest.",
                ))
            })),
        };
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response();
    response.extensions_mut().insert(RecordFreeStream);
    Ok(response)
}
