//! The console's pages for sessions, people and roles, API keys and share links (the audit
//! log's is in `audit_page`, the vault's in `vault_page`). Each form posts to its console route
//! (CSRF-checked by the policy middleware) and calls the same handler as the JSON API, so both
//! doors keep the same rules and audit entries. What is shown once (a sign-in link, a key, a
//! share link) is shown on the page that answers the form, and never again.

use api_types::{
    ApiKeyView, CreateApiKeyRequest, InvitePersonRequest, OwnershipRequest, RoleChangeRequest,
};
use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Form, Json};
use serde::Deserialize;

use crate::authn::Authenticated;
use crate::chrome::{self, Chrome};
use crate::handlers::{keys, people, sessions, shares};
use crate::html::{FormMistake, csrf_token, render, segment, when};
use crate::{AppState, Error};

/// The roles a person or a key can be given from the console (ownership is handed over).
const ROLES: [&str; 3] = ["viewer", "member", "admin"];

pub(crate) fn back_to(path: &str) -> Response {
    Redirect::to(path).into_response()
}

struct SessionRow {
    /// The browser and the address, in words (issue 42, point 6).
    browser: String,
    address: String,
    created: crate::html::Moment,
    last_used: crate::html::Moment,
    current: bool,
    revoke_action: String,
}

#[derive(Template)]
#[template(path = "sessions.html")]
struct SessionsPage {
    title: &'static str,
    chrome: Option<Chrome>,
    csrf: String,
    sessions: Vec<SessionRow>,
}

/// `GET /sessions`: the signed-in person's sessions.
pub(crate) async fn sessions_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let csrf = csrf_token(&state.shared, &authenticated);
    let now = state.shared.now().0;
    let Json(list) = sessions::list_own(State(state), Extension(authenticated)).await?;
    Ok(render(&SessionsPage {
        title: "Sessions",
        chrome: chrome::current(),
        csrf,
        sessions: list
            .into_iter()
            .map(|session| SessionRow {
                revoke_action: format!("/sessions/{}/revoke", segment(&session.id)),
                browser: session
                    .browser
                    .unwrap_or_else(|| "a browser it did not name".to_owned()),
                address: session.address.map_or_else(
                    || "from an address not known".to_owned(),
                    |address| format!("from {address}"),
                ),
                created: crate::html::moment(session.created_at, now),
                last_used: crate::html::moment(session.last_used_at, now),
                current: session.current,
            })
            .collect(),
    }))
}

