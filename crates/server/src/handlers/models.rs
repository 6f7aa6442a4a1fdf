//! The account's model providers over the API (`/api/models`) and the console (`/models`),
//! all for admins: they list them (names, kinds, URLs, the default; never a key), add,
//! replace, remove, pick the default and send a test prompt: changing where prompts go is an
//! admin's decision. A provider's host is not a secret of the admins: every reach panel of an
//! agent step shows each person of the account the provider's name and host (G27), so what
//! this listing adds for admins is the full URL and the settings. A provider's settings are a
//! row of their own; its key is the vault model key of the same name, which goes in and never
//! comes back out. Every change and every test is audited by name (G25). Which endpoints may be reached
//! is the operator's choice (the server's `llm::Client`), never the account's (G11).

use std::str::FromStr;
use std::sync::Arc;

use api_types::models::{
    ModelProviderView, ModelTestRequest, ModelTestResult, SaveModelProviderRequest,
};
use askama::Template;
use auth::Role;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::{Extension, Form, Json};
use redact::{Redactor, SecretValue};
use serde::Deserialize;
use serde_json::json;
use storage::models::{ModelProvider, NewModelProvider};
use storage::people::PeopleWrite;
use storage::{AccountId, NewAuditEntry};
use zeroize::Zeroizing;

use crate::authn::Authenticated;
use crate::chrome::{self, Chrome};
use crate::handlers::admin::back_to;
use crate::handlers::vault::{json_body, vault_failure};
use crate::handlers::{Audited, account_redactor, audit, audited_write, blocking};
use crate::html::{FormMistake, csrf_token, render, segment};
use crate::state::{ServerStore, Shared};
use crate::{AppState, Error};

fn client_of(shared: &Shared, operation: &'static str) -> Result<llm::Client, Error> {
    shared
        .models
        .clone()
        .ok_or(Error::ModelsUnavailable { operation })
}

/// The account's names its definitions are checked against: its providers and its default
/// (`platform::providers`, as every door reads them).
pub(crate) fn account_names(
    shared: &Shared,
    account: &AccountId,
) -> Result<spec::AccountNames, Error> {
    platform::providers::account_names(shared.store.as_ref(), account)
        .map_err(|error| provider_error("read the account's model providers", error))
}

/// A provider that cannot be named or used, as this server answers it.
fn provider_error(operation: &'static str, error: platform::providers::ProviderError) -> Error {
    use platform::providers::ProviderError;
    match error {
        ProviderError::Storage(source) => Error::Storage { operation, source },
        ProviderError::Unknown { name } => Error::NotFound {
            what: "model provider",
            id: name,
        },
        ProviderError::InvalidName { .. } => invalid(
            "provider name",
            "agent files write `model: NAME/MODEL_ID`, so a name is 1 to 64 lower-case letters, \
             digits, `-` and `_`, starting with a letter",
        ),
        ProviderError::UnknownKind { .. } => invalid(
            "provider",
            "write `anthropic` (Anthropic's Messages API) or `openai` (any OpenAI-compatible \
             Chat Completions endpoint: OpenAI, llama.cpp, vLLM, Ollama)",
        ),
        ProviderError::KeyUnreadable { .. } | ProviderError::NoKey { .. } => invalid(
            "provider",
            "its key is missing from the vault; add the provider again with its key",
        ),
        ProviderError::Unusable { source, .. } => invalid("base_url", source.kind()),
    }
}

fn invalid(field: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidInput {
        field,
        reason: reason.into(),
    }
}

/// A provider's name: the name of its vault key and what agent files write before the `/`.
fn check_name(name: &str) -> Result<(), Error> {
    platform::providers::check_name(name).map_err(|error| provider_error("check a name", error))
}

fn kind_of(text: &str) -> Result<llm::ProviderKind, Error> {
    llm::ProviderKind::from_str(text).map_err(|_| {
        invalid(
            "provider",
            "write `anthropic` (Anthropic's Messages API) or `openai` (any OpenAI-compatible \
             Chat Completions endpoint: OpenAI, llama.cpp, vLLM, Ollama)",
        )
    })
}

