//! The console's static files, compiled into the binary: `/static/{*path}` serves the
//! stylesheet and the one script the pages link, and the same not-found answer as any other address for anything
//! else (no file system is read, so no path can escape).

use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::Error;

/// The console's stylesheet (the CSP allows only same-origin styles).
pub(crate) const CONSOLE_CSS: &str = include_str!("../../static/console.css");

/// The console's one script: live updates of a run page (the CSP allows only same-origin
/// scripts, none inline; every page works without it).
pub(crate) const CONSOLE_JS: &str = include_str!("../../static/console.js");

/// The interview page's script: while a message is on its way to the assistant, it says so
/// and keeps the form from being sent twice (the page works without it).
pub(crate) const INTERVIEW_JS: &str = include_str!("../../static/interview.js");

/// `GET /static/{*path}`.
pub(crate) async fn serve(Path(path): Path<String>) -> Result<Response, Error> {
    match path.as_str() {
        "console.css" => {
            let mut response = CONSOLE_CSS.into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/css; charset=utf-8"),
            );
            Ok(response)
        }
        "console.js" | "interview.js" => {
            let script = if path == "console.js" {
                CONSOLE_JS
            } else {
                INTERVIEW_JS
            };
            let mut response = script.into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/javascript; charset=utf-8"),
            );
            Ok(response)
        }
        _ => Err(Error::NotFound {
            what: "static file",
            id: path,
        }),
    }
}
