//! The console's vault page (`/vault`): the names of the account's agent secrets, connections
//! (with their field names and whether they are revoked) and model keys, and the forms to set,
//! remove and revoke them. A value goes in through a password box and never comes back out: the
//! page shows names only (G19). Each form posts to its console route (CSRF-checked by the
//! policy middleware, admins only) and calls the same function as the JSON API, so both doors
//! keep the same rules and audit entries (G25).

use std::collections::BTreeMap;

use api_types::limits;
use askama::Template;
use auth::Role;
use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Response};
use axum::{Extension, Form};
use redact::SecretValue;
use serde::Deserialize;

use crate::authn::Authenticated;
use crate::chrome::{self, Chrome};
use crate::handlers::admin::back_to;
use crate::handlers::vault;
use crate::html::{FormMistake, csrf_token, render, segment};
use crate::text_limits;
use crate::{AppState, Error};

/// How many field rows the connection form offers; rows left empty are ignored.
const CONNECTION_FORM_ROWS: usize = 3;

struct NamedRow {
    name: String,
    version: u64,
    remove_action: String,
}

struct ConnectionRow {
    alias: String,
    fields: String,
    version: u64,
    revoked: bool,
    remove_action: String,
    revoke_action: String,
}

/// Why a form of the page was refused (at most one at a time). What was typed is never shown
/// again: a name box may hold a value pasted into the wrong place.
#[derive(Default)]
struct FormErrors {
    secret: Option<String>,
    connection: Option<String>,
    model_key: Option<String>,
}

#[derive(Template)]
#[template(path = "vault.html")]
struct VaultPage {
    title: &'static str,
    chrome: Option<Chrome>,
    csrf: String,
    may_write: bool,
    secrets: Vec<NamedRow>,
    connections: Vec<ConnectionRow>,
    model_keys: Vec<NamedRow>,
    rows: Vec<usize>,
    errors: FormErrors,
}

/// The vault page, with the refusal of a form beside it.
async fn vault_page_with(
    state: &AppState,
    authenticated: &Authenticated,
    errors: FormErrors,
) -> Result<Html<String>, Error> {
    let secrets = vault::secret_views(state, authenticated).await?;
    let connections = vault::connection_views(state, authenticated).await?;
    let model_keys = vault::model_key_views(state, authenticated).await?;
    Ok(render(&VaultPage {
        title: "Vault",
        chrome: chrome::current(),
        csrf: csrf_token(&state.shared, authenticated),
        may_write: authenticated.principal.role() >= Role::Admin,
        secrets: secrets
            .into_iter()
            .map(|secret| NamedRow {
                remove_action: format!("/vault/secrets/{}/remove", segment(&secret.name)),
                name: secret.name,
                version: secret.version,
            })
            .collect(),
        connections: connections
            .into_iter()
            .map(|connection| ConnectionRow {
                remove_action: format!("/vault/connections/{}/remove", segment(&connection.alias)),
                revoke_action: format!("/vault/connections/{}/revoke", segment(&connection.alias)),
                fields: connection.fields.join(", "),
                alias: connection.alias,
                version: connection.version,
                revoked: connection.revoked,
            })
            .collect(),
        model_keys: model_keys
            .into_iter()
            .map(|key| NamedRow {
                remove_action: format!("/vault/model-keys/{}/remove", segment(&key.provider)),
                name: key.provider,
                version: key.version,
            })
            .collect(),
        rows: (1..=CONNECTION_FORM_ROWS).collect(),
        errors,
    }))
}

/// `GET /vault`: the vault's names; forms to set a value (never to see one).
pub(crate) async fn vault_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    vault_page_with(&state, &authenticated, FormErrors::default()).await
}

