//! Refused forms come back, everywhere (issue 42, point 8): every form of the router, from the
//! router's own list (`server::registered_routes`, every `POST` outside `/api/`), is submitted
//! with bad input by a person who may use it. Each answers a page (HTML, never JSON or an empty
//! body), with a status that says it was refused, the refusal announced (`role="alert"`) and
//! what was typed kept (a secret or a password never is). A form whose fields can be wrong
//! answers its own page, with the form again, so the person corrects what they typed; a button
//! (revoke, remove) on something that does not exist answers a page that says so and leads
//! back. A form added later without a case here fails this test.

use auth::Role;

use crate::support::{Caller, Credentials, Harness, person_id};

const FORM: &str = "application/x-www-form-urlencoded";

/// One bad submission of a form, and what its answer must hold.
struct Case {
    /// The route's pattern in the router.
    route: &'static str,
    /// Where the form is posted, its path filled in.
    path: String,
    /// The form's body, bad on purpose.
    body: String,
    /// What was typed that the answer shows again.
    kept: Vec<&'static str>,
    /// The form whose page answers (its `action`), when the form has fields to correct.
    own_form: Option<String>,
    /// A button with no field to get wrong: its bad input is a form token that is not the
    /// session's (a page left open across a sign-out, or a forged post).
    stale_token: bool,
    /// Words the answering page says.
    page_says: Option<&'static str>,
}

fn case(route: &'static str, path: &str, body: &str) -> Case {
    Case {
        route,
        path: path.to_owned(),
        body: body.to_owned(),
        kept: Vec::new(),
        own_form: None,
        stale_token: false,
        page_says: None,
    }
}