/// The base URL's form, and its scheme and address against the operator's rules, resolving
/// no name (names are resolved and checked at every request). The reason never repeats the
/// URL: what was typed into the box stays out of answers and logs.
async fn check_base_url(
    client: &llm::Client,
    kind: llm::ProviderKind,
    base_url: &str,
) -> Result<(), Error> {
    let url = llm::endpoint_url(kind, base_url).map_err(|error| match error {
        llm::Error::InvalidBaseUrl { reason, .. } => invalid("base_url", reason),
        other => invalid("base_url", other.kind()),
    })?;
    let offline = llm::Client::new(llm::ClientOptions {
        endpoints: client.options().endpoints.clone(),
        resolver: Arc::new(llm::StaticResolver::new()),
        ..llm::ClientOptions::default()
    })
    .map_err(|error| invalid("base_url", error.to_string()))?;
    match offline.check_endpoint(&url).await {
        Ok(_) | Err(llm::Error::Resolve { .. }) => Ok(()),
        Err(
            llm::Error::EndpointRefused { reason, .. } | llm::Error::InvalidBaseUrl { reason, .. },
        ) => Err(invalid("base_url", reason)),
        Err(other) => Err(invalid("base_url", other.kind())),
    }
}

/// The URL a provider's requests go to.
fn shown_url(provider: &ModelProvider) -> String {
    match llm::ProviderKind::from_str(&provider.kind) {
        Ok(kind) => llm::endpoint_url(
            kind,
            provider
                .base_url
                .as_deref()
                .unwrap_or(kind.default_base_url()),
        )
        .map(|url| url.to_string())
        .unwrap_or_default(),
        Err(_) => provider.base_url.clone().unwrap_or_default(),
    }
}

fn view(provider: &ModelProvider, key_version: Option<u64>) -> ModelProviderView {
    ModelProviderView {
        name: provider.name.clone(),
        provider: provider.kind.clone(),
        base_url: shown_url(provider),
        assistant_model: provider.assistant_model.clone(),
        is_default: provider.is_default,
        key_version,
        created_at: provider.created_at.0,
        updated_at: provider.updated_at.0,
    }
}

/// The account's providers with their keys' versions.
async fn views(
    state: &AppState,
    authenticated: &Authenticated,
) -> Result<Vec<ModelProviderView>, Error> {
    let shared = Arc::clone(&state.shared);
    let account = authenticated.account();
    blocking("list model providers", move || {
        let providers = shared
            .store
            .model_providers(&account)
            .map_err(Error::storage("list model providers"))?;
        let keys = match &shared.vault {
            Some(vault) => vault
                .model_keys()
                .list(&account)
                .map_err(vault_failure("list model keys"))?,
            None => Vec::new(),
        };
        Ok(providers
            .iter()
            .map(|provider| {
                let version = keys
                    .iter()
                    .find(|key| key.name == provider.name)
                    .map(|key| key.version);
                view(provider, version)
            })
            .collect())
    })
    .await?
}

