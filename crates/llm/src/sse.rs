//! What both streaming readers share: errors of the SSE layer and tool arguments.

use eventsource_stream::EventStreamError;
use serde_json::{Map, Value};

use crate::error::Error;

/// An error of the event stream: the transport's own error as it was (a cut, a timeout, a
/// size limit), or text that is not SSE.
pub(crate) fn transport_error(error: EventStreamError<Error>) -> Error {
    match error {
        EventStreamError::Transport(error) => error,
        EventStreamError::Utf8(error) => Error::InvalidResponse {
            detail: format!("the event stream is not UTF-8: {error}"),
        },
        EventStreamError::Parser(error) => Error::InvalidResponse {
            detail: format!("the event stream is not server-sent events: {error}"),
        },
    }
}

/// A tool call's arguments, which arrived as JSON text: a complete JSON object or an error
/// (never part of one).
pub(crate) fn json_arguments(name: &str, json: &str) -> Result<Map<String, Value>, Error> {
    if json.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(arguments)) => Ok(arguments),
        Ok(_) => Err(Error::InvalidResponse {
            detail: format!("the arguments of the call to `{name}` are not a JSON object"),
        }),
        Err(error) => Err(Error::InvalidResponse {
            detail: format!("the arguments of the call to `{name}` are not complete JSON: {error}"),
        }),
    }
}
