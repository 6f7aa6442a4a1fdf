//! The console's audit log (issue 14): one page read in the store, filtered by who, what and
//! when, with links to the newer and older pages (each keeps the filters), every entry's
//! details as rows of fields (nested fields by their path) instead of raw JSON, and the
//! account's chain verified on request (`/audit/verify`). Every value goes through the
//! template's escaping, and the whole answer through the account's redactor (`served.rs`).

use std::collections::HashMap;

use askama::Template;
use axum::Extension;
use axum::extract::{Query, State};
use axum::response::Html;
use serde_json::Value;
use storage::people::PersonRecord;
use storage::{AccountId, AuditCursor, AuditEntry};

use crate::authn::Authenticated;
use crate::chrome::{self, Chrome};
use crate::handlers::audit::{AuditQuery, cursor_text, read_page, verify_account};
use crate::handlers::console::percent_encode;
use crate::handlers::run_view::who;
use crate::html::{render, when};
use crate::state::Shared;
use crate::{AppState, Error};

/// How many entries one page of the console shows.
const ENTRIES_PER_PAGE: usize = 50;

/// The most fields of one entry's details shown; the rest are counted.
const MAX_FIELDS: usize = 40;

/// One choice of the "Who" filter.
pub(crate) struct ActorChoice {
    value: String,
    label: String,
}

/// One field of an entry's details: its path (`nested.role`, `list[0]`) and its value.
pub(crate) struct Field {
    name: String,
    value: String,
}

/// One row of the log.
pub(crate) struct Row {
    seq: u64,
    when: String,
    /// The entry in one sentence (issue 42, point 7); the rest folded in its details.
    sentence: String,
    /// The last use of a tallied entry, when it differs from the first.
    last: Option<String>,
    who: String,
    action: String,
    count: u64,
    run: Option<String>,
    details: Vec<Field>,
}

#[derive(Template)]
#[template(path = "audit.html")]
struct AuditPage {
    title: &'static str,
    chrome: Option<Chrome>,
    actors: Vec<ActorChoice>,
    actions: Vec<&'static str>,
    filter_actor: String,
    filter_action: String,
    filter_from: String,
    filter_to: String,
    filtered: bool,
    paged: bool,
    first_href: String,
    newer_href: Option<String>,
    older_href: Option<String>,
    rows: Vec<Row>,
}

#[derive(Template)]
#[template(path = "audit_verify.html")]
struct VerifyPage {
    title: &'static str,
    chrome: Option<Chrome>,
    intact: bool,
    entries: u64,
    message: String,
}

/// The actions the "What" field suggests: every action an entry can carry (any other name
/// can be typed; an older version's is found by its stored name).
fn known_actions() -> Vec<&'static str> {
    storage::AuditAction::ALL
        .iter()
        .map(|action| action.as_str())
        .collect()
}

/// An entry's details as rows: every scalar at its path, strings as they are.
fn fields(detail: &Value) -> Vec<Field> {
    fn walk(path: &str, value: &Value, out: &mut Vec<Field>) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    let name = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    walk(&name, inner, out);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                for (index, inner) in items.iter().enumerate() {
                    walk(&format!("{path}[{index}]"), inner, out);
                }
            }
            Value::Array(_) => out.push(Field {
                name: path.to_owned(),
                value: "none".to_owned(),
            }),
            Value::String(text) => out.push(Field {
                name: path.to_owned(),
                value: text.clone(),
            }),
            Value::Number(number) => out.push(Field {
                name: path.to_owned(),
                value: crate::handlers::audit_sentence::readable(path, &number.to_string()),
            }),
            Value::Null => out.push(Field {
                name: path.to_owned(),
                value: "none".to_owned(),
            }),
            other => out.push(Field {
                name: path.to_owned(),
                value: other.to_string(),
            }),
        }
    }
    let mut out = Vec::new();
    walk("", detail, &mut out);
    if out.len() > MAX_FIELDS {
        let more = out.len() - MAX_FIELDS;
        out.truncate(MAX_FIELDS);
        out.push(Field {
            name: "…".to_owned(),
            value: format!("{more} more fields (the whole entry is in GET /api/audit)"),
        });
    }
    out
}