/// Adds the provider (or replaces its settings and key) and audits it by name.
async fn save(
    state: &AppState,
    authenticated: &Authenticated,
    name: String,
    mut request: SaveModelProviderRequest,
) -> Result<ModelProviderView, Error> {
    // Moved out of the request first (no copy): from here on it is a SecretValue, wiped on
    // drop whichever way this ends.
    let key = SecretValue::new(std::mem::take(&mut *request.key));
    check_name(&name)?;
    let kind = kind_of(&request.provider)?;
    let base_url = request
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .map(str::to_owned);
    let assistant_model = request
        .assistant_model
        .as_deref()
        .map(str::trim)
        .filter(|model| !model.is_empty())
        .map(str::to_owned);
    let client = client_of(&state.shared, "add a model provider")?;
    check_base_url(
        &client,
        kind,
        base_url.as_deref().unwrap_or(kind.default_base_url()),
    )
    .await?;
    let vault = state.shared.vault.clone().ok_or(Error::VaultUnavailable {
        operation: "store a model key",
    })?;
    let shared = Arc::clone(&state.shared);
    let account = authenticated.account();
    let actor = authenticated.actor.clone();
    blocking("add a model provider", move || {
        // The key and its audit entry are one write of the vault: an entry that cannot be
        // written leaves the key and the provider as they were. The provider's row follows.
        let redactor = account_redactor(&shared, &account)?;
        let entry = |summary: &storage::vault::ItemSummary| NewAuditEntry {
            account: account.clone(),
            run: None,
            actor: redactor.scrub_fields(actor.clone()),
            action: storage::AuditAction::ModelAdd,
            detail: redactor.scrub_json(&json!({
                "name": name,
                "provider": kind.as_str(),
                "base_url": base_url,
                "assistant_model": assistant_model,
                "key_version": summary.version,
            })),
            at: shared.now(),
        };
        let key_info = vault
            .model_keys()
            .set_audited(&account, &name, key, &entry)
            .map_err(vault_failure("store a model key"))?;
        let saved = shared
            .store
            .save_model_provider(&NewModelProvider {
                account: account.clone(),
                name: name.clone(),
                kind: kind.as_str().to_owned(),
                base_url,
                assistant_model,
                at: shared.now(),
            })
            .map_err(Error::storage("save a model provider"))?;
        Ok(view(&saved.provider, Some(key_info.version)))
    })
    .await?
}

async fn remove(
    state: &AppState,
    authenticated: &Authenticated,
    name: String,
) -> Result<(), Error> {
    check_name(&name)?;
    let shared = Arc::clone(&state.shared);
    let account = authenticated.account();
    let actor = authenticated.actor.clone();
    blocking("remove a model provider", move || {
        let redactor = account_redactor(&shared, &account)?;
        let entry = NewAuditEntry {
            account: account.clone(),
            run: None,
            actor: redactor.scrub_fields(actor),
            action: storage::AuditAction::ModelRemove,
            detail: redactor.scrub_json(&json!({ "name": name })),
            at: shared.now(),
        };
        if remove_provider(
            shared.store.as_ref(),
            shared.vault.as_deref(),
            &entry,
            &name,
        )? {
            Ok(())
        } else {
            Err(Error::NotFound {
                what: "model provider",
                id: name,
            })
        }
    })
    .await?
}

/// Removes the model provider `name` of `entry`'s account and its key
/// (`platform::providers::remove_provider`, as every door removes it); `false` when the
/// account has neither.
fn remove_provider(
    store: &dyn ServerStore,
    vault: Option<&vault::Vault>,
    entry: &NewAuditEntry,
    name: &str,
) -> Result<bool, Error> {
    use platform::providers::RemoveError;
    platform::providers::remove_provider(store, vault, entry, name).map_err(|error| match error {
        RemoveError::Vault { source, .. } => vault_failure("remove a model key")(source),
        RemoveError::Storage { operation, source } => Error::Storage { operation, source },
    })
}

async fn make_default(
    state: &AppState,
    authenticated: &Authenticated,
    name: String,
) -> Result<(), Error> {
    check_name(&name)?;
    let shared = Arc::clone(&state.shared);
    let account = authenticated.account();
    let actor = authenticated.actor.clone();
    blocking("set the default model provider", move || {
        let written = audited_write(
            &shared,
            "set the default model provider",
            Audited {
                account: &account,
                actor,
                action: storage::AuditAction::ModelDefault,
                detail: &json!({ "name": name }),
            },
            PeopleWrite::SetDefaultModelProvider {
                account: &account,
                name: &name,
                at: shared.now(),
            },
        )?;
        if !written.took_effect() {
            return Err(Error::NotFound {
                what: "model provider",
                id: name,
            });
        }
        Ok(())
    })
    .await?
}

