//! The account's audit log over the API (admins): `GET /api/audit`, one page read in the
//! store (keyset pagination: a page reads at most its size + 1 rows), newest first, filtered
//! by who (`actor=KIND:ID`), what (`action=`) and when (`from=`, `to=`, milliseconds), with
//! the cursors of the pages beside it in the answer; and `GET /api/audit/verify`, the
//! account's own chain checked by its admin.

use api_types::{AuditBreakView, AuditEntryView, AuditPageView, AuditVerifyView};
use axum::extract::{Query, State};
use axum::{Extension, Json};
use serde::Deserialize;
use storage::{
    AccountId, AuditCursor, AuditEntry, AuditFilter, AuditPage, AuditPosition, Timestamp,
};

use crate::authn::Authenticated;
use crate::handlers::blocking;
use crate::state::Shared;
use crate::{AppState, Error};

/// How many entries a page holds unless the request says otherwise, and at most.
pub(crate) const DEFAULT_PAGE: usize = 100;
pub(crate) const MAX_PAGE: usize = 500;

/// The query of `GET /api/audit` (and of the console's page): every field optional, empty
/// meaning "any".
#[derive(Debug, Default, Clone, Deserialize, schemars::JsonSchema)]
pub(crate) struct AuditQuery {
    /// `KIND:ID` (`person:p_1`, `api_key:k_1`).
    #[serde(default)]
    pub(crate) actor: String,
    #[serde(default)]
    pub(crate) action: String,
    /// From this time on, in milliseconds since the epoch (the console also takes a date).
    #[serde(default)]
    pub(crate) from: String,
    #[serde(default)]
    pub(crate) to: String,
    /// The page of entries older than this cursor (`AT.SEQ`, as an answer's `older` says).
    #[serde(default)]
    pub(crate) older: String,
    /// The page of entries newer than this cursor (an answer's `newer`).
    #[serde(default)]
    pub(crate) newer: String,
    #[serde(default)]
    pub(crate) limit: Option<usize>,
}

fn invalid(field: &'static str, reason: &str) -> Error {
    Error::InvalidInput {
        field,
        reason: reason.to_owned(),
    }
}

/// A cursor as the answers write it: `AT.SEQ`.
pub(crate) fn cursor_text(cursor: AuditCursor) -> String {
    format!("{}.{}", cursor.at.0, cursor.seq)
}

fn parse_cursor(field: &'static str, text: &str) -> Result<Option<AuditCursor>, Error> {
    if text.is_empty() {
        return Ok(None);
    }
    let (at, seq) = text
        .split_once('.')
        .and_then(|(at, seq)| Some((at.parse::<i64>().ok()?, seq.parse::<u64>().ok()?)))
        .ok_or_else(|| {
            invalid(
                field,
                "a page starts at AT.SEQ, as the answer's `older` or `newer` writes it",
            )
        })?;
    Ok(Some(AuditCursor {
        at: Timestamp(at),
        seq,
    }))
}

/// A time as milliseconds since the epoch, or (for the console's date fields) a UTC date
/// `YYYY-MM-DD` or date and time `YYYY-MM-DDTHH:MM`. `end_of` makes a bare date or minute
/// mean its last millisecond (an inclusive "to").
pub(crate) fn parse_time(
    field: &'static str,
    text: &str,
    end_of: bool,
) -> Result<Option<Timestamp>, Error> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    if let Ok(millis) = text.parse::<i64>() {
        return Ok(Some(Timestamp(millis)));
    }
    let date_time = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]");
    let date = time::macros::format_description!("[year]-[month]-[day]");
    let (moment, span) = if let Ok(moment) = time::PrimitiveDateTime::parse(text, &date_time) {
        (moment, 60_000)
    } else if let Ok(day) = time::Date::parse(text, &date) {
        (day.midnight(), 86_400_000)
    } else {
        return Err(invalid(
            field,
            "a time is milliseconds since 1970, a date YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)",
        ));
    };
    let millis = i64::try_from(moment.assume_utc().unix_timestamp_nanos() / 1_000_000)
        .map_err(|_| invalid(field, "the time is out of range"))?;
    Ok(Some(Timestamp(if end_of {
        millis + span - 1
    } else {
        millis
    })))
}

