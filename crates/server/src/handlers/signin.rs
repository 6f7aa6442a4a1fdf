//! Signing in and out: a password (rate limited, every success and failure audited), a
//! one-time sign-in link that sets the password (`/welcome/{token}`), and sign-out.
//!
//! The sign-in form (a template) carries `next`, the way back to an approve link opened
//! without a session, only when it is a path of our own origin (`return_path`).
//!
//! A new session is a fresh random token in an HttpOnly, SameSite=Strict cookie
//! ([`auth::session_cookie`]); storage keeps its hash. A failed sign-in takes as long whether
//! or not the person exists ([`auth::verify_password_for_unknown_person_with`]) and answers the
//! same.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use api_types::{SignInRequest, SignInResponse};
use askama::Template;
use auth::{
    Attempt, CsrfToken, PasswordHash, RateDecision, SessionToken, SignInLinkToken, TlsMode,
    clear_session_cookie, hash_password_with, session_cookie, sign_in_key, verify_csrf,
    verify_password_for_unknown_person_with, verify_password_with,
};
use axum::extract::{ConnectInfo, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Form, Json};
use serde::Deserialize;
use serde_json::json;
use storage::people::{NewSession, PeopleWrite, PersonRecord, TokenHash};
use storage::{AccountId, Actor};

use crate::authn::{Authenticated, cookie_value};
use crate::chrome::{self, Chrome};
use crate::handlers::sign_in_from::SignInFrom;
use crate::handlers::{Audited, audited_write, random_id};
use crate::html::{FormMistake, render};
use crate::return_path::console_path;
use crate::state::Shared;
use crate::{AppState, Error};

/// The longest account id or email a sign-in looks at; longer text is cut before it is used
/// or audited.
const MAX_IDENTIFIER_CHARS: usize = 320;

/// Who is signing in: the connection's remote address, when the listener recorded it
/// (`into_make_service_with_connect_info`), or, when that address is the trusted proxy's, the
/// client address the proxy appended last to `X-Forwarded-For`. Without a recorded address,
/// every request shares the unspecified address, so the per-address limit then applies to
/// everyone at once: stricter, never looser.
pub(crate) struct RemoteAddress(pub(crate) IpAddr);

impl FromRequestParts<AppState> for RemoteAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(RemoteAddress(remote_address(
            &state.shared,
            &parts.extensions,
            &parts.headers,
        )))
    }
}

/// The remote address of a request, as [`RemoteAddress`] describes it.
pub(crate) fn remote_address(
    shared: &Shared,
    extensions: &axum::http::Extensions,
    headers: &HeaderMap,
) -> IpAddr {
    // A dual-stack listener sees an IPv4 client as `::ffff:a.b.c.d`: addresses are compared
    // and counted in their canonical form.
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| info.0.ip())
        .to_canonical();
    let trusted = shared
        .options
        .trusted_proxy
        .map(|proxy| proxy.to_canonical());
    match trusted {
        Some(proxy) if proxy == peer => forwarded_client(headers).unwrap_or(peer),
        _ => peer,
    }
}

/// The last address of the last `X-Forwarded-For` header: the one the proxy itself appended
/// (everything before it came from the client and can say anything).
fn forwarded_client(headers: &HeaderMap) -> Option<IpAddr> {
    let last = headers.get_all("x-forwarded-for").iter().next_back()?;
    // Only the proxy's own entry is read as text: bytes a client put before it (which may not
    // be text at all) must not make the whole header unreadable.
    let entry = last.as_bytes().rsplit(|byte| *byte == b',').next()?;
    let address: IpAddr = std::str::from_utf8(entry).ok()?.trim().parse().ok()?;
    Some(address.to_canonical())
}

/// The address a limit counts by: an IPv6 address by its /64 (one host usually holds a whole
/// /64, so counting single addresses would give it unlimited tries).
pub(crate) fn limit_address(remote: IpAddr) -> IpAddr {
    match remote.to_canonical() {
        IpAddr::V4(address) => IpAddr::V4(address),
        IpAddr::V6(address) => {
            let segments = address.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(
                segments[0],
                segments[1],
                segments[2],
                segments[3],
                0,
                0,
                0,
                0,
            ))
        }
    }
}

/// A session that was just started.
pub(crate) struct SignedIn {
    pub(crate) person: PersonRecord,
    pub(crate) set_cookie: String,
    pub(crate) csrf_token: CsrfToken,
}

