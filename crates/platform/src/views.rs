//! How the doors show what they share (issue 37: the CLI called the server for these): a
//! record's time, a workspace revision as the API's wire type, and the reach panel's rows
//! (G27) with the model hosts read from the account's providers.

use api_types::workspace::{WorkspaceChangedPath, WorkspaceRevisionView};
use api_types::{Internet, ModelReach, ReachRow, SecretHolder};
use storage::models::ModelProvider;
use workspace::{Author, Revision};

/// A time of the record (milliseconds since the epoch) as people read it, in UTC:
/// `2026-11-29 12:59:16 UTC`. Out of range: the milliseconds as they are.
pub fn utc_time(millis: i64) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000)
        .ok()
        .and_then(|moment| moment.format(&format).ok())
        .unwrap_or_else(|| format!("{millis} ms"))
}

/// A revision's author as a kind and an id.
pub fn author_parts(author: &Author) -> (&'static str, String) {
    match author {
        Author::Person { id } => ("person", id.clone()),
        Author::ApiKey { id } => ("api_key", id.clone()),
        Author::Agent { name } => ("agent", name.clone()),
        Author::RunStep {
            run_id,
            step,
            attempt,
        } => ("run_step", format!("{run_id}/{step}/{attempt}")),
        Author::Cli { os_user } => ("cli", os_user.clone()),
        Author::Assistant { accepted_by } => ("assistant", accepted_by.clone()),
        Author::Platform { reason } => ("platform", reason.clone()),
    }
}

/// A revision as the API (and the CLI's `files history --json`) shows it, unscrubbed.
pub fn revision_view(revision: &Revision) -> WorkspaceRevisionView {
    let (author_kind, author) = author_parts(&revision.author);
    WorkspaceRevisionView {
        id: revision.id.to_string(),
        parent: revision.parent.as_ref().map(ToString::to_string),
        author_kind: author_kind.to_owned(),
        author,
        at: i64::try_from(revision.unix_millis).unwrap_or(i64::MAX),
        message: revision.message.clone(),
        changes: revision
            .changes
            .iter()
            .map(|change| WorkspaceChangedPath {
                path: change.path.clone(),
                deleted: change.blob.is_none(),
                blob: change.blob.clone(),
            })
            .collect(),
    }
}

/// What every reach panel of a server that runs steps unisolated says above its table.
pub const NOT_ISOLATED: &str = "Not isolated: this server runs steps with --backend unisolated, \
     as plain processes of the platform with the machine's own network and files. What a step \
     declares below is not enforced.";

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

/// Who did something, in words: a person by their name, a key, the command line's user.
pub fn actor_words(actor: &storage::Actor) -> String {
    match actor {
        storage::Actor::Person { name, .. } => name.clone(),
        storage::Actor::ApiKey { id } => format!("API key {id}"),
        storage::Actor::Cli { os_user } => format!("the command line ({os_user})"),
        storage::Actor::Engine => "the engine".to_owned(),
        storage::Actor::Supervisor => "the supervisor".to_owned(),
    }
}

/// A tool test as the API and `stepward tools test --json` show it (issue 40): the record as
/// the engine kept it, scrubbed.
pub fn tool_test_view(test: storage::tool_tests::ToolTest) -> api_types::tool_tests::ToolTestView {
    api_types::tool_tests::ToolTestView {
        by: actor_words(&test.actor),
        id: test.id,
        agent: test.agent,
        tool: test.tool,
        revision: test.revision,
        script_sha256: test.script_sha256,
        with_secrets: test.with_secrets,
        at: test.at.0,
        arguments: test.arguments,
        outcome: test.outcome,
        result: test.result,
        error: test.error,
        printed: test.printed,
        truncated: test.truncated,
    }
}
