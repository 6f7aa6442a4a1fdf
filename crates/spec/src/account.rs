//! The checks that need to know the account a definition is checked against: which model
//! providers it configured and which is the default. They run on top of the ordinary parse,
//! wherever a definition meets its account (the server's run and workflow pages, `stepward
//! run`, and `stepward check` when the data directory exists).
//!
//! - An agent file's `model:` is `NAME/MODEL_ID`, split at the first `/`; a bare model id
//!   means the account's default provider. Once the account has providers, the one named
//!   must exist (and a bare id needs a default).
//! - A model key never reaches a script: an agent's `secrets:` or a step's `connections:`
//!   that names one of the account's model providers is an error.
//! - `notify:` names people of the account whose role may decide a gate (issue 41), when the
//!   door knows the account's people.

use crate::diagnostic::{Diagnostic, Diagnostics, Position};
use crate::model::{Agent, Workflow};
use crate::yaml::{self, Node, NodeValue};

/// What the account holds that definitions are checked against (names only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountNames {
    /// The names of the account's model providers (each also the name of its model key).
    pub model_providers: Vec<String>,
    /// The provider a bare model id means.
    pub default_provider: Option<String>,
    /// The account's people, when the door knows them: `notify:` may name only these, and
    /// only those who may decide. `None`: `notify:` is held to its shape only.
    pub people: Option<Vec<AccountPerson>>,
}

/// A person of the account as `notify:` is checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountPerson {
    /// Compared lower-cased.
    pub email: String,
    /// Whether the person's role decides gates (member and above).
    pub may_decide: bool,
}

/// An agent file's `model:`, split at the first `/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelRef<'text> {
    /// The provider's name; `None` for a bare id (the account's default provider).
    pub provider: Option<&'text str>,
    /// The provider's model id (it may itself hold `/`).
    pub model: &'text str,
}

