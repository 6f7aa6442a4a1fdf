//! What both streaming readers share: errors of the SSE layer.

use eventsource_stream::EventStreamError;

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
