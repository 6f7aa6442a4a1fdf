//! What every console page shows around its content: the navigation (only the pages the
//! signed-in person may open, found with the same policy table that guards the routes, G26),
//! the account, the person and the sign-out form.
//!
//! The policy middleware sets it for the request of a signed-in person ([`scope`]); a page
//! renders it through [`current`]. A request without a session (sign-in, a share page, an
//! approve link, an API key) has none, and its pages show no navigation.

use std::future::Future;

use auth::{CsrfToken, Decision, Principal, authorize, find_policy};

use storage::Actor;

use crate::authn::Authenticated;
use crate::state::Shared;

/// The console's sections, in the order the navigation shows them.
const SECTIONS: &[(&str, &str)] = &[
    ("Workflows", "/workflows"),
    ("Interview", "/interview"),
    ("Runs", "/runs"),
    ("Approvals", "/approvals"),
    ("Files", "/files"),
    ("Agents", "/agents"),
    ("Vault", "/vault"),
    ("Models", "/models"),
    ("People", "/people"),
    ("Keys", "/keys"),
    ("Audit", "/audit"),
];

/// One link of the navigation.
#[derive(Clone, Debug)]
pub(crate) struct NavLink {
    pub(crate) label: &'static str,
    pub(crate) href: &'static str,
    /// Whether the page shown is in this section (`aria-current`).
    pub(crate) current: bool,
}

/// The frame of a signed-in person's page.
#[derive(Clone, Debug)]
pub(crate) struct Chrome {
    pub(crate) account: String,
    pub(crate) person: String,
    pub(crate) role: &'static str,
    pub(crate) nav: Vec<NavLink>,
    /// The session's CSRF token, for the sign-out form.
    pub(crate) csrf: String,
}

tokio::task_local! {
    static CHROME: Chrome;
}

impl Chrome {
    /// The frame for a request of `authenticated` to `path`; `None` for an API key (no page
    /// of the console is for a key).
    pub(crate) fn for_request(
        shared: &Shared,
        authenticated: &Authenticated,
        path: &str,
    ) -> Option<Chrome> {
        let session = authenticated.session.as_ref()?;
        let Actor::Person { name, .. } = &authenticated.actor else {
            return None;
        };
        let principal: &Principal = &authenticated.principal;
        let nav = SECTIONS
            .iter()
            .filter(|(_, href)| may(principal, "GET", href))
            .map(|&(label, href)| NavLink {
                label,
                href,
                current: path == href || path.starts_with(&format!("{href}/")),
            })
            .collect();
        Some(Chrome {
            account: principal.account_id().to_string(),
            person: name.clone(),
            role: principal.role().as_str(),
            nav,
            csrf: CsrfToken::for_session(&shared.csrf_key, &session.token_hash)
                .as_str()
                .to_owned(),
        })
    }
}

/// Whether `principal` may use the route `method path_pattern` (the policy table, G26).
pub(crate) fn may(principal: &Principal, method: &str, path_pattern: &str) -> bool {
    find_policy(method, path_pattern)
        .is_some_and(|policy| authorize(policy, Some(principal), None) == Decision::Allow)
}

/// Runs `future` (the rest of the request) with `chrome` as its pages' frame.
pub(crate) async fn scope<F: Future>(chrome: Option<Chrome>, future: F) -> F::Output {
    match chrome {
        Some(chrome) => CHROME.scope(chrome, future).await,
        None => future.await,
    }
}

/// The frame of the page being rendered, if the request is a signed-in person's.
pub(crate) fn current() -> Option<Chrome> {
    CHROME.try_with(Clone::clone).ok()
}
