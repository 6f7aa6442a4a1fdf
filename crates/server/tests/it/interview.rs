//! The interview with the assistant (issue 17 §4) through the real router, against the fake
//! model: a proposal is shown only once it passed the parser (its diagnostics go back to the
//! assistant, and after three tries to the person), with its reach rows under the caption;
//! only a member confirms, and the proposal becomes one version authored by the assistant and
//! accepted by that person, audited; a proposal that writes outside `workflows/` and `agents/`
//! or to a protected path is refused; one that conflicts with a newer version is refused.

use auth::Role;
use fake_model::{FakeModel, Script, ScriptTurn};
use serde_json::{Value, json};

use crate::support::{Caller, Harness};

const INVALID: &str = "name: refund\npython: \"3.11\"\nsteps:\n  - id: build\n    code: |\n      def main():\n          return {\"amount_cents\": 1250}\n";

const VALID: &str = "name: refund\npython: \"3.11\"\ninputs: { ticket: string }\nsteps:\n  - id: build\n    explain: Builds the refund request from the ticket.\n    inputs: { ticket: { from: input.ticket } }\n    code: |\n      def main(ticket):\n          return {\"ticket\": ticket, \"amount_cents\": 1250}\n  - id: send!\n    explain: Sends the refund request to the payments provider.\n    network: public_egress\n    connections: [payments]\n    inputs: { request: { from: build } }\n    code: |\n      def main(request):\n          return request\n";

fn json_body(value: Value) -> Option<(&'static str, String)> {
    Some(("application/json", value.to_string()))
}

/// The harness with the fake model as the account's default provider and assistant.
async fn with_assistant(turns: Vec<ScriptTurn>) -> (Harness, FakeModel) {
    let fake = FakeModel::start(Script::new(turns)).await.unwrap();
    let harness = Harness::with_model_endpoints(&[&fake.endpoint()]);
    let admin = harness.credentials(Caller::Key(Role::Admin));
    let added = harness
        .call(
            "PUT",
            "/api/models/claude",
            &admin,
            json_body(json!({
                "provider": "anthropic",
                "base_url": fake.url(),
                "assistant_model": "fake-large",
                "key": "sk-ant-interview-test-0123456789",
            })),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.text());
    (harness, fake)
}

/// Starts an interview as `who` with `body`, which must be accepted (201); its view.
async fn start(harness: &Harness, who: &crate::support::Credentials, body: Value) -> Value {
    let started = harness
        .call("POST", "/api/interviews", who, json_body(body))
        .await;
    assert_eq!(started.status, 201, "{}", started.text());
    started.json()
}

/// Every problem the interview's entries list, in order.
fn problems(view: &Value) -> Vec<String> {
    view["entries"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|entry| entry["problems"].as_array().cloned().unwrap_or_default())
        .map(|problem| problem.as_str().unwrap().to_owned())
        .collect()
}

