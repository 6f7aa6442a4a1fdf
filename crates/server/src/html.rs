//! The few server-rendered pages of this slice (sign-in, the set-password form, the shared run,
//! error pages): plain HTML with every interpolated text escaped, no script, no inline style.

use axum::response::Html;

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

/// A whole page around `body_html` (already escaped by the caller); the title is escaped here.
pub(crate) fn page(title: &str, body_html: &str) -> Html<String> {
    Html(format!(
        "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>{} - \
         stepward</title><link rel=\"stylesheet\" href=\"/static/console.css\"></head>\n\
         <body>\n{body_html}\n</body>\n</html>\n",
        escape(title)
    ))
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