impl<'text> ModelRef<'text> {
    /// `anthropic/claude-x` → provider `anthropic`, model `claude-x`;
    /// `local/meta-llama/Llama-3` → provider `local`, model `meta-llama/Llama-3`;
    /// `claude-x` → the default provider, model `claude-x`.
    pub fn parse(text: &'text str) -> ModelRef<'text> {
        match text.trim().split_once('/') {
            Some((provider, model)) => ModelRef {
                provider: Some(provider),
                model,
            },
            None => ModelRef {
                provider: None,
                model: text.trim(),
            },
        }
    }
}

/// Parses a workflow and checks it against the account.
pub fn parse_workflow_for_account(
    file_name: &str,
    text: &str,
    maxima: &crate::LimitMaxima,
    account: &AccountNames,
) -> Result<Workflow, Vec<Diagnostic>> {
    let parsed = crate::parse_workflow_within(file_name, text, maxima);
    let mut diagnostics = Diagnostics::new(file_name);
    let mut scratch = Diagnostics::new(file_name);
    if let Some(root) = yaml::parse(text, 0, &mut scratch) {
        if let Some(NodeValue::Sequence(steps)) = get(&root, "steps").map(|node| &node.value) {
            for step in steps {
                for (alias, at) in scalars(get(step, "connections")) {
                    if let Some(provider) = model_key_named(account, alias) {
                        report_model_key(&mut diagnostics, at, "connection", alias, provider);
                    }
                }
            }
        }
        if let (Some(people), Some(notify)) = (&account.people, get(&root, "notify")) {
            for (address, at) in crate::notify::written_people(notify) {
                check_notified(people, address, at, &mut diagnostics);
            }
        }
    }
    merge(parsed, diagnostics, text)
}

/// The people `notify:` may name: a person of the account, by the address they sign in with,
/// whose role decides gates.
fn check_notified(
    people: &[AccountPerson],
    address: &str,
    at: Position,
    diagnostics: &mut Diagnostics,
) {
    let wanted = address.trim().to_lowercase();
    // Whoever reads a workflow's problems may not see the account's people: the help names
    // where they are listed, not their addresses.
    let deciders = || {
        if people.iter().any(|person| person.may_decide) {
            "the People page lists who may decide (member, admin, owner)"
        } else {
            "nobody of the account may decide yet"
        }
    };
    match people
        .iter()
        .find(|person| person.email.to_lowercase() == wanted)
    {
        None => diagnostics.report(
            at,
            "notify-unknown-person",
            format!("`{address}` is not the address of a person of this account"),
            format!("invite them first, or name someone who is; {}", deciders()),
        ),
        Some(person) if !person.may_decide => diagnostics.report(
            at,
            "notify-cannot-decide",
            format!("`{address}` is a viewer, whose role cannot decide a gate"),
            format!(
                "give them the role member (or above), or name someone else; {}",
                deciders()
            ),
        ),
        Some(_) => {}
    }
}

/// Parses an agent file and checks it against the account.
pub fn parse_agent_for_account(
    file_name: &str,
    text: &str,
    maxima: &crate::LimitMaxima,
    account: &AccountNames,
) -> Result<Agent, Vec<Diagnostic>> {
    let parsed = crate::parse_agent_within(file_name, text, maxima);
    let mut diagnostics = Diagnostics::new(file_name);
    let mut scratch = Diagnostics::new(file_name);
    let root = crate::agent::split_front_matter(text, &mut scratch)
        .and_then(|parts| yaml::parse(parts.front_matter, 1, &mut scratch));
    if let Some(root) = root {
        for (secret, at) in scalars(get(&root, "secrets")) {
            if let Some(provider) = model_key_named(account, secret) {
                report_model_key(&mut diagnostics, at, "secret", secret, provider);
            }
        }
        if let Some((model, at)) = scalars(get(&root, "model")).into_iter().next() {
            check_model(account, model, at, &mut diagnostics);
        }
    }
    merge(parsed, diagnostics, text)
}

/// An account without any provider is not checked: a definition may be written (and the
/// bundled examples checked) before a provider is configured; its agent steps cannot run
/// until one is, and say so then.
fn check_model(account: &AccountNames, model: &str, at: Position, diagnostics: &mut Diagnostics) {
    if model.trim().is_empty() || account.model_providers.is_empty() {
        return;
    }
    let reference = ModelRef::parse(model);
    let names = || {
        format!(
            "the account's providers are: {}",
            account.model_providers.join(", ")
        )
    };
    match reference.provider {
        Some(provider) if !account.model_providers.iter().any(|name| name == provider) => {
            diagnostics.report(
                at,
                "unknown-model-provider",
                format!("`{model}` names the model provider `{provider}`, which the account does not have"),
                format!(
                    "write `model: PROVIDER/MODEL_ID` (split at the first `/`; a model id that \
                     holds a `/` itself is written with its provider in front, \
                     `PROVIDER/{model}`); {}",
                    names()
                ),
            );
        }
        Some(_) => {}
        None if account.default_provider.is_none() => {
            diagnostics.report(
                at,
                "no-default-model-provider",
                format!("`{model}` is a bare model id, and the account has no default provider"),
                format!(
                    "write `model: PROVIDER/{model}`, or set a default with `stepward models \
                     default NAME`; {}",
                    names()
                ),
            );
        }
        None => {}
    }
}

fn report_model_key(
    diagnostics: &mut Diagnostics,
    at: Position,
    what: &str,
    written: &str,
    provider: &str,
) {
    diagnostics.report(
        at,
        "names-model-key",
        format!("the {what} `{written}` names the model key of the provider `{provider}`"),
        "the key that pays for the account's models never reaches a script: models are called \
         by the platform, never from a step; remove it, and give a script a key of its own as \
         a secret or connection under another name",
    );
}

/// The provider whose key `name` names: the same name, compared ignoring case and with `-`
/// and `_` alike (`ANTHROPIC` in `secrets:` names the key of the provider `anthropic`).
fn model_key_named<'account>(account: &'account AccountNames, name: &str) -> Option<&'account str> {
    let normal = |text: &str| text.to_ascii_lowercase().replace('-', "_");
    let wanted = normal(name);
    account
        .model_providers
        .iter()
        .find(|provider| normal(provider) == wanted)
        .map(String::as_str)
}

fn get<'node>(node: &'node Node, key: &str) -> Option<&'node Node> {
    let NodeValue::Mapping(entries) = &node.value else {
        return None;
    };
    entries
        .iter()
        .find(|entry| matches!(&entry.key.value, NodeValue::Scalar(scalar) if scalar.text == key))
        .map(|entry| &entry.value)
}

/// The scalar texts of a node that is one scalar or a list of them, with their positions.
fn scalars(node: Option<&Node>) -> Vec<(&str, Position)> {
    match node.map(|node| (&node.value, node.position)) {
        Some((NodeValue::Scalar(scalar), position)) => vec![(scalar.text.as_str(), position)],
        Some((NodeValue::Sequence(items), _)) => items
            .iter()
            .filter_map(|item| match &item.value {
                NodeValue::Scalar(scalar) => Some((scalar.text.as_str(), item.position)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The parse's own result with the account's problems added, in file order.
fn merge<T>(
    parsed: Result<T, Vec<Diagnostic>>,
    account: Diagnostics,
    text: &str,
) -> Result<T, Vec<Diagnostic>> {
    if account.is_empty() {
        return parsed;
    }
    let mut all = parsed.err().unwrap_or_default();
    all.extend(account.finish(text));
    all.sort_by_key(|diagnostic| (diagnostic.line, diagnostic.column));
    Err(all)
}
