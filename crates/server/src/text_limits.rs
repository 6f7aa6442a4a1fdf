//! The size limit of every text a JSON request carries (issue 11, finding 9), enforced by the
//! OpenAPI document itself: the body of a route that reads one (`openapi::request_schema`)
//! is walked with the same component schemas the document publishes, and a text over its
//! `maxLength` is refused before the handler runs, naming its place, the limit and the
//! length given. What the document says is what is enforced; no handler can forget it.

use std::sync::LazyLock;

use axum::body::Body;
use axum::extract::Request;
use serde_json::{Map, Value};

use crate::Error;

/// The largest body read here: axum's default limit for a JSON body, which the handlers'
/// extractors apply as well.
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

static SCHEMAS: LazyLock<Map<String, Value>> = LazyLock::new(api_types::schemas::component_schemas);

/// Refuses the request when a text of its JSON body is longer than the document allows; the
/// body is handed on unchanged otherwise. A body that is not JSON is left to the handler's
/// extractor, which refuses it in its own words.
pub(crate) async fn check(request: &mut Request, method: &str, route: &str) -> Result<(), Error> {
    let Some(schema) = crate::openapi::request_schema(method, route) else {
        return Ok(());
    };
    let body = std::mem::take(request.body_mut());
    let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| Error::InvalidInput {
            field: "body",
            reason: format!("a request body is at most {MAX_BODY_BYTES} bytes"),
        })?;
    let parsed = serde_json::from_slice::<Value>(&bytes);
    *request.body_mut() = Body::from(bytes);
    let Ok(value) = parsed else {
        return Ok(());
    };
    match api_types::limits::find_too_long(&SCHEMAS, &api_types::schemas::reference(schema), &value)
    {
        Some(found) => Err(too_long(found)),
        None => Ok(()),
    }
}

fn too_long(found: api_types::limits::TooLong) -> Error {
    Error::TooLong {
        field: found.field,
        max_chars: found.max_chars,
        given_chars: found.given_chars,
    }
}

/// A decision's note on a door that is not JSON (the console's form, an approve link): the
/// same limit as the document's `DecisionRequest.note`.
pub(crate) fn check_note(note: &str) -> Result<(), Error> {
    let max_chars = api_types::limits::NOTE_CHARS;
    let given_chars = note.chars().count();
    if given_chars > max_chars {
        return Err(Error::TooLong {
            field: "note".to_owned(),
            max_chars: u64::try_from(max_chars).unwrap_or(u64::MAX),
            given_chars: u64::try_from(given_chars).unwrap_or(u64::MAX),
        });
    }
    Ok(())
}
