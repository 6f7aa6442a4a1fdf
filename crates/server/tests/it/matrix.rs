//! G26: every route of the real router (from `server::registered_routes`, the list the router
//! is built from, not from the policy table) × every role × no credentials × another account.

use auth::{Access, Caller as PolicyCaller, Role, find_policy};
use server::registered_routes;

use crate::support::{Answer, Caller, Credentials, Harness, person_id};

#[test]
fn g26_every_registered_route_has_a_policy() {
    let routes = registered_routes();
    assert!(!routes.is_empty());
    for (method, path) in &routes {
        assert!(
            find_policy(method, path).is_some(),
            "{method} {path} is served but has no policy"
        );
    }
    let mut unique = routes.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), routes.len(), "a route is registered twice");
}

/// The resources of `acct` the matrix names in paths.
struct Targets {
    run: String,
    share_id: String,
    key_id: String,
}

/// The concrete path of a route pattern, naming resources of `acct`.
fn concrete_path(method: &str, pattern: &str, targets: &Targets) -> String {
    // The console's routes name the same resources as the API's, without `/api`.
    let resource = pattern.strip_prefix("/api").unwrap_or(pattern);
    let id = if resource.starts_with("/shares/") {
        targets.share_id.clone()
    } else if resource.starts_with("/keys/") {
        targets.key_id.clone()
    } else if resource.starts_with("/people/{id}/sessions") {
        person_id(Role::Member)
    } else if resource.starts_with("/people/") {
        TARGET_PERSON.to_owned()
    } else if pattern.contains("/runs/{id}") {
        targets.run.clone()
    } else {
        "ses-does-not-exist".to_owned()
    };
    let name = if method == "PUT" && pattern == "/api/workflows/{name}" {
        // A save writes a workflow of its own: a stranger's save of `gated` in its own
        // account would make `gated` a workflow the stranger may run.
        "matrix_saved"
    } else if pattern.contains("workflows/") {
        "gated"
    } else {
        "MATRIX_SECRET"
    };
    let path = pattern
        .replace("{id}", &id)
        .replace("{run}", &targets.run)
        .replace("{attempt}", "1")
        .replace("{number}", "1")
        .replace("{name}", name)
        .replace("{alias}", "matrix_conn")
        .replace("{provider}", "matrix-provider")
        .replace("{step}", "ship")
        .replace("{token}", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    if names_a_workspace_file(pattern) {
        format!("{path}?path={MATRIX_FILE}")
    } else {
        path
    }
}

/// A file of `acct`'s workspace the matrix reads and deletes.
const MATRIX_FILE: &str = "matrix.txt";
const MATRIX_FILE_CONTENTS: &str = "contents-of-acct-matrix-file";

/// Routes that name one file of the workspace (in the query, or the form's `path`).
fn names_a_workspace_file(pattern: &str) -> bool {
    matches!(
        pattern,
        "/api/workspace/file" | "/files/view" | "/files/delete"
    )
}

const TARGET_PERSON: &str = "p-target";

fn body_for(pattern: &str) -> Option<(&'static str, String)> {
    // Writes name a file of their own: `matrix.txt` keeps acct's contents for the leak check.
    if pattern == "/files" {
        return Some((
            "application/x-www-form-urlencoded",
            "path=matrix-written.txt&content=matrix&message=matrix".to_owned(),
        ));
    }
    // A provider at the one endpoint the harness exempts (nothing listens there).
    if pattern == "/models" {
        return Some((
            "application/x-www-form-urlencoded",
            "name=matrix-form&provider=anthropic&base_url=http%3A%2F%2F127.0.0.1%3A9\
             &assistant_model=m&key=matrix-form-value-0123"
                .to_owned(),
        ));
    }
    let json = match pattern {
        "/api/people" => {
            r#"{"display_name":"Matrix","email":"matrix@example.test","role":"viewer"}"#
        }
        "/api/people/{id}/role" => r#"{"role":"member"}"#,
        "/api/ownership" => r#"{"new_owner":"p-nobody"}"#,
        "/api/keys" => r#"{"name":"matrix","role":"viewer"}"#,
        "/api/runs" => r#"{"workflow":"gated"}"#,
        "/api/workflows/{name}" => {
            r#"{"text":"name: matrix_saved\npython: \"3.11\"\nsteps:\n  - id: one\n    explain: One.\n    code: |\n      def main():\n          return 1\n","message":"matrix"}"#
        }
        "/api/vault/secrets/{name}" => r#"{"value":"matrix-value-0123456789"}"#,
        "/api/vault/connections/{alias}" => r#"{"fields":{"api_key":"matrix-value-0123456789"}}"#,
        "/api/vault/model-keys/{provider}" => r#"{"value":"matrix-value-0123456789"}"#,
        "/api/models/{provider}" => {
            r#"{"provider":"anthropic","base_url":"http://127.0.0.1:9","assistant_model":"m","key":"matrix-value-0123456789"}"#
        }
        "/api/models/{provider}/test" => "{}",
        "/api/agents/{name}/tools/{tool}/test" => r#"{"arguments":{"query":"matrix"}}"#,
        "/api/interviews" | "/api/interviews/{id}/messages" => r#"{"message":"matrix"}"#,
        "/api/interviews/{id}/confirm" => r#"{"proposal":1}"#,
        "/api/supervisor" => r#"{"retries":1}"#,
        "/api/runs/{id}/shares" => "{}",
        "/api/workspace/revisions" => {
            r#"{"message":"matrix","changes":[{"path":"matrix-written.txt","action":"write","content":"m"}]}"#
        }
        _ if pattern.starts_with("/api/") => r#"{"note":"matrix"}"#,
        _ => {
            return Some((
                "application/x-www-form-urlencoded",
                "decision=reject&note=matrix&workflow=gated&display_name=Matrix\
                 &email=matrix-form%40example.test&role=viewer&name=MATRIX_FORM\
                 &value=matrix-form-value-0123&new_owner=p-nobody&alias=matrix_form\
                 &field_name_1=api_key&field_value_1=matrix-form-value-0123&provider=matrix-form\
                 &path=matrix.txt&content=matrix&message=matrix"
                    .to_owned(),
            ));
        }
    };
    Some(("application/json", json.to_owned()))
}

/// Whether the request names a resource of `acct` (in its path, or in its body: the new
/// owner, the workflow to run), so that a stranger must get the same 404 as for a resource
/// that does not exist.
fn names_a_resource(method: &str, pattern: &str) -> bool {
    pattern.contains("{id}")
        || pattern.contains("{run}")
        || pattern == "/api/ownership"
        || pattern == "/ownership"
        || (method == "POST" && (pattern == "/api/runs" || pattern == "/runs"))
}

fn same_account_role(caller: Caller) -> Option<(Role, bool)> {
    match caller {
        Caller::Person(role) => Some((role, false)),
        Caller::Key(role) => Some((role, true)),
        Caller::Nobody | Caller::StrangerPerson | Caller::StrangerKey => None,
    }
}

fn check(method: &str, pattern: &str, caller: Caller, answer: &Answer, secrets: &[&str]) {
    let policy = find_policy(method, pattern).unwrap();
    let context = format!(
        "{method} {pattern} as {caller:?}: {} {}",
        answer.status,
        answer.text()
    );
    assert_ne!(answer.status, 500, "{context}");
    let least = match policy.least_role {
        Access::Public | Access::Share | Access::Link => {
            assert!(
                answer.status != 401 && answer.status != 403,
                "a public or token route never asks for a role: {context}"
            );
            return;
        }
        Access::Role(least) => least,
    };
    let person_only = policy.caller == PolicyCaller::PersonOnly;
    match caller {
        // The console's front door sends a caller with no session to the sign-in form.
        Caller::Nobody if method == "GET" && pattern == "/" => {
            assert_eq!(answer.status, 303, "{context}");
            assert_eq!(
                answer.header("location").as_deref(),
                Some("/signin"),
                "{context}"
            );
        }
        Caller::Nobody => assert_eq!(answer.status, 401, "{context}"),
        Caller::StrangerPerson | Caller::StrangerKey => {
            let is_key = caller == Caller::StrangerKey;
            // The middleware judges the kind of principal and its role before any handler
            // knows the resource; a refusal there says nothing about the resource.
            if is_key && (person_only || Role::Admin < least) {
                assert_eq!(answer.status, 403, "{context}");
            } else if names_a_resource(method, pattern) {
                assert_eq!(answer.status, 404, "{context}");
            } else if pattern.contains("{name}")
                || pattern.contains("{alias}")
                || pattern.contains("{provider}")
                || names_a_workspace_file(pattern)
            {
                // A vault name or a file path is looked up in the caller's own account: the
                // stranger acts on its own secret, connection, model key or file of that name,
                // or finds none (never `acct`'s: its contents are among the secrets below).
                assert!(answer.status < 400 || answer.status == 404, "{context}");
            } else {
                assert!(answer.status < 400 || answer.status == 409, "{context}");
            }
            for secret in secrets {
                assert!(
                    !answer.text().contains(secret),
                    "another account's {secret} leaked: {context}"
                );
            }
        }
        Caller::Person(_) | Caller::Key(_) => {
            let (role, is_key) = same_account_role(caller).unwrap();
            if (is_key && person_only) || role < least {
                assert_eq!(answer.status, 403, "{context}");
            } else {
                assert!(
                    answer.status != 401 && answer.status != 403,
                    "an allowed caller was refused: {context}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_route_role_matrix_over_the_real_router() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let created = harness
        .call(
            "POST",
            &format!("/api/runs/{}/shares", run.as_str()),
            &owner,
            None,
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    let share_id = created.json()["id"].as_str().unwrap().to_owned();
    harness.add_person(TARGET_PERSON, "acct", storage::people::RoleName::Viewer);
    let key_text = harness.create_key("acct", Role::Viewer);
    let key_id = key_text.split('_').nth(1).unwrap().to_owned();
    let targets = Targets {
        run: run.to_string(),
        share_id,
        key_id,
    };
    harness
        .engine
        .workspaces()
        .for_account(&ids::AccountId::parse("acct").unwrap())
        .unwrap()
        .commit(
            &workspace::Author::Cli {
                os_user: "matrix".into(),
            },
            "the matrix's file",
            vec![(
                workspace::RelPath::parse(MATRIX_FILE).unwrap(),
                workspace::Change::Write(MATRIX_FILE_CONTENTS.as_bytes().to_vec()),
            )],
            &|_: &[u8]| false,
        )
        .unwrap();
    let member = person_id(Role::Member);
    let secrets = [
        MATRIX_FILE_CONTENTS,
        targets.run.as_str(),
        targets.share_id.as_str(),
        targets.key_id.as_str(),
        TARGET_PERSON,
        member.as_str(),
    ];
    let mut checked = 0;
    for (method, pattern) in registered_routes() {
        let path = concrete_path(method, pattern, &targets);
        for caller in Caller::all() {
            let credentials = harness.credentials(caller);
            let body = if method == "POST" || method == "PUT" {
                body_for(pattern)
            } else {
                None
            };
            let answer = harness.call(method, &path, &credentials, body).await;
            check(method, pattern, caller, &answer, &secrets);
            checked += 1;
        }
    }
    assert_eq!(checked, registered_routes().len() * Caller::all().len());
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_another_accounts_run_is_the_same_404_as_a_missing_one() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let stranger = harness.credentials(Caller::StrangerPerson);
    let theirs = harness
        .call(
            "GET",
            &format!("/api/runs/{}", run.as_str()),
            &stranger,
            None,
        )
        .await;
    let missing = harness
        .call("GET", "/api/runs/run-does-not-exist", &stranger, None)
        .await;
    assert_eq!((theirs.status, missing.status), (404, 404));
    assert_eq!(theirs.json()["error"], missing.json()["error"]);
    assert_eq!(theirs.headers.len(), missing.headers.len());
    let listed = harness.call("GET", "/api/runs", &stranger, None).await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.json(), serde_json::json!([]));
    let Credentials::Session { .. } = stranger else {
        panic!("a stranger person has a session");
    };
}
