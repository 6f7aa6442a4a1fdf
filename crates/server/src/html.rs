//! The frame of every server-rendered page, and the helpers the pages share.
//!
//! Pages are askama templates (`crates/server/templates/`), which escape every interpolated
//! value unless a template says `|safe`; [`page`] frames a body some handlers still build with
//! [`escape`] (the admin, vault, files and sign-in pages) in the same layout. No inline script
//! and no inline style: the CSP allows neither.

use askama::Template;
use axum::response::Html;

use crate::chrome::{self, Chrome};

/// `text` with the five HTML-significant characters escaped, safe inside text and quoted
/// attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// A time of the record (milliseconds since the epoch) as people read it, in UTC:
/// `2026-11-29 12:59:16 UTC`. Out of range: the milliseconds as they are.
pub fn when(millis: i64) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000)
        .ok()
        .and_then(|moment| moment.format(&format).ok())
        .unwrap_or_else(|| format!("{millis} ms"))
}

/// A page whose body a handler built itself (every interpolated text escaped with [`escape`]).
#[derive(Template)]
#[template(path = "page.html")]
struct FramedPage<'a> {
    title: &'a str,
    chrome: Option<Chrome>,
    live: bool,
    body: &'a str,
}

/// A whole page around `body_html` (already escaped by the caller), in the console's layout;
/// the title is escaped here.
pub(crate) fn page(title: &str, body_html: &str) -> Html<String> {
    render(&FramedPage {
        title,
        chrome: chrome::current(),
        live: false,
        body: body_html,
    })
}

/// A page template rendered; a template that fails to render (a formatting error inside a
/// value's `Display`) answers a plain page that says so rather than half a page.
pub(crate) fn render(template: &impl Template) -> Html<String> {
    match template.render() {
        Ok(text) => Html(text),
        Err(error) => {
            tracing::error!(%error, "a console page failed to render");
            Html(
                "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Error - \
                 stepward</title></head><body><h1>This page could not be shown.</h1></body></html>\n"
                    .to_owned(),
            )
        }
    }
}

/// Whether an error page offers the way to sign in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SignInHint {
    Offer,
    Omit,
}

/// The page of an error answer: the safe message and the request id to quote.
pub(crate) fn error_page(message: &str, request_id: &str, hint: SignInHint) -> String {
    let sign_in = match hint {
        SignInHint::Offer => "\n<p><a href=\"/signin\">Sign in</a></p>",
        SignInHint::Omit => "",
    };
    page(
        "Error",
        &format!(
            "<h1>{}</h1>{sign_in}\n<p>Request id: <code>{}</code></p>",
            escape(message),
            escape(request_id)
        ),
    )
    .0
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_read_as_utc_dates() {
        assert_eq!(super::when(1_795_957_156_000), "2026-11-29 12:59:16 UTC");
        assert_eq!(super::when(i64::MAX), format!("{} ms", i64::MAX));
    }

    #[test]
    fn escape_neutralises_markup_and_quotes() {
        assert_eq!(
            super::escape("<a href=\"x\" onclick='y'>&</a>"),
            "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
    }
}
