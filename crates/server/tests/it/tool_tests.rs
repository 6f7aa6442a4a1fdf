//! Tool tests (issue 40): who may run a custom tool, with or without its agent's secrets, the
//! confirmation of the script before secrets, and a record that holds no value of the account
//! in any form. The executor is the harness's: it prints the account's vault value in every
//! form the redactor knows, so the record shows what the engine's scrub makes of it.

use auth::Role;
use serde_json::json;

use crate::support::{ACCOUNT, Caller, Harness, VAULT_VALUE};

const AGENT: &str = "---
name: digest
description: Writes a short digest.
model: fake/fake-large
tools: [lookup]
secrets: [DEPLOY_TOKEN]
custom_tools:
  lookup:
    explain: Looks a word up.
    script: tools/lookup.py
    arguments: { query: string, count?: integer }
---
Write the digest.
";

const SCRIPT: &str = "def main(query, count=1):\n    return {\"found\": query}\n";

fn write(harness: &Harness, files: &[(&str, &str)]) {
    let workspace = harness
        .engine
        .workspaces()
        .for_account(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    workspace
        .commit(
            &workspace::Author::Person { id: "p-1".into() },
            "write the agent",
            files
                .iter()
                .map(|(path, text)| {
                    (
                        workspace::RelPath::parse(path).unwrap(),
                        workspace::Change::Write(text.as_bytes().to_vec()),
                    )
                })
                .collect(),
            &|_: &[u8]| false,
        )
        .unwrap();
}

fn with_agent() -> Harness {
    let harness = Harness::new();
    write(
        &harness,
        &[
            ("agents/digest/AGENT.md", AGENT),
            ("agents/digest/tools/lookup.py", SCRIPT),
        ],
    );
    harness
}

const TEST: &str = "/api/agents/digest/tools/lookup/test";

fn body(value: &serde_json::Value) -> Option<(&'static str, String)> {
    Some(("application/json", value.to_string()))
}

#[tokio::test]
async fn g26_a_viewer_runs_no_tool_a_member_runs_one_without_secrets_and_an_admin_confirms_them() {
    let harness = with_agent();
    let plain = json!({"arguments": {"query": "weather"}});
    let secret = json!({"arguments": {"query": "weather"}, "with_secrets": true});
    for caller in [Caller::Person(Role::Viewer), Caller::Key(Role::Viewer)] {
        let answer = harness
            .call("POST", TEST, &harness.credentials(caller), body(&plain))
            .await;
        assert_eq!(answer.status, 403, "{caller:?}: {}", answer.text());
    }
    for caller in [Caller::Person(Role::Member), Caller::Key(Role::Member)] {
        let credentials = harness.credentials(caller);
        let ran = harness.call("POST", TEST, &credentials, body(&plain)).await;
        assert_eq!(ran.status, 200, "{caller:?}: {}", ran.text());
        let ran = ran.json();
        assert_eq!(ran["outcome"], "succeeded", "{ran}");
        assert_eq!(ran["with_secrets"], false);
        assert_eq!(
            ran["result"]["secrets"],
            json!([]),
            "no secret was handed: {ran}"
        );
        let refused = harness
            .call("POST", TEST, &credentials, body(&secret))
            .await;
        assert_eq!(refused.status, 403, "{caller:?}: {}", refused.text());
    }
    for (index, caller) in [
        Caller::Person(Role::Admin),
        Caller::Person(Role::Owner),
        Caller::Key(Role::Admin),
    ]
    .into_iter()
    .enumerate()
    {
        let credentials = harness.credentials(caller);
        // Unconfirmed: what to confirm, and nothing run.
        let asked = harness
            .call("POST", TEST, &credentials, body(&secret))
            .await;
        assert_eq!(asked.status, 409, "{caller:?}: {}", asked.text());
        let confirmation = asked.json();
        assert_eq!(confirmation["script"], "agents/digest/tools/lookup.py");
        assert_eq!(confirmation["last_changed_by"], "person p-1");
        // The first never ran with secrets: all of the script is new. Later, nothing changed
        // since the last test with secrets, which the confirmation names.
        let diff = confirmation["diff"].as_str().unwrap();
        if index == 0 {
            assert!(
                diff.contains("+def main(query, count=1):"),
                "{confirmation}"
            );
            assert!(confirmation["last_tested_with_secrets_by"].is_null());
        } else {
            assert_eq!(diff, "", "{confirmation}");
            assert!(confirmation["last_tested_with_secrets_by"].is_string());
        }
        let sha = confirmation["confirm_sha256"].as_str().unwrap().to_owned();
        let confirmed = json!({
            "arguments": {"query": "weather"},
            "with_secrets": true,
            "confirm_sha256": sha,
        });
        let ran = harness
            .call("POST", TEST, &credentials, body(&confirmed))
            .await;
        assert_eq!(ran.status, 200, "{caller:?}: {}", ran.text());
        let ran = ran.json();
        assert_eq!(ran["with_secrets"], true);
        assert_eq!(ran["result"]["secrets"], json!(["DEPLOY_TOKEN"]), "{ran}");
    }
}

/// A member who may edit a script could ask an admin to run a version that prints a secret:
/// a confirmation is of one script, and a changed script shows what changed since the last
/// test with secrets.
#[tokio::test]
async fn g19_a_script_changed_after_its_confirmation_runs_nothing_and_shows_the_change() {
    let harness = with_agent();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let confirmation = harness.call("GET", TEST, &admin, None).await.json();
    let first = confirmation["confirm_sha256"].as_str().unwrap().to_owned();
    let confirmed = |sha: &str| json!({"arguments": {"query": "a"}, "with_secrets": true, "confirm_sha256": sha});
    let ran = harness
        .call("POST", TEST, &admin, body(&confirmed(&first)))
        .await;
    assert_eq!(ran.status, 200, "{}", ran.text());
    write(
        &harness,
        &[(
            "agents/digest/tools/lookup.py",
            "import os\ndef main(query, count=1):\n    print(os.environ)\n    return 1\n",
        )],
    );
    let stale = harness
        .call("POST", TEST, &admin, body(&confirmed(&first)))
        .await;
    assert_eq!(stale.status, 409, "{}", stale.text());
    let shown = stale.json();
    let diff = shown["diff"].as_str().unwrap();
    assert!(diff.contains("+    print(os.environ)"), "{diff}");
    assert!(diff.contains("-    return {\"found\": query}"), "{diff}");
    assert!(shown["last_tested_with_secrets_by"].is_string(), "{shown}");
    assert_ne!(shown["confirm_sha256"], first);
}

#[tokio::test]
async fn g17_a_tool_tests_record_holds_no_value_of_the_account_in_any_form() {
    let harness = with_agent();
    let member = harness.credentials(Caller::Person(Role::Member));
    let ran = harness
        .call(
            "POST",
            TEST,
            &member,
            body(&json!({"arguments": {"query": VAULT_VALUE}})),
        )
        .await;
    assert_eq!(ran.status, 200, "{}", ran.text());
    let text = ran.text();
    for form in crate::support::value_forms(VAULT_VALUE) {
        assert!(!text.contains(&form), "{form} in {text}");
    }
    let record = ran.json();
    assert!(
        record["printed"].as_str().unwrap().contains("[REDACTED"),
        "{record}"
    );
    // The record as kept, and its audit entry.
    let kept = harness
        .engine
        .tool_tests(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "digest",
            "lookup",
            10,
        )
        .unwrap();
    assert_eq!(kept.len(), 1);
    let kept_text = format!("{kept:?}");
    for form in crate::support::value_forms(VAULT_VALUE) {
        assert!(!kept_text.contains(&form), "{form} in {kept_text}");
    }
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let audit = harness.call("GET", "/api/audit", &owner, None).await;
    assert!(audit.text().contains("tool.test"), "{}", audit.text());
}

#[tokio::test]
async fn arguments_are_checked_against_the_declaration_and_a_refusal_is_kept() {
    let harness = with_agent();
    let member = harness.credentials(Caller::Person(Role::Member));
    let ran = harness
        .call(
            "POST",
            TEST,
            &member,
            body(&json!({"arguments": {"count": "two", "extra": 1}})),
        )
        .await;
    assert_eq!(ran.status, 200, "{}", ran.text());
    let record = ran.json();
    assert_eq!(record["outcome"], "refused");
    let error = record["error"].as_str().unwrap();
    assert!(error.contains("`query` (string) is missing"), "{error}");
    assert!(error.contains("`count` must be of type integer"), "{error}");
    assert!(
        error.contains("`extra` is not an argument of lookup"),
        "{error}"
    );
    let unknown = harness
        .call(
            "POST",
            "/api/agents/digest/tools/nothing/test",
            &member,
            body(&json!({})),
        )
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.text());
}

