//! Audit or nothing, for every route (G25, G26; server review 3, finding 1: six routes added
//! since the first review committed first and audited after). With every audit append failing
//! (a trigger on the test database, as the reviews reproduced it), each route that changes
//! anything is refused, and a dump of every table, the workspace folder and the vault is
//! byte-identical before and after. Every non-GET route of the router is classified here: a
//! route the classification lacks fails the test, so a new route is covered the day it is
//! added.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use auth::Role;
use fake_model::{FakeModel, Script, ScriptTurn};
use serde_json::{Value, json};

use crate::support::{ACCOUNT, Caller, Credentials, Harness, person_id};

/// How a route is held to the rule.
enum Rule {
    /// It changes something: with the audit failing it is refused and nothing changes.
    Audited,
    /// It changes nothing the record holds, or its change is not an audited action; why.
    Exempt(&'static str),
}

/// Every non-GET route of the router, by method and pattern, and its rule.
fn classification() -> BTreeMap<(&'static str, &'static str), Rule> {
    use Rule::{Audited, Exempt};
    let conversation = "a message of an interview changes only that interview's own \
                        conversation, which is not a record and not an audited action";
    let test = "testing a provider changes nothing; the test itself is a tallied use";
    [
        (("POST", "/signin"), Audited),
        (("POST", "/api/signin"), Audited),
        (("POST", "/welcome/{token}"), Audited),
        (("POST", "/signout"), Audited),
        (("POST", "/api/signout"), Audited),
        (("DELETE", "/api/sessions"), Audited),
        (("DELETE", "/api/sessions/{id}"), Audited),
        (("POST", "/sessions/revoke-all"), Audited),
        (("POST", "/sessions/{id}/revoke"), Audited),
        (("PUT", "/api/workflows/{name}"), Audited),
        (("POST", "/api/interviews"), Audited),
        (
            ("POST", "/api/interviews/{id}/messages"),
            Exempt(conversation),
        ),
        (("POST", "/api/interviews/{id}/confirm"), Audited),
        (("POST", "/interview"), Audited),
        (("POST", "/interview/{id}/messages"), Exempt(conversation)),
        (("POST", "/interview/{id}/confirm"), Audited),
        (("POST", "/api/runs"), Audited),
        (("POST", "/api/runs/{id}/steps/{step}/approve"), Audited),
        (("POST", "/api/runs/{id}/steps/{step}/reject"), Audited),
        (
            (
                "POST",
                "/api/runs/{id}/steps/{step}/attempts/{attempt}/retry",
            ),
            Audited,
        ),
        (("POST", "/api/runs/{id}/stop"), Audited),
        (("POST", "/runs"), Audited),
        (("POST", "/runs/{id}/steps/{step}/decide"), Audited),
        (("POST", "/runs/{id}/attend"), Audited),
        (("POST", "/api/runs/{id}/steps/{step}/repair"), Audited),
        (
            ("POST", "/api/runs/{id}/steps/{step}/repair/accept"),
            Audited,
        ),
        (("POST", "/runs/{id}/steps/{step}/repair"), Audited),
        (("POST", "/runs/{id}/steps/{step}/repair/accept"), Audited),
        (("POST", "/approve/{run}/{step}/{attempt}/{token}"), Audited),
        (("PUT", "/api/vault/secrets/{name}"), Audited),
        (("DELETE", "/api/vault/secrets/{name}"), Audited),
        (("POST", "/vault/secrets"), Audited),
        (("POST", "/vault/secrets/{name}/remove"), Audited),
        (("PUT", "/api/vault/connections/{alias}"), Audited),
        (("DELETE", "/api/vault/connections/{alias}"), Audited),
        (("POST", "/api/vault/connections/{alias}/revoke"), Audited),
        (("PUT", "/api/vault/model-keys/{provider}"), Audited),
        (("DELETE", "/api/vault/model-keys/{provider}"), Audited),
        (("POST", "/vault/connections"), Audited),
        (("POST", "/vault/connections/{alias}/remove"), Audited),
        (("POST", "/vault/connections/{alias}/revoke"), Audited),
        (("POST", "/vault/model-keys"), Audited),
        (("POST", "/vault/model-keys/{provider}/remove"), Audited),
        (("POST", "/api/workspace/revisions"), Audited),
        (("POST", "/files"), Audited),
        (("POST", "/files/delete"), Audited),
        (("PUT", "/api/models/{provider}"), Audited),
        (("DELETE", "/api/models/{provider}"), Audited),
        (("POST", "/api/models/{provider}/default"), Audited),
        (("POST", "/api/models/{provider}/test"), Exempt(test)),
        (("POST", "/models"), Audited),
        (("POST", "/models/{provider}/remove"), Audited),
        (("POST", "/models/{provider}/default"), Audited),
        (("POST", "/models/{provider}/test"), Exempt(test)),
        (("POST", "/api/agents/{name}/tools/{tool}/test"), Audited),
        (("POST", "/agents/{name}/tools/{tool}/test"), Audited),
        (("PUT", "/api/supervisor"), Audited),
        (("POST", "/models/supervisor"), Audited),
        (("POST", "/api/people"), Audited),
        (("PUT", "/api/people/{id}/role"), Audited),
        (("DELETE", "/api/people/{id}"), Audited),
        (("DELETE", "/api/people/{id}/sessions"), Audited),
        (("POST", "/api/ownership"), Audited),
        (("POST", "/api/people/{id}/sign-in-link"), Audited),
        (("POST", "/people/{id}/sign-in-link"), Audited),
        (("POST", "/people"), Audited),
        (("POST", "/people/{id}/role"), Audited),
        (("POST", "/people/{id}/remove"), Audited),
        (("POST", "/people/{id}/sessions/revoke"), Audited),
        (("POST", "/ownership"), Audited),
        (("POST", "/api/keys"), Audited),
        (("DELETE", "/api/keys/{id}"), Audited),
        (("POST", "/keys"), Audited),
        (("POST", "/keys/{id}/revoke"), Audited),
        (("POST", "/api/runs/{id}/shares"), Audited),
        (("DELETE", "/api/shares/{id}"), Audited),
        (("POST", "/runs/{id}/shares"), Audited),
        (("POST", "/shares/{id}/revoke"), Audited),
    ]
    .into_iter()
    .collect()
}

/// The workflow whose step `mend` needs repair on its first attempt.
const REPAIRABLE: &str = "name: repairable\npython: \"3.11\"\nsteps:\n  - id: mend\n    explain: Mends.\n    code: |\n      def main():\n          return 1\n";
const REPAIRED_CODE: &str = "def main():\n    return 2\n";

/// Proposes [`REPAIRED_CODE`] for `mend`; its check splices it in.
struct Mender;

impl engine::RepairAssistant for Mender {
    fn propose(
        &self,
        _request: &engine::RepairRequest<'_>,
    ) -> Result<engine::ProposedRepair, engine::NoProposal> {
        Ok(engine::ProposedRepair {
            code: REPAIRED_CODE.into(),
            note: "returns two".into(),
            provider: "claude".into(),
            model: "fake-large".into(),
            refused: Vec::new(),
        })
    }