fn whos(view: &Value) -> Vec<String> {
    view["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["who"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn g1_an_interview_shows_only_a_parsed_proposal_with_its_reach_and_a_member_confirms_it() {
    let (harness, fake) = with_assistant(vec![
        ScriptTurn::call(
            "ask",
            json!({"question": "Which amount should be refunded?"}),
        ),
        ScriptTurn::call(
            "propose",
            json!({"workflow": INVALID, "note": "A first try."}),
        ),
        ScriptTurn::call(
            "propose",
            json!({"workflow": VALID, "note": "Builds the request offline, sends it at a gate."}),
        ),
    ])
    .await;
    let member = harness.credentials(Caller::Person(Role::Member));
    let view = start(
        &harness,
        &member,
        json!({"message": "Refund a support ticket."}),
    )
    .await;
    assert_eq!(whos(&view), ["person", "assistant"]);
    assert_eq!(
        view["entries"][1]["text"],
        "Which amount should be refunded?"
    );
    assert!(view.get("proposal").is_none());
    let id = view["id"].as_str().unwrap().to_owned();

    let answered = harness
        .call(
            "POST",
            &format!("/api/interviews/{id}/messages"),
            &member,
            json_body(json!({"message": "Always 12.50."})),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text());
    let view = answered.json();
    // The invalid proposal's diagnostics are shown (file:line:col), never the proposal.
    assert_eq!(
        whos(&view),
        ["person", "assistant", "person", "platform", "assistant"]
    );
    let problems = view["entries"][3]["problems"].as_array().unwrap();
    assert!(
        problems
            .iter()
            .any(|problem| problem.as_str().unwrap().contains("explain")),
        "{problems:?}"
    );
    // The assistant saw them, as the result of its refused call.
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[2].as_text().contains("explain"));
    assert!(requests[2].as_text().contains("refused"));
    // The valid one: its reach rows under the caption, word for word.
    let proposal = &view["proposal"];
    assert_eq!(proposal["number"], 1);
    assert_eq!(proposal["workflow"], "refund");
    assert_eq!(proposal["reach"]["caption"], spec::REACH_CAPTION);
    let rows = proposal["reach"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["step"], "send");
    assert_eq!(rows[1]["internet"], "yes");
    assert_eq!(rows[1]["connections"], json!(["payments"]));
    assert_eq!(proposal["files"][0]["path"], "workflows/refund.yaml");
    // Nothing was saved yet, and nothing ran.
    let versions = harness
        .call("GET", "/api/workflows/refund/versions", &member, None)
        .await;
    assert_eq!(versions.status, 404, "{}", versions.text());

    // A viewer cannot confirm (nor see the interview).
    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    let refused = harness
        .call(
            "POST",
            &format!("/api/interviews/{id}/confirm"),
            &viewer,
            json_body(json!({"proposal": 1})),
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text());
    // Nor another member: an interview is its person's.
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let theirs = harness
        .call("GET", &format!("/api/interviews/{id}"), &admin, None)
        .await;
    assert_eq!(theirs.status, 404, "{}", theirs.text());

    let confirmed = harness
        .call(
            "POST",
            &format!("/api/interviews/{id}/confirm"),
            &member,
            json_body(json!({"proposal": 1, "note": "looks right"})),
        )
        .await;
    assert_eq!(confirmed.status, 200, "{}", confirmed.text());
    let version = &confirmed.json()["version"];
    assert_eq!(version["number"], 1);
    assert_eq!(version["author_kind"], "assistant");
    assert_eq!(version["author"], "p-member");
    let message = version["message"].as_str().unwrap();
    assert!(
        message.contains("proposed by the assistant (claude, model fake-large)")
            && message.contains("accepted by"),
        "{message}"
    );
    let text = harness
        .call("GET", "/api/workflows/refund/export", &member, None)
        .await;
    assert_eq!(text.json()["text"], VALID);
    let audit = harness.call("GET", "/api/audit", &admin, None).await;
    let actions: Vec<String> = audit.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["action"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        actions.contains(&"interview.confirmed".to_owned())
            && actions.contains(&"interview.started".to_owned()),
        "{actions:?}"
    );
    // Once saved, the interview is over.
    let again = harness
        .call(
            "POST",
            &format!("/api/interviews/{id}/confirm"),
            &member,
            json_body(json!({"proposal": 1})),
        )
        .await;
    assert_eq!(again.status, 409, "{}", again.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn g22_a_proposal_writing_outside_workflows_and_agents_or_to_a_protected_path_is_refused() {
    let file = |path: &str| json!({"workflow": VALID, "files": [{"path": path, "text": "x"}], "note": "n"});
    let (harness, fake) = with_assistant(vec![
        ScriptTurn::call("propose", file("../outside.txt")),
        ScriptTurn::call("propose", file("agents/helper/.secrets")),
        ScriptTurn::call("propose", file("shared/notes.md")),
    ])
    .await;
    let member = harness.credentials(Caller::Person(Role::Member));
    let view = start(&harness, &member, json!({"message": "Refund a ticket."})).await;
    // Three refusals: no proposal, the last one's problems to the person.
    assert!(view.get("proposal").is_none(), "{view}");
    assert_eq!(whos(&view), ["person", "platform", "platform", "platform"]);
    let problems = problems(&view);
    assert!(problems.iter().any(|p| p.contains("..")), "{problems:?}");
    assert!(
        problems.iter().any(|p| p.contains("the secrets file")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("shared/notes.md") && p.contains("agents/NAME/")),
        "{problems:?}"
    );
    assert_eq!(fake.requests().len(), 3);
    let id = view["id"].as_str().unwrap();
    let confirm = harness
        .call(
            "POST",
            &format!("/api/interviews/{id}/confirm"),
            &member,
            json_body(json!({"proposal": 1})),
        )
        .await;
    assert_eq!(confirm.status, 409, "{}", confirm.text());
    assert_eq!(confirm.json()["code"], "interview_refused");
    let files = harness
        .call("GET", "/api/workspace/files", &member, None)
        .await;
    assert!(!files.text().contains("notes.md") && !files.text().contains("refund"));
}

/// Review finding 1: a proposal may change only the agents its own workflow uses (directly or
/// as colleagues). A script or agent file of any other agent would change what other
/// workflows run, with no reach row shown for it.
#[tokio::test(flavor = "multi_thread")]
async fn g21_a_proposal_changes_no_agent_its_workflow_does_not_use() {
    let file = |path: &str, text: &str| json!({"workflow": VALID, "files": [{"path": path, "text": text}], "note": "n"});
    let billing = "---\nname: billing\ndescription: Bills.\ntools: [Run]\nnetwork: public_egress\n---\nBill.\n";
    let (harness, fake) = with_assistant(vec![
        ScriptTurn::call(
            "propose",
            file(
                "agents/billing/refund.py",
                "import os\ndef main():\n    return os.environ\n",
            ),
        ),
        ScriptTurn::call("propose", file("agents/billing/AGENT.md", billing)),
        ScriptTurn::call("propose", file("agents/other/notes.txt", "x")),
    ])
    .await;
    let member = harness.credentials(Caller::Person(Role::Member));
    let view = start(&harness, &member, json!({"message": "Refund a ticket."})).await;
    assert!(view.get("proposal").is_none(), "{view}");
    let problems = problems(&view);
    for agent in ["billing", "billing", "other"] {
        assert!(
            problems
                .iter()
                .any(|p| p.contains(&format!("hands no task to the agent `{agent}`"))),
            "{agent}: {problems:?}"
        );
    }
    assert_eq!(fake.requests().len(), 3);
    let files = harness
        .call("GET", "/api/workspace/files", &member, None)
        .await;
    assert!(!files.text().contains("billing"), "{}", files.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn g1_a_proposal_that_conflicts_with_a_newer_version_is_refused_losing_nothing() {
    let next = super::support::GATED.replace("Prepares the shipment.", "Prepares it, again.");
    let (harness, _fake) = with_assistant(vec![ScriptTurn::call(
        "propose",
        json!({"workflow": next, "note": "Reworded."}),
    )])
    .await;
    let member = harness.credentials(Caller::Person(Role::Member));
    let started = harness
        .call(
            "POST",
            "/api/interviews",
            &member,
            json_body(json!({"workflow": "gated", "message": "Reword the first step."})),
        )
        .await;
    assert_eq!(started.status, 201, "{}", started.text());
    let id = started.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(started.json()["proposal"]["number"], 1);
    // Someone saves a version meanwhile.
    let newer = super::support::GATED.replace("Ships it.", "Ships it now.");
    let saved = harness
        .call(
            "PUT",
            "/api/workflows/gated",
            &member,
            json_body(json!({"text": newer})),
        )
        .await;
    assert_eq!(saved.status, 201, "{}", saved.text());
    let confirm = harness
        .call(
            "POST",
            &format!("/api/interviews/{id}/confirm"),
            &member,
            json_body(json!({"proposal": 1})),
        )
        .await;
    assert_eq!(confirm.status, 409, "{}", confirm.text());
    assert!(
        confirm.text().contains("changed by someone else"),
        "{}",
        confirm.text()
    );
    let current = harness
        .call("GET", "/api/workflows/gated/export", &member, None)
        .await;
    assert_eq!(current.json()["text"], newer);
    let view = harness
        .call("GET", &format!("/api/interviews/{id}"), &member, None)
        .await;
    assert_eq!(view.json()["proposal"]["number"], 1, "the proposal is kept");
}

/// Writes `text` as `path` in the test account's workspace, as a person would.
fn write_workspace_file(harness: &Harness, path: &str, text: &str) {
    harness
        .engine
        .workspaces()
        .for_account(&ids::AccountId::parse(crate::support::ACCOUNT).unwrap())
        .unwrap()
        .commit(
            &workspace::Author::Person { id: "p".into() },
            "edit",
            vec![(
                workspace::RelPath::parse(path).unwrap(),
                workspace::Change::Write(text.as_bytes().to_vec()),
            )],
            &|_: &[u8]| false,
        )
        .unwrap();
}

fn workspace_has(harness: &Harness, path: &str) -> bool {
    harness
        .engine
        .workspaces()
        .for_account(&ids::AccountId::parse(crate::support::ACCOUNT).unwrap())
        .unwrap()
        .read_file(&workspace::RelPath::parse(path).unwrap(), 1)
        .unwrap()
        .is_some()
}

/// Review finding 4: the reach rows of a proposal also come from workspace agents it does not
/// change. When one of them changes between the check shown and the confirmation, the rows
/// the person approved are no longer true: the confirmation is refused, nothing is saved, and
/// the person is told to look again; a check shown after the change can be confirmed.
#[tokio::test(flavor = "multi_thread")]
async fn g27_a_confirmation_is_refused_when_an_agent_the_shown_reach_read_changed_since() {
    let posting = "name: posting\npython: \"3.11\"\nsteps:\n  - id: post!\n    agent: poster\n    task: Post it.\n";
    let (harness, _fake) = with_assistant(vec![
        ScriptTurn::call("propose", json!({"workflow": posting, "note": "Posts it."})),
        ScriptTurn::call("propose", json!({"workflow": posting, "note": "The same."})),
    ])
    .await;
    let offline =
        "---\nname: poster\ndescription: Posts.\ntools: [Read]\nnetwork: none\n---\nPosts.\n";
    write_workspace_file(&harness, "agents/poster/AGENT.md", offline);
    let member = harness.credentials(Caller::Person(Role::Member));
    let view = start(&harness, &member, json!({"message": "Post the notes."})).await;
    let id = view["id"].as_str().unwrap().to_owned();
    assert_eq!(view["proposal"]["number"], 1, "{view}");
    assert_eq!(
        view["proposal"]["reach"]["rows"][0]["internet"], "no",
        "{view}"
    );
    // Between show and confirm, someone gives the agent the internet.
    write_workspace_file(
        &harness,
        "agents/poster/AGENT.md",
        &offline.replace("network: none", "network: public_egress"),
    );
    let confirm = |number: u32| {
        let (harness, member, id) = (&harness, &member, &id);
        async move {
            harness
                .call(
                    "POST",
                    &format!("/api/interviews/{id}/confirm"),
                    member,
                    json_body(json!({"proposal": number})),
                )
                .await
        }
    };
    let refused = confirm(1).await;
    assert_eq!(refused.status, 409, "{}", refused.text());
    assert!(
        refused.text().contains("agents/poster/AGENT.md")
            && refused
                .text()
                .contains("changed since you were shown the check: look again"),
        "{}",
        refused.text()
    );
    assert!(!workspace_has(&harness, "workflows/posting.yaml"));
    // Shown again, with the agent as it is now: that check is confirmed.
    let again = harness
        .call(
            "POST",
            &format!("/api/interviews/{id}/messages"),
            &member,
            json_body(json!({"message": "Show it again."})),
        )
        .await;
    assert_eq!(again.status, 200, "{}", again.text());
    let view = again.json();
    assert_eq!(view["proposal"]["number"], 2, "{view}");
    assert_ne!(
        view["proposal"]["reach"]["rows"][0]["internet"], "no",
        "{view}"
    );
    let saved = confirm(2).await;
    assert_eq!(saved.status, 200, "{}", saved.text());
    assert!(workspace_has(&harness, "workflows/posting.yaml"));
}

#[tokio::test(flavor = "multi_thread")]
async fn g15_without_a_provider_there_is_no_interview_and_it_says_so() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let started = harness
        .call(
            "POST",
            "/api/interviews",
            &member,
            json_body(json!({"message": "Refund a ticket."})),
        )
        .await;
    assert_eq!(started.status, 409, "{}", started.text());
    assert_eq!(started.json()["code"], "no_assistant");
    assert!(started.text().contains("write the workflow yourself"));
    let page = harness.call("GET", "/interview", &member, None).await;
    assert_eq!(page.status, 200);
    assert!(page.text().contains("No assistant for this account"));
}

/// server review 3, finding 3: an interview kept every answer whole (a 7 MB answer, three
/// times, grew the server by 130 MB, and was sent back on every turn). An answer past its
/// bound is refused, never kept, and the interview says so; what is kept stays small.
#[tokio::test(flavor = "multi_thread")]
async fn g10_an_answer_past_its_bound_is_not_kept_and_the_interview_says_so() {
    let (harness, _fake) = with_assistant(vec![
        ScriptTurn::text(&"Q".repeat(7_000_000)),
        ScriptTurn::call(
            "ask",
            json!({"question": "Which amount should be refunded?"}),
        ),
    ])
    .await;
    let member = harness.credentials(Caller::Person(Role::Member));
    let view = start(
        &harness,
        &member,
        json!({"workflow": "", "message": "hello"}),
    )
    .await;
    let said = view.to_string();
    assert!(said.len() < 64 * 1024, "the view is {} bytes", said.len());
    assert!(said.contains("65536"), "{said}");
    // The interview goes on: the next answer is an ordinary one.
    let id = view["id"].as_str().unwrap();
    let next = harness
        .call(
            "POST",
            &format!("/api/interviews/{id}/messages"),
            &member,
            json_body(json!({"message": "more"})),
        )
        .await;
    assert!(next.status < 300, "{}", next.text());
    let view = harness
        .call("GET", &format!("/api/interviews/{id}"), &member, None)
        .await
        .json();
    assert!(view.to_string().contains("Which amount"), "{view}");
}

/// server review 3, finding 5: a provider's host is shown to every person of the account in a
/// reach panel (G27: who reads a run's reach sees where its prompts go), as the docs now say;
/// its full settings stay with the admins.
#[tokio::test(flavor = "multi_thread")]
async fn g27_a_viewer_sees_a_providers_host_in_reach_and_only_admins_its_settings() {
    let (harness, fake) = with_assistant(vec![]).await;
    write_workspace_file(
        &harness,
        "agents/poster/AGENT.md",
        "---\nname: poster\ndescription: Posts.\nmodel: claude/fake-large\ntools: [Read]\n---\nPosts.\n",
    );
    write_workspace_file(
        &harness,
        "workflows/posting.yaml",
        "name: posting\npython: \"3.11\"\nsteps:\n  - id: post\n    agent: poster\n    task: Post it.\n",
    );
    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    let reach = harness
        .call("GET", "/api/workflows/posting/reach", &viewer, None)
        .await;
    assert_eq!(reach.status, 200, "{}", reach.text());
    let reach = reach.json();
    let host = fake.url();
    let host = host
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    assert_eq!(
        reach["rows"][0]["models"][0]["host"],
        host.as_str(),
        "{reach}"
    );
    let settings = harness.call("GET", "/api/models", &viewer, None).await;
    assert_eq!(settings.status, 403, "{}", settings.text());
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/agents.md"),
    )
    .unwrap();
    assert!(
        docs.contains("visible to the account"),
        "docs/agents.md says so"
    );
}