fn bounded(text: &str) -> String {
    text.trim().chars().take(MAX_IDENTIFIER_CHARS).collect()
}

/// The account a sign-in names, as typed (cut to [`MAX_IDENTIFIER_CHARS`]), and its id when the
/// text is one. Text that is no account id is treated as an unknown account's: the same limits,
/// the same password work and the same answer, so the answer does not tell the two apart.
struct TypedAccount {
    text: String,
    id: Option<AccountId>,
}

impl TypedAccount {
    fn new(text: &str) -> TypedAccount {
        let text = bounded(text);
        let id = AccountId::parse(&text).ok();
        TypedAccount { text, id }
    }
}

/// The actor recorded for a sign-in attempt: the person when one matched, otherwise a person
/// with no id (nobody is known to have tried).
fn attempt_actor(person: Option<&PersonRecord>) -> Actor {
    match person {
        Some(person) => Actor::Person {
            id: person.id.clone(),
            name: person.display_name.clone(),
        },
        None => Actor::Person {
            id: String::new(),
            name: String::new(),
        },
    }
}

/// A new session of `person` signing in `from`: its token (for the cookie), the token's hash
/// (for the CSRF token) and the row to store.
fn new_session(
    shared: &Shared,
    person: &PersonRecord,
    from: &SignInFrom,
) -> Result<(SessionToken, auth::SessionTokenHash, NewSession), Error> {
    let (token, token_hash) = SessionToken::generate().map_err(Error::auth("start a session"))?;
    let session = NewSession {
        id: random_id("ses")?,
        token_hash: TokenHash(*token_hash.as_bytes()),
        person_id: person.id.clone(),
        created_at: shared.now(),
        browser: from.browser.clone(),
        address: from.address(),
    };
    Ok((token, token_hash, session))
}

/// Creates a session for `person`, with its `session.sign_in` audit entry (`detail`) in the
/// same transaction, and returns the cookie that carries it.
pub(crate) fn start_session(
    shared: &Shared,
    person: PersonRecord,
    detail: &serde_json::Value,
    from: &SignInFrom,
) -> Result<SignedIn, Error> {
    let (token, token_hash, session) = new_session(shared, &person, from)?;
    audited_write(
        shared,
        "create session",
        Audited {
            account: &person.account,
            actor: attempt_actor(Some(&person)),
            action: storage::AuditAction::SessionSignIn,
            detail,
        },
        PeopleWrite::CreateSession(&session),
    )?;
    Ok(SignedIn {
        person,
        set_cookie: session_cookie(&token, shared.options.tls),
        csrf_token: CsrfToken::for_session(&shared.csrf_key, &token_hash),
    })
}

/// Records a refused sign-in, tallied per address, reason and window (`tallies.rs`): under the
/// account typed when it exists, otherwise in the server's own chain with the typed account
/// (cut); the typed email is cut too.
fn audit_failure(
    shared: &Shared,
    account: &TypedAccount,
    person: Option<&PersonRecord>,
    email: &str,
    remote: IpAddr,
    reason: &'static str,
) -> Result<(), Error> {
    let existing = match &account.id {
        Some(id) => shared
            .store
            .account(id)
            .map_err(Error::storage("find the account of a sign-in"))?
            .map(|_| id),
        None => None,
    };
    let exists = existing.is_some();
    let mut detail = serde_json::Map::new();
    detail.insert("method".to_owned(), json!("password"));
    let typed_account = [("email", email), ("account", account.text.as_str())];
    crate::tallies::refused(
        shared,
        crate::tallies::Refusal {
            account: existing,
            action: storage::AuditAction::SessionSignInFailed,
            reason,
            actor: attempt_actor(person),
            remote,
            counted: limit_address(remote),
            typed: if exists {
                &typed_account[..1]
            } else {
                &typed_account[..]
            },
            detail,
        },
    )
}

/// Records a refused use of a welcome link (no account is known from a link that does not
/// work), in the server's own chain, tallied.
fn audit_welcome_refused(
    shared: &Shared,
    remote: IpAddr,
    reason: &'static str,
) -> Result<(), Error> {
    crate::tallies::refused(
        shared,
        crate::tallies::Refusal {
            account: None,
            action: storage::AuditAction::WelcomeRefused,
            reason,
            actor: attempt_actor(None),
            remote,
            counted: limit_address(remote),
            typed: &[],
            detail: serde_json::Map::new(),
        },
    )
}

