//! Where a session signs in from, as the sessions list shows it (issue 42, point 6): the
//! address, and the browser in words ("Chrome 131 on Linux") read from a bounded User-Agent
//! through `woothee`; the header itself is never kept or shown.

use std::net::IpAddr;

use axum::http::{HeaderMap, header};

/// Where a session signs in from, as the sessions list shows it (issue 42, point 6): the
/// address, and the browser in words when its User-Agent names one.
pub(crate) struct SignInFrom {
    pub(crate) address: IpAddr,
    pub(crate) browser: Option<String>,
}

impl SignInFrom {
    pub(crate) fn of(address: IpAddr, headers: &HeaderMap) -> SignInFrom {
        SignInFrom {
            address,
            browser: headers
                .get(header::USER_AGENT)
                .and_then(|value| value.to_str().ok())
                .and_then(browser_in_words),
        }
    }

    /// The address to keep: none when the server did not know it.
    pub(crate) fn address(&self) -> Option<String> {
        (!self.address.is_unspecified()).then(|| self.address.to_string())
    }
}

/// The longest User-Agent read for the browser's name; a longer one names none.
const MAX_USER_AGENT_BYTES: usize = 512;

/// The browser a User-Agent names, in words ("Chrome 131 on Linux"), printable and at most 80
/// characters; `None` for one too long or that names no browser.
pub(crate) fn browser_in_words(user_agent: &str) -> Option<String> {
    if user_agent.len() > MAX_USER_AGENT_BYTES {
        return None;
    }
    let parsed = woothee::parser::Parser::new().parse(user_agent)?;
    if parsed.name == woothee::woothee::VALUE_UNKNOWN {
        return None;
    }
    let mut words = parsed.name.to_owned();
    if let Some(major) = parsed
        .version
        .split('.')
        .next()
        .filter(|major| !major.is_empty() && major.chars().all(|c| c.is_ascii_digit()))
    {
        words.push(' ');
        words.push_str(major);
    }
    if parsed.os != woothee::woothee::VALUE_UNKNOWN {
        words.push_str(" on ");
        words.push_str(parsed.os);
    }
    Some(
        words
            .chars()
            .filter(|c| c.is_ascii_graphic() || *c == ' ')
            .take(80)
            .collect(),
    )
}