    fn check(
        &self,
        _workflow: &spec::Workflow,
        _step: &str,
        _code: &str,
    ) -> Result<spec::Workflow, engine::RefusedProposal> {
        let text = REPAIRABLE.replace("return 1", "return 2");
        spec::parse_workflow("workflows/repairable.yaml", &text)
            .map_err(|_| engine::RefusedProposal::from("no".to_owned()))
    }
}

const PROPOSAL: &str = "name: proposed\npython: \"3.11\"\nsteps:\n  - id: one\n    explain: Returns one.\n    code: |\n      def main():\n          return 1\n";

/// One harness with a thing of every kind a route acts on, made while the audit works.
struct Fixture {
    harness: Harness,
    _fake: FakeModel,
    owner: Credentials,
    member: Credentials,
    parked: String,
    attention: String,
    repair_run: String,
    approve_path: String,
    key_id: String,
    share_id: String,
    target: String,
    welcome_token: String,
    interview: String,
    /// Another session of the owner, to revoke.
    session_to_revoke: String,
    fake_url: String,
    /// The SHA-256 of the repair proposal shown, which the console's accept form carries.
    proposal_hash: String,
    /// A pre-session form guard (its cookie and CSRF token) of `/signin` and of the welcome
    /// link.
    signin_guard: Credentials,
    welcome_guard: Credentials,
}

/// The form guard `GET path` sets: its cookie, and the CSRF token the form carries.
async fn guard(harness: &Harness, path: &str) -> Credentials {
    let page = harness.call("GET", path, &Credentials::None, None).await;
    assert_eq!(page.status, 200, "{path}: {}", page.text());
    let cookie = page
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("set-cookie"))
        .map(|(_, value)| {
            String::from_utf8_lossy(value)
                .split(';')
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("; ");
    let text = page.text();
    let at = text.find("name=\"csrf\" value=\"").unwrap() + "name=\"csrf\" value=\"".len();
    let csrf = text[at..].split('"').next().unwrap().to_owned();
    Credentials::Session {
        cookie,
        csrf,
        session_id: String::new(),
    }
}

/// The CSRF token `credentials` carry.
fn csrf_of(credentials: &Credentials) -> String {
    match credentials {
        Credentials::Session { csrf, .. } => csrf.clone(),
        _ => String::new(),
    }
}

fn json_body(value: Value) -> Option<(&'static str, String)> {
    Some(("application/json", value.to_string()))
}

fn form(fields: &[(&str, &str)]) -> Option<(&'static str, String)> {
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|byte| match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (byte as char).to_string()
                }
                other => format!("%{other:02X}"),
            })
            .collect()
    };
    Some((
        "application/x-www-form-urlencoded",
        fields
            .iter()
            .map(|(name, value)| format!("{}={}", encode(name), encode(value)))
            .collect::<Vec<_>>()
            .join("&"),
    ))
}

