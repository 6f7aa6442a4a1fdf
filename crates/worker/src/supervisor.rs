//! The supervisor the engine consults after a failed attempt (G15): the account's assistant,
//! on its default model provider and that provider's `--assistant-model`, through
//! `agent::supervisor`. With no provider, no assistant model, or a provider that cannot be
//! reached, the failure goes to a person, and the record says why.
//!
//! The engine holds whatever this answers to its rules (unknown means stop, the retried
//! step's exact inputs, the budget, a gated retry parks again); nothing here enforces them.

use std::sync::Arc;

use agent::supervisor::{Failure, Verdict};
use engine::{FailureView, Supervised, Supervisor, SupervisorDecision, SupervisorIdentity};
use redact::{ScrubSets, SecretSource};
use storage::AccountId;
use storage::models::ModelProvider;

/// The account's assistant as the supervisor.
pub struct ModelSupervisor {
    pub store: Arc<dyn crate::Stores>,
    pub secrets: Arc<dyn SecretSource>,
    pub scrub_sets: ScrubSets,
    pub client: crate::model_client::LazyModelClient,
}

/// Who supervises an account's runs, or why a person does.
pub enum Assistant {
    /// The default provider and its assistant model.
    On { provider: String, model: String },
    /// Why no model sees failures.
    Nobody { why: String },
}

/// The account's assistant: its default provider and that provider's assistant model.
pub fn assistant_of(store: &dyn crate::Stores, account: &AccountId) -> Assistant {
    let providers = match store.model_providers(account) {
        Ok(providers) => providers,
        Err(error) => {
            return Assistant::Nobody {
                why: format!(
                    "the account's model providers could not be read ({error}), so a person \
                     decides"
                ),
            };
        }
    };
    let Some(default) = providers.iter().find(|provider| provider.is_default) else {
        return Assistant::Nobody {
            why: engine::NO_MODEL_CONFIGURED.to_owned(),
        };
    };
    match default_model(default) {
        Some(model) => Assistant::On {
            provider: default.name.clone(),
            model,
        },
        None => Assistant::Nobody {
            why: format!(
                "the account's default model provider `{}` names no assistant model (add it \
                 again with `--assistant-model ID`), so a person decides",
                default.name
            ),
        },
    }
}

fn default_model(provider: &ModelProvider) -> Option<String> {
    provider
        .assistant_model
        .as_deref()
        .map(str::trim)
        .filter(|model| !model.is_empty())
        .map(str::to_owned)
}

fn to_person(why: String) -> Supervised {
    Supervised {
        decision: SupervisorDecision::AskPerson,
        note: String::new(),
        by: SupervisorIdentity::NoModel { why },
    }
}

impl Supervisor for ModelSupervisor {
    fn on_failure(&self, view: &FailureView) -> Supervised {
        let (name, model_id) = match assistant_of(self.store.as_ref(), &view.account) {
            Assistant::On { provider, model } => (provider, model),
            Assistant::Nobody { why } => return to_person(why),
        };
        let account = view.account.clone();
        let client = match self.client.get() {
            Ok(client) => client,
            Err(error) => return to_person(format!("{error:#}")),
        };
        let provider = match platform::providers::provider(
            self.store.as_ref(),
            self.secrets.as_ref(),
            &account,
            &name,
            client,
        ) {
            Ok((_, provider)) => provider,
            Err(error) => {
                return to_person(format!(
                    "the assistant's provider `{name}` cannot be used ({error:#}), so a person \
                     decides"
                ));
            }
        };
        // The account's whole live set: a superset of the run's (G16).
        let redactor = match self.scrub_sets.for_account(&view.account) {
            Ok(redactor) => redactor,
            Err(error) => {
                return to_person(format!(
                    "the account's values could not be read to scrub the failure ({error}), so \
                     a person decides"
                ));
            }
        };
        let failure = Failure {
            workflow: view.workflow.clone(),
            step: view.step_id.clone(),
            attempt: view.attempt,
            status: view.status.to_string(),
            network: view.network.to_string(),
            error_kind: view.error_kind.get().clone(),
            message: view.message.get().clone(),
            traceback: view.traceback.get().clone(),
            printed: view.printed.get().clone(),
            inputs: view.inputs.get().clone(),
            declaration: view.declaration.get().clone(),
            retry_allowed: view.retry == engine::RetryPermission::Allowed,
            retries_left: view.retries_left,
            policy: view.policy.to_owned(),
        };
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(error) => {
                return to_person(format!(
                    "the supervisor could not start ({error}), so a person decides"
                ));
            }
        };
        let decided = runtime.block_on(agent::supervisor::supervise(
            &provider, &model_id, &redactor, &failure,
        ));
        match decided {
            Ok(supervision) => {
                let (decision, note) = match supervision.verdict {
                    Verdict::Retry { inputs, note } => (SupervisorDecision::Retry { inputs }, note),
                    Verdict::Stop { note } => (
                        SupervisorDecision::Stop {
                            reason: note.clone(),
                        },
                        note,
                    ),
                    Verdict::AskPerson { note } => (SupervisorDecision::AskPerson, note),
                };
                Supervised {
                    decision,
                    note,
                    by: SupervisorIdentity::Model {
                        provider: name,
                        model: model_id,
                    },
                }
            }
            Err(error) => to_person(format!(
                "the assistant on `{name}` (model `{model_id}`) could not be reached: {error}; \
                 so a person decides"
            )),
        }
    }

    fn who_sees_failures(&self, account: &AccountId) -> Option<String> {
        match assistant_of(self.store.as_ref(), account) {
            Assistant::On { provider, model } => Some(format!("{provider} (model {model})")),
            Assistant::Nobody { .. } => None,
        }
    }
}