/// A password sign-in: rate limited per account and address and per account, every outcome
/// audited.
async fn sign_in(
    state: &AppState,
    from: SignInFrom,
    account_text: &str,
    email_text: &str,
    password: String,
) -> Result<SignedIn, Error> {
    let remote = from.address;
    let shared = &state.shared;
    let account = TypedAccount::new(account_text);
    // The audit records the address as typed: scrubbing recognises a vault value only in the
    // form it was stored in, and lower-casing could hide one from it.
    let typed_email = bounded(email_text);
    let email = typed_email.to_lowercase();
    let now_millis = shared.now_millis();
    let counted = limit_address(remote);
    // The limits in order, stopping at the first refusal, so that a refused request costs
    // only the address that sent it (finding 3 of the server review): first the address
    // alone, then the account from this address; the account's own allowance is spent by
    // failures only, after the password check.
    let pair_key = sign_in_key(&account.text, counted);
    let refused = |attempt: Attempt| -> Result<(), Error> {
        if let Attempt::Refused {
            retry_after_millis, ..
        } = attempt
        {
            // Tallied: a flood of refusals is one entry per address and window with its
            // count, written at most once a second (`tallies.rs`).
            audit_failure(shared, &account, None, &typed_email, remote, "rate_limited")?;
            return Err(Error::RateLimited {
                account: account.text.clone(),
                retry_after_millis,
            });
        }
        Ok(())
    };
    refused(
        shared
            .address_sign_in_limiter()
            .attempt(&counted.to_string(), now_millis),
    )?;
    let clean_address = shared.sign_in_limiter().is_untouched(&pair_key, now_millis);
    refused(shared.sign_in_limiter().attempt(&pair_key, now_millis))?;
    // The allowance against guessing spread over many addresses. When it is spent, an address
    // with no recent failures for this account still gets its try (the person it belongs to
    // must not be locked out by others' guesses); it is not clean after a failure.
    let account_allows = shared
        .account_sign_in_limiter()
        .would_allow(&account.text, now_millis);
    if !account_allows && !clean_address {
        audit_failure(
            shared,
            &account,
            None,
            &typed_email,
            remote,
            "account_rate_limited",
        )?;
        return Err(Error::RateLimited {
            account: account.text,
            retry_after_millis: options_refill(shared),
        });
    }
    let person = match &account.id {
        Some(id) => shared
            .store
            .person_by_email(id, &email)
            .map_err(Error::storage("find person by email"))?,
        None => None,
    };
    let stored_hash = person
        .as_ref()
        .and_then(|person| person.password_hash.clone());
    let verdict = shared
        .password_work
        .run("verify a password", move |memory| match stored_hash {
            Some(hash) => {
                verify_password_with(memory, &password, &PasswordHash::from_phc_string(hash))
            }
            None => verify_password_for_unknown_person_with(memory, &password),
        })
        .await?;
    if verdict.is_err() {
        shared
            .account_sign_in_limiter()
            .attempt(&account.text, now_millis);
    }
    match (verdict, person) {
        (Ok(()), Some(person)) => start_session(
            shared,
            person,
            &json!({"method": "password", "email": typed_email, "remote": remote.to_string()}),
            &from,
        ),
        (Ok(()), None) | (Err(auth::Error::PasswordMismatch), None) => {
            audit_failure(
                shared,
                &account,
                None,
                &typed_email,
                remote,
                "unknown_person",
            )?;
            Err(Error::SignInFailed {
                account: account.text,
                reason: "no such person",
            })
        }
        (Err(auth::Error::PasswordMismatch), Some(person)) => {
            let reason = if person.password_hash.is_none() {
                "no_password_set"
            } else {
                "wrong_password"
            };
            audit_failure(
                shared,
                &account,
                Some(&person),
                &typed_email,
                remote,
                reason,
            )?;
            Err(Error::SignInFailed {
                account: account.text,
                reason,
            })
        }
        (Err(source), person) => {
            audit_failure(
                shared,
                &account,
                person.as_ref(),
                &typed_email,
                remote,
                "unusable_password_hash",
            )?;
            Err(Error::Auth {
                operation: "verify a password",
                source,
            })
        }
    }
}

/// When the account's allowance gives one attempt back.
fn options_refill(shared: &Shared) -> u64 {
    shared.options.account_sign_in_limit.refill_every_millis
}