/// `POST /sessions/revoke-all`.
pub(crate) async fn revoke_all_sessions(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Response, Error> {
    sessions::revoke_all_own(State(state), Extension(authenticated)).await?;
    Ok(back_to("/signin"))
}

/// `POST /sessions/{id}/revoke`.
pub(crate) async fn revoke_session(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(session_id): Path<String>,
) -> Result<Response, Error> {
    sessions::revoke_own(State(state), Extension(authenticated), Path(session_id)).await?;
    Ok(back_to("/sessions"))
}

struct PersonRow {
    id: String,
    id_segment: String,
    name: String,
    email: String,
    role: String,
    has_password: bool,
}

#[derive(Template)]
#[template(path = "people.html")]
struct PeoplePage {
    title: &'static str,
    chrome: Option<Chrome>,
    csrf: String,
    roles: [&'static str; 3],
    people: Vec<PersonRow>,
    /// The invitation form as typed, and why it was refused.
    typed_name: String,
    typed_email: String,
    typed_role: String,
    error: Option<String>,
    /// Why a change to someone listed (a role, the ownership) was refused, above the list.
    list_error: Option<String>,
}

/// The people page, with the invitation form as `typed` (empty, or as sent with its error).
async fn people_page_with(
    state: AppState,
    authenticated: Authenticated,
    typed: InviteForm,
    error: Option<String>,
    list_error: Option<String>,
) -> Result<Html<String>, Error> {
    let csrf = csrf_token(&state.shared, &authenticated);
    let Json(list) = people::list(State(state), Extension(authenticated)).await?;
    Ok(render(&PeoplePage {
        title: "People",
        chrome: chrome::current(),
        csrf,
        roles: ROLES,
        people: list
            .into_iter()
            .map(|person| PersonRow {
                id_segment: segment(&person.id),
                id: person.id,
                name: person.display_name,
                email: person.email,
                role: person.role,
                has_password: person.has_password,
            })
            .collect(),
        typed_name: typed.display_name,
        typed_email: typed.email,
        typed_role: typed.role,
        error,
        list_error,
    }))
}

/// `GET /people`: the people of the account, their roles, and the forms to manage them.
pub(crate) async fn people_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    people_page_with(state, authenticated, InviteForm::empty(), None, None).await
}

/// A refused change to someone listed answers the people page again, the refusal above the
/// list (a mistake; any other error is the error page).
async fn people_page_refusing(
    state: AppState,
    authenticated: Authenticated,
    what: &str,
    error: Error,
) -> Result<Response, Error> {
    // Someone removed meanwhile (the list was stale) is said on the page too.
    let mistake = match error.status_and_public_message() {
        (StatusCode::NOT_FOUND, _) => FormMistake {
            status: StatusCode::NOT_FOUND,
            message: error.page_message(),
        },
        _ => FormMistake::of(error)?,
    };
    let message = format!("{what}: {}", mistake.message);
    let page = people_page_with(
        state,
        authenticated,
        InviteForm::empty(),
        None,
        Some(message),
    )
    .await?;
    Ok((mistake.status, page).into_response())
}

#[derive(Deserialize)]
pub(crate) struct InviteForm {
    display_name: String,
    email: String,
    role: String,
}

impl InviteForm {
    fn empty() -> InviteForm {
        InviteForm {
            display_name: String::new(),
            email: String::new(),
            role: "member".to_owned(),
        }
    }
}

#[derive(Template)]
#[template(path = "shown_once.html")]
struct ShownOncePage {
    title: &'static str,
    chrome: Option<Chrome>,
    lead: &'static str,
    value: String,
    back_href: &'static str,
    back_label: &'static str,
}

/// `POST /people`: invites a person and shows their one-time sign-in link, once; a refused
/// invitation answers the people page again with what was typed and why.
pub(crate) async fn invite_person(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(form): Form<InviteForm>,
) -> Result<Response, Error> {
    let invited = people::invite(
        State(state.clone()),
        Extension(authenticated.clone()),
        Json(InvitePersonRequest {
            display_name: form.display_name.clone(),
            email: form.email.clone(),
            role: form.role.clone(),
        }),
    )
    .await;
    match invited {
        Ok((_, Json(invited))) => Ok(render(&ShownOncePage {
            title: "Invited",
            chrome: chrome::current(),
            lead: "Send this one-time sign-in link to the person; with it they set their password.",
            value: state.shared.full_url(&invited.sign_in_path),
            back_href: "/people",
            back_label: "Back to people",
        })
        .into_response()),
        Err(error) => {
            let mistake = FormMistake::of(error)?;
            let page =
                people_page_with(state, authenticated, form, Some(mistake.message), None).await?;
            Ok((mistake.status, page).into_response())
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct RoleForm {
    role: String,
}

/// `POST /people/{id}/role`.
pub(crate) async fn change_role(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(person_id): Path<String>,
    Form(form): Form<RoleForm>,
) -> Result<Response, Error> {
    let changed = people::change_role(
        State(state.clone()),
        Extension(authenticated.clone()),
        Path(person_id),
        Json(RoleChangeRequest { role: form.role }),
    )
    .await;
    match changed {
        Ok(_) => Ok(back_to("/people")),
        Err(error) => {
            people_page_refusing(state, authenticated, "The role was not changed", error).await
        }
    }
}

/// `POST /people/{id}/sessions/revoke`.
pub(crate) async fn revoke_person_sessions(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(person_id): Path<String>,
) -> Result<Response, Error> {
    sessions::revoke_all_of_person(State(state), Extension(authenticated), Path(person_id)).await?;
    Ok(back_to("/people"))
}

#[derive(Deserialize)]
pub(crate) struct OwnershipForm {
    new_owner: String,
}

/// `POST /ownership`.
pub(crate) async fn transfer_ownership(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(form): Form<OwnershipForm>,
) -> Result<Response, Error> {
    let handed = people::transfer(
        State(state.clone()),
        Extension(authenticated.clone()),
        Json(OwnershipRequest {
            new_owner: form.new_owner,
        }),
    )
    .await;
    match handed {
        Ok(_) => Ok(back_to("/people")),
        Err(error) => {
            people_page_refusing(
                state,
                authenticated,
                "The ownership was not handed over",
                error,
            )
            .await
        }
    }
}

struct KeyRow {
    key_id: String,
    id_segment: String,
    name: String,
    role: String,
    created_by: String,
    last_used: String,
    revoked: bool,
}

impl KeyRow {
    fn of(key: ApiKeyView) -> KeyRow {
        KeyRow {
            id_segment: segment(&key.key_id),
            created_by: key
                .created_by_name
                .or(key.created_by)
                .unwrap_or_else(|| "someone unknown".to_owned()),
            last_used: key.last_used_at.map_or_else(|| "never".to_owned(), when),
            key_id: key.key_id,
            name: key.name,
            role: key.role,
            revoked: key.revoked,
        }
    }
}

#[derive(Template)]
#[template(path = "keys.html")]
struct KeysPage {
    title: &'static str,
    chrome: Option<Chrome>,
    csrf: String,
    roles: [&'static str; 3],
    keys: Vec<KeyRow>,
    typed_name: String,
    typed_role: String,
    error: Option<String>,
}

/// The keys page, with the new-key form as `typed` (empty, or as sent with its error).
async fn keys_page_with(
    state: AppState,
    authenticated: Authenticated,
    typed: KeyForm,
    error: Option<String>,
) -> Result<Html<String>, Error> {
    let csrf = csrf_token(&state.shared, &authenticated);
    let Json(list) = keys::list(State(state), Extension(authenticated)).await?;
    Ok(render(&KeysPage {
        title: "API keys",
        chrome: chrome::current(),
        csrf,
        roles: ROLES,
        keys: list.into_iter().map(KeyRow::of).collect(),
        typed_name: typed.name,
        typed_role: typed.role,
        error,
    }))
}

/// `GET /keys`: the account's API keys and the form to create one.
pub(crate) async fn keys_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let empty = KeyForm {
        name: String::new(),
        role: "viewer".to_owned(),
    };
    keys_page_with(state, authenticated, empty, None).await
}

#[derive(Deserialize)]
pub(crate) struct KeyForm {
    name: String,
    role: String,
}

/// `POST /keys`: creates a key and shows it, once; a refused one answers the keys page again
/// with what was typed and why.
pub(crate) async fn create_key(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(form): Form<KeyForm>,
) -> Result<Response, Error> {
    let created = keys::create(
        State(state.clone()),
        Extension(authenticated.clone()),
        Json(CreateApiKeyRequest {
            name: form.name.clone(),
            role: form.role.clone(),
        }),
    )
    .await;
    match created {
        Ok((_, Json(created))) => Ok(render(&ShownOncePage {
            title: "New API key",
            chrome: chrome::current(),
            lead: "Copy the key now and store it where the program that uses it reads it.",
            value: created.key,
            back_href: "/keys",
            back_label: "Back to keys",
        })
        .into_response()),
        Err(error) => {
            let mistake = FormMistake::of(error)?;
            let page = keys_page_with(state, authenticated, form, Some(mistake.message)).await?;
            Ok((mistake.status, page).into_response())
        }
    }
}

/// `POST /keys/{id}/revoke`.
pub(crate) async fn revoke_key(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(key_id): Path<String>,
) -> Result<Response, Error> {
    keys::revoke(State(state), Extension(authenticated), Path(key_id)).await?;
    Ok(back_to("/keys"))
}

struct ShareRow {
    id_segment: String,
    /// The run in words ("ledger #12"), and who made the link (issue 42, point 6).
    run: String,
    run_segment: String,
    made: String,
    created: crate::html::Moment,
    expires: crate::html::Moment,
    revoked: bool,
}

#[derive(Template)]
#[template(path = "shares.html")]
struct SharesPage {
    title: &'static str,
    chrome: Option<Chrome>,
    csrf: String,
    links: Vec<ShareRow>,
}

/// `GET /shares`: the account's share links (never their tokens).
pub(crate) async fn shares_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let csrf = csrf_token(&state.shared, &authenticated);
    let now = state.shared.now().0;
    let Json(list) = shares::list(State(state), Extension(authenticated)).await?;
    Ok(render(&SharesPage {
        title: "Share links",
        chrome: chrome::current(),
        csrf,
        links: list
            .into_iter()
            .map(|link| ShareRow {
                id_segment: segment(&link.id),
                run_segment: segment(&link.run),
                run: match (link.workflow, link.number) {
                    (Some(workflow), Some(number)) => format!("{workflow} #{number}"),
                    _ => link.run,
                },
                made: link.created_by.map_or_else(
                    || "made before links recorded who made them".to_owned(),
                    |who| format!("made by {who}"),
                ),
                created: crate::html::moment(link.created_at, now),
                expires: crate::html::moment(link.expires_at, now),
                revoked: link.revoked,
            })
            .collect(),
    }))
}

/// The run page's share form: the checkbox "include tool results".
#[derive(Debug, Deserialize)]
pub(crate) struct ShareForm {
    #[serde(default)]
    include_tool_results: Option<String>,
}

/// `POST /runs/{id}/shares`: creates a share link and shows it, once.
pub(crate) async fn create_share(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(run_id): Path<String>,
    Form(form): Form<ShareForm>,
) -> Result<Html<String>, Error> {
    let request = api_types::CreateShareRequest {
        include_tool_results: form.include_tool_results.is_some(),
    };
    let (_, Json(created)) = shares::create_share(&state, &authenticated, &run_id, &request)?;
    Ok(render(&ShownOncePage {
        title: "Share link",
        chrome: chrome::current(),
        lead: "Anyone with this address sees this run's record, read-only, until it expires or is revoked.",
        value: state.shared.full_url(&created.path),
        back_href: "/shares",
        back_label: "All share links",
    }))
}

/// `POST /shares/{id}/revoke`.
pub(crate) async fn revoke_share(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(link_id): Path<String>,
) -> Result<Response, Error> {
    shares::revoke(State(state), Extension(authenticated), Path(link_id)).await?;
    Ok(back_to("/shares"))
}
