//! The supervisor's setting (G15) through the JSON API and on the console's models page: who
//! sees a failed step of the account's runs (the assistant on the default provider, whose
//! model then receives the step's inputs and printed text, or a person), and how many times
//! the supervisor may retry one step of one run (the account's number, at most 5, or the
//! default). Anyone of the account may read it; only an admin sets it, and each change is in
//! the audit log. The models page shows it as a block of its own (`supervisor_settings.html`).

use api_types::repairs::{SupervisorSettingsRequest, SupervisorSettingsView};
use auth::Role;
use axum::extract::State;
use axum::response::Response;
use axum::{Extension, Form, Json};
use serde::Deserialize;
use serde_json::json;
use storage::AccountId;

use crate::authn::Authenticated;
use crate::handlers::admin::back_to;
use crate::handlers::blocking;
use crate::state::Shared;
use crate::{AppState, Error};

/// The account's setting, as shown.
pub(crate) fn settings(
    shared: &Shared,
    account: &AccountId,
) -> Result<SupervisorSettingsView, Error> {
    let retries = shared
        .store
        .supervisor_retries(account)
        .map_err(Error::storage("read the supervisor's retries"))?;
    let provider = shared.engine.assistant_sees_failures(account);
    let failures_go_to = match &provider {
        Some(provider) => format!(
            "The assistant on {provider}: a failed step's inputs, error and printed text \
             (scrubbed) are sent to it, unless the workflow says `supervisor: none`."
        ),
        None => "A person: the account has no default model provider with an assistant model, \
                 so every failure goes to a person."
            .to_owned(),
    };
    Ok(SupervisorSettingsView {
        failures_go_to,
        provider,
        retries,
        effective_retries: retries.unwrap_or(engine::DEFAULT_SUPERVISOR_RETRIES),
        default_retries: engine::DEFAULT_SUPERVISOR_RETRIES,
        max_retries: engine::MAX_SUPERVISOR_RETRIES,
    })
}

/// Sets the account's number (`None`: the default) and audits it by name.
async fn set(
    state: &AppState,
    authenticated: &Authenticated,
    retries: Option<u32>,
) -> Result<SupervisorSettingsView, Error> {
    if let Some(retries) = retries.filter(|retries| *retries > engine::MAX_SUPERVISOR_RETRIES) {
        return Err(Error::InvalidInput {
            field: "retries",
            reason: format!(
                "{retries} retries per step: give a whole number from 0 to {}, or nothing for \
                 the default",
                engine::MAX_SUPERVISOR_RETRIES
            ),
        });
    }
    let shared = state.shared.clone();
    let account = authenticated.account();
    let actor = authenticated.actor.clone();
    blocking("set the supervisor's retries", move || {
        // The setting and its audit entry in one transaction (audit or nothing).
        crate::handlers::audited_write(
            &shared,
            "set the supervisor's retries",
            crate::handlers::Audited {
                account: &account,
                actor,
                action: storage::AuditAction::SupervisorRetries,
                detail: &json!({ "retries": retries.map_or_else(|| json!("default"), |n| json!(n)) }),
            },
            storage::people::PeopleWrite::SetSupervisorRetries {
                account: &account,
                retries,
            },
        )?;
        settings(&shared, &account)
    })
    .await?
}

/// `GET /api/supervisor`.
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<SupervisorSettingsView>, Error> {
    let shared = state.shared.clone();
    let account = authenticated.account();
    Ok(Json(
        blocking("read the supervisor's setting", move || {
            settings(&shared, &account)
        })
        .await??,
    ))
}

/// `PUT /api/supervisor`: admins only (the policy table), audited.
pub(crate) async fn put(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Json(request): Json<SupervisorSettingsRequest>,
) -> Result<Json<SupervisorSettingsView>, Error> {
    Ok(Json(set(&state, &authenticated, request.retries).await?))
}

/// The models page's form: a number from 0 to 5, or `default`.
#[derive(Deserialize)]
pub(crate) struct RetriesForm {
    #[serde(default)]
    retries: String,
}

/// `POST /models/supervisor`: back to the models page.
pub(crate) async fn set_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(form): Form<RetriesForm>,
) -> Result<Response, Error> {
    let typed = form.retries.trim();
    let set_as_typed = async {
        let retries = match typed {
            "" | "default" => None,
            number => Some(number.parse::<u32>().map_err(|_| Error::InvalidInput {
                field: "retries",
                reason: format!(
                    "give a whole number from 0 to {}, or `default`",
                    engine::MAX_SUPERVISOR_RETRIES
                ),
            })?),
        };
        set(&state, &authenticated, retries).await
    }
    .await;
    match set_as_typed {
        Ok(_) => Ok(back_to("/models#supervisor")),
        // A refused setting answers the models page, the refusal beside this form (issue 42,
        // point 8).
        Err(error) => {
            let mistake = crate::html::FormMistake::of(error)?;
            crate::handlers::models::models_page_refusing_supervisor(
                &state,
                &authenticated,
                mistake,
            )
            .await
        }
    }
}

/// The models page's block (a fragment of that page, included by `models.html` from
/// `supervisor_settings.html`, not a page of its own).
pub(crate) struct SupervisorBlock {
    pub(crate) settings: SupervisorSettingsView,
    pub(crate) may_set: bool,
    pub(crate) choices: Vec<(String, String)>,
    /// Why the last setting was refused, beside the form.
    pub(crate) error: Option<String>,
}

/// The block the models page shows: who sees failures and the retries, with the form for
/// admins.
pub(crate) fn models_page_block(
    state: &AppState,
    authenticated: &Authenticated,
) -> Result<SupervisorBlock, Error> {
    let settings = settings(&state.shared, &authenticated.account())?;
    let current = settings
        .retries
        .map_or_else(|| "default".to_owned(), |n| n.to_string());
    let mut choices = vec![(
        "default".to_owned(),
        format!("the default ({})", engine::DEFAULT_SUPERVISOR_RETRIES),
    )];
    choices.extend((0..=engine::MAX_SUPERVISOR_RETRIES).map(|n| (n.to_string(), n.to_string())));
    let block = SupervisorBlock {
        may_set: authenticated.principal.role() >= Role::Admin,
        choices: choices
            .into_iter()
            .map(|(value, label)| {
                let label = if value == current {
                    format!("{label} (now)")
                } else {
                    label
                };
                (value, label)
            })
            .collect(),
        settings,
        error: None,
    };
    Ok(block)
}
