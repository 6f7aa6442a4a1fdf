//! Share links (G24): 24 random bytes, stored only as a hash, with expiry and revocation. A
//! share link shows one run's scrubbed record, read-only, and nothing else; every failed fetch
//! (unknown, expired, revoked, malformed, wrong length, a run that is gone) answers the same
//! bytes: [`auth::SHARE_NOT_FOUND_BODY`] with status 404.

use api_types::{CreateShareRequest, ShareLinkCreated, ShareLinkView};
use askama::Template;
use auth::{SHARE_NOT_FOUND_BODY, SHARE_NOT_FOUND_CONTENT_TYPE, ShareToken};
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::json;
use storage::Timestamp;
use storage::people::{NewShareLink, PeopleWrite, ShareLinkRecord, TokenHash};

use crate::authn::Authenticated;
use crate::chrome::Chrome;
use crate::handlers::run_view::{Scrub, step_cards, took, who};
use crate::handlers::runs::{detail, journal, run_in_scope};
use crate::handlers::value_view::{Shape, Span};
use crate::handlers::{Audited, account_redactor, audited_write, random_id};
use crate::html::{render, when};
use crate::state::Shared;
use crate::{AppState, Error};

/// `POST /api/runs/{id}/shares`: a new share link for a run of the account; its address is
/// in the answer, once. The body may be left out: agent tool calls' results are then not
/// shown on the link's page.
pub(crate) async fn create(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(run_id): Path<String>,
    body: Option<Json<CreateShareRequest>>,
) -> Result<(StatusCode, Json<ShareLinkCreated>), Error> {
    let Json(request) = body.unwrap_or_default();
    create_share(&state, &authenticated, &run_id, &request)
}

/// A new share link for a run of the account, as the API and the console's form make it.
pub(crate) fn create_share(
    state: &AppState,
    authenticated: &Authenticated,
    run_id: &str,
    request: &CreateShareRequest,
) -> Result<(StatusCode, Json<ShareLinkCreated>), Error> {
    let shared = &state.shared;
    let record = run_in_scope(shared, authenticated, run_id)?;
    let (token, token_hash) = ShareToken::generate().map_err(Error::auth("create a share link"))?;
    let now = shared.now();
    let expires_at = Timestamp(
        now.0
            .saturating_add(shared.options.share_link_lifetime_millis),
    );
    let link_id = random_id("shr")?;
    audited_write(
        shared,
        "create share link",
        Audited {
            account: &record.account,
            actor: authenticated.actor.clone(),
            action: storage::AuditAction::ShareCreate,
            detail: &json!({
                "share": link_id,
                "run": record.id.as_str(),
                "expires_at": expires_at.0,
                "include_tool_results": request.include_tool_results,
            }),
        },
        PeopleWrite::CreateShareLink(&NewShareLink {
            id: link_id.clone(),
            token_hash: TokenHash(*token_hash.as_bytes()),
            account: record.account.clone(),
            run: record.id.clone(),
            created_at: now,
            expires_at,
            include_tool_results: request.include_tool_results,
            created_by: authenticated.actor.clone(),
        }),
    )?;
    Ok((
        StatusCode::CREATED,
        Json(ShareLinkCreated {
            id: link_id,
            path: format!("/s/{}", token.reveal_once()),
            expires_at: expires_at.0,
        }),
    ))
}

/// `GET /api/shares`: the account's share links, never their tokens.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<ShareLinkView>>, Error> {
    let links = state
        .shared
        .store
        .share_links(&authenticated.account())
        .map_err(Error::storage("list share links"))?;
    let mut views = Vec::with_capacity(links.len());
    for link in links {
        let run = state
            .shared
            .store
            .run(&link.run)
            .map_err(Error::storage("read a shared run"))?
            .filter(|run| run.account == link.account);
        views.push(ShareLinkView {
            id: link.id,
            run: link.run.to_string(),
            created_at: link.created_at.0,
            expires_at: link.expires_at.0,
            revoked: link.revoked_at.is_some(),
            include_tool_results: link.include_tool_results,
            created_by: link.created_by.as_ref().map(who),
            workflow: run.as_ref().map(|run| run.workflow_name.clone()),
            number: run.map(|run| run.number),
        });
    }
    Ok(Json(views))
}