async fn ok(
    harness: &Harness,
    method: &str,
    path: &str,
    who: &Credentials,
    body: Option<(&str, String)>,
) -> Value {
    let answer = harness.call(method, path, who, body).await;
    assert!(
        answer.status < 400,
        "setup {method} {path}: {} {}",
        answer.status,
        answer.text()
    );
    if answer.text().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&answer.text()).unwrap_or(Value::Null)
    }
}

/// An agent with one custom tool, for the tool tests' routes (issue 40).
const TOOL_AGENT: &str = "---\nname: digest\ndescription: Looks words up.\nmodel: claude/fake-large\ntools: [lookup]\ncustom_tools:\n  lookup:\n    explain: Looks a word up.\n    script: tools/lookup.py\n    arguments: { query: string }\n---\nLook it up.\n";

async fn fixture() -> Fixture {
    let proposal = ScriptTurn::call(
        "propose",
        json!({"workflow": PROPOSAL, "files": [], "note": "One step."}),
    );
    let mut script = Script::new(vec![
        proposal,
        ScriptTurn::call("ask", json!({"question": "What else?"})),
    ]);
    script.repeat = true;
    let fake = FakeModel::start(script).await.unwrap();
    let harness = Harness::with_repairs(&[&fake.endpoint()], Arc::new(Mender));
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let member = harness.credentials(Caller::Person(Role::Member));
    ok(
        &harness,
        "PUT",
        "/api/models/claude",
        &owner,
        json_body(json!({
            "provider": "anthropic", "base_url": fake.url(), "assistant_model": "fake-large",
            "key": "sk-ant-audit-test-0123456789",
        })),
    )
    .await;
    ok(
        &harness,
        "PUT",
        "/api/vault/connections/payments",
        &owner,
        json_body(json!({"fields": {"api_key": "sk-conn-audit-test-0123456789"}})),
    )
    .await;
    ok(
        &harness,
        "POST",
        "/api/workspace/revisions",
        &owner,
        json_body(json!({
            "message": "setup",
            "changes": [
                {"path": "existing.txt", "action": "write", "content": "existing"},
                {"path": "workflows/repairable.yaml", "action": "write", "content": REPAIRABLE},
                {"path": "agents/digest/AGENT.md", "action": "write", "content": TOOL_AGENT},
                {"path": "agents/digest/tools/lookup.py", "action": "write", "content": "def main(query):\n    return query\n"},
            ],
        })),
    )
    .await;
    let parked = harness.parked_run(ACCOUNT).as_str().to_owned();
    let attention = harness.attention_run(ACCOUNT).as_str().to_owned();
    let started = ok(
        &harness,
        "POST",
        "/api/runs",
        &owner,
        json_body(json!({"workflow": "repairable"})),
    )
    .await;
    let repair_run = started["run"].as_str().unwrap().to_owned();
    ok(
        &harness,
        "POST",
        &format!("/api/runs/{repair_run}/steps/mend/repair"),
        &member,
        None,
    )
    .await;
    let link = ok(
        &harness,
        "GET",
        &format!("/api/runs/{parked}/approve-link"),
        &owner,
        None,
    )
    .await;
    let approve_path = link["path"].as_str().unwrap_or_default().to_owned();
    let key = ok(
        &harness,
        "POST",
        "/api/keys",
        &owner,
        json_body(json!({"name": "ci", "role": "viewer"})),
    )
    .await;
    let key_id = key["key_id"].as_str().unwrap().to_owned();
    let share = ok(
        &harness,
        "POST",
        &format!("/api/runs/{parked}/shares"),
        &owner,
        None,
    )
    .await;
    let share_id = share["id"].as_str().unwrap().to_owned();
    let invited = ok(
        &harness,
        "POST",
        "/api/people",
        &owner,
        json_body(json!({
            "display_name": "Target", "email": "target@example.test", "role": "viewer",
        })),
    )
    .await;
    let target = invited["person_id"].as_str().unwrap().to_owned();
    let welcome_token = invited["sign_in_path"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let interview = ok(
        &harness,
        "POST",
        "/api/interviews",
        &member,
        json_body(json!({
            "workflow": "", "message": "A workflow that returns one.",
        })),
    )
    .await;
    let interview = interview["id"].as_str().unwrap().to_owned();
    let second = harness.session_for(&person_id(Role::Owner));
    let Credentials::Session { session_id, .. } = &second else {
        panic!("a session");
    };
    let session_to_revoke = session_id.clone();
    let signin_guard = guard(&harness, "/signin").await;
    let welcome_guard = guard(&harness, &format!("/welcome/{welcome_token}")).await;
    let proposal_hash = storage::Sha256Hex::of(REPAIRED_CODE.as_bytes())
        .as_str()
        .to_owned();
    Fixture {
        harness,
        owner,
        member,
        parked,
        attention,
        repair_run,
        approve_path,
        key_id,
        share_id,
        target,
        welcome_token,
        interview,
        session_to_revoke,
        fake_url: fake.url(),
        proposal_hash,
        signin_guard,
        welcome_guard,
        _fake: fake,
    }
}

/// The request one route's case sends: who, the concrete path and the body.
fn request_for<'f>(
    fixture: &'f Fixture,
    method: &str,
    pattern: &str,
) -> (&'f Credentials, String, Option<(&'static str, String)>) {
    let f = fixture;
    let owner = &f.owner;
    let member = &f.member;
    let parked = &f.parked;
    let attention = &f.attention;
    let repair = &f.repair_run;
    let target = &f.target;
    let interview = &f.interview;
    let (who, path, body): (&Credentials, String, Option<(&'static str, String)>) = match (
        method, pattern,
    ) {
        ("POST", "/signin") => (
            &f.signin_guard,
            "/signin".into(),
            form(&[
                ("csrf", &csrf_of(&f.signin_guard)),
                ("account", ACCOUNT),
                ("email", "admin@example.test"),
                ("password", crate::support::PASSWORD),
            ]),
        ),
        ("POST", "/api/signin") => (
            owner,
            "/api/signin".into(),
            json_body(
                json!({"account": ACCOUNT, "email": "admin@example.test", "password": crate::support::PASSWORD}),
            ),
        ),
        ("POST", "/welcome/{token}") => (
            &f.welcome_guard,
            format!("/welcome/{}", f.welcome_token),
            form(&[
                ("csrf", &csrf_of(&f.welcome_guard)),
                ("password", "a long new password 1"),
                ("password_again", "a long new password 1"),
            ]),
        ),
        ("POST", "/signout") => (owner, "/signout".into(), form(&[])),
        ("POST", "/api/signout") => (owner, "/api/signout".into(), None),
        ("DELETE", "/api/sessions") => (owner, "/api/sessions".into(), None),
        ("DELETE", "/api/sessions/{id}") => (
            owner,
            format!("/api/sessions/{}", f.session_to_revoke),
            None,
        ),
        ("POST", "/sessions/revoke-all") => (owner, "/sessions/revoke-all".into(), form(&[])),
        ("POST", "/sessions/{id}/revoke") => (
            owner,
            format!("/sessions/{}/revoke", f.session_to_revoke),
            form(&[]),
        ),
        ("PUT", "/api/workflows/{name}") => (
            member,
            "/api/workflows/audited".into(),
            json_body(json!({"text": PROPOSAL.replace("proposed", "audited"), "message": "m"})),
        ),
        ("POST", "/api/interviews") => (
            member,
            "/api/interviews".into(),
            json_body(json!({"workflow": "", "message": "Another."})),
        ),
        ("POST", "/api/interviews/{id}/messages") => (
            member,
            format!("/api/interviews/{interview}/messages"),
            json_body(json!({"message": "More."})),
        ),
        ("POST", "/api/interviews/{id}/confirm") => (
            member,
            format!("/api/interviews/{interview}/confirm"),
            json_body(json!({"proposal": 1, "note": "looks right"})),
        ),
        ("POST", "/interview") => (
            member,
            "/interview".into(),
            form(&[("workflow", ""), ("message", "Another.")]),
        ),
        ("POST", "/interview/{id}/messages") => (
            member,
            format!("/interview/{interview}/messages"),
            form(&[("message", "More.")]),
        ),
        ("POST", "/interview/{id}/confirm") => (
            member,
            format!("/interview/{interview}/confirm"),
            form(&[("proposal", "1"), ("note", "looks right")]),
        ),
        ("POST", "/api/runs") => (
            owner,
            "/api/runs".into(),
            json_body(json!({"workflow": "gated"})),
        ),
        ("POST", "/api/runs/{id}/steps/{step}/approve") => (
            owner,
            format!("/api/runs/{parked}/steps/ship/approve"),
            json_body(json!({"note": "ok"})),
        ),
        ("POST", "/api/runs/{id}/steps/{step}/reject") => (
            owner,
            format!("/api/runs/{parked}/steps/ship/reject"),
            json_body(json!({"note": "no"})),
        ),
        ("POST", "/api/runs/{id}/steps/{step}/attempts/{attempt}/retry") => (
            owner,
            format!("/api/runs/{attention}/steps/send/attempts/1/retry"),
            json_body(json!({"note": "safe"})),
        ),
        ("POST", "/api/runs/{id}/stop") => (
            owner,
            format!("/api/runs/{attention}/stop"),
            json_body(json!({"note": "enough"})),
        ),
        ("POST", "/runs") => (owner, "/runs".into(), form(&[("workflow", "gated")])),
        ("POST", "/runs/{id}/steps/{step}/decide") => (
            owner,
            format!("/runs/{parked}/steps/ship/decide"),
            form(&[("decision", "approve"), ("note", "ok")]),
        ),
        ("POST", "/runs/{id}/attend") => (
            owner,
            format!("/runs/{attention}/attend"),
            form(&[("decision", "stop"), ("note", "enough")]),
        ),
        ("POST", "/api/runs/{id}/steps/{step}/repair") => (
            member,
            format!("/api/runs/{repair}/steps/mend/repair"),
            None,
        ),
        ("POST", "/api/runs/{id}/steps/{step}/repair/accept") => (
            member,
            format!("/api/runs/{repair}/steps/mend/repair/accept"),
            json_body(json!({"note": "stdlib"})),
        ),
        ("POST", "/runs/{id}/steps/{step}/repair") => (
            member,
            format!("/runs/{repair}/steps/mend/repair"),
            form(&[]),
        ),
        ("POST", "/runs/{id}/steps/{step}/repair/accept") => (
            member,
            format!("/runs/{repair}/steps/mend/repair/accept"),
            form(&[("note", "stdlib"), ("proposal", &f.proposal_hash)]),
        ),
        ("POST", "/approve/{run}/{step}/{attempt}/{token}") => (
            owner,
            f.approve_path.clone(),
            form(&[("decision", "approve"), ("note", "ok")]),
        ),
        ("PUT", "/api/vault/secrets/{name}") => (
            owner,
            "/api/vault/secrets/NEW_SECRET".into(),
            json_body(json!({"value": "sk-new-secret-value-0123"})),
        ),
        ("DELETE", "/api/vault/secrets/{name}") => {
            (owner, "/api/vault/secrets/DEPLOY_TOKEN".into(), None)
        }
        ("POST", "/vault/secrets") => (
            owner,
            "/vault/secrets".into(),
            form(&[
                ("name", "FORM_SECRET"),
                ("value", "sk-form-secret-value-0123"),
            ]),
        ),
        ("POST", "/vault/secrets/{name}/remove") => (
            owner,
            "/vault/secrets/DEPLOY_TOKEN/remove".into(),
            form(&[]),
        ),
        ("PUT", "/api/vault/connections/{alias}") => (
            owner,
            "/api/vault/connections/other".into(),
            json_body(json!({"fields": {"api_key": "sk-other-conn-value-0123"}})),
        ),
        ("DELETE", "/api/vault/connections/{alias}") => {
            (owner, "/api/vault/connections/payments".into(), None)
        }
        ("POST", "/api/vault/connections/{alias}/revoke") => {
            (owner, "/api/vault/connections/payments/revoke".into(), None)
        }
        ("PUT", "/api/vault/model-keys/{provider}") => (
            owner,
            "/api/vault/model-keys/claude".into(),
            json_body(json!({"value": "sk-ant-new-key-0123456789"})),
        ),
        ("DELETE", "/api/vault/model-keys/{provider}") => {
            (owner, "/api/vault/model-keys/claude".into(), None)
        }
        ("POST", "/vault/connections") => (
            owner,
            "/vault/connections".into(),
            form(&[
                ("alias", "formconn"),
                ("field_name_0", "api_key"),
                ("field_value_0", "sk-form-conn-value-0123"),
            ]),
        ),
        ("POST", "/vault/connections/{alias}/remove") => (
            owner,
            "/vault/connections/payments/remove".into(),
            form(&[]),
        ),
        ("POST", "/vault/connections/{alias}/revoke") => (
            owner,
            "/vault/connections/payments/revoke".into(),
            form(&[]),
        ),
        ("POST", "/vault/model-keys") => (
            owner,
            "/vault/model-keys".into(),
            form(&[
                ("provider", "claude"),
                ("value", "sk-ant-form-key-0123456789"),
            ]),
        ),
        ("POST", "/vault/model-keys/{provider}/remove") => {
            (owner, "/vault/model-keys/claude/remove".into(), form(&[]))
        }
        ("POST", "/api/workspace/revisions") => (
            owner,
            "/api/workspace/revisions".into(),
            json_body(
                json!({"message": "m", "changes": [{"path": "new.txt", "action": "write", "content": "n"}]}),
            ),
        ),
        ("POST", "/files") => (
            owner,
            "/files".into(),
            form(&[("path", "form.txt"), ("content", "f"), ("message", "m")]),
        ),
        ("POST", "/files/delete") => (
            owner,
            "/files/delete".into(),
            form(&[("path", "existing.txt")]),
        ),
        ("PUT", "/api/models/{provider}") => (
            owner,
            "/api/models/second".into(),
            json_body(
                json!({"provider": "openai", "base_url": format!("{}/v1", f.fake_url), "assistant_model": "m", "key": "sk-second-key-0123456789"}),
            ),
        ),
        ("DELETE", "/api/models/{provider}") => (owner, "/api/models/claude".into(), None),
        ("POST", "/api/models/{provider}/default") => {
            (owner, "/api/models/claude/default".into(), None)
        }
        ("POST", "/api/models/{provider}/test") => (
            owner,
            "/api/models/claude/test".into(),
            json_body(json!({})),
        ),
        ("POST", "/models") => (
            owner,
            "/models".into(),
            form(&[
                ("name", "formprovider"),
                ("provider", "anthropic"),
                ("base_url", &f.fake_url),
                ("assistant_model", "m"),
                ("key", "sk-form-provider-0123456789"),
            ]),
        ),
        ("POST", "/models/{provider}/remove") => (owner, "/models/claude/remove".into(), form(&[])),
        ("POST", "/models/{provider}/default") => {
            (owner, "/models/claude/default".into(), form(&[]))
        }
        ("POST", "/models/{provider}/test") => (owner, "/models/claude/test".into(), form(&[])),
        ("POST", "/api/agents/{name}/tools/{tool}/test") => (
            member,
            "/api/agents/digest/tools/lookup/test".into(),
            json_body(json!({"arguments": {"query": "q"}})),
        ),
        ("POST", "/agents/{name}/tools/{tool}/test") => (
            member,
            "/agents/digest/tools/lookup/test".into(),
            form(&[("arg.query", "q")]),
        ),
        ("PUT", "/api/supervisor") => (
            owner,
            "/api/supervisor".into(),
            json_body(json!({"retries": 5})),
        ),
        ("POST", "/models/supervisor") => (
            owner,
            "/models/supervisor".into(),
            form(&[("retries", "5")]),
        ),
        ("POST", "/api/people") => (
            owner,
            "/api/people".into(),
            json_body(
                json!({"display_name": "New", "email": "new@example.test", "role": "viewer"}),
            ),
        ),
        ("PUT", "/api/people/{id}/role") => (
            owner,
            format!("/api/people/{target}/role"),
            json_body(json!({"role": "member"})),
        ),
        ("DELETE", "/api/people/{id}") => (owner, format!("/api/people/{target}"), None),
        ("DELETE", "/api/people/{id}/sessions") => (
            owner,
            format!("/api/people/{}/sessions", person_id(Role::Viewer)),
            None,
        ),
        ("POST", "/api/ownership") => (
            owner,
            "/api/ownership".into(),
            json_body(json!({"new_owner": person_id(Role::Admin)})),
        ),
        ("POST", "/api/people/{id}/sign-in-link") => {
            (owner, format!("/api/people/{target}/sign-in-link"), None)
        }
        ("POST", "/people/{id}/sign-in-link") => {
            (owner, format!("/people/{target}/sign-in-link"), form(&[]))
        }
        ("POST", "/people") => (
            owner,
            "/people".into(),
            form(&[
                ("display_name", "Form"),
                ("email", "form@example.test"),
                ("role", "viewer"),
            ]),
        ),
        ("POST", "/people/{id}/role") => (
            owner,
            format!("/people/{target}/role"),
            form(&[("role", "member")]),
        ),
        ("POST", "/people/{id}/remove") => (owner, format!("/people/{target}/remove"), form(&[])),
        ("POST", "/people/{id}/sessions/revoke") => (
            owner,
            format!("/people/{}/sessions/revoke", person_id(Role::Viewer)),
            form(&[]),
        ),
        ("POST", "/ownership") => (
            owner,
            "/ownership".into(),
            form(&[("new_owner", &person_id(Role::Admin))]),
        ),
        ("POST", "/api/keys") => (
            owner,
            "/api/keys".into(),
            json_body(json!({"name": "k2", "role": "viewer"})),
        ),
        ("DELETE", "/api/keys/{id}") => (owner, format!("/api/keys/{}", f.key_id), None),
        ("POST", "/keys") => (
            owner,
            "/keys".into(),
            form(&[("name", "formkey"), ("role", "viewer")]),
        ),
        ("POST", "/keys/{id}/revoke") => (owner, format!("/keys/{}/revoke", f.key_id), form(&[])),
        ("POST", "/api/runs/{id}/shares") => (owner, format!("/api/runs/{parked}/shares"), None),
        ("DELETE", "/api/shares/{id}") => (owner, format!("/api/shares/{}", f.share_id), None),
        ("POST", "/runs/{id}/shares") => (owner, format!("/runs/{parked}/shares"), form(&[])),
        ("POST", "/shares/{id}/revoke") => {
            (owner, format!("/shares/{}/revoke", f.share_id), form(&[]))
        }
        other => panic!("no request for {other:?}"),
    };
    (who, path, body)
}

/// Every row of every table (but the audit log's own, which the trigger holds still), in
/// order, and every file of the data folder but the database's.
fn dump(harness: &Harness, data_dir: &Path) -> Vec<String> {
    let connection = rusqlite::Connection::open(harness.store.path()).unwrap();
    let tables: Vec<String> = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut lines = Vec::new();
    for table in tables {
        let mut statement = connection
            .prepare(&format!("SELECT * FROM \"{table}\" ORDER BY rowid"))
            .or_else(|_| connection.prepare(&format!("SELECT * FROM \"{table}\"")))
            .unwrap();
        let columns = statement.column_count();
        let rows = statement
            .query_map([], |row| {
                Ok((0..columns)
                    .map(|index| format!("{:?}", row.get_ref(index).unwrap()))
                    .collect::<Vec<_>>()
                    .join("|"))
            })
            .unwrap();
        for row in rows {
            lines.push(format!("{table}: {}", row.unwrap()));
        }
    }
    let mut pending = vec![data_dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&folder)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            if name.starts_with("stepward.db") {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else {
                lines.push(format!(
                    "{}: {:?}",
                    path.display(),
                    std::fs::read(&path).unwrap_or_default()
                ));
            }
        }
    }
    lines
}

