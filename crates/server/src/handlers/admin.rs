//! The console's pages for sessions, people and roles, API keys and share links (the audit
//! log's is in `audit_page`, the vault's in `vault_page`). Each form posts to its console route
//! (CSRF-checked by the policy middleware) and calls the same handler as the JSON API, so both
//! doors keep the same rules and audit entries. What is shown once (a sign-in link, a key, a
//! share link) is shown on the page that answers the form, and never again.

use api_types::{CreateApiKeyRequest, InvitePersonRequest, OwnershipRequest, RoleChangeRequest};
use auth::CsrfToken;
use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Form, Json};
use serde::Deserialize;

use crate::authn::Authenticated;
use crate::handlers::{keys, people, sessions, shares};
use crate::html::{escape, page, when};
use crate::layers::CSRF_FIELD;
use crate::{AppState, Error};

/// The hidden CSRF field of a form of this session.
pub(crate) fn csrf_field(state: &AppState, authenticated: &Authenticated) -> String {
    match &authenticated.session {
        Some(session) => format!(
            "<input type=\"hidden\" name=\"{CSRF_FIELD}\" value=\"{}\">",
            escape(CsrfToken::for_session(&state.shared.csrf_key, &session.token_hash).as_str())
        ),
        None => String::new(),
    }
}

/// A form with one button posting to `action`.
pub(crate) fn button(
    state: &AppState,
    authenticated: &Authenticated,
    action: &str,
    label: &str,
) -> String {
    format!(
        "<form method=\"post\" action=\"{}\">{}<button type=\"submit\">{}</button></form>",
        escape(action),
        csrf_field(state, authenticated),
        escape(label)
    )
}

pub(crate) fn back_to(path: &str) -> Response {
    Redirect::to(path).into_response()
}

/// `GET /sessions`: the signed-in person's sessions.
pub(crate) async fn sessions_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let Json(list) =
        sessions::list_own(State(state.clone()), Extension(authenticated.clone())).await?;
    let mut body = String::from("<h1>Your sessions</h1>\n<ul>\n");
    for session in &list {
        body.push_str(&format!(
            "<li>{} since {}, last used {}{} {}</li>\n",
            escape(&session.id),
            when(session.created_at),
            when(session.last_used_at),
            if session.current { " (this one)" } else { "" },
            button(
                &state,
                &authenticated,
                &format!("/sessions/{}/revoke", session.id),
                "Revoke"
            )
        ));
    }
    body.push_str("</ul>\n");
    body.push_str(&button(
        &state,
        &authenticated,
        "/sessions/revoke-all",
        "Revoke all, this one included",
    ));
    Ok(page("Sessions", &body))
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

/// `GET /people`: the people of the account, their roles, and the forms to manage them.
pub(crate) async fn people_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let Json(list) = people::list(State(state.clone()), Extension(authenticated.clone())).await?;
    let csrf = csrf_field(&state, &authenticated);
    let mut body = String::from(
        "<h1>People</h1>\n<table>\n<tr><th>Name</th><th>Email</th><th>Role</th><th></th></tr>\n",
    );
    for person in &list {
        let id = escape(&person.id);
        body.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>\
             <form method=\"post\" action=\"/people/{id}/role\">{csrf}\
             <select name=\"role\"><option>viewer</option><option>member</option>\
             <option>admin</option></select><button type=\"submit\">Change role</button></form>\
             {}<a href=\"/people/{id}/remove\">Remove\u{2026}</a>{}\
             <form method=\"post\" action=\"/ownership\">{csrf}\
             <input type=\"hidden\" name=\"new_owner\" value=\"{id}\">\
             <button type=\"submit\">Hand ownership over</button></form></td></tr>\n",
            escape(&person.display_name),
            escape(&person.email),
            escape(&person.role),
            button(
                &state,
                &authenticated,
                &format!("/people/{}/sessions/revoke", person.id),
                "End sessions"
            ),
            if person.has_password {
                String::new()
            } else {
                button(
                    &state,
                    &authenticated,
                    &format!("/people/{}/sign-in-link", person.id),
                    "New sign-in link",
                )
            },
        ));
    }
    body.push_str(&format!(
        "</table>\n<h2>Invite</h2>\n<form method=\"post\" action=\"/people\">{csrf}\n\
         <label>Name <input name=\"display_name\" required></label>\n\
         <label>Email <input name=\"email\" type=\"email\" required></label>\n\
         <label>Role <select name=\"role\"><option>viewer</option><option>member</option>\
         <option>admin</option></select></label>\n\
         <button type=\"submit\">Invite</button>\n</form>"
    ));
    Ok(page("People", &body))
}

#[derive(Deserialize)]
pub(crate) struct InviteForm {
    display_name: String,
    email: String,
    role: String,
}