/// Back to the vault page after a form's write; a refused write answers the page again with
/// the refusal beside that form (`place` puts it there).
async fn after_write(
    state: &AppState,
    authenticated: &Authenticated,
    written: Result<(), Error>,
    place: fn(String) -> FormErrors,
) -> Result<Response, Error> {
    match written {
        Ok(()) => Ok(back_to("/vault")),
        Err(error) => {
            let mistake = FormMistake::of(error)?;
            let page = vault_page_with(state, authenticated, place(mistake.message)).await?;
            Ok((mistake.status, page).into_response())
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct SecretForm {
    name: String,
    value: String,
}

/// `POST /vault/secrets`.
pub(crate) async fn set_secret(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(form): Form<SecretForm>,
) -> Result<Response, Error> {
    let value = SecretValue::new(form.value);
    // Names are trimmed like the alias and the provider (a pasted name often ends in a
    // space); values never are: every byte of a value is part of the credential.
    let stored =
        vault::store_secret(&state, &authenticated, form.name.trim().to_owned(), value).await;
    after_write(&state, &authenticated, stored.map(drop), |message| {
        FormErrors {
            secret: Some(message),
            ..FormErrors::default()
        }
    })
    .await
}

/// `POST /vault/secrets/{name}/remove`.
pub(crate) async fn remove_secret(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<Response, Error> {
    vault::delete_secret(&state, &authenticated, name).await?;
    Ok(back_to("/vault"))
}

/// One row of the connection form as submitted.
#[derive(Default)]
struct FieldRow {
    name: String,
    /// `None` when the value box was left empty.
    value: Option<SecretValue>,
}

/// The alias and the fields of a submitted connection form (`alias`, `field_name_N`,
/// `field_value_N`). A row with neither a name nor a value is ignored; a row with a name and
/// no value is passed on, so that the vault refuses the empty value by its own rule; a value
/// without a name is refused here, without repeating it.
fn connection_from_form(
    pairs: Vec<(String, String)>,
) -> Result<(String, Vec<(String, SecretValue)>), Error> {
    let mut alias = None;
    let mut rows: BTreeMap<usize, FieldRow> = BTreeMap::new();
    for (key, text) in pairs {
        if key == "alias" {
            alias = Some(text);
        } else if let Some(row) = row_number(&key, "field_name_") {
            rows.entry(row).or_default().name = text;
        } else if let Some(row) = row_number(&key, "field_value_") {
            rows.entry(row).or_default().value = (!text.is_empty()).then(|| SecretValue::new(text));
        }
    }
    let alias = alias.ok_or_else(|| Error::InvalidInput {
        field: "alias",
        reason: "the form has no alias".to_owned(),
    })?;
    let mut fields = Vec::with_capacity(rows.len());
    for row in rows.into_values() {
        let name = row.name.trim().to_owned();
        match (name.is_empty(), row.value) {
            (true, None) => {}
            (true, Some(_)) => {
                return Err(Error::InvalidInput {
                    field: "connection field",
                    reason: "a value was given without a field name".to_owned(),
                });
            }
            (false, value) => {
                // The same limits as the API's `SetConnectionRequest` (issue 11, finding 9).
                let value = value.unwrap_or_else(|| SecretValue::new(String::new()));
                text_limits::within(
                    "connection field name".to_owned(),
                    &name,
                    limits::FIELD_NAME_CHARS,
                )?;
                text_limits::within(
                    format!("fields.{name}"),
                    value.dangerously_expose(),
                    limits::SECRET_VALUE_CHARS,
                )?;
                fields.push((name, value));
            }
        }
    }
    Ok((alias.trim().to_owned(), fields))
}

fn row_number(key: &str, prefix: &str) -> Option<usize> {
    key.strip_prefix(prefix)?.parse().ok()
}

/// `POST /vault/connections`.
pub(crate) async fn set_connection(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Result<Response, Error> {
    let stored = match connection_from_form(pairs) {
        Ok((alias, fields)) => vault::store_connection(&state, &authenticated, alias, fields)
            .await
            .map(drop),
        Err(error) => Err(error),
    };
    after_write(&state, &authenticated, stored, |message| FormErrors {
        connection: Some(message),
        ..FormErrors::default()
    })
    .await
}

/// `POST /vault/connections/{alias}/remove`.
pub(crate) async fn remove_connection(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(alias): Path<String>,
) -> Result<Response, Error> {
    vault::delete_connection(&state, &authenticated, alias).await?;
    Ok(back_to("/vault"))
}

/// `POST /vault/connections/{alias}/revoke`.
pub(crate) async fn revoke_connection(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(alias): Path<String>,
) -> Result<Response, Error> {
    vault::revoke_connection_by_alias(&state, &authenticated, alias).await?;
    Ok(back_to("/vault"))
}

#[derive(Deserialize)]
pub(crate) struct ModelKeyForm {
    provider: String,
    value: String,
}

/// `POST /vault/model-keys`.
pub(crate) async fn set_model_key(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(form): Form<ModelKeyForm>,
) -> Result<Response, Error> {
    let value = SecretValue::new(form.value);
    let stored = vault::store_model_key(
        &state,
        &authenticated,
        form.provider.trim().to_owned(),
        value,
    )
    .await;
    after_write(&state, &authenticated, stored.map(drop), |message| {
        FormErrors {
            model_key: Some(message),
            ..FormErrors::default()
        }
    })
    .await
}

/// `POST /vault/model-keys/{provider}/remove`.
pub(crate) async fn remove_model_key(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(provider): Path<String>,
) -> Result<Response, Error> {
    vault::delete_model_key(&state, &authenticated, provider).await?;
    Ok(back_to("/vault"))
}

#[cfg(test)]
mod tests {
    use super::connection_from_form;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn g19_empty_rows_are_ignored_and_names_keep_their_rows() {
        let (alias, fields) = connection_from_form(pairs(&[
            ("csrf", "token"),
            ("alias", "payments"),
            ("field_name_1", "api_key"),
            ("field_value_1", "v1"),
            ("field_name_2", ""),
            ("field_value_2", ""),
            ("field_name_3", "base-url"),
            ("field_value_3", "v3"),
        ]))
        .unwrap();
        assert_eq!(alias, "payments");
        let names: Vec<&str> = fields.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["api_key", "base-url"]);
        assert_eq!(fields[1].1.dangerously_expose(), "v3");
    }

    #[test]
    fn g19_a_value_without_a_name_is_refused_without_repeating_it() {
        let refused = connection_from_form(pairs(&[
            ("alias", "payments"),
            ("field_name_1", ""),
            ("field_value_1", "sk_live_unnamed_value"),
        ]))
        .err()
        .unwrap();
        assert!(!format!("{refused} {refused:?}").contains("sk_live_unnamed_value"));
        let (_, fields) =
            connection_from_form(pairs(&[("alias", "payments"), ("field_name_1", "api_key")]))
                .unwrap();
        assert_eq!(
            fields.len(),
            1,
            "a named row with no value reaches the vault's check"
        );
    }
}