impl Case {
    fn keeps(mut self, kept: &[&'static str]) -> Case {
        self.kept = kept.to_vec();
        self
    }

    /// The answer is the page of the form posted to `action`.
    fn on_own_page(mut self, action: &str) -> Case {
        self.own_form = Some(action.to_owned());
        self
    }

    fn with_a_stale_token(mut self) -> Case {
        self.stale_token = true;
        self
    }

    /// The answer is the page that says `words` (a form the page shows only when it can be
    /// used: the interview's, without an assistant).
    fn on_page_saying(mut self, words: &'static str) -> Case {
        self.page_says = Some(words);
        self
    }

    /// The answer is the page of this very form.
    fn on_its_page(self) -> Case {
        let path = self.path.clone();
        self.on_own_page(&path)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_form_of_the_router_answers_bad_input_with_its_page_the_refusal_and_what_was_typed() {
    let harness = Harness::new();
    let parked = harness.parked_run(crate::support::ACCOUNT);
    let parked = parked.as_str();
    let attention = harness.attention_run(crate::support::ACCOUNT);
    let attention = attention.as_str();
    let member = person_id(Role::Member);
    // A workflow with a typed input, and an agent a saved workflow uses.
    harness.commit_workflow(
        "counted",
        "name: counted\npython: \"3.11\"\ninputs: { top: integer }\nsteps:\n  - id: one\n    explain: Counts.\n    inputs: { top: { from: input.top } }\n    code: |\n      def main(top):\n          return top\n",
    );
    let saved = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &harness.credentials(Caller::Person(Role::Member)),
            Some((
                "application/json",
                serde_json::json!({"message": "an agent and its workflow", "changes": [
                    {"path": "agents/filer/AGENT.md", "action": "write", "content":
                        "---\nname: filer\ndescription: Files.\ntools: [Read]\nnetwork: none\n---\nFiles.\n"},
                    {"path": "workflows/payroll.yaml", "action": "write", "content":
                        "name: payroll\npython: \"3.11\"\nsteps:\n  - id: summarise\n    agent: filer\n    task: Summarise.\n"},
                ]})
                .to_string(),
            )),
        )
        .await;
    assert_eq!(saved.status, 201, "{}", saved.text());
    let cases = vec![
        case(
            "/signin",
            "/signin",
            "account=acct&email=owner%40example.test&password=not+the+password",
        )
        .keeps(&["owner@example.test"])
        .on_its_page(),
        case(
            "/welcome/{token}",
            "/welcome/not-a-link-anyone-was-sent",
            "password=p1-long-enough-x&password_again=p2-long-enough-y",
        ),
        case("/signout", "/signout", "").with_a_stale_token(),
        case("/sessions/revoke-all", "/sessions/revoke-all", "").with_a_stale_token(),
        case(
            "/sessions/{id}/revoke",
            "/sessions/ses-nobody/revoke",
            "",
        ),
        case(
            "/people",
            "/people",
            "display_name=Ola+Nordmann&email=not-an-address&role=member",
        )
        .keeps(&["Ola Nordmann", "not-an-address"])
        .on_its_page(),
        case(
            "/people/{id}/role",
            &format!("/people/{member}/role"),
            "role=emperor",
        )
        .on_own_page(&format!("/people/{member}/role")),
        case("/people/{id}/remove", "/people/p-nobody/remove", ""),
        case(
            "/people/{id}/sessions/revoke",
            "/people/p-nobody/sessions/revoke",
            "",
        ),
        case("/ownership", "/ownership", "new_owner=p-nobody").on_its_page(),
        case(
            "/people/{id}/sign-in-link",
            "/people/p-nobody/sign-in-link",
            "",
        ),
        case("/keys", "/keys", "name=&role=member").on_its_page(),
        case("/keys/{id}/revoke", "/keys/key-nobody/revoke", ""),
        // The harness's account has no assistant: the start page answers, saying so.
        case("/interview", "/interview", "workflow=payroll&message=").on_page_saying("Interview the assistant"),
        case(
            "/interview/{id}/messages",
            "/interview/iv_nobody/messages",
            "message=hello",
        ),
        case(
            "/interview/{id}/confirm",
            "/interview/iv_nobody/confirm",
            "proposal=1",
        ),
        case("/runs", "/runs", "workflow=counted&input.top=typed+by+hand")
            .keeps(&["typed by hand"])
            .on_own_page("/runs"),
        case(
            "/runs/{id}/attend",
            &format!("/runs/{attention}/attend"),
            "decision=retry&step=send&attempt=1&note=the+line+is+back&inputs=%7Bnot+json",
        )
        .keeps(&["the line is back", "{not json"])
        .on_its_page(),
        case(
            "/runs/{id}/steps/{step}/decide",
            &format!("/runs/{parked}/steps/ship/decide"),
            "decision=maybe&note=checked+the+totals",
        )
        .keeps(&["checked the totals"])
        .on_its_page(),
        case(
            "/runs/{id}/steps/{step}/repair",
            &format!("/runs/{parked}/steps/prepare/repair"),
            "note=fix+it",
        ),
        case(
            "/runs/{id}/steps/{step}/repair/accept",
            &format!("/runs/{parked}/steps/prepare/repair/accept"),
            "proposal=1",
        ),
        case(
            "/approve/{run}/{step}/{attempt}/{token}",
            &format!("/approve/{parked}/ship/1/not-a-signature"),
            "decision=approve&note=looks+right",
        ),
        case(
            "/vault/secrets",
            "/vault/secrets",
            "name=not+a+name&value=sk-typed-secret-value",
        )
        .on_own_page("/vault/secrets"),
        case(
            "/vault/secrets/{name}/remove",
            "/vault/secrets/NOBODY/remove",
            "",
        ),
        case(
            "/vault/connections",
            "/vault/connections",
            "alias=not+an+alias&value=sk-typed-connection",
        )
        .on_own_page("/vault/connections"),
        case(
            "/vault/connections/{alias}/remove",
            "/vault/connections/nobody/remove",
            "",
        ),
        case(
            "/vault/connections/{alias}/revoke",
            "/vault/connections/nobody/revoke",
            "",
        ),
        case(
            "/vault/model-keys",
            "/vault/model-keys",
            "provider=not+a+name&value=sk-typed-model-key",
        )
        .on_own_page("/vault/model-keys"),
        case(
            "/vault/model-keys/{provider}/remove",
            "/vault/model-keys/nobody/remove",
            "",
        ),
        case(
            "/models",
            "/models",
            "name=my+models&provider=anthropic&base_url=not-a-url&key=sk-typed-model&assistant_model=",
        )
        .keeps(&["my models", "not-a-url"])
        .on_its_page(),
        case("/models/{provider}/remove", "/models/nobody/remove", ""),
        case("/models/{provider}/default", "/models/nobody/default", ""),
        case("/models/{provider}/test", "/models/nobody/test", ""),
        case("/models/supervisor", "/models/supervisor", "retries=many").on_its_page(),
        case(
            "/agents/{name}/tools/{tool}/test",
            "/agents/nobody/tools/nothing/test",
            "",
        ),
        case(
            "/files",
            "/files",
            "path=..%2Fescape.txt&content=typed+content&message=why",
        )
        .keeps(&["../escape.txt", "typed content"])
        .on_its_page(),
        // The agent a saved workflow hands its step to cannot go.
        case("/files/delete", "/files/delete", "path=agents%2Ffiler%2FAGENT.md")
            .keeps(&["agents/filer/AGENT.md"])
            .on_its_page(),
        case(
            "/runs/{id}/shares",
            "/runs/run_nobody/shares",
            "",
        ),
        case("/shares/{id}/revoke", "/shares/shr-nobody/revoke", ""),
    ];

    let mut unlisted = Vec::new();
    let mut wrong = Vec::new();
    for (method, route) in server::registered_routes() {
        if method != "POST" || route.starts_with("/api/") {
            continue;
        }
        let Some(case) = cases.iter().find(|case| case.route == route) else {
            unlisted.push(route);
            continue;
        };
        let credentials = if route == "/signin" {
            // A sign-in form left open past its guard: the browser still holds the guard's
            // cookie, but the token the page carried no longer matches it.
            let form = harness
                .call("GET", "/signin", &Credentials::None, None)
                .await;
            Credentials::Session {
                cookie: form.session_cookie().unwrap(),
                csrf: String::new(),
                session_id: String::new(),
            }
        } else if route.starts_with("/welcome/") {
            Credentials::None
        } else {
            let Credentials::Session {
                cookie,
                csrf,
                session_id,
            } = harness.credentials(Caller::Person(Role::Owner))
            else {
                unreachable!("a person's credentials are a session")
            };
            Credentials::Session {
                cookie,
                csrf: if case.stale_token {
                    "a-token-of-another-session".to_owned()
                } else {
                    csrf
                },
                session_id,
            }
        };
        let answer = harness
            .call(
                "POST",
                &case.path,
                &credentials,
                Some((FORM, case.body.clone())),
            )
            .await;
        let page = answer.text();
        let mut problems = Vec::new();
        if !(400..500).contains(&answer.status) {
            problems.push(format!("status {}", answer.status));
        }
        if !answer
            .header("content-type")
            .is_some_and(|kind| kind.starts_with("text/html"))
        {
            problems.push(format!("not a page: {:?}", answer.header("content-type")));
        }
        if !page.contains("role=\"alert\"") {
            problems.push("no refusal announced (role=\"alert\")".to_owned());
        }
        for kept in &case.kept {
            let escaped = kept.replace('&', "&amp;").replace('"', "&quot;");
            if !page.contains(kept) && !page.contains(&escaped) {
                problems.push(format!("{kept:?} typed but not kept"));
            }
        }
        if let Some(action) = &case.own_form
            && !page.contains(&format!("action=\"{action}\""))
        {
            problems.push(format!("not the form's own page (no form to {action})"));
        }
        if let Some(words) = case.page_says
            && !page.contains(words)
        {
            problems.push(format!("not the page that says {words:?}"));
        }
        for secret in ["sk-typed-", "not the password", "p1-long-enough"] {
            if page.contains(secret) {
                problems.push(format!("shows what was typed into a secret box: {secret}"));
            }
        }
        if !problems.is_empty() {
            wrong.push(format!(
                "POST {} ({route}): {}\n{}",
                case.path,
                problems.join("; "),
                page.split("<main")
                    .nth(1)
                    .unwrap_or(&page)
                    .chars()
                    .take(400)
                    .collect::<String>()
            ));
        }
    }
    assert_eq!(
        unlisted,
        Vec::<&str>::new(),
        "these forms of the router have no bad-input case here: add one"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// A decision refused because the run moved on to another gate (someone decided the first
/// meanwhile) is said on its own: the next gate's form stays empty, never holding the note
/// typed for the gate before.
#[tokio::test(flavor = "multi_thread")]
async fn a_decision_refused_after_the_run_moved_on_is_not_put_beside_the_next_gate() {
    let harness = Harness::new();
    let summary = harness.start(
        crate::support::ACCOUNT,
        "two_gates.yaml",
        "name: two_gates\npython: \"3.11\"\nsteps:\n  - id: first!\n    explain: Goes first.\n    code: |\n      def main():\n          return 1\n  - id: second!\n    explain: Goes second.\n    code: |\n      def main():\n          return 2\n",
    );
    assert_eq!(summary.waiting_at.as_deref(), Some("first"));
    let run = summary.run.as_str().to_owned();
    let member = harness.credentials(Caller::Person(Role::Member));
    let approved = harness
        .call(
            "POST",
            &format!("/api/runs/{run}/steps/first/approve"),
            &member,
            Some((
                "application/json",
                "{\"note\": \"first is fine\"}".to_owned(),
            )),
        )
        .await;
    assert!(approved.status < 300, "{}", approved.text());
    // Wait for the run to park at the second gate (the harness's executor is immediate).
    let mut parked_at_second = false;
    for _ in 0..100 {
        let shown = harness
            .call("GET", &format!("/api/runs/{run}"), &member, None)
            .await
            .json();
        if shown["waiting_at"] == "second" {
            parked_at_second = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(parked_at_second, "the run parks at its second gate");
    let late = harness
        .call(
            "POST",
            &format!("/runs/{run}/steps/first/decide"),
            &member,
            Some((FORM, "decision=approve&note=meant+for+the+first".to_owned())),
        )
        .await;
    let page = late.text();
    assert!((400..500).contains(&late.status), "{}: {page}", late.status);
    assert!(page.contains("id=\"refused-error\""), "{page}");
    assert!(!page.contains("meant for the first"), "{page}");
    assert!(
        page.contains(&format!("action=\"/runs/{run}/steps/second/decide\"")),
        "the second gate's form is there, empty: {page}"
    );
}
