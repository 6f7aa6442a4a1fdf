//! The size limit of every text a JSON request carries (issue 11, finding 9), enforced by the
//! OpenAPI document itself: the body of a route that reads one (`openapi::request_schema`)
//! is walked with the same component schemas the document publishes, and a text over its
//! `maxLength` is refused before the handler runs, naming its place, the limit and the
//! length given. What the document says is what is enforced; no handler can forget it. The
//! console's forms that take the same fields ([`form_schemas`]) are checked by the same
//! schemas, field by field.

use std::sync::LazyLock;

use axum::body::Body;
use axum::extract::Request;
use serde_json::{Map, Value};

use crate::Error;

/// The largest body read here: the document's (`api_types::limits::BODY_BYTES`), which is
/// axum's default limit for a JSON body, the one the handlers' extractors apply as well.
const MAX_BODY_BYTES: usize = api_types::limits::BODY_BYTES;

static SCHEMAS: LazyLock<Map<String, Value>> = LazyLock::new(api_types::schemas::component_schemas);

/// Refuses the request when a text of its JSON body (or of a console form's field) is longer
/// than the document allows; the body is handed on unchanged otherwise. A body that does not
/// parse is left to the handler's extractor, which refuses it in its own words.
pub(crate) async fn check(request: &mut Request, method: &str, route: &str) -> Result<(), Error> {
    if let Some(schema) = crate::openapi::request_schema(method, route) {
        return check_json(request, schema).await;
    }
    let schemas = form_schemas(method, route);
    let is_form = request
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"));
    if schemas.is_empty() || !is_form {
        return Ok(());
    }
    let bytes = take_body(request).await?;
    let fields = form_fields(&bytes);
    *request.body_mut() = Body::from(bytes);
    for (name, value) in fields {
        let field = Value::Object(Map::from_iter([(name, Value::String(value))]));
        for schema in schemas {
            if let Some(found) = api_types::limits::find_too_long(
                &SCHEMAS,
                &api_types::schemas::reference(schema),
                &field,
            ) {
                return Err(too_long(found));
            }
        }
    }
    Ok(())
}

/// The schemas whose fields a console form shares, by (method, route).
fn form_schemas(method: &str, route: &str) -> &'static [&'static str] {
    match (method, route) {
        ("POST", "/signin") => &["SignInRequest"],
        ("POST", "/people") => &["InvitePersonRequest"],
        ("POST", "/ownership") => &["OwnershipRequest"],
        ("POST", "/keys") => &["CreateApiKeyRequest"],
        ("POST", "/vault/secrets") => &["SetSecretRequest"],
        ("POST", "/vault/model-keys") => &["SetModelKeyRequest"],
        ("POST", "/models") => &["SaveModelProviderRequest"],
        ("POST", "/files") => &["WorkspaceWriteRequest", "WorkspaceChange"],
        ("POST", "/interview") => &["StartInterviewRequest"],
        ("POST", "/interview/{id}/messages") => &["InterviewMessageRequest"],
        ("POST", "/interview/{id}/confirm") => &["ConfirmInterviewRequest"],
        ("POST", "/runs/{id}/steps/{step}/decide" | "/approve/{run}/{step}/{attempt}/{token}") => {
            &["DecisionRequest"]
        }
        _ => &[],
    }
}

/// Every `name=value` pair of a form body, decoded (`+` as a space, then percent escapes); a
/// name given twice gives two pairs, each checked.
fn form_fields(bytes: &[u8]) -> Vec<(String, String)> {
    let decode = |part: &str| {
        percent_encoding::percent_decode_str(&part.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    String::from_utf8_lossy(bytes)
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(name), decode(value))
        })
        .collect()
}

async fn take_body(request: &mut Request) -> Result<axum::body::Bytes, Error> {
    let body = std::mem::take(request.body_mut());
    axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| Error::InvalidInput {
            field: "body",
            reason: format!("a request body is at most {MAX_BODY_BYTES} bytes"),
        })
}

async fn check_json(request: &mut Request, schema: &str) -> Result<(), Error> {
    let bytes = take_body(request).await?;
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
    within("note".to_owned(), note, api_types::limits::NOTE_CHARS)
}

/// Refuses a text over `max_chars` characters (counted as JSON Schema counts them), naming
/// its place, the limit and the length given; for the doors the schemas do not walk.
pub(crate) fn within(field: String, text: &str, max_chars: usize) -> Result<(), Error> {
    let given_chars = text.chars().count();
    if given_chars > max_chars {
        return Err(Error::TooLong {
            field,
            max_chars: u64::try_from(max_chars).unwrap_or(u64::MAX),
            given_chars: u64::try_from(given_chars).unwrap_or(u64::MAX),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{SCHEMAS, form_fields, form_schemas};

    /// Every form route of the table is served, and every schema it names exists: a route
    /// renamed in the router cannot leave its form unchecked.
    #[test]
    fn every_form_of_the_table_is_a_served_route_with_known_schemas() {
        let forms: Vec<(&str, &str)> = crate::registered_routes()
            .into_iter()
            .filter(|(method, path)| !form_schemas(method, path).is_empty())
            .collect();
        assert_eq!(forms.len(), 13, "{forms:?}");
        for (method, path) in forms {
            for schema in form_schemas(method, path) {
                assert!(SCHEMAS.contains_key(*schema), "{method} {path}: {schema}");
            }
        }
    }

    #[test]
    fn form_fields_are_decoded_and_repeated_names_kept() {
        assert_eq!(
            form_fields(b"note=a+b%21&note=%C3%A9&empty&csrf=x"),
            vec![
                ("note".to_owned(), "a b!".to_owned()),
                ("note".to_owned(), "é".to_owned()),
                ("empty".to_owned(), String::new()),
                ("csrf".to_owned(), "x".to_owned()),
            ]
        );
    }
}