fn fail_every_audit_append(harness: &Harness) {
    let connection = rusqlite::Connection::open(harness.store.path()).unwrap();
    connection
        .execute_batch(
            "CREATE TRIGGER test_audit_fails BEFORE INSERT ON audit_log
             BEGIN SELECT RAISE(ABORT, 'simulated audit failure'); END;
             CREATE TRIGGER test_audit_update_fails BEFORE UPDATE ON audit_log
             BEGIN SELECT RAISE(ABORT, 'simulated audit failure'); END;",
        )
        .unwrap();
}

#[test]
fn every_write_route_of_the_router_is_classified() {
    let classified = classification();
    let routes: Vec<(String, String)> = server::registered_routes()
        .into_iter()
        .filter(|(method, _)| *method != "GET")
        .map(|(method, path)| (method.to_string(), path.to_string()))
        .collect();
    let missing: Vec<&(String, String)> = routes
        .iter()
        .filter(|(method, path)| !classified.contains_key(&(method.as_str(), path.as_str())))
        .collect();
    assert!(
        missing.is_empty(),
        "routes the audit-or-nothing test does not classify: {missing:?}"
    );
    let served: Vec<(&str, &str)> = routes
        .iter()
        .map(|(m, p)| (m.as_str(), p.as_str()))
        .collect();
    let stale: Vec<_> = classified
        .keys()
        .filter(|route| !served.contains(route))
        .collect();
    assert!(
        stale.is_empty(),
        "classified routes the router does not serve: {stale:?}"
    );
    // An exemption says why, in words a reviewer can check.
    for ((method, pattern), rule) in &classified {
        if let Rule::Exempt(why) = rule {
            assert!(
                why.split_whitespace().count() >= 5,
                "{method} {pattern}: {why:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_every_route_that_changes_anything_is_audited_or_changes_nothing() {
    let mut changed = Vec::new();
    let mut vacuous = Vec::new();
    for ((method, pattern), rule) in classification() {
        let Rule::Audited = rule else { continue };
        // The control: the same request with the audit working succeeds and changes something,
        // so a refusal below is the audit's, not a request that could never succeed.
        let control = fixture().await;
        let control_dir = control.harness.store.path().parent().unwrap().to_path_buf();
        let (who, path, body) = request_for(&control, method, pattern);
        let before = dump(&control.harness, &control_dir);
        let answer = control.harness.call(method, &path, who, body).await;
        if answer.status >= 400 || dump(&control.harness, &control_dir) == before {
            vacuous.push(format!(
                "{method} {pattern}: {} {}",
                answer.status,
                answer.text().chars().take(300).collect::<String>()
            ));
        }
        let fixture = fixture().await;
        let data_dir = fixture.harness.store.path().parent().unwrap().to_path_buf();
        let (who, path, body) = request_for(&fixture, method, pattern);
        fail_every_audit_append(&fixture.harness);
        let before = dump(&fixture.harness, &data_dir);
        let answer = fixture.harness.call(method, &path, who, body).await;
        let after = dump(&fixture.harness, &data_dir);
        if before != after || answer.status < 400 {
            let differences: Vec<String> = after
                .iter()
                .filter(|line| !before.contains(line))
                .chain(before.iter().filter(|line| !after.contains(line)))
                .map(|line| line.chars().take(200).collect())
                .take(6)
                .collect();
            changed.push(format!(
                "{method} {pattern} ({path}): {} and changed {differences:#?}",
                answer.status
            ));
        }
    }
    assert!(
        vacuous.is_empty(),
        "the control request of {} route(s) did not succeed with the audit working:\n{}",
        vacuous.len(),
        vacuous.join("\n")
    );
    assert!(
        changed.is_empty(),
        "{} route(s) changed something without their audit entry:\n{}",
        changed.len(),
        changed.join("\n")
    );
}
