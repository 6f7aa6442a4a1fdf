//! The console's actions on one person beyond the people page's forms.
//!
//! Removing (issue 11, finding 5): `GET /people/{id}/remove` is the confirmation, listing
//! every live key the person created (revoked with the removal unless ticked to keep, which
//! re-assigns it to the person who removes); `POST /people/{id}/remove` removes with the
//! ticked keys kept, through the same function as the JSON API.
//!
//! A new one-time link (issue 11, finding 8): `POST /people/{id}/sign-in-link`, for a person
//! who has never signed in, shows the new link once.

use askama::Template;
use auth::CsrfToken;
use axum::extract::{Path, State};
use axum::response::{Html, Response};
use axum::{Extension, Form, Json};

use crate::authn::Authenticated;
use crate::chrome::{self, Chrome};
use crate::handlers::admin::back_to;
use crate::handlers::blocking;
use crate::handlers::people::{self, live_keys_of, person_in_scope, remove_keeping};
use crate::html::{render, when};
use crate::{AppState, Error};

/// One key of the person, as the confirmation lists it.
pub(crate) struct KeyRow {
    key_id: String,
    name: String,
    role: &'static str,
    last_used: String,
}

#[derive(Template)]
#[template(path = "remove_person.html")]
struct RemovePersonPage {
    title: String,
    chrome: Option<Chrome>,
    person_id: String,
    name: String,
    email: String,
    role: &'static str,
    csrf: String,
    keys: Vec<KeyRow>,
}

/// `GET /people/{id}/remove`: what removing the person does, with their keys to keep or not.
pub(crate) async fn confirm(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(person_id): Path<String>,
) -> Result<Html<String>, Error> {
    let shared = &state.shared;
    let person = person_in_scope(shared, &authenticated, &person_id)?;
    let keys = live_keys_of(shared, &person)?
        .into_iter()
        .map(|key| KeyRow {
            key_id: key.key_id,
            name: key.name,
            role: key.role.as_str(),
            last_used: key
                .last_used_at
                .map_or_else(|| "never".to_owned(), |at| when(at.0)),
        })
        .collect();
    let csrf = authenticated
        .session
        .as_ref()
        .map(|session| {
            CsrfToken::for_session(&shared.csrf_key, &session.token_hash)
                .as_str()
                .to_owned()
        })
        .unwrap_or_default();
    Ok(render(&RemovePersonPage {
        title: format!("Remove {}", person.display_name),
        chrome: chrome::current(),
        person_id: person.id,
        name: person.display_name,
        email: person.email,
        role: person.role.as_str(),
        csrf,
        keys,
    }))
}

/// `POST /people/{id}/remove`: removes the person, keeping the keys ticked (`keep_key`, any
/// number of times) for the remover.
pub(crate) async fn remove(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(person_id): Path<String>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Result<Response, Error> {
    let keep: Vec<String> = pairs
        .into_iter()
        .filter(|(field, _)| field == "keep_key")
        .map(|(_, key_id)| key_id)
        .collect();
    blocking("remove a person", move || {
        remove_keeping(&state, &authenticated, &person_id, &keep)
    })
    .await??;
    Ok(back_to("/people"))
}

#[derive(Template)]
#[template(path = "sign_in_link.html")]
struct SignInLinkPage {
    title: &'static str,
    chrome: Option<Chrome>,
    name: String,
    path: String,
    expires: String,
}

/// `POST /people/{id}/sign-in-link`: a new one-time link for a person who never signed in,
/// shown on this page only.
pub(crate) async fn reissue_link(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(person_id): Path<String>,
) -> Result<Html<String>, Error> {
    let name = person_in_scope(&state.shared, &authenticated, &person_id)?.display_name;
    let shared = state.shared.clone();
    let (_, Json(link)) =
        people::reissue_link(State(state), Extension(authenticated), Path(person_id)).await?;
    Ok(render(&SignInLinkPage {
        title: "New sign-in link",
        chrome: chrome::current(),
        name,
        path: shared.full_url(&link.sign_in_path),
        expires: when(link.expires_at),
    }))
}
