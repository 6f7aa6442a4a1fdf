//! Scrubbing what is served (G16): every answer of a route that shows an account's records
//! passes through that account's live redactor on its way out, so a value that entered the
//! vault after a record was written is masked in everything shown (the stored bytes stay as
//! they were written: the audit chain is append-only).
//!
//! The account is the signed-in principal's, or, for the routes that have no principal (a
//! share page, an approve link), the one the handler names with [`ServedFor`]. JSON answers
//! are scrubbed as values (so the document stays valid JSON); every other body as bytes, which
//! covers HTML because the redactor knows the HTML-escaped forms of every value.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use storage::AccountId;

use crate::AppState;
use crate::error::ErrorReport;
use crate::handlers::{account_redactor, blocking};

/// Set by a handler without a principal on an answer that shows one account's records.
#[derive(Clone, Debug)]
pub(crate) struct ServedFor(pub(crate) AccountId);

/// Set by the run page's live stream (`handlers/live.rs`) on its answer: a stream that never
/// ends cannot be read whole to be scrubbed, and it carries nothing of any record, only the
/// fixed names of its events and fixed sentences (the page then fetches itself, and that
/// answer is scrubbed as every other).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordFreeStream;

/// The most bytes of one answer that are scrubbed; our handlers bound what they show far
/// below this (a file view is cut at 1 MiB), so a larger answer is an error, not a leak.
const MAX_SCRUBBED_BYTES: usize = 64 * 1024 * 1024;

/// `response` with its body scrubbed for `account` (or for the account the handler named);
/// an answer for no account is returned as it is.
pub(crate) async fn scrub_answer(
    state: AppState,
    account: Option<AccountId>,
    response: Response,
) -> Response {
    let Some(account) = account.or_else(|| {
        response
            .extensions()
            .get::<ServedFor>()
            .map(|served| served.0.clone())
    }) else {
        return response;
    };
    if response.extensions().get::<RecordFreeStream>().is_some() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_SCRUBBED_BYTES).await else {
        tracing::error!("an answer could not be read for scrubbing; nothing of it is sent");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    // An error's body is written later, by `layers::finish`, from its report: the report is
    // scrubbed here, where the account is known (review N6).
    if let Some(report) = parts.extensions.remove::<ErrorReport>() {
        let state = state.clone();
        let account = account.clone();
        let scrubbed = blocking("scrub an error answer", move || {
            account_redactor(&state.shared, &account)
                .map(|redactor| ErrorReport {
                    public_message: redactor.scrub(&report.public_message).into_inner(),
                    api_message: redactor.scrub(&report.api_message).into_inner(),
                    code: report.code,
                    detail: redactor.scrub(&report.detail).into_inner(),
                })
                .ok()
        })
        .await;
        let Ok(Some(report)) = scrubbed else {
            tracing::error!("the account's values could not be read to scrub an error answer");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        };
        parts.extensions.insert(report);
    }
    if bytes.is_empty() {
        return Response::from_parts(parts, Body::empty());
    }
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    // Reading the account's generation (and rebuilding its set when it moved) is database
    // work, and scrubbing a large answer is CPU work: both stay off the async threads.
    let scrubbed = blocking("scrub an answer", move || {
        let redactor = match account_redactor(&state.shared, &account) {
            Ok(redactor) => redactor,
            Err(error) => {
                // Fail closed: without the account's values nothing can be shown to be free of
                // them.
                tracing::error!(%error, "the account's values could not be read to scrub an answer");
                return None;
            }
        };
        match is_json
            .then(|| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .flatten()
        {
            Some(value) => serde_json::to_vec(redactor.scrub_json(&value).get()).ok(),
            None => Some(redactor.scrub_bytes(&bytes).into_inner()),
        }
    })
    .await;
    let Ok(Some(scrubbed)) = scrubbed else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    if let Ok(length) = HeaderValue::from_str(&scrubbed.len().to_string()) {
        parts.headers.insert(header::CONTENT_LENGTH, length);
    }
    Response::from_parts(parts, Body::from(scrubbed))
}
