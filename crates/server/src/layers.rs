//! The two middlewares every request passes.
//!
//! - [`finish`] (outermost, every response): gives the request an id, turns an
//!   [`ErrorReport`] into the logged detail and the safe body, and sets the security headers.
//! - [`enforce_policy`] (after routing, every route): looks the matched route up in the policy
//!   table, authenticates, answers with [`auth::authorize`], and checks the CSRF token of every
//!   state-changing request that came with a session cookie. Only then does the handler run;
//!   its answer is scrubbed for the account it shows ([`crate::served`]).

use auth::{
    Access, Decision, Principal, RateDecision, TlsMode, authorize, find_policy, verify_csrf,
};
use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::authn::{Authenticated, authenticate};
use crate::error::ErrorReport;
use crate::handlers::signin::{limit_address, remote_address};
use crate::html::SignInHint;
use crate::routes::registered_routes;
use crate::{AppState, Error, html};

/// The headers set on every response, whatever it is.
pub const SECURITY_HEADERS: [(&str, &str); 4] = [
    (
        "content-security-policy",
        // `default-src` does not cover `base-uri` or `form-action`: without them a piece of
        // markup on a page could point relative addresses and forms at another host.
        "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; \
         form-action 'self'; frame-ancestors 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    // Pages hold scrubbed records and CSRF tokens; no cache keeps them.
    ("cache-control", "no-store"),
];

/// The header set on every response when clients reach the server over TLS (its own, or a
/// proxy's with `--behind-tls`): browsers then refuse plain HTTP to this host for a year, so a
/// network attacker cannot strip TLS from a later visit.
pub const STRICT_TRANSPORT_SECURITY: (&str, &str) =
    ("strict-transport-security", "max-age=31536000");

/// The header a cookie-authenticated client sends its CSRF token in.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";

/// The form field a console form sends its CSRF token in.
pub(crate) const CSRF_FIELD: &str = "csrf";

fn new_request_id() -> String {
    let mut bytes = [0_u8; 8];
    // A request id only correlates a report with the log; if the generator fails, the
    // answer still goes out, with an id saying so.
    match getrandom::fill(&mut bytes) {
        Ok(()) => hex::encode(bytes),
        Err(_) => "unavailable".to_owned(),
    }
}

/// The outermost middleware: request id, error rendering and logging, security headers (and
/// `Strict-Transport-Security` when the server is reached over TLS).
pub(crate) async fn finish(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let request_id = new_request_id();
    let is_api = request.uri().path().starts_with("/api/");
    let is_home = request.uri().path() == "/";
    let method = request.method().clone();
    let started = std::time::Instant::now();
    let mut response = rejection_as_report(next.run(request).await).await;
    // One line per request (newcomer 3, friction 18): method, route, status, time, request id.
    let route = response
        .extensions()
        .get::<RouteName>()
        .map_or_else(|| "(no route)".to_owned(), |route| route.0.clone());
    tracing::info!(
        %request_id,
        %method,
        %route,
        status = response.status().as_u16(),
        millis = started.elapsed().as_millis() as u64,
        "request"
    );
    // The console's front door signed out is the sign-in form, not an error page (newcomer 3,
    // friction 13).
    if is_home && method == Method::GET && response.status() == StatusCode::UNAUTHORIZED {
        response = axum::response::Redirect::to("/signin").into_response();
    }
    if let Some(report) = response.extensions_mut().remove::<ErrorReport>() {
        let status = response.status();
        // The raw path is not logged: it can hold a share or sign-in token. The detail names
        // the matched route pattern instead.
        if status.is_server_error() {
            tracing::error!(%request_id, %method, %status, detail = %report.detail, "request failed");
        } else {
            tracing::info!(%request_id, %method, %status, detail = %report.detail, "request refused");
        }
        let (content_type, body) = if is_api {
            let body = api_types::ErrorBody {
                code: report.code.to_owned(),
                error: report.api_message.clone(),
                request_id: request_id.clone(),
            };
            (
                "application/json",
                serde_json::to_string(&body).unwrap_or_else(|_| String::from("{}")),
            )
        } else {
            (
                "text/html; charset=utf-8",
                html::error_page(
                    &report.public_message,
                    &request_id,
                    if status == StatusCode::UNAUTHORIZED {
                        SignInHint::Offer
                    } else {
                        SignInHint::Omit
                    },
                ),
            )
        };
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        response.headers_mut().remove(header::CONTENT_LENGTH);
        *response.body_mut() = Body::from(body);
    }
    for (name, value) in SECURITY_HEADERS {
        response.headers_mut().insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    if state.shared.options.tls == TlsMode::Tls {
        let (name, value) = STRICT_TRANSPORT_SECURITY;
        response.headers_mut().insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    response
}

/// The most of a plain-text refusal's body read to put its words in the error's shape.
const MAX_REJECTION_BYTES: usize = 4 * 1024;

/// A refusal the framework answered itself, before a handler ran (a path value or a query
/// that does not parse, a body that is not JSON or not of the request's shape, a missing
/// content type), is plain text: it gets an [`ErrorReport`], so it is answered in the same
/// shape as every other error (server review 3, finding 6).
async fn rejection_as_report(response: Response) -> Response {
    let status = response.status();
    let plain_text = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/plain"));
    if !(status.is_client_error() || status.is_server_error())
        || !plain_text
        || response.extensions().get::<ErrorReport>().is_some()
    {
        return response;
    }
    let (parts, body) = response.into_parts();
    let said = axum::body::to_bytes(body, MAX_REJECTION_BYTES)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    let report = crate::error::rejection_report(status, &said);
    let mut response = Response::from_parts(parts, Body::empty());
    response.extensions_mut().insert(report);
    response
}

/// The policy middleware, run on every matched route before its handler.
pub(crate) async fn enforce_policy(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    // The route's pattern, for the request's log line (never the raw path, which can hold a
    // share or sign-in token).
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|matched| RouteName(matched.as_str().to_owned()));
    let (mut response, signed_in) = match admit(&state, &mut request).await {
        Ok(()) => {
            // What the handler shows is scrubbed again on its way out, with the account's
            // values as they are now (G16).
            let authenticated = request.extensions().get::<Authenticated>();
            let account = authenticated.map(Authenticated::account);
            let signed_in = account.is_some();
            // The frame of the console's pages (navigation, person, sign-out) for a person.
            let chrome = authenticated.and_then(|authenticated| {
                crate::chrome::Chrome::for_request(
                    &state.shared,
                    authenticated,
                    request.uri().path(),
                )
            });
            let response = crate::chrome::scope(chrome, next.run(request)).await;
            (
                crate::served::scrub_answer(state.clone(), account, response).await,
                signed_in,
            )
        }
        Err(error) => (error.into_response(), false),
    };
    // A client without a session that is refused for sending too much waits for the answer:
    // its connection (one of the few the listener lets one address hold) then sends again only
    // every so often, so a flood costs the server little.
    if response.status() == StatusCode::TOO_MANY_REQUESTS && !signed_in {
        tokio::time::sleep(std::time::Duration::from_millis(
            state.shared.options.refusal_delay_millis,
        ))
        .await;
    }
    if let Some(route) = route {
        response.extensions_mut().insert(route);
    }
    response
}

/// The matched route's pattern, carried on the response to the request's log line.
#[derive(Clone)]
struct RouteName(String);

/// The limit of every route that needs no sign-in, per remote address (an IPv6 address by its
/// /64), checked before anything else is done for the request.
fn limit_unauthenticated(state: &AppState, request: &Request, route: &str) -> Result<(), Error> {
    let shared = &state.shared;
    let remote = remote_address(shared, request.extensions(), request.headers());
    let counted = limit_address(remote);
    let decision = shared
        .unauthenticated_limiter()
        .check(&counted.to_string(), shared.now_millis());
    match decision {
        RateDecision::Allowed => Ok(()),
        // A signed-in person or a key reading a public document (the console's stylesheet)
        // is not a client without a session: only a refused request pays for this lookup,
        // and a failed one is refused (and held back) as before.
        RateDecision::Limited { .. }
            if authenticate(shared, request.headers())
                .ok()
                .flatten()
                .is_some() =>
        {
            Ok(())
        }
        RateDecision::Limited { retry_after_millis } => Err(Error::ClientRateLimited {
            route: route.to_owned(),
            address: counted.to_string(),
            retry_after_millis,
        }),
    }
}

/// The method a policy is looked up with: `HEAD` is answered by the `GET` route.
fn policy_method(method: &Method) -> &str {
    if method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    }
}

fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Why a matched path has no policy for this method. A method the path does not serve at all
/// (the router would answer 405 for it) is a 405 with the methods it does serve; a served route
/// without a policy stays the 500 that refuses to serve it.
fn no_policy(method: String, route: String) -> Error {
    let served: Vec<&'static str> = registered_routes()
        .into_iter()
        .filter(|(_, path)| *path == route)
        .map(|(served_method, _)| served_method)
        .collect();
    if served.contains(&method.as_str()) {
        return Error::MissingPolicy { method, route };
    }
    let mut allowed = served;
    if allowed.contains(&"GET") {
        allowed.push("HEAD");
    }
    Error::MethodNotAllowed {
        method,
        route,
        allowed: allowed.join(", "),
    }
}

async fn admit(state: &AppState, request: &mut Request) -> Result<(), Error> {
    let method = policy_method(request.method()).to_owned();
    let Some(route) = request
        .extensions()
        .get::<MatchedPath>()
        .map(|matched| matched.as_str().to_owned())
    else {
        return Err(Error::MissingPolicy {
            method,
            route: "(no matched route)".to_owned(),
        });
    };
    let Some(policy) = find_policy(&method, &route) else {
        return Err(no_policy(method, route));
    };
    let authenticated = match policy.least_role {
        Access::Role(_) => {
            let found = authenticate(&state.shared, request.headers())?;
            if found.is_none() {
                record_refused_key(state, request)?;
            }
            found
        }
        Access::Public | Access::Share | Access::Link => {
            limit_unauthenticated(state, request, &route)?;
            None
        }
    };
    let principal = authenticated
        .as_ref()
        .map(|authenticated| &authenticated.principal);
    match authorize(policy, principal, None) {
        Decision::Allow | Decision::VerifyToken(_) => {}
        Decision::Unauthenticated => return Err(Error::Unauthenticated { method, route }),
        Decision::Forbidden => {
            return Err(Error::Forbidden {
                principal: principal
                    .map(|principal| format!("{principal:?}"))
                    .unwrap_or_default(),
                method,
                route,
            });
        }
        Decision::NotFound => {
            return Err(Error::NotFound {
                what: "route resource",
                id: route,
            });
        }
    }
    if let Some(authenticated) = authenticated {
        if authenticated.session.is_some() && changes_state(request.method()) {
            check_csrf(state, request, &authenticated, &method, &route).await?;
        }
        // Every use of a key, reads too, is in the audit log under the key before the request
        // goes on (a use that cannot be recorded is refused): one entry per key, route class
        // and minute, counting its uses (`tallies.rs`), so a flood of reads cannot grow the
        // log without bound.
        if let Principal::ApiKey { key_id, .. } = &authenticated.principal {
            crate::tallies::key_use(
                &state.shared,
                &authenticated.account(),
                key_id,
                changes_state(request.method()),
                &method,
                &route,
            )?;
        }
        request.extensions_mut().insert(authenticated);
    }
    // Every text of a JSON body within the document's limits, before the handler runs.
    crate::text_limits::check(request, &method, &route).await
}

/// Records a request whose `Authorization` header did not check out (tallied per address,
/// reason and window, under the key's account when the key exists).
fn record_refused_key(state: &AppState, request: &Request) -> Result<(), Error> {
    let shared = &state.shared;
    let Some((account, reason)) = crate::authn::key_refusal(shared, request.headers())? else {
        return Ok(());
    };
    let remote = remote_address(shared, request.extensions(), request.headers());
    crate::tallies::refused(
        shared,
        crate::tallies::Refusal {
            account: account.as_ref(),
            action: storage::AuditAction::ApiKeyRefused,
            reason,
            actor: storage::Actor::ApiKey { id: String::new() },
            remote,
            counted: limit_address(remote),
            typed: &[],
            detail: serde_json::Map::new(),
        },
    )
}

/// Checks the CSRF token of a state-changing request that came with a session cookie: in the
/// `X-CSRF-Token` header, or in the `csrf` field of a form (whose body is read and put back).
async fn check_csrf(
    state: &AppState,
    request: &mut Request,
    authenticated: &Authenticated,
    method: &str,
    route: &str,
) -> Result<(), Error> {
    let rejected = || Error::CsrfRejected {
        method: method.to_owned(),
        route: route.to_owned(),
    };
    let Some(session) = &authenticated.session else {
        return Ok(());
    };
    let key = &state.shared.csrf_key;
    if let Some(value) = request.headers().get(CSRF_HEADER) {
        let submitted = value.to_str().map_err(|_| rejected())?;
        return verify_csrf(key, &session.token_hash, submitted).map_err(|_| rejected());
    }
    let is_form = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"));
    if !is_form {
        return Err(rejected());
    }
    let body = std::mem::take(request.body_mut());
    let bytes = axum::body::to_bytes(body, state.shared.options.max_form_bytes)
        .await
        .map_err(|_| Error::InvalidInput {
            field: "form",
            reason: "the form is too large or could not be read".to_owned(),
        })?;
    // A CSRF token is base64url, which form encoding leaves as it is, so the raw field value
    // is compared; a token someone percent-encoded fails, which is the safe side.
    let submitted = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|text| {
            text.split('&')
                .filter_map(|pair| pair.split_once('='))
                .find(|(name, _)| *name == CSRF_FIELD)
                .map(|(_, value)| value.to_owned())
        })
        .ok_or_else(rejected)?;
    *request.body_mut() = Body::from(bytes);
    verify_csrf(key, &session.token_hash, &submitted).map_err(|_| rejected())
}
