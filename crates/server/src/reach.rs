//! The reach panel as the wire type (G27), for the server's pages and API and for the CLI's
//! `stepward reach --json`: one conversion, and the model hosts read from the account's
//! providers (a model's provider receives the step's data, so the panel names its host).

use api_types::{Internet, ModelReach, ReachRow, SecretHolder};
use storage::models::ModelProvider;

/// What every reach panel of a server that runs steps unisolated says above its table.
pub const NOT_ISOLATED: &str = "Not isolated: this server runs steps with --backend unisolated, \
     as plain processes of the platform with the machine's own network and files. What a step \
     declares below is not enforced.";

/// The notice a reach panel of this server shows, if any.
pub(crate) fn isolation_notice(options: &crate::AppOptions) -> Option<&'static str> {
    (!options.steps_isolated).then_some(NOT_ISOLATED)
}

/// Fills each agent row's models with their provider's name and host from `providers`.
pub fn with_model_hosts(rows: &mut [spec::ReachRow], providers: &[ModelProvider]) {
    spec::fill_model_hosts(rows, &|name| {
        let provider = match name {
            Some(name) => providers.iter().find(|provider| provider.name == name)?,
            None => providers.iter().find(|provider| provider.is_default)?,
        };
        let kind = provider.kind.parse::<llm::ProviderKind>().ok()?;
        let host = llm::provider_host(kind, provider.base_url.as_deref())?;
        Some((provider.name.clone(), host))
    });
}

/// One row of the panel, with its wire names.
pub fn reach_row_json(row: spec::ReachRow) -> ReachRow {
    let (kind, agent) = match row.kind {
        spec::ReachKind::Code => ("code", None),
        spec::ReachKind::Agent { agent } => ("agent", Some(agent)),
    };
    let (internet, unknown_reason) = match row.internet {
        spec::ReachInternet::Yes => (Internet::Yes, None),
        spec::ReachInternet::No => (Internet::No, None),
        spec::ReachInternet::Unknown { reason } => (Internet::Unknown, Some(reason)),
    };
    ReachRow {
        step: row.step,
        gate: row.gate,
        kind: kind.to_owned(),
        agent,
        internet,
        unknown_reason,
        connections: row.connections,
        secrets: row.secrets,
        secret_holders: row
            .secret_holders
            .into_iter()
            .map(|(secret, agent)| SecretHolder { secret, agent })
            .collect(),
        colleagues: row.colleagues,
        models: row
            .models
            .into_iter()
            .map(|model| ModelReach {
                agent: model.agent,
                model: model.model,
                provider: model.provider,
                host: model.host,
            })
            .collect(),
        limits: row
            .limits
            .iter()
            .map(|(key, value)| format!("{key}: {value}"))
            .collect(),
    }
}

/// The secrets of a wire row as the panel writes them: each with the agent that holds it.
pub fn secrets_words(row: &ReachRow) -> String {
    if row.secret_holders.is_empty() {
        return spec::list_or_none(&row.secrets);
    }
    row.secret_holders
        .iter()
        .map(|holder| format!("{} ({})", holder.secret, holder.agent))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The models of a wire row as the panel writes them: `provider/model at host (agent)`.
pub fn models_words(row: &ReachRow) -> String {
    let models: Vec<spec::ModelUse> = row
        .models
        .iter()
        .map(|model| spec::ModelUse {
            agent: model.agent.clone(),
            provider: model.provider.clone(),
            model: model.model.clone(),
            host: model.host.clone(),
        })
        .collect();
    spec::model_cell(&models)
}