/// `DELETE /api/shares/{id}`: revokes a share link of the account.
pub(crate) async fn revoke(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(link_id): Path<String>,
) -> Result<StatusCode, Error> {
    let shared = &state.shared;
    let account = authenticated.account();
    let written = audited_write(
        shared,
        "revoke share link",
        Audited {
            account: &account,
            actor: authenticated.actor.clone(),
            action: storage::AuditAction::ShareRevoke,
            detail: &json!({"share": link_id}),
        },
        PeopleWrite::RevokeShareLink {
            account: &account,
            link_id: &link_id,
            at: shared.now(),
        },
    )?;
    if !written.took_effect() {
        return Err(Error::NotFound {
            what: "share link",
            id: link_id,
        });
    }
    Ok(StatusCode::NO_CONTENT)
}

/// The one answer of every failed share-link fetch.
pub(crate) fn share_not_found() -> Response {
    let mut response = (StatusCode::NOT_FOUND, SHARE_NOT_FOUND_BODY).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(SHARE_NOT_FOUND_CONTENT_TYPE),
    );
    response
}

/// The live link behind a presented token, or `None` for every kind of failure.
fn live_link(shared: &Shared, token_text: &str) -> Option<ShareLinkRecord> {
    let token = ShareToken::parse(token_text).ok()?;
    let found = shared
        .store
        .share_link_by_token(&TokenHash(*token.hash().as_bytes()));
    let link = match found {
        Ok(link) => link?,
        Err(error) => {
            // A store failure is answered like every other failed fetch, so the answer says
            // nothing about the link; the log has the cause.
            tracing::error!(%error, "reading a share link failed");
            return None;
        }
    };
    if link.revoked_at.is_some() || shared.now() >= link.expires_at {
        return None;
    }
    Some(link)
}

/// One step as a share page shows it: its latest attempt, how long it took and what it
/// produced, scrubbed like the run page.
struct SharedStep {
    step: String,
    attempt: u32,
    status: String,
    duration: Option<String>,
    output: Option<crate::handlers::value_view::ValueView>,
    reason: Option<String>,
}

struct DecisionLine {
    decision: String,
    step: String,
    who: String,
    door: String,
    note: String,
}

#[derive(Template)]
#[template(path = "shared_run.html")]
struct SharedRunPage {
    title: &'static str,
    /// Always `None`: a share page shows no navigation, whoever opens it.
    chrome: Option<Chrome>,
    run: String,
    workflow: String,
    /// The run's short number within its workflow.
    number: u64,
    status: String,
    /// When the run started and last changed, and how long it ran (issue 42, point 10).
    started: String,
    updated: String,
    took: String,
    steps: Vec<SharedStep>,
    decisions: Vec<DecisionLine>,
    tool_calls: Vec<SharedToolCall>,
    include_tool_results: bool,
}

/// One agent tool call as a share page shows it: its name, the path it named and how it
/// ended; its result only when the link's maker ticked "include tool results".
struct SharedToolCall {
    step: String,
    attempt: u32,
    call: String,
    tool: String,
    path: String,
    outcome: String,
    result: Option<String>,
}

/// The tool calls of the run's agent steps, in order, scrubbed with `scrub`; their results
/// (and the reasons of refusals, which can quote what a call read) only when `with_results`.
fn shared_tool_calls(
    entries: &[engine::journal::Entry],
    scrub: &dyn Fn(&str) -> String,
    with_results: bool,
) -> Vec<SharedToolCall> {
    use engine::journal::Event;
    let mut calls: Vec<SharedToolCall> = Vec::new();
    let result = |text: &str| with_results.then(|| scrub(text));
    for entry in entries {
        match &entry.event {
            Event::ToolCalled(called) => calls.push(SharedToolCall {
                step: called.step.clone(),
                attempt: called.attempt,
                call: called.call.clone(),
                tool: called.tool.clone(),
                path: called
                    .arguments
                    .get("path")
                    .and_then(serde_json::Value::as_str)
                    .map(|path| shown_path(&scrub(path)))
                    .unwrap_or_default(),
                outcome: "running".to_owned(),
                result: None,
            }),
            Event::ToolFinished(finished) => {
                let found = calls.iter_mut().find(|call| {
                    call.call == finished.call
                        && call.step == finished.step
                        && call.attempt == finished.attempt
                });
                let path = finished
                    .refused_path
                    .as_deref()
                    .map(|path| shown_path(&scrub(path)));
                match found {
                    Some(call) => {
                        call.outcome = finished.outcome.clone();
                        call.result = result(&finished.result);
                        if let Some(path) = path {
                            call.path = path;
                        }
                    }
                    None => calls.push(SharedToolCall {
                        step: finished.step.clone(),
                        attempt: finished.attempt,
                        call: finished.call.clone(),
                        tool: finished.tool.clone(),
                        path: path.unwrap_or_default(),
                        outcome: finished.outcome.clone(),
                        result: result(&finished.result),
                    }),
                }
            }
            // A refused call's tool may be a name the model made up, which is text it chose:
            // shown only with the results.
            Event::ToolRefused(refused) => calls.push(SharedToolCall {
                step: refused.step.clone(),
                attempt: refused.attempt,
                call: refused.call.clone(),
                tool: if with_results {
                    scrub(&refused.tool)
                } else {
                    "(refused before it ran)".to_owned()
                },
                path: String::new(),
                outcome: "refused".to_owned(),
                result: result(&refused.reason),
            }),
            _ => {}
        }
    }
    calls
}