/// The provider's settings and a provider to call, its key from the vault.
pub(crate) async fn callable(
    state: &AppState,
    account: &AccountId,
    name: &str,
) -> Result<(ModelProvider, llm::Provider), Error> {
    let client = client_of(&state.shared, "test a model provider")?;
    let shared = Arc::clone(&state.shared);
    let account = account.clone();
    let name = name.to_owned();
    blocking("read a model provider", move || {
        platform::providers::provider(
            shared.store.as_ref(),
            shared.engine.scrub_sets().source().as_ref(),
            &account,
            &name,
            client,
        )
        .map_err(|error| provider_error("read a model provider", error))
    })
    .await?
}

/// Sends one short prompt; the result says what came back or why not, scrubbed of the
/// account's values, and the test is audited.
async fn test(
    state: &AppState,
    authenticated: &Authenticated,
    name: String,
    model: Option<String>,
) -> Result<ModelTestResult, Error> {
    check_name(&name)?;
    let account = authenticated.account();
    let (settings, provider) = callable(state, &account, &name).await?;
    let Some(model) = model
        .map(|model| model.trim().to_owned())
        .filter(|model| !model.is_empty())
        .or(settings.assistant_model)
    else {
        return Err(invalid(
            "model",
            "say which model to ask, or give the provider an assistant model",
        ));
    };
    let probe = provider.probe(&model).await;
    let retries = u32::try_from(probe.retries.len()).unwrap_or(u32::MAX);
    let result = match &probe.result {
        Ok(turn) => ModelTestResult {
            ok: true,
            model: model.clone(),
            answer: Some(turn.text.trim().to_owned()),
            answered_by: Some(turn.model.clone()),
            input_tokens: Some(turn.usage.input_tokens),
            output_tokens: Some(turn.usage.output_tokens),
            error_kind: None,
            error: None,
            retries,
        },
        Err(error) => ModelTestResult {
            ok: false,
            model: model.clone(),
            answer: None,
            answered_by: None,
            input_tokens: None,
            output_tokens: None,
            error_kind: Some(error.kind().to_owned()),
            error: Some(error.to_string()),
            retries,
        },
    };
    let shared = Arc::clone(&state.shared);
    let actor = authenticated.actor.clone();
    blocking("test a model provider", move || {
        audit(
            &shared,
            &account,
            actor,
            storage::AuditAction::ModelTest,
            &json!({
                "name": name,
                "model": result.model,
                "ok": result.ok,
                "error_kind": result.error_kind,
                "retries": result.retries,
            }),
        )?;
        let redactor = account_redactor(&shared, &account)?;
        Ok(scrubbed(&result, &redactor))
    })
    .await?
}

/// A test's result as it is shown: every text in it goes out scrubbed of every value of the
/// account, what the endpoint chose (its answer, its error, the model it says answered) and
/// the model that was asked alike.
fn scrubbed(result: &ModelTestResult, redactor: &Redactor) -> ModelTestResult {
    let scrub = |text: &Option<String>| text.as_ref().map(|text| redactor.scrub(text).into_inner());
    ModelTestResult {
        model: redactor.scrub(&result.model).into_inner(),
        answer: scrub(&result.answer),
        answered_by: scrub(&result.answered_by),
        error: scrub(&result.error),
        ..result.clone()
    }
}

// ---------------------------------------------------------------------------------------------
// The JSON API.
// ---------------------------------------------------------------------------------------------

/// `GET /api/models`.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<ModelProviderView>>, Error> {
    Ok(Json(views(&state, &authenticated).await?))
}

/// `PUT /api/models/{provider}`.
pub(crate) async fn put(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
    body: Result<Json<SaveModelProviderRequest>, JsonRejection>,
) -> Result<Json<ModelProviderView>, Error> {
    let request = json_body(body, "with `provider` and `key`")?;
    Ok(Json(save(&state, &authenticated, name, request).await?))
}

