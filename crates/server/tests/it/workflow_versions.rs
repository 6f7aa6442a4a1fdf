//! Workflow versions through the API (issue 17 §3): every save is the next version, authored
//! by the person or key, parsed first (G1) and refused naming the line when it holds a value
//! of the account (G19); versions, export and diff hold connection references only; a run's
//! page and the workspace's file writes keep the same rules.

use auth::Role;
use redact::SecretValue;
use serde_json::{Value, json};

use crate::support::{ACCOUNT, Caller, Credentials, GATED, Harness, VAULT_VALUE};

/// The gated workflow under the name it is saved as: a saved workflow's `name:` is its file's.
fn shipping() -> String {
    GATED.replace("name: gated", "name: shipping")
}

fn body(text: &str) -> Option<(&'static str, String)> {
    Some((
        "application/json",
        json!({"text": text, "message": "from the test"}).to_string(),
    ))
}

async fn save(harness: &Harness, who: &Credentials, name: &str, text: &str) -> (u16, Value) {
    let answer = harness
        .call("PUT", &format!("/api/workflows/{name}"), who, body(text))
        .await;
    let status = answer.status;
    (
        status,
        serde_json::from_str(&answer.text()).unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_every_save_is_the_next_version_with_its_author_and_text() {
    let harness = Harness::new();
    let key = harness.credentials(Caller::Key(Role::Member));
    let person = harness.credentials(Caller::Person(Role::Member));
    let (status, first) = save(&harness, &key, "shipping", &shipping()).await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["number"], 1);
    assert_eq!(first["author_kind"], "api_key");
    let edited = shipping().replace("Ships it.", "Ships it, checked.");
    let (status, second) = save(&harness, &person, "shipping", &edited).await;
    assert_eq!(status, 201, "{second}");
    assert_eq!(second["number"], 2);
    assert_eq!(second["author_kind"], "person");
    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    let listed = harness
        .call("GET", "/api/workflows/shipping/versions", &viewer, None)
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text());
    let numbers: Vec<u64> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|version| version["number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, vec![1, 2]);
    let shown = harness
        .call("GET", "/api/workflows/shipping/versions/1", &viewer, None)
        .await
        .json();
    assert_eq!(shown["text"], shipping());
    let exported = harness
        .call("GET", "/api/workflows/shipping/export", &viewer, None)
        .await
        .json();
    assert_eq!(exported["text"], edited.as_str());
    let diff = harness
        .call(
            "GET",
            "/api/workflows/shipping/diff?from=1&to=2",
            &viewer,
            None,
        )
        .await
        .json();
    let diff = diff["diff"].as_str().unwrap();
    assert!(diff.contains("+    explain: Ships it, checked."), "{diff}");
    // The saved workflow is the account's workflow: the workflow screen reads it.
    let workflow = harness
        .call("GET", "/api/workflows/shipping", &viewer, None)
        .await;
    assert_eq!(workflow.status, 200, "{}", workflow.text());
    assert_eq!(workflow.json()["file"], "workflows/shipping.yaml");
    // A viewer saves nothing.
    let (status, _) = save(&harness, &viewer, "shipping", &shipping()).await;
    assert_eq!(status, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn g1_an_invalid_save_is_refused_with_its_diagnostics_and_loses_nothing() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    assert_eq!(
        save(&harness, &member, "shipping", &shipping()).await.0,
        201
    );
    let (status, refused) = save(&harness, &member, "shipping", "name: shipping\nsteps: 7\n").await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["code"], "definition_refused");
    let message = refused["error"].as_str().unwrap();
    assert!(message.contains("workflows/shipping.yaml:"), "{message}");
    // The same through the workspace's file writes.
    let answer = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &member,
            Some((
                "application/json",
                json!({"message": "m", "changes": [
                    {"path": "workflows/shipping.yaml", "action": "write", "content": "steps: 7\n"},
                    {"path": "notes.md", "action": "write", "content": "kept apart"}
                ]})
                .to_string(),
            )),
        )
        .await;
    assert_eq!(answer.status, 422, "{}", answer.text());
    let versions = harness
        .call("GET", "/api/workflows/shipping/versions", &member, None)
        .await
        .json();
    assert_eq!(versions.as_array().unwrap().len(), 1);
    let exported = harness
        .call("GET", "/api/workflows/shipping/export", &member, None)
        .await
        .json();
    assert_eq!(exported["text"], shipping());
    let notes = harness
        .call("GET", "/api/workspace/file?path=notes.md", &member, None)
        .await;
    assert_eq!(notes.status, 404, "nothing of the refused write was kept");
}

