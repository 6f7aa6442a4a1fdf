//! The console's vault page (`/vault`): the names of the account's agent secrets, connections
//! (with their field names and whether they are revoked) and model keys, and the forms to set,
//! remove and revoke them. A value goes in through a password box and never comes back out: the
//! page shows names only (G19). Each form posts to its console route (CSRF-checked by the
//! policy middleware, admins only) and calls the same function as the JSON API, so both doors
//! keep the same rules and audit entries (G25).

use std::collections::BTreeMap;

use api_types::limits;
use auth::Role;
use axum::extract::{Path, State};
use axum::response::{Html, Response};
use axum::{Extension, Form};
use redact::SecretValue;
use serde::Deserialize;

use crate::authn::Authenticated;
use crate::handlers::admin::{back_to, button, csrf_field};
use crate::handlers::vault;
use crate::html::{escape, page};
use crate::text_limits;
use crate::{AppState, Error};

/// How many field rows the connection form offers; rows left empty are ignored.
const CONNECTION_FORM_ROWS: usize = 3;

/// `GET /vault`: the vault's names; forms to set a value (never to see one).
pub(crate) async fn vault_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    let secrets = vault::secret_views(&state, &authenticated).await?;
    let connections = vault::connection_views(&state, &authenticated).await?;
    let model_keys = vault::model_key_views(&state, &authenticated).await?;
    let may_write = authenticated.principal.role() >= Role::Admin;
    let csrf = csrf_field(&state, &authenticated);
    let write_button = |action: String, label: &str| {
        if may_write {
            button(&state, &authenticated, &action, label)
        } else {
            String::new()
        }
    };
    let mut body = String::from(
        "<h1>Vault</h1>\n<p>Names only: a value can be set here, never seen. Steps receive \
         values as environment variables of the steps that name them.</p>\n",
    );

    body.push_str("<h2>Agent secrets</h2>\n<ul>\n");
    for secret in &secrets {
        body.push_str(&format!(
            "<li>{} (version {}) {}</li>\n",
            escape(&secret.name),
            secret.version,
            write_button(format!("/vault/secrets/{}/remove", secret.name), "Remove")
        ));
    }
    body.push_str("</ul>\n");
    if may_write {
        body.push_str(&format!(
            "<h3>Set a secret</h3>\n<form method=\"post\" action=\"/vault/secrets\">{csrf}\n\
             <label>Name <input name=\"name\" required></label>\n\
             <label>Value <input name=\"value\" type=\"password\" autocomplete=\"off\" \
             required></label>\n<button type=\"submit\">Set</button>\n</form>\n"
        ));
    }

    body.push_str(
        "<h2>Connections</h2>\n<table>\n<tr><th>Alias</th><th>Fields</th><th>Version</th>\
         <th>State</th><th></th></tr>\n",
    );
    for connection in &connections {
        let fields: Vec<String> = connection.fields.iter().map(|name| escape(name)).collect();
        let state_label = if connection.revoked {
            "revoked"
        } else {
            "active"
        };
        let revoke = if connection.revoked {
            String::new()
        } else {
            write_button(
                format!("/vault/connections/{}/revoke", connection.alias),
                "Revoke",
            )
        };
        body.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{state_label}</td><td>{}{revoke}</td>\
             </tr>\n",
            escape(&connection.alias),
            fields.join(", "),
            connection.version,
            write_button(
                format!("/vault/connections/{}/remove", connection.alias),
                "Remove"
            ),
        ));
    }
    body.push_str("</table>\n");
    if may_write {
        body.push_str(&format!(
            "<h3>Set a connection</h3>\n<p>Setting a connection replaces all its fields and \
             lifts a revocation. Rows left empty are ignored.</p>\n\
             <form method=\"post\" action=\"/vault/connections\">{csrf}\n\
             <label>Alias <input name=\"alias\" required></label>\n"
        ));
        for row in 1..=CONNECTION_FORM_ROWS {
            body.push_str(&format!(
                "<p><label>Field <input name=\"field_name_{row}\"></label>\n\
                 <label>Value <input name=\"field_value_{row}\" type=\"password\" \
                 autocomplete=\"off\"></label></p>\n"
            ));
        }
        body.push_str("<button type=\"submit\">Set</button>\n</form>\n");
    }

    body.push_str("<h2>Model keys</h2>\n<ul>\n");
    for key in &model_keys {
        body.push_str(&format!(
            "<li>{} (version {}) {}</li>\n",
            escape(&key.provider),
            key.version,
            write_button(
                format!("/vault/model-keys/{}/remove", key.provider),
                "Remove"
            )
        ));
    }
    body.push_str("</ul>\n");
    if may_write {
        body.push_str(&format!(
            "<h3>Set a model key</h3>\n<form method=\"post\" action=\"/vault/model-keys\">\
             {csrf}\n<label>Provider <input name=\"provider\" required></label>\n\
             <label>Key <input name=\"value\" type=\"password\" autocomplete=\"off\" \
             required></label>\n<button type=\"submit\">Set</button>\n</form>\n"
        ));
    } else {
        body.push_str("<p>Only an admin of the account can set, remove or revoke.</p>\n");
    }
    Ok(page("Vault", &body))
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
    vault::store_secret(&state, &authenticated, form.name.trim().to_owned(), value).await?;
    Ok(back_to("/vault"))
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
    let (alias, fields) = connection_from_form(pairs)?;
    vault::store_connection(&state, &authenticated, alias, fields).await?;
    Ok(back_to("/vault"))
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
    vault::store_model_key(
        &state,
        &authenticated,
        form.provider.trim().to_owned(),
        value,
    )
    .await?;
    Ok(back_to("/vault"))
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