fn row(entry: AuditEntry, people: &HashMap<String, String>) -> Row {
    let last = (entry.last_at != entry.at).then(|| when(entry.last_at.0));
    let who = who(&entry.actor);
    Row {
        seq: entry.seq,
        when: when(entry.at.0),
        last,
        sentence: crate::handlers::audit_sentence::sentence(
            &who,
            &entry.action,
            &entry.detail,
            people,
        ),
        who,
        count: entry.count,
        run: entry.run.map(String::from),
        details: fields(&entry.detail),
        action: entry.action,
    }
}

/// `/audit` with the filters of `query` and, if any, a page cursor.
fn audit_href(query: &AuditQuery, cursor: Option<(&str, AuditCursor)>) -> String {
    let mut pairs = Vec::new();
    for (name, value) in [
        ("actor", &query.actor),
        ("action", &query.action),
        ("from", &query.from),
        ("to", &query.to),
    ] {
        if !value.is_empty() {
            pairs.push(format!("{name}={}", percent_encode(value)));
        }
    }
    if let Some((direction, cursor)) = cursor {
        pairs.push(format!(
            "{direction}={}",
            percent_encode(&cursor_text(cursor))
        ));
    }
    if pairs.is_empty() {
        "/audit".to_owned()
    } else {
        format!("/audit?{}", pairs.join("&"))
    }
}

fn actor_choices(
    shared: &Shared,
    account: &AccountId,
    people: &[PersonRecord],
) -> Result<Vec<ActorChoice>, Error> {
    let mut choices: Vec<ActorChoice> = people
        .iter()
        .map(|person| ActorChoice {
            value: format!("person:{}", person.id),
            label: person.display_name.clone(),
        })
        .collect();
    choices.extend(
        shared
            .store
            .api_keys(account)
            .map_err(Error::storage("list API keys"))?
            .into_iter()
            .map(|key| ActorChoice {
                label: format!("API key {} ({})", key.name, key.key_id),
                value: format!("api_key:{}", key.key_id),
            }),
    );
    Ok(choices)
}

/// `GET /audit`: the account's audit log, one page at a time.
pub(crate) async fn page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Query(mut query): Query<AuditQuery>,
) -> Result<Html<String>, Error> {
    let shared = &state.shared;
    let account = authenticated.account();
    query.limit = Some(ENTRIES_PER_PAGE);
    let page = read_page(shared, account.clone(), &query).await?;
    let people = shared
        .store
        .people(&account)
        .map_err(Error::storage("list people"))?;
    let filtered = !(query.actor.is_empty()
        && query.action.is_empty()
        && query.from.is_empty()
        && query.to.is_empty());
    Ok(render(&AuditPage {
        title: "Audit log",
        chrome: chrome::current(),
        actors: actor_choices(shared, &account, &people)?,
        actions: known_actions(),
        filtered,
        paged: !(query.older.is_empty() && query.newer.is_empty()),
        first_href: audit_href(&query, None),
        newer_href: page
            .newer
            .map(|cursor| audit_href(&query, Some(("newer", cursor)))),
        older_href: page
            .older
            .map(|cursor| audit_href(&query, Some(("older", cursor)))),
        rows: {
            let names = crate::handlers::names_by_id(&people);
            page.entries
                .into_iter()
                .map(|entry| row(entry, &names))
                .collect()
        },
        filter_actor: query.actor,
        filter_action: query.action,
        filter_from: query.from,
        filter_to: query.to,
    }))
}

/// `GET /audit/verify`: the account's chain checked, in words.
pub(crate) async fn verify(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let checked = verify_account(&state.shared, authenticated.account()).await?;
    Ok(render(&VerifyPage {
        title: "Verify the audit chain",
        chrome: chrome::current(),
        intact: checked.intact,
        entries: checked.entries,
        message: checked
            .broken
            .map(|broken| broken.message)
            .unwrap_or_default(),
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::fields;

    #[test]
    fn details_are_rows_of_fields_by_path() {
        let rows = fields(&json!({
            "email": "a@b.test",
            "nested": {"role": "member", "count": 2},
            "list": ["x"],
            "none": null
        }));
        let pairs: Vec<(String, String)> = rows
            .into_iter()
            .map(|field| (field.name, field.value))
            .collect();
        assert!(pairs.contains(&("email".into(), "a@b.test".into())));
        assert!(pairs.contains(&("nested.role".into(), "member".into())));
        assert!(pairs.contains(&("nested.count".into(), "2".into())));
        assert!(pairs.contains(&("list[0]".into(), "x".into())));
        assert!(pairs.contains(&("none".into(), "none".into())));
    }
}