/// `POST /people`: invites a person and shows their one-time sign-in link, once.
pub(crate) async fn invite_person(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(form): Form<InviteForm>,
) -> Result<Html<String>, Error> {
    let (_, Json(invited)) = people::invite(
        State(state),
        Extension(authenticated),
        Json(InvitePersonRequest {
            display_name: form.display_name,
            email: form.email,
            role: form.role,
        }),
    )
    .await?;
    Ok(page(
        "Invited",
        &format!(
            "<h1>Invited</h1>\n<p>Send this one-time sign-in link to the person; it is shown \
             only now: <code>{}</code></p>\n<p><a href=\"/people\">Back to people</a></p>",
            escape(&invited.sign_in_path)
        ),
    ))
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
    let Json(_changed) = people::change_role(
        State(state),
        Extension(authenticated),
        Path(person_id),
        Json(RoleChangeRequest { role: form.role }),
    )
    .await?;
    Ok(back_to("/people"))
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
    people::transfer(
        State(state),
        Extension(authenticated),
        Json(OwnershipRequest {
            new_owner: form.new_owner,
        }),
    )
    .await?;
    Ok(back_to("/people"))
}

/// `GET /keys`: the account's API keys and the form to create one.
pub(crate) async fn keys_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let Json(list) = keys::list(State(state.clone()), Extension(authenticated.clone())).await?;
    let csrf = csrf_field(&state, &authenticated);
    let mut body = String::from("<h1>API keys</h1>\n<ul>\n");
    for key in &list {
        body.push_str(&format!(
            "<li>{} ({}, {}, created by {}){} {}</li>\n",
            escape(&key.name),
            escape(&key.key_id),
            escape(&key.role),
            escape(
                key.created_by_name
                    .as_deref()
                    .or(key.created_by.as_deref())
                    .unwrap_or("someone unknown")
            ),
            if key.revoked { " revoked" } else { "" },
            if key.revoked {
                String::new()
            } else {
                button(
                    &state,
                    &authenticated,
                    &format!("/keys/{}/revoke", key.key_id),
                    "Revoke",
                )
            }
        ));
    }
    body.push_str(&format!(
        "</ul>\n<h2>New key</h2>\n<form method=\"post\" action=\"/keys\">{csrf}\n\
         <label>Name <input name=\"name\" required></label>\n\
         <label>Role <select name=\"role\"><option>viewer</option><option>member</option>\
         <option>admin</option></select></label>\n\
         <button type=\"submit\">Create</button>\n</form>"
    ));
    Ok(page("API keys", &body))
}

#[derive(Deserialize)]
pub(crate) struct KeyForm {
    name: String,
    role: String,
}

/// `POST /keys`: creates a key and shows it, once.
pub(crate) async fn create_key(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(form): Form<KeyForm>,
) -> Result<Html<String>, Error> {
    let (_, Json(created)) = keys::create(
        State(state),
        Extension(authenticated),
        Json(CreateApiKeyRequest {
            name: form.name,
            role: form.role,
        }),
    )
    .await?;
    Ok(page(
        "New API key",
        &format!(
            "<h1>New API key</h1>\n<p>Copy it now; it is shown only once: <code>{}</code></p>\n\
             <p><a href=\"/keys\">Back to keys</a></p>",
            escape(&created.key)
        ),
    ))
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

/// `GET /shares`: the account's share links (never their tokens).
pub(crate) async fn shares_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let Json(list) = shares::list(State(state.clone()), Extension(authenticated.clone())).await?;
    let mut body = String::from("<h1>Share links</h1>\n<ul>\n");
    for link in &list {
        body.push_str(&format!(
            "<li>{} of run {} until {}{} {}</li>\n",
            escape(&link.id),
            escape(&link.run),
            when(link.expires_at),
            if link.revoked { " revoked" } else { "" },
            if link.revoked {
                String::new()
            } else {
                button(
                    &state,
                    &authenticated,
                    &format!("/shares/{}/revoke", link.id),
                    "Revoke",
                )
            }
        ));
    }
    body.push_str("</ul>");
    Ok(page("Share links", &body))
}

/// `POST /runs/{id}/shares`: creates a share link and shows it, once.
pub(crate) async fn create_share(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(run_id): Path<String>,
) -> Result<Html<String>, Error> {
    let (_, Json(created)) =
        shares::create(State(state), Extension(authenticated), Path(run_id)).await?;
    Ok(page(
        "Share link",
        &format!(
            "<h1>Share link</h1>\n<p>Anyone with this address sees this run's record, \
             read-only, until it expires or is revoked; it is shown only now: \
             <code>{}</code></p>\n<p><a href=\"/shares\">All share links</a></p>",
            escape(&created.path)
        ),
    ))
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