fn with_cookie(mut response: Response, set_cookie: &str) -> Result<Response, Error> {
    let value = HeaderValue::from_str(set_cookie).map_err(|_| Error::InvalidInput {
        field: "session cookie",
        reason: "the cookie is not a valid header value".to_owned(),
    })?;
    response.headers_mut().append(header::SET_COOKIE, value);
    Ok(response)
}

/// The cookie that binds a pre-session form (sign-in, set-password) to the browser that
/// loaded it. Over TLS it carries the `__Host-` prefix, like the session cookie.
fn form_cookie_name(tls: TlsMode) -> &'static str {
    match tls {
        TlsMode::Tls => "__Host-stepward_form",
        TlsMode::PlainHttp => "stepward_form",
    }
}

/// A guard for a form shown before there is a session: a random token in an HttpOnly,
/// SameSite=Strict cookie and its CSRF token for the form's hidden field. Another site can
/// neither read the field nor send the cookie, so it cannot submit the form in the person's
/// browser (no login CSRF).
struct FormGuard {
    set_cookie: String,
    csrf: CsrfToken,
}

fn new_form_guard(shared: &Shared) -> Result<FormGuard, Error> {
    let (token, hash) = SessionToken::generate().map_err(Error::auth("guard a form"))?;
    let secure = match shared.options.tls {
        TlsMode::Tls => "; Secure",
        TlsMode::PlainHttp => "",
    };
    Ok(FormGuard {
        set_cookie: format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict{secure}",
            form_cookie_name(shared.options.tls),
            token.reveal_once()
        ),
        csrf: CsrfToken::for_session(&shared.csrf_key, &hash),
    })
}

/// Checks a pre-session form's hidden field against its cookie.
fn check_form_guard(shared: &Shared, headers: &HeaderMap, submitted: &str) -> Result<(), Error> {
    let expired = || Error::InvalidInput {
        field: "form",
        reason: "the form has expired; load it again".to_owned(),
    };
    let cookie = cookie_value(headers, form_cookie_name(shared.options.tls)).ok_or_else(expired)?;
    let token = SessionToken::parse(&cookie).map_err(|_| expired())?;
    verify_csrf(&shared.csrf_key, &token.hash(), submitted).map_err(|_| expired())
}

#[derive(Template)]
#[template(path = "signin.html")]
struct SignInPage {
    title: &'static str,
    chrome: Option<Chrome>,
    csrf: String,
    /// Where to go after signing in, when it is a path of ours.
    next: Option<String>,
    /// Why the last try was refused, shown beside the form (newcomer 3, friction 13).
    error: Option<String>,
    /// What was typed, kept on a refusal (never the password).
    account: String,
    email: String,
}

/// `?next=PATH` of `GET /signin`: where an approve link opened without a session goes back to.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct SignInQuery {
    #[serde(default)]
    next: String,
}

/// `GET /signin`: the sign-in form, guarded against login CSRF. A `next` that is a path of
/// our own origin ([`console_path`]) rides along in the form; any other is dropped.
pub(crate) async fn sign_in_form(
    State(state): State<AppState>,
    Query(query): Query<SignInQuery>,
) -> Result<Response, Error> {
    sign_in_page(&state.shared, &query.next, None, "", "")
}

/// The sign-in form with a fresh guard: empty, or answered again after a refusal with the
/// refusal beside it and what was typed kept (never the password).
fn sign_in_page(
    shared: &Shared,
    next: &str,
    error: Option<String>,
    account: &str,
    email: &str,
) -> Result<Response, Error> {
    let guard = new_form_guard(shared)?;
    let refused = error.is_some();
    let html = render(&SignInPage {
        title: "Sign in",
        chrome: chrome::current(),
        csrf: guard.csrf.as_str().to_owned(),
        next: console_path(next),
        error,
        account: account.to_owned(),
        email: email.to_owned(),
    });
    let mut response = html.into_response();
    if refused {
        *response.status_mut() = StatusCode::UNAUTHORIZED;
    }
    with_cookie(response, &guard.set_cookie)
}

#[derive(Deserialize)]
pub(crate) struct SignInForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    next: String,
    account: String,
    email: String,
    password: String,
}