/// A path as a share page shows it: the model chooses it, so at most 200 characters of it.
fn shown_path(path: &str) -> String {
    const MAX_PATH_CHARS: usize = 200;
    if path.chars().count() <= MAX_PATH_CHARS {
        return path.to_owned();
    }
    let mut cut: String = path.chars().take(MAX_PATH_CHARS).collect();
    cut.push('…');
    cut
}

fn shared_page(
    detail: api_types::RunDetail,
    steps: Vec<SharedStep>,
    (now, ended): (i64, bool),
    tool_calls: Vec<SharedToolCall>,
    include_tool_results: bool,
) -> Html<String> {
    let took = took(detail.created_at, detail.updated_at, now, ended);
    render(&SharedRunPage {
        title: "Shared run",
        chrome: None,
        run: detail.summary.run,
        workflow: detail.workflow,
        number: detail.number,
        status: detail.summary.status,
        started: when(detail.created_at),
        updated: when(detail.updated_at),
        took,
        steps,
        decisions: detail
            .decisions
            .into_iter()
            .map(|decision| DecisionLine {
                who: if decision.actor_name.is_empty() {
                    format!("{} {}", decision.actor_kind, decision.actor_id)
                } else {
                    decision.actor_name
                },
                decision: decision.decision,
                step: decision.step.unwrap_or_else(|| "the run".to_owned()),
                door: decision.door,
                note: decision.note,
            })
            .collect(),
        tool_calls,
        include_tool_results,
    })
}

/// `GET /s/{token}`: one run's scrubbed record, read-only. The token is read from the raw
/// path rather than through the `Path` extractor, whose rejections (bad percent-encoding)
/// would answer other bytes than the one not-found answer.
pub(crate) async fn view(State(state): State<AppState>, uri: Uri) -> Response {
    let shared = &state.shared;
    let token = uri.path().strip_prefix("/s/").unwrap_or_default();
    let Some(link) = live_link(shared, token) else {
        return share_not_found();
    };
    let record = match shared.store.run(&link.run) {
        Ok(Some(record)) if record.account == link.account => record,
        Ok(_) => return share_not_found(),
        Err(error) => {
            tracing::error!(%error, "reading a shared run failed");
            return share_not_found();
        }
    };
    let account = record.account.clone();
    let now = shared.now().0;
    let ended = record.status.is_terminal();
    let order: Vec<String> = spec::parse_workflow_within(
        &record.workflow_file_name,
        &record.workflow_source,
        shared.engine.limit_maxima(),
    )
    .map(|workflow| {
        workflow
            .steps()
            .iter()
            .map(|step| step.id().to_owned())
            .collect()
    })
    .unwrap_or_default();
    let shown = journal(shared, &record).and_then(|entries| {
        let redactor = account_redactor(shared, &account)?;
        let scrub = Scrub::with(&redactor);
        let steps = step_cards(&scrub, &order, &entries, now, &[])
            .into_iter()
            .filter(|card| card.attempt > 0)
            .map(|card| SharedStep {
                step: card.step,
                attempt: card.attempt,
                status: card.status.words.to_owned(),
                duration: card.duration,
                output: card.output,
                reason: card.reason,
            })
            .collect();
        Ok((
            steps,
            shared_tool_calls(
                &entries,
                &|text| scrub.text(text),
                link.include_tool_results,
            ),
        ))
    });
    match shown.and_then(|shown| Ok((detail(shared, record)?, shown))) {
        Ok((detail, (steps, calls))) => {
            let mut response = shared_page(
                detail,
                steps,
                (now, ended),
                calls,
                link.include_tool_results,
            )
            .into_response();
            response
                .extensions_mut()
                .insert(crate::served::ServedFor(account));
            response
        }
        Err(error) => {
            tracing::error!(%error, "rendering a shared run failed");
            share_not_found()
        }
    }
}