/// A confirmation covers the agent file and every file the tool runs with, not only the
/// script: a member who adds a secret to the agent's `secrets:` (or a file the script reads)
/// after an admin confirmed gets nothing run with it.
#[tokio::test]
async fn g19_an_agent_file_changed_after_the_confirmation_runs_nothing() {
    let harness = with_agent();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let before = harness.call("GET", TEST, &admin, None).await.json();
    assert_eq!(before["secrets"], json!(["DEPLOY_TOKEN"]), "{before}");
    assert_eq!(before["network"], "none");
    let confirmed = json!({
        "arguments": {"query": "a"},
        "with_secrets": true,
        "confirm_sha256": before["confirm_sha256"],
    });
    write(
        &harness,
        &[(
            "agents/digest/AGENT.md",
            &AGENT.replace(
                "secrets: [DEPLOY_TOKEN]",
                "secrets: [DEPLOY_TOKEN, OTHER_TOKEN]",
            ),
        )],
    );
    let stale = harness.call("POST", TEST, &admin, body(&confirmed)).await;
    assert_eq!(stale.status, 409, "{}", stale.text());
    let now = stale.json();
    assert_eq!(
        now["secrets"],
        json!(["DEPLOY_TOKEN", "OTHER_TOKEN"]),
        "{now}"
    );
    assert_eq!(
        now["script_sha256"], before["script_sha256"],
        "the script is the same"
    );
    assert_ne!(now["confirm_sha256"], before["confirm_sha256"]);
    write(
        &harness,
        &[("agents/digest/notes.txt", "read by the script")],
    );
    let again = json!({
        "arguments": {"query": "a"},
        "with_secrets": true,
        "confirm_sha256": now["confirm_sha256"],
    });
    let stale = harness.call("POST", TEST, &admin, body(&again)).await;
    assert_eq!(
        stale.status,
        409,
        "a file of the agent's folder changed: {}",
        stale.text()
    );
}