/// `DELETE /api/models/{provider}`.
pub(crate) async fn delete(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<StatusCode, Error> {
    remove(&state, &authenticated, name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/models/{provider}/default`.
pub(crate) async fn set_default(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<StatusCode, Error> {
    make_default(&state, &authenticated, name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/models/{provider}/test`.
pub(crate) async fn run_test(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
    body: Result<Json<ModelTestRequest>, JsonRejection>,
) -> Result<Json<ModelTestResult>, Error> {
    let request = json_body(body, "such as {} or {\"model\": \"ID\"}")?;
    Ok(Json(
        test(&state, &authenticated, name, request.model).await?,
    ))
}

// ---------------------------------------------------------------------------------------------
// The console.
// ---------------------------------------------------------------------------------------------

struct ProviderRow {
    name: String,
    name_segment: String,
    provider: String,
    base_url: String,
    assistant_model: String,
    is_default: bool,
    key: String,
}

/// The add form as typed (never its key).
struct TypedProvider {
    name: String,
    provider: String,
    base_url: String,
    assistant_model: String,
}

impl TypedProvider {
    fn empty() -> TypedProvider {
        TypedProvider {
            name: String::new(),
            provider: "anthropic".to_owned(),
            base_url: String::new(),
            assistant_model: String::new(),
        }
    }
}

#[derive(Template)]
#[template(path = "models.html")]
struct ModelsPage {
    title: &'static str,
    chrome: Option<Chrome>,
    csrf: String,
    may_write: bool,
    providers: Vec<ProviderRow>,
    kinds: [&'static str; 2],
    typed: TypedProvider,
    error: Option<String>,
    /// Who sees a failed step, and the supervisor's retries (`supervisor_settings.html`).
    supervisor: crate::handlers::supervisor::SupervisorBlock,
}

/// The models page, with the add form as `typed` (empty, or as sent with its refusal).
async fn models_page_with(
    state: &AppState,
    authenticated: &Authenticated,
    typed: TypedProvider,
    error: Option<String>,
    supervisor_error: Option<String>,
) -> Result<Html<String>, Error> {
    let providers = views(state, authenticated).await?;
    let mut supervisor = crate::handlers::supervisor::models_page_block(state, authenticated)?;
    supervisor.error = supervisor_error;
    Ok(render(&ModelsPage {
        title: "Models",
        chrome: chrome::current(),
        csrf: csrf_token(&state.shared, authenticated),
        may_write: authenticated.principal.role() >= Role::Admin,
        providers: providers
            .into_iter()
            .map(|provider| ProviderRow {
                name_segment: segment(&provider.name),
                key: match provider.key_version {
                    Some(version) => format!("version {version}"),
                    None => "missing".to_owned(),
                },
                name: provider.name,
                provider: provider.provider,
                base_url: provider.base_url,
                assistant_model: provider
                    .assistant_model
                    .unwrap_or_else(|| "none".to_owned()),
                is_default: provider.is_default,
            })
            .collect(),
        kinds: ["anthropic", "openai"],
        typed,
        error,
        supervisor,
    }))
}

/// The models page answering a refused supervisor setting, the refusal beside its form.
pub(crate) async fn models_page_refusing_supervisor(
    state: &AppState,
    authenticated: &Authenticated,
    mistake: FormMistake,
) -> Result<Response, Error> {
    let page = models_page_with(
        state,
        authenticated,
        TypedProvider::empty(),
        None,
        Some(mistake.message),
    )
    .await?;
    Ok((mistake.status, page).into_response())
}

/// `GET /models`: the providers and, for admins, the forms.
pub(crate) async fn models_page(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Html<String>, Error> {
    models_page_with(&state, &authenticated, TypedProvider::empty(), None, None).await
}

#[derive(Deserialize)]
pub(crate) struct ProviderForm {
    name: String,
    provider: String,
    #[serde(default)]
    base_url: String,
    #[serde(default)]
    assistant_model: String,
    /// Wiped when the form is dropped, whether or not the key was stored.
    key: Zeroizing<String>,
}

/// `POST /models`; a refused provider answers the page again with what was typed (but the
/// key) and why.
pub(crate) async fn add_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Form(form): Form<ProviderForm>,
) -> Result<Response, Error> {
    let typed = TypedProvider {
        name: form.name.clone(),
        provider: form.provider.clone(),
        base_url: form.base_url.clone(),
        assistant_model: form.assistant_model.clone(),
    };
    let request = SaveModelProviderRequest {
        provider: form.provider,
        base_url: Some(form.base_url),
        assistant_model: Some(form.assistant_model),
        key: form.key,
    };
    match save(&state, &authenticated, form.name.trim().to_owned(), request).await {
        Ok(_) => Ok(back_to("/models")),
        Err(error) => {
            let mistake = FormMistake::of(error)?;
            let page = models_page_with(&state, &authenticated, typed, Some(mistake.message), None)
                .await?;
            Ok((mistake.status, page).into_response())
        }
    }
}

/// `POST /models/{provider}/remove`.
pub(crate) async fn remove_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<Response, Error> {
    remove(&state, &authenticated, name).await?;
    Ok(back_to("/models"))
}

/// `POST /models/{provider}/default`.
pub(crate) async fn default_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<Response, Error> {
    make_default(&state, &authenticated, name).await?;
    Ok(back_to("/models"))
}

#[derive(Template)]
#[template(path = "model_test.html")]
struct ModelTestPage {
    title: &'static str,
    chrome: Option<Chrome>,
    name: String,
    ok: bool,
    answer: String,
    answered_by: String,
    input_tokens: u64,
    output_tokens: u64,
    error: String,
}

/// `POST /models/{provider}/test`: the result on a page of its own.
pub(crate) async fn test_with_form(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(name): Path<String>,
) -> Result<Html<String>, Error> {
    let result = test(&state, &authenticated, name.clone(), None).await?;
    Ok(render(&ModelTestPage {
        title: "Model test",
        chrome: chrome::current(),
        name,
        ok: result.ok,
        answer: result.answer.unwrap_or_default(),
        answered_by: result.answered_by.unwrap_or_default(),
        input_tokens: result.input_tokens.unwrap_or_default(),
        output_tokens: result.output_tokens.unwrap_or_default(),
        error: result.error.unwrap_or_default(),
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use api_types::models::ModelTestResult;
    use redact::testing::MemorySource;
    use redact::{ScrubSets, SecretName};

    use super::{ProviderForm, scrubbed};

    const VALUE: &str = "sk_live_ShownNowhere4Kq9";

    /// Everything the endpoint chose goes out scrubbed: its answer, its error and the name
    /// of the model it says answered.
    #[test]
    fn g16_a_tests_answer_error_and_answering_model_are_scrubbed() {
        let source = MemorySource::new();
        source.set(
            "acct",
            SecretName::AgentSecret {
                name: "TOKEN".into(),
            },
            VALUE,
        );
        let redactor = ScrubSets::new(Arc::new(source))
            .for_account(&ids::AccountId::parse("acct").unwrap())
            .unwrap();
        let result = ModelTestResult {
            ok: true,
            model: "fake-large".into(),
            answer: Some(format!("the answer holds {VALUE}")),
            answered_by: Some(format!("model-{VALUE}")),
            input_tokens: Some(1),
            output_tokens: Some(1),
            error_kind: None,
            error: Some(format!("and the error {VALUE}")),
            retries: 0,
        };
        let shown = scrubbed(&result, &redactor);
        let text = serde_json::to_string(&shown).unwrap();
        assert!(!text.contains(VALUE), "{text}");
        assert!(shown.answered_by.unwrap().starts_with("model-"));
        assert_eq!(shown.model, "fake-large");
    }

    /// The console form's key is held in a type that wipes it when dropped, whichever way the
    /// request ends.
    #[test]
    fn g16_the_key_of_the_provider_form_is_wiped_when_dropped() {
        let form: ProviderForm = serde_json::from_value(serde_json::json!({
            "name": "claude",
            "provider": "anthropic",
            "key": "sk-ant-form-wiped",
        }))
        .unwrap();
        let key_type = std::any::type_name_of_val(&form.key);
        assert!(key_type.contains("Zeroizing"), "the key is a {key_type}");
        assert_eq!(form.key.as_str(), "sk-ant-form-wiped");
    }
}