/// `POST /signin`: the form's password sign-in; on success, back to `next` when it is a path
/// of our own origin (checked again: the form is the client's), else to the console's home.
pub(crate) async fn sign_in_with_form(
    State(state): State<AppState>,
    RemoteAddress(remote): RemoteAddress,
    headers: HeaderMap,
    Form(form): Form<SignInForm>,
) -> Result<Response, Error> {
    // A form left open past its guard answers the form again, with a fresh guard, what was
    // typed kept and why it was not taken. A post from another site (it carries no guard
    // cookie: the cookie is SameSite=Strict) gets the empty form, so no other site can fill
    // in an account and an address for a person to sign in under.
    if let Err(expired) = check_form_guard(&state.shared, &headers, &form.csrf) {
        let mistake = FormMistake::of(expired)?;
        let ours = cookie_value(&headers, form_cookie_name(state.shared.options.tls)).is_some();
        let (account, email) = if ours {
            (form.account.as_str(), form.email.as_str())
        } else {
            ("", "")
        };
        let mut page = sign_in_page(
            &state.shared,
            &form.next,
            Some(mistake.message),
            account,
            email,
        )?;
        *page.status_mut() = mistake.status;
        return Ok(page);
    }
    let from = SignInFrom::of(remote, &headers);
    let signed_in = match sign_in(&state, from, &form.account, &form.email, form.password).await {
        Ok(signed_in) => signed_in,
        // A wrong account, email or password answers the form again, what was typed kept
        // (not the password), the refusal beside it.
        Err(error @ Error::SignInFailed { .. }) => {
            let (_, said) = error.status_and_public_message();
            return sign_in_page(
                &state.shared,
                &form.next,
                Some(said.to_owned()),
                &form.account,
                &form.email,
            );
        }
        Err(other) => return Err(other),
    };
    let back = console_path(&form.next).unwrap_or_else(|| "/".to_owned());
    with_cookie(Redirect::to(&back).into_response(), &signed_in.set_cookie)
}

/// `POST /api/signin`: the same over JSON; the answer carries the session's CSRF token.
pub(crate) async fn sign_in_with_json(
    State(state): State<AppState>,
    RemoteAddress(remote): RemoteAddress,
    headers: HeaderMap,
    Json(request): Json<SignInRequest>,
) -> Result<Response, Error> {
    let signed_in = sign_in(
        &state,
        SignInFrom::of(remote, &headers),
        &request.account,
        &request.email,
        request.password,
    )
    .await?;
    let body = SignInResponse {
        person_id: signed_in.person.id.clone(),
        role: signed_in.person.role.as_str().to_owned(),
        csrf_token: signed_in.csrf_token.as_str().to_owned(),
    };
    with_cookie(Json(body).into_response(), &signed_in.set_cookie)
}

fn link_not_found() -> Error {
    Error::NotFound {
        what: "sign-in link",
        id: String::new(),
    }
}

#[derive(Template)]
#[template(path = "welcome.html")]
struct WelcomePage {
    title: &'static str,
    chrome: Option<Chrome>,
    name: String,
    min_chars: usize,
    action: String,
    csrf: String,
    /// Why the last try was refused, beside the field (newcomer 3, friction 13).
    error: Option<String>,
}

