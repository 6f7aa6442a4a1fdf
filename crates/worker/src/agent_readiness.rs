//! Whether an agent step could run on this server, asked when its run starts (so a run that
//! could never finish is refused before any step runs or waits at a gate), and the
//! `apply-before-gate` rule, which the start and the step itself both apply.

use std::str::FromStr;

use engine::PinnedDefinitions;
use sandbox::{NetworkMode, PythonPin};
use storage::AccountId;

use crate::agent_step::{AgentRuntime, load_agent};

/// G21: applying is only for a step a person decided on first; an agent holds what every
/// colleague it can consult holds. The refusal, when `step` is not a gate and `closure` applies.
pub(crate) fn apply_before_gate(
    step: &spec::Step,
    agent: &spec::Agent,
    closure: &spec::Closure,
) -> Option<String> {
    let applying = closure.applying_tools();
    (!applying.is_empty() && !step.is_gate()).then(|| {
        format!(
            "apply-before-gate: step `{}` uses the agent `{}`, which holds tools that apply \
             changes ({}: a networked `Run`, or a custom tool of a public_egress agent that \
             does not declare `applies: false`); only a step that is itself a gate \
             (`id: {}!`) may hold them, so nothing was run",
            step.id(),
            agent.name(),
            applying.join(", "),
            step.id()
        )
    })
}

/// Whether `agent` runs scripts in its sandbox (`Run`, or a custom tool): only scripts need
/// the workflow's Python and the agent's network; the file tools and the model do not.
fn runs_scripts(agent: &spec::Agent) -> bool {
    agent
        .tools()
        .iter()
        .any(|tool| matches!(tool, spec::Tool::Run | spec::Tool::Custom(_)))
}

impl AgentRuntime {
    /// Whether the agent step `step` could run here, asked when its run starts: an applying
    /// closure outside a gate is refused as the step refuses it (`apply-before-gate`); then,
    /// for the agents of the closure that run scripts, the workflow's Python and their
    /// network, of the backend. An agent or colleague that cannot be read is left to the
    /// step, which refuses the attempt with a record of why.
    /// The models the agent `agent_name` and every colleague it can consult talk to, as the
    /// account configures them now (never a key), to pin with the run. An agent that cannot be
    /// read or names no model pins nothing: its step refuses on its own when it runs.
    pub fn models_of(
        &self,
        account: &AccountId,
        files: &workspace::StepFiles,
        definitions: &PinnedDefinitions,
        agent_name: &str,
    ) -> Result<Vec<engine::journal::PinnedModel>, engine::StepRefusal> {
        let Ok((agent, _)) = load_agent(
            self.store.as_ref(),
            account,
            files,
            definitions,
            agent_name,
            &self.maxima,
        ) else {
            return Ok(Vec::new());
        };
        let Ok(closure) = self.closure(account, files, definitions, &agent) else {
            return Ok(Vec::new());
        };
        let providers = self.store.model_providers(account).map_err(|error| {
            engine::StepRefusal::Store(format!(
                "the account's model providers cannot be read: {error}"
            ))
        })?;
        let mut models = Vec::new();
        for member in std::iter::once(&agent).chain(closure.agents.iter()) {
            let Some(model) = member.model() else {
                continue;
            };
            let reference = spec::ModelRef::parse(model);
            let provider = match reference.provider {
                Some(name) => providers.iter().find(|provider| provider.name == name),
                None => providers.iter().find(|provider| provider.is_default),
            };
            let Some(provider) = provider else {
                continue;
            };
            if models
                .iter()
                .any(|known: &engine::journal::PinnedModel| known.agent == member.name())
            {
                continue;
            }
            // Refused before the run exists when this process may not reach the endpoint
            // (newcomer 3, friction 8), as a missing egress network is: a loopback or plain
            // `http` endpoint the operator did not exempt.
            if let Some(kind) = llm::ProviderKind::from_str(&provider.kind).ok()
                && let Ok(url) = llm::endpoint_url(
                    kind,
                    provider
                        .base_url
                        .as_deref()
                        .unwrap_or(kind.default_base_url()),
                )
                && let Err(error) = llm::check_unresolved(&url, self.client.endpoints())
            {
                return Err(engine::StepRefusal::Setting(format!(
                    "the agent `{}` talks to the model provider `{}`, which this process may \
                     not reach: {error}",
                    member.name(),
                    provider.name
                )));
            }
            models.push(engine::journal::PinnedModel {
                agent: member.name().to_owned(),
                provider: provider.name.clone(),
                kind: provider.kind.clone(),
                base_url: provider.base_url.clone().unwrap_or_default(),
                model: reference.model.to_owned(),
            });
        }
        Ok(models)
    }

    pub fn availability(
        &self,
        account: &AccountId,
        files: &workspace::StepFiles,
        definitions: &PinnedDefinitions,
        step: &spec::Step,
        agent_name: &str,
        python: PythonPin,
    ) -> Result<(), engine::StepRefusal> {
        let Ok((agent, _)) = load_agent(
            self.store.as_ref(),
            account,
            files,
            definitions,
            agent_name,
            &self.maxima,
        ) else {
            return Ok(());
        };
        let Ok(closure) = self.closure(account, files, definitions, &agent) else {
            return Ok(());
        };
        if let Some(refusal) = apply_before_gate(step, &agent, &closure) {
            return Err(engine::StepRefusal::Definition(refusal));
        }
        let scripted: Vec<&spec::Agent> = closure
            .agents
            .iter()
            .filter(|agent| runs_scripts(agent))
            .collect();
        if scripted.is_empty() {
            return Ok(());
        }
        let networked: Vec<&str> = scripted
            .iter()
            .filter(|agent| agent.network() == spec::Network::PublicEgress)
            .map(|agent| agent.name())
            .collect();
        let network = if networked.is_empty() {
            NetworkMode::None
        } else {
            NetworkMode::PublicEgress
        };
        self.backend
            .availability(python, network)
            .map_err(|missing| {
                engine::StepRefusal::Unavailable(crate::executor::agent_unavailable_message(
                    step.id(),
                    agent.name(),
                    &networked,
                    &missing,
                ))
            })
    }
}