#[tokio::test(flavor = "multi_thread")]
async fn g19_a_save_holding_a_value_is_refused_naming_the_line_and_export_holds_references_only() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let holding = shipping().replace("Prepares the shipment.", &format!("Uses {VAULT_VALUE}."));
    let (status, refused) = save(&harness, &member, "shipping", &holding).await;
    assert_eq!(status, 422, "{refused}");
    let message = refused.to_string();
    assert!(message.contains("workflows/shipping.yaml:5:"), "{message}");
    assert!(!message.contains(VAULT_VALUE), "{message}");
    // A text saved before its value became the account's is shown masked.
    let later = "sk_live_LaterValue5Hb8Wc2Nq";
    let text = shipping().replace("Ships it.", &format!("Ships it with {later}."));
    assert_eq!(save(&harness, &member, "shipping", &text).await.0, 201);
    assert_eq!(
        save(
            &harness,
            &member,
            "shipping",
            &text.replace("Ships it with", "Ships it now with")
        )
        .await
        .0,
        201
    );
    harness
        .vault
        .secrets()
        .set(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "LATER_TOKEN",
            SecretValue::new(later.into()),
        )
        .unwrap();
    for path in [
        "/api/workflows/shipping/export",
        "/api/workflows/shipping/versions/1",
        "/api/workflows/shipping/diff?from=1&to=2",
    ] {
        let answer = harness.call("GET", path, &member, None).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.text());
        assert!(!answer.text().contains(later), "{path}: {}", answer.text());
        assert!(answer.text().contains("Ships it"), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn g27_a_gate_shows_the_pinned_reach_and_the_run_page_the_version_it_runs() {
    let harness = Harness::new();
    let agent = "---\nname: poster\ndescription: Posts.\nmodel: fake/m\ntools: [Read]\nnetwork: \
                 public_egress\n---\nPosts.\n";
    let workspace = harness
        .engine
        .workspaces()
        .for_account(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    let write_agent = |text: &str| {
        workspace
            .commit(
                &workspace::Author::Person { id: "p".into() },
                "agent",
                vec![(
                    workspace::RelPath::parse("agents/poster/AGENT.md").unwrap(),
                    workspace::Change::Write(text.as_bytes().to_vec()),
                )],
                &|_: &[u8]| false,
            )
            .unwrap();
    };
    write_agent(agent);
    let text = "name: posting\npython: \"3.11\"\nsteps:\n  - id: post!\n    agent: poster\n    \
                task: Post it.\n";
    harness
        .engine
        .save_workflow_version(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "posting",
            text,
            &workspace::Author::Person { id: "p".into() },
            "first",
        )
        .unwrap();
    let workflow = spec::parse_workflow("workflows/posting.yaml", text).unwrap();
    let parked = harness
        .engine
        .start_run(
            &storage::AccountId::parse(ACCOUNT).unwrap(),
            &workflow,
            json!({}),
            storage::Actor::Cli {
                os_user: "t".into(),
            },
        )
        .unwrap();
    // After the start, the agent loses its network: the gate still shows what runs.
    write_agent(&agent.replace("network: public_egress\n", ""));
    let member = harness.credentials(Caller::Person(Role::Member));
    let page = harness
        .call(
            "GET",
            &format!("/runs/{}", parked.run.as_str()),
            &member,
            None,
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.text());
    let html = page.text();
    assert!(
        html.contains("version 1 of workflows/posting.yaml"),
        "{html}"
    );
    assert!(html.contains("id=\"gate-pinned\""), "{html}");
    assert!(html.contains("yes, the public internet"), "{html}");
    // The workflow screen shows the files as they are now.
    let reach = harness
        .call("GET", "/api/workflows/posting/reach", &member, None)
        .await
        .json();
    assert_eq!(reach["rows"][0]["internet"], "no", "{reach}");
}
