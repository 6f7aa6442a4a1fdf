//! The audit log in sentences (issue 42, point 7): each entry reads as one line, "Ada created
//! the API key ci-deploy with the role member", built from its action and the fields its
//! detail holds, with people named (a person the detail names by id reads by their name, a
//! removed one by the name the record kept). What a sentence leaves out stays in the entry's
//! folded details. An action this version does not know reads by its stored name.

use std::collections::HashMap;

use serde_json::Value;
use storage::AuditAction;

/// The verb phrase of an action, and the detail field that names what it acted on.
fn phrase(action: AuditAction) -> (&'static str, &'static [&'static str]) {
    use AuditAction as A;
    match action {
        A::AccountCreate => ("created the account", &["name", "account"]),
        A::AccountInviteOwner => ("invited the account's owner", &["email"]),
        A::PersonInvite => ("invited", &["email"]),
        A::PersonRemove => ("removed", &["person", "email"]),
        A::PersonSignInLinkReissue => ("made a new sign-in link for", &["person", "email"]),
        A::RoleChange => ("changed the role of", &["person"]),
        A::OwnershipTransfer => (
            "handed the account's ownership to",
            &["to", "new_owner", "person"],
        ),
        A::SessionSignIn => ("signed in", &[]),
        A::SessionSignInFailed => ("failed to sign in", &["email"]),
        A::SessionSignOut => ("signed out", &[]),
        A::SessionRevoke => ("revoked a session", &[]),
        A::SessionRevokeAll => ("signed out everywhere", &[]),
        A::SessionRevokeAllByAdmin => ("ended every session of", &["person"]),
        A::WelcomeRefused => ("was refused a sign-in link", &[]),
        A::ApiKeyCreate => ("created the API key", &["name", "key"]),
        A::ApiKeyRevoke => ("revoked the API key", &["name", "key"]),
        A::ApiKeyUse => ("used the API", &["route"]),
        A::ApiKeyRefused => ("was refused with an API key", &["reason"]),
        A::ShareCreate => ("made a share link", &[]),
        A::ShareRevoke => ("revoked a share link", &[]),
        A::VaultSecretSet => ("set the secret", &["name", "secret"]),
        A::VaultSecretRemove => ("removed the secret", &["name", "secret"]),
        A::VaultConnectionSet => ("set the connection", &["alias", "name", "connection"]),
        A::VaultConnectionRemove => ("removed the connection", &["alias", "name", "connection"]),
        A::VaultConnectionRevoke => ("revoked the connection", &["alias", "name", "connection"]),
        A::VaultModelKeySet => ("set the model key of", &["provider", "name"]),
        A::VaultModelKeyRemove => ("removed the model key of", &["provider", "name"]),
        A::KeyRotateAccount => ("rotated the account's vault key", &[]),
        A::KeyRotateRoot => ("began rotating the vault's root key", &[]),
        A::KeyRotateRootFinished => ("finished rotating the vault's root key", &[]),
        A::KeyRotateLinks => ("rotated the approve-link key", &[]),
        A::ModelAdd => ("added the model provider", &["name", "provider"]),
        A::ModelRemove => ("removed the model provider", &["name", "provider"]),
        A::ModelDefault => ("made the default model provider", &["name", "provider"]),
        A::ModelTest => ("tested the model provider", &["name", "provider"]),
        A::ToolTest => ("tested the tool", &["tool"]),
        A::GateMail => ("mailed the approve link of", &["step"]),
        A::SupervisorRetries => ("set the supervisor's retries", &["retries"]),
        A::RunStart => ("started a run of", &["workflow"]),
        A::RunApprove => ("approved", &["step"]),
        A::RunReject => ("rejected", &["step"]),
        A::RunRetry => ("retried", &["step"]),
        A::RunStop => ("stopped the run", &[]),
        A::RepairProposed => ("was proposed a repair of", &["step"]),
        A::RepairAcceptRefused => ("was refused accepting a repair of", &["step"]),
        A::InterviewStarted => ("started an interview", &[]),
        A::InterviewConfirmed => ("saved the interview's workflow", &["workflow", "name"]),
        A::InterviewConfirmRefused => (
            "was refused saving the interview's workflow",
            &["workflow", "name"],
        ),
        A::WorkflowSave => ("saved the workflow", &["workflow", "name"]),
        A::WorkflowSaveRefused => ("was refused saving the workflow", &["workflow", "name"]),
        A::WorkflowVersion => ("saved a version of", &["path", "workflow", "name"]),
        A::WorkspaceWrite => ("wrote to the workspace", &["path", "paths"]),
        A::WorkspaceWriteRefused => ("was refused writing to the workspace", &["path", "paths"]),
        A::WorkspaceWriteIntent => ("began writing to the workspace", &["path", "paths"]),
        A::WorkspaceWriteRecovered => ("had a workspace write recovered", &["path", "paths"]),
    }
}

/// The entry as a sentence. `people`: the account's people by id, to name a person a detail
/// names by id.
pub(crate) fn sentence(
    who: &str,
    action: &str,
    detail: &Value,
    people: &HashMap<String, String>,
) -> String {
    let Some(known) = AuditAction::parse(action) else {
        return format!("{who}: {action}");
    };
    let (verb, objects) = phrase(known);
    let text = |key: &str| match detail.get(key) {
        Some(Value::String(text)) if !text.is_empty() => Some(text.clone()),
        Some(Value::Number(number)) => Some(number.to_string()),
        _ => None,
    };
    let name_of = |key: &str| {
        text(key).map(|value| {
            if key == "person" || key == "to" || key == "new_owner" {
                people.get(&value).cloned().unwrap_or(value)
            } else {
                value
            }
        })
    };
    let mut line = format!("{who} {verb}");
    if let Some(object) = objects.iter().find_map(|key| name_of(key)) {
        line.push(' ');
        line.push_str(&object);
    }
    match known {
        AuditAction::RoleChange => {
            if let (Some(from), Some(to)) = (text("from"), text("to")) {
                line.push_str(&format!(" from {from} to {to}"));
            }
        }
        AuditAction::PersonInvite | AuditAction::ApiKeyCreate => {
            if let Some(role) = text("role") {
                line.push_str(&format!(" with the role {role}"));
            }
        }
        AuditAction::ToolTest => {
            if let Some(agent) = text("agent") {
                line.push_str(&format!(" of the agent {agent}"));
            }
            if let Some(outcome) = text("outcome") {
                line.push_str(&format!(": {outcome}"));
            }
        }
        AuditAction::GateMail => {
            if let Some(outcome) = text("outcome") {
                line.push_str(&format!(": {}", outcome.replace('_', " ")));
            }
        }
        _ => {}
    }
    line
}

/// A detail value that is a time (a field named `…_at` holding milliseconds since the epoch)
/// reads as one.
pub(crate) fn readable(name: &str, value: &str) -> String {
    match value.parse::<i64>() {
        Ok(millis) if name.ends_with("_at") && millis > 1_000_000_000_000 => {
            crate::html::when(millis)
        }
        _ => value.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_entry_reads_as_a_sentence_with_people_by_name() {
        let people: HashMap<String, String> = [("per_1".to_owned(), "Bo".to_owned())]
            .into_iter()
            .collect();
        assert_eq!(
            sentence(
                "Ada",
                "api_key.create",
                &json!({"key": "k1", "name": "ci-deploy", "role": "member"}),
                &people
            ),
            "Ada created the API key ci-deploy with the role member"
        );
        assert_eq!(
            sentence(
                "Ada",
                "role.change",
                &json!({"person": "per_1", "from": "member", "to": "admin"}),
                &people
            ),
            "Ada changed the role of Bo from member to admin"
        );
        assert_eq!(
            sentence("Ada", "session.sign_in", &json!({}), &people),
            "Ada signed in"
        );
        assert_eq!(
            sentence("Ada", "secret.set", &json!({"name": "TOKEN"}), &people),
            "Ada set the secret TOKEN",
            "a legacy name reads as its action"
        );
        assert_eq!(
            sentence("Ada", "future.thing", &json!({}), &people),
            "Ada: future.thing"
        );
    }

    #[test]
    fn every_action_has_words() {
        for action in AuditAction::ALL {
            assert!(!phrase(*action).0.is_empty(), "{action:?} has no words");
        }
    }

    #[test]
    fn times_read_as_times() {
        assert_eq!(
            readable("expires_at", "1797184343153"),
            "2026-12-13 17:52:23 UTC"
        );
        assert_eq!(readable("count", "1797184343153"), "1797184343153");
    }
}
