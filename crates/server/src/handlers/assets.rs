//! The console's static files, compiled into the binary: `/static/{*path}` serves the one
//! stylesheet the pages link, and the same not-found answer as any other address for anything
//! else (no file system is read, so no path can escape).

use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::Error;

/// The console's stylesheet: plain, readable pages (the CSP allows only same-origin styles).
pub(crate) const CONSOLE_CSS: &str = "\
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.4; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
textarea { width: 100%; min-height: 4rem; }
code { font-size: 0.9em; }
";

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
        _ => Err(Error::NotFound {
            what: "static file",
            id: path,
        }),
    }
}