/// The filter, position and size a query asks for.
pub(crate) fn read_query(query: &AuditQuery) -> Result<(AuditFilter, AuditPosition, usize), Error> {
    let actor = if query.actor.is_empty() {
        None
    } else {
        let (kind, id) = query
            .actor
            .split_once(':')
            .ok_or_else(|| invalid("actor", "who is KIND:ID, such as person:p_1 or api_key:k_1"))?;
        storage::Actor::from_parts(kind, id, "").map_err(|_| {
            invalid(
                "actor",
                "the kind is person, api_key, cli, engine or supervisor",
            )
        })?;
        Some((kind.to_owned(), id.to_owned()))
    };
    let filter = AuditFilter {
        actor,
        action: (!query.action.is_empty()).then(|| query.action.clone()),
        from: parse_time("from", &query.from, false)?,
        to: parse_time("to", &query.to, true)?,
    };
    let position = match (
        parse_cursor("older", &query.older)?,
        parse_cursor("newer", &query.newer)?,
    ) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "older",
                "a page is either older or newer than a cursor",
            ));
        }
        (Some(older), None) => AuditPosition::OlderThan(older),
        (None, Some(newer)) => AuditPosition::NewerThan(newer),
        (None, None) => AuditPosition::Newest,
    };
    let limit = query.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
    Ok((filter, position, limit))
}

/// Reads one page of `account`'s log in the store.
pub(crate) async fn read_page(
    shared: &Shared,
    account: AccountId,
    query: &AuditQuery,
) -> Result<AuditPage, Error> {
    let (filter, position, limit) = read_query(query)?;
    let store = shared.store.clone();
    blocking("read a page of the audit log", move || {
        store.audit_page(&account, &filter, position, limit)
    })
    .await?
    .map_err(Error::storage("read a page of the audit log"))
}

pub(crate) fn entry_view(entry: AuditEntry) -> AuditEntryView {
    AuditEntryView {
        seq: entry.seq,
        run: entry.run.map(String::from),
        actor_kind: entry.actor.kind().to_owned(),
        actor_id: entry.actor.id().to_owned(),
        actor_name: entry.actor.display_name().to_owned(),
        action: entry.action,
        detail: entry.detail,
        at: entry.at.0,
        prev_hash: entry.prev_hash,
        hash: entry.hash,
        count: entry.count,
        last_at: entry.last_at.0,
    }
}

/// `GET /api/audit`.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Query(query): Query<AuditQuery>,
) -> Result<Json<AuditPageView>, Error> {
    let page = read_page(&state.shared, authenticated.account(), &query).await?;
    Ok(Json(AuditPageView {
        entries: page.entries.into_iter().map(entry_view).collect(),
        older: page.older.map(cursor_text),
        newer: page.newer.map(cursor_text),
    }))
}

/// Checks `account`'s chain, entry by entry, on a read connection.
pub(crate) async fn verify_account(
    shared: &Shared,
    account: AccountId,
) -> Result<AuditVerifyView, Error> {
    let store = shared.store.clone();
    let result = blocking("verify the audit chain", move || {
        store.verify_account_audit(&account)
    })
    .await?
    .map_err(Error::storage("verify the audit chain"))?;
    Ok(match result {
        Ok(entries) => AuditVerifyView {
            intact: true,
            entries,
            broken: None,
        },
        Err(broken) => AuditVerifyView {
            intact: false,
            entries: broken.seq.saturating_sub(1),
            broken: Some(AuditBreakView {
                seq: broken.seq,
                reason: broken.reason.to_owned(),
                message: broken.words(),
            }),
        },
    })
}

/// `GET /api/audit/verify`: the account's own chain, checked.
pub(crate) async fn verify(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<AuditVerifyView>, Error> {
    Ok(Json(
        verify_account(&state.shared, authenticated.account()).await?,
    ))
}
