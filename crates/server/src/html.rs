//! The frame of every server-rendered page, and the helpers the pages share.
//!
//! Every page is an askama template (`crates/server/templates/`), which escapes every
//! interpolated value (no template says `|safe`), in one layout. No inline script and no
//! inline style: the CSP allows neither.

use askama::Template;
use auth::CsrfToken;
use axum::http::StatusCode;
use axum::response::Html;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::Error;
use crate::authn::Authenticated;
use crate::chrome::{self, Chrome};
use crate::state::Shared;

pub use platform::views::utc_time as when;

/// A moment of the record as a list or a header shows it (issue 42, point 3): how long ago (or
/// how soon) by the server's clock, with the exact time on hover, in UTC with the zone named;
/// the console's script puts the viewer's own time zone there (`moment.html`).
pub(crate) struct Moment {
    /// RFC 3339, for `<time datetime>` and the script.
    pub(crate) iso: String,
    /// The exact time, UTC, the zone named.
    pub(crate) exact: String,
    /// "3 min ago", "in 2 days", "just now"; older than 30 days, the date.
    pub(crate) relative: String,
}

/// [`Moment`] of `millis`, seen at `now` (both milliseconds since the epoch).
pub(crate) fn moment(millis: i64, now: i64) -> Moment {
    let iso = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000)
        .ok()
        .and_then(|at| {
            at.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default();
    let exact = when(millis);
    let ago = now.saturating_sub(millis);
    let minutes = ago.unsigned_abs() / 60_000;
    let (hours, days) = (minutes / 60, minutes / (60 * 24));
    let span = if minutes < 60 {
        format!("{minutes} min")
    } else if hours < 48 {
        format!("{hours} h")
    } else {
        format!("{days} days")
    };
    let relative = if minutes == 0 {
        "just now".to_owned()
    } else if days > 30 {
        exact.split(' ').next().unwrap_or_default().to_owned()
    } else if ago > 0 {
        format!("{span} ago")
    } else {
        format!("in {span}")
    };
    Moment {
        iso,
        exact,
        relative,
    }
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

/// The page of an error answer.
#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    title: &'static str,
    chrome: Option<Chrome>,
    message: &'a str,
    request_id: &'a str,
    offer_sign_in: bool,
}

/// The page of an error answer: the safe message and the request id to quote.
pub(crate) fn error_page(message: &str, request_id: &str, hint: SignInHint) -> String {
    render(&ErrorPage {
        title: "Error",
        chrome: chrome::current(),
        message,
        request_id,
        offer_sign_in: hint == SignInHint::Offer,
    })
    .0
}

/// The CSRF token of the request's session, for the hidden field of a form; empty without a
/// session (no console form is for an API key, and the policy middleware refuses a session
/// write without the token).
pub(crate) fn csrf_token(shared: &Shared, authenticated: &Authenticated) -> String {
    authenticated
        .session
        .as_ref()
        .map(|session| {
            CsrfToken::for_session(&shared.csrf_key, &session.token_hash)
                .as_str()
                .to_owned()
        })
        .unwrap_or_default()
}

/// Everything but RFC 3986's unreserved characters percent-encoded: a name put into one path
/// segment of a form's action or a link stays that one segment (no `/`, `..`, `?` or `#` of
/// its own).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `text` as one path segment.
pub(crate) fn segment(text: &str) -> String {
    match text {
        // A segment of only dots would still be read as "here" or "up" by a browser.
        "." => "%2E".to_owned(),
        ".." => "%2E%2E".to_owned(),
        _ => utf8_percent_encode(text, SEGMENT).to_string(),
    }
}

/// A mistake in what a person typed into a form, shown beside the form with what they typed
/// kept; anything else (a refusal of their role, a failure of ours) is the error page.
pub(crate) struct FormMistake {
    pub(crate) status: StatusCode,
    pub(crate) message: String,
}

impl FormMistake {
    /// The mistake `error` is, or the error itself when it is not a typing mistake.
    pub(crate) fn of(error: Error) -> Result<FormMistake, Error> {
        let (status, _) = error.status_and_public_message();
        if matches!(
            status,
            StatusCode::BAD_REQUEST
                | StatusCode::CONFLICT
                | StatusCode::UNPROCESSABLE_ENTITY
                | StatusCode::PAYLOAD_TOO_LARGE
        ) {
            tracing::info!(%status, detail = %error, "a console form was refused");
            Ok(FormMistake {
                status,
                message: error.page_message(),
            })
        } else {
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn moments_read_as_how_long_ago_with_the_exact_time() {
        let at = 1_795_957_156_000;
        let seen = |later: i64| super::moment(at, at + later).relative;
        assert_eq!(seen(30_000), "just now");
        assert_eq!(seen(-30_000), "just now");
        assert_eq!(seen(90_000), "1 min ago");
        assert_eq!(seen(59 * 60_000), "59 min ago");
        assert_eq!(seen(3 * 3_600_000), "3 h ago");
        assert_eq!(seen(47 * 3_600_000), "47 h ago");
        assert_eq!(seen(3 * 86_400_000), "3 days ago");
        assert_eq!(seen(-2 * 86_400_000), "in 2 days");
        assert_eq!(seen(40 * 86_400_000), "2026-11-29");
        let moment = super::moment(at, at);
        assert_eq!(moment.exact, "2026-11-29 12:59:16 UTC");
        assert_eq!(moment.iso, "2026-11-29T12:59:16Z");
    }

    #[test]
    fn times_read_as_utc_dates() {
        assert_eq!(super::when(1_795_957_156_000), "2026-11-29 12:59:16 UTC");
        assert_eq!(super::when(i64::MAX), format!("{} ms", i64::MAX));
    }

    #[test]
    fn a_segment_stays_one_segment() {
        assert_eq!(
            super::segment("../keys/k1?x=1#y"),
            "..%2Fkeys%2Fk1%3Fx%3D1%23y"
        );
        assert_eq!(super::segment(".."), "%2E%2E");
        assert_eq!(super::segment("api_key-1.v2"), "api_key-1.v2");
    }
}