/// `GET /welcome/{token}`: the set-password form of a usable one-time link, guarded like the
/// sign-in form. Looking does not use the link.
pub(crate) async fn welcome_form(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> Result<Response, Error> {
    let token = SignInLinkToken::parse(&token).map_err(|_| link_not_found())?;
    let link = state
        .shared
        .store
        .usable_sign_in_link(&TokenHash(*token.hash().as_bytes()), state.shared.now())
        .map_err(Error::storage("read sign-in link"))?
        .ok_or_else(link_not_found)?;
    let action = format!("/welcome/{}", token.reveal_once());
    welcome_page(&state.shared, action, link.person.display_name, None)
}

/// The set-password form posting to `action` (the link's own path) with a fresh guard: empty,
/// or answered again with why the password was refused beside its field.
fn welcome_page(
    shared: &Shared,
    action: String,
    name: String,
    error: Option<String>,
) -> Result<Response, Error> {
    let guard = new_form_guard(shared)?;
    let refused = error.is_some();
    let html = render(&WelcomePage {
        title: "Set your password",
        chrome: chrome::current(),
        name,
        min_chars: auth::MIN_PASSWORD_CHARS,
        action,
        csrf: guard.csrf.as_str().to_owned(),
        error,
    });
    let mut response = html.into_response();
    if refused {
        *response.status_mut() = StatusCode::BAD_REQUEST;
    }
    with_cookie(response, &guard.set_cookie)
}

#[derive(Deserialize)]
pub(crate) struct WelcomeForm {
    #[serde(default)]
    csrf: String,
    password: String,
    password_again: String,
}

/// `POST /welcome/{token}`: sets the password (argon2id), uses the link up, and starts a
/// session.
pub(crate) async fn welcome_set_password(
    State(state): State<AppState>,
    RemoteAddress(remote): RemoteAddress,
    Path(token): Path<String>,
    headers: HeaderMap,
    Form(form): Form<WelcomeForm>,
) -> Result<Response, Error> {
    let shared = &state.shared;
    check_form_guard(shared, &headers, &form.csrf)?;
    let Ok(token) = SignInLinkToken::parse(&token) else {
        audit_welcome_refused(shared, remote, "malformed_link")?;
        return Err(link_not_found());
    };
    let token_hash = TokenHash(*token.hash().as_bytes());
    let counted = limit_address(remote);
    if let RateDecision::Limited { retry_after_millis } = shared
        .welcome_limiter()
        .check(&counted.to_string(), shared.now_millis())
    {
        audit_welcome_refused(shared, remote, "rate_limited")?;
        return Err(Error::ClientRateLimited {
            route: "/welcome/{token}".to_owned(),
            address: counted.to_string(),
            retry_after_millis,
        });
    }
    // The link is looked up before any hashing: a made-up token costs a lookup, not 19 MiB of
    // argon2id. The redemption below stays the guarded, single-use step.
    let Some(link) = shared
        .store
        .usable_sign_in_link(&token_hash, shared.now())
        .map_err(Error::storage("read sign-in link"))?
    else {
        audit_welcome_refused(shared, remote, "unknown_link")?;
        return Err(link_not_found());
    };
    // A password refused answers the form again with why beside it: the link stays usable.
    let refusal = if form.password != form.password_again {
        Some("The two passwords differ; type the same one twice.".to_owned())
    } else {
        auth::check_new_password(&form.password)
            .err()
            .map(|error| format!("{}.", capitalised(&error.to_string())))
    };
    if let Some(refusal) = refusal {
        let action = format!("/welcome/{}", token.reveal_once());
        return welcome_page(shared, action, link.person.display_name, Some(refusal));
    }
    let password = form.password;
    let hash = shared
        .password_work
        .run("hash a password", move |memory| {
            hash_password_with(memory, &password)
        })
        .await?
        .map_err(Error::auth("hash a password"))?;
    // The link's redemption, the new password, the first session and the audit entry are one
    // transaction: an entry that cannot be written leaves the link usable and nothing set.
    let person = link.person;
    let (session_token, _, session) =
        new_session(shared, &person, &SignInFrom::of(remote, &headers))?;
    let redeemed = audited_write(
        shared,
        "redeem sign-in link",
        Audited {
            account: &person.account,
            actor: attempt_actor(Some(&person)),
            action: storage::AuditAction::SessionSignIn,
            detail: &json!({"method": "sign_in_link", "password_set": true, "remote": remote.to_string()}),
        },
        PeopleWrite::RedeemSignInLink {
            token_hash: &token_hash,
            password_hash: hash.as_phc_str(),
            session: &session,
            at: shared.now(),
        },
    );
    match redeemed {
        Ok(_) => {}
        // Redeemed by a racing request meanwhile, or expired: the same answer as a bad link.
        Err(Error::Storage {
            source: storage::Error::Invalid { .. },
            ..
        }) => return Err(link_not_found()),
        Err(other) => return Err(other),
    }
    with_cookie(
        Redirect::to("/").into_response(),
        &session_cookie(&session_token, shared.options.tls),
    )
}

fn sign_out(shared: &Shared, authenticated: &Authenticated) -> Result<(), Error> {
    let Some(session) = &authenticated.session else {
        return Err(Error::Unauthenticated {
            method: "POST".to_owned(),
            route: "sign-out without a session".to_owned(),
        });
    };
    audited_write(
        shared,
        "revoke session at sign-out",
        Audited {
            account: &authenticated.account(),
            actor: authenticated.actor.clone(),
            action: storage::AuditAction::SessionSignOut,
            detail: &json!({"session": session.id}),
        },
        PeopleWrite::RevokeSession {
            person_id: &session.person_id,
            session_id: &session.id,
            at: shared.now(),
        },
    )?;
    Ok(())
}

/// `POST /signout`: ends the session and goes back to the sign-in form.
pub(crate) async fn sign_out_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Response, Error> {
    sign_out(&state.shared, &authenticated)?;
    with_cookie(
        Redirect::to("/signin").into_response(),
        &clear_session_cookie(state.shared.options.tls),
    )
}

/// `POST /api/signout`: ends the session.
pub(crate) async fn sign_out_with_json(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Response, Error> {
    sign_out(&state.shared, &authenticated)?;
    with_cookie(
        StatusCode::NO_CONTENT.into_response(),
        &clear_session_cookie(state.shared.options.tls),
    )
}

/// `GET /`: the console's home in this slice: who is signed in, and the sign-out form with the
/// session's CSRF token.
pub(crate) async fn home(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let Some(session) = &authenticated.session else {
        return Err(Error::Unauthenticated {
            method: "GET".to_owned(),
            route: "/".to_owned(),
        });
    };
    let csrf = CsrfToken::for_session(&state.shared.csrf_key, &session.token_hash);
    // The console's pages this person may open, found with the policy table that guards them
    // (as the navigation is), so the home page never offers a page the route refuses.
    let pages = [
        ("/workflows", "Workflows"),
        ("/runs", "Runs"),
        ("/approvals", "Approvals waiting for me"),
        ("/files", "Files"),
        ("/vault", "Vault"),
        ("/models", "Models"),
        ("/shares", "Share links"),
        ("/people", "People and roles"),
        ("/keys", "API keys"),
        ("/audit", "Audit log"),
        ("/sessions", "Your sessions"),
    ];
    let links = pages
        .into_iter()
        .filter(|(path, _)| chrome::may(&authenticated.principal, "GET", path))
        .collect();
    let needs = crate::handlers::home::needs_me(&state.shared, &authenticated)?;
    Ok(render(&HomePage {
        title: "Home",
        chrome: chrome::current(),
        name: authenticated.actor.display_name().to_owned(),
        role: authenticated.principal.role().as_str(),
        links,
        csrf: csrf.as_str().to_owned(),
        needs,
    }))
}

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    title: &'static str,
    chrome: Option<Chrome>,
    name: String,
    role: &'static str,
    links: Vec<(&'static str, &'static str)>,
    csrf: String,
    /// What needs the person first (issue 42, point 3).
    needs: crate::handlers::home::NeedsMe,
}

/// `text` with its first letter upper-case, for a sentence of its own.
fn capitalised(text: &str) -> String {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_uppercase().chain(characters).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use axum::http::HeaderMap;

    #[test]
    fn the_proxys_own_entry_is_the_last_one() {
        let mut headers = HeaderMap::new();
        headers.append("x-forwarded-for", "1.2.3.4, 10.0.0.1".parse().unwrap());
        headers.append("x-forwarded-for", "198.51.100.7".parse().unwrap());
        assert_eq!(
            super::forwarded_client(&headers),
            Some("198.51.100.7".parse::<IpAddr>().unwrap())
        );
        let mut spoofed = HeaderMap::new();
        spoofed.append("x-forwarded-for", "not an address".parse().unwrap());
        assert_eq!(super::forwarded_client(&spoofed), None);
        // Bytes that are not text before the proxy's entry do not hide it.
        let mut garbled = HeaderMap::new();
        garbled.append(
            "x-forwarded-for",
            axum::http::HeaderValue::from_bytes(b"\x80\xff, ::ffff:198.51.100.8").unwrap(),
        );
        assert_eq!(
            super::forwarded_client(&garbled),
            Some("198.51.100.8".parse::<IpAddr>().unwrap())
        );
    }

    #[test]
    fn ipv4_clients_of_a_dual_stack_listener_count_by_their_own_address() {
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        let other: IpAddr = "::ffff:192.0.2.2".parse().unwrap();
        assert_ne!(super::limit_address(mapped), super::limit_address(other));
        assert_eq!(
            super::limit_address(mapped),
            "192.0.2.1".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn ipv6_addresses_count_by_their_64() {
        let one: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let other: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        assert_eq!(super::limit_address(one), super::limit_address(other));
        let v4: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(super::limit_address(v4), v4);
    }
}