#[cfg(test)]
mod tests {
    use engine::journal::{Entry, Event, ToolCalled, ToolFinished, ToolRefused};
    use storage::Timestamp;

    use super::{SharedRunPage, SharedToolCall, shared_tool_calls, shown_path};

    /// A path is text the model chooses (it could carry what a call read): at most 200
    /// characters of it reach a share page.
    #[test]
    fn g24_a_shared_path_is_cut_to_200_characters() {
        assert_eq!(shown_path("shared/a.md"), "shared/a.md");
        let long = "x".repeat(500);
        let shown = shown_path(&long);
        assert_eq!(shown.chars().count(), 201);
        assert!(shown.ends_with('…'));
    }

    fn entries() -> Vec<Entry> {
        let events = vec![
            Event::ToolCalled(ToolCalled {
                step: "digest".into(),
                attempt: 1,
                turn: 1,
                call: "c1".into(),
                tool: "Read".into(),
                arguments: serde_json::json!({"path": "shared/notes/week.md"}),
            }),
            Event::ToolFinished(ToolFinished {
                step: "digest".into(),
                attempt: 1,
                call: "c1".into(),
                tool: "Read".into(),
                outcome: "ok".into(),
                result: "the week's private notes".into(),
                refused_path: None,
                suggestion: None,
            }),
            Event::ToolFinished(ToolFinished {
                step: "digest".into(),
                attempt: 1,
                call: "c2".into(),
                tool: "Read".into(),
                outcome: "refused".into(),
                result: "outside the tree".into(),
                refused_path: Some("/etc/passwd".into()),
                suggestion: None,
            }),
            Event::ToolRefused(ToolRefused {
                step: "digest".into(),
                attempt: 1,
                turn: 2,
                call: "c3".into(),
                tool: "Bash".into(),
                reason: "not a tool of this agent".into(),
            }),
        ];
        events
            .into_iter()
            .zip(1..)
            .map(|(event, seq)| Entry {
                seq,
                version: engine::journal::VERSION,
                at: Timestamp(seq.try_into().unwrap()),
                event,
            })
            .collect()
    }

    fn page(calls: Vec<SharedToolCall>, include: bool) -> String {
        askama::Template::render(&SharedRunPage {
            title: "Shared run",
            chrome: None,
            run: "run_1".into(),
            workflow: "w".into(),
            number: 1,
            status: "succeeded".into(),
            started: String::new(),
            updated: String::new(),
            took: String::new(),
            steps: Vec::new(),
            decisions: Vec::new(),
            tool_calls: calls,
            include_tool_results: include,
        })
        .unwrap()
    }

    /// G24, issue 16 §5: a share page names each tool call, its path and outcome; what the
    /// calls returned (and a refusal's reason) only when the link's maker ticked "include tool
    /// results".
    #[test]
    fn g24_a_share_page_shows_tool_results_only_when_its_link_includes_them() {
        let scrub = |text: &str| text.replace("private", "[REDACTED]");
        let without = page(shared_tool_calls(&entries(), &scrub, false), false);
        for shown in [
            "Read",
            "shared/notes/week.md",
            "ok",
            "/etc/passwd",
            "refused",
        ] {
            assert!(without.contains(shown), "{shown}: {without}");
        }
        // A made-up tool's name is text the model chose: shown only with the results.
        for hidden in [
            "the week",
            "outside the tree",
            "not a tool of this agent",
            "Bash",
        ] {
            assert!(!without.contains(hidden), "{hidden}: {without}");
        }
        assert!(without.contains("not shared by this link"), "{without}");

        let with = page(shared_tool_calls(&entries(), &scrub, true), true);
        assert!(with.contains("the week&#39;s [REDACTED] notes"), "{with}");
        assert!(with.contains("outside the tree"), "{with}");
        assert!(with.contains("not a tool of this agent"), "{with}");
        assert!(with.contains("Bash"), "{with}");
        assert!(!with.contains("private"), "{with}");
    }
}
