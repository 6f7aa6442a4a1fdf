//! G25/G26/G19/G22: the account's workspace through the server. Every write is a revision
//! authored by the person or the key (never a key as a person), audited by paths; a write
//! holding a vault value is refused whole; paths outside the workspace or protected are
//! refused; another account sees none of it.

use auth::Role;
use base64::Engine as _;
use serde_json::{Value, json};
use storage::AuditLog;

use crate::support::{
    ACCOUNT, Caller, Credentials, Harness, OTHER_ACCOUNT, VAULT_VALUE, person_id,
};

fn write_body(changes: Value) -> Option<(&'static str, String)> {
    Some((
        "application/json",
        json!({"message": "from the test", "changes": changes}).to_string(),
    ))
}

fn form(body: &str) -> Option<(&'static str, String)> {
    Some(("application/x-www-form-urlencoded", body.to_owned()))
}

async fn write_one(harness: &Harness, who: &Credentials, path: &str, content: &str) -> Value {
    let answer = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            who,
            write_body(json!([{"path": path, "action": "write", "content": content}])),
        )
        .await;
    assert_eq!(answer.status, 201, "{}", answer.text());
    answer.json()
}

async fn listed_paths(harness: &Harness, who: &Credentials) -> Vec<String> {
    let answer = harness.call("GET", "/api/workspace/files", who, None).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    answer
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|file| file["path"].as_str().unwrap().to_owned())
        // The harness's workflows are files of the workspace too (issue 16 §1).
        .filter(|path| !path.starts_with("workflows/"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_a_write_through_the_api_is_a_revision_authored_by_the_person() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let revision = write_one(&harness, &member, "inputs/list.csv", "a,b\n1,2\n").await;
    assert_eq!(revision["author_kind"], "person");
    assert_eq!(revision["author"], person_id(Role::Member));
    assert_eq!(revision["message"], "from the test");
    // The console names the person, not their id (issue 42, point 6).
    let page = harness.call("GET", "/files", &member, None).await.text();
    assert!(page.contains("by The member: from the test"), "{page}");
    assert!(
        !page.contains(&format!("by person {}", person_id(Role::Member))),
        "{page}"
    );
    assert_eq!(revision["changes"][0]["path"], "inputs/list.csv");

    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    assert_eq!(
        listed_paths(&harness, &viewer).await,
        vec!["inputs/list.csv"]
    );
    let read = harness
        .call(
            "GET",
            "/api/workspace/file?path=inputs/list.csv",
            &viewer,
            None,
        )
        .await;
    assert_eq!(read.status, 200, "{}", read.text());
    assert_eq!(read.json()["content"], "a,b\n1,2\n");
    assert_eq!(read.json()["encoding"], "utf-8");
    let history = harness
        .call("GET", "/api/workspace/revisions", &viewer, None)
        .await
        .json();
    assert_eq!(history[0]["id"], revision["id"]);

    // What steps see: the engine's folder of this account holds the file.
    let _folder = harness
        .engine
        .workspaces()
        .for_account(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    assert_eq!(
        std::fs::read(harness.working_folder(ACCOUNT).join("inputs/list.csv")).unwrap(),
        b"a,b\n1,2\n"
    );
    let audited: Vec<_> = harness
        .store
        .audit_entries()
        .unwrap()
        .into_iter()
        .filter(|entry| entry.action == "workspace.write")
        .collect();
    assert_eq!(audited.len(), 1);
    assert_eq!(audited[0].actor.kind(), "person");
    assert_eq!(audited[0].detail["revision"], revision["id"]);
    assert_eq!(audited[0].detail["paths"], json!(["inputs/list.csv"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_a_write_by_an_api_key_is_recorded_as_the_key() {
    let harness = Harness::new();
    let key = harness.credentials(Caller::Key(Role::Member));
    let Credentials::Key { text } = &key else {
        panic!("a key caller has a key");
    };
    let key_id = text.split('_').nth(1).unwrap().to_owned();
    let revision = write_one(&harness, &key, "from-key.txt", "k").await;
    assert_eq!(revision["author_kind"], "api_key");
    assert_eq!(revision["author"], key_id);
    let entry = harness
        .store
        .audit_entries()
        .unwrap()
        .into_iter()
        .find(|entry| entry.action == "workspace.write")
        .unwrap();
    assert_eq!(
        (entry.actor.kind(), entry.actor.id()),
        ("api_key", key_id.as_str())
    );
    // A viewer key reads but does not write.
    let viewer_key = harness.credentials(Caller::Key(Role::Viewer));
    let refused = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &viewer_key,
            write_body(json!([{"path": "v.txt", "action": "write", "content": "v"}])),
        )
        .await;
    assert_eq!(refused.status, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn g19_a_write_holding_a_vault_value_is_refused_whole() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let encoded = base64::engine::general_purpose::STANDARD.encode(VAULT_VALUE);
    let attempts = [
        json!([
            {"path": "clean.txt", "action": "write", "content": "nothing here"},
            {"path": "leak.txt", "action": "write", "content": format!("token={VAULT_VALUE}")},
        ]),
        json!([{"path": format!("{VAULT_VALUE}.txt"), "action": "write", "content": "x"}]),
        json!([{"path": "b64.txt", "action": "write", "content": format!("key: {encoded}")}]),
        json!([{"path": "raw.bin", "action": "write", "encoding": "base64",
                "content": base64::engine::general_purpose::STANDARD.encode(VAULT_VALUE)}]),
    ];
    for changes in attempts {
        let answer = harness
            .call(
                "POST",
                "/api/workspace/revisions",
                &member,
                write_body(changes.clone()),
            )
            .await;
        assert_eq!(answer.status, 422, "{changes}: {}", answer.text());
        assert!(!answer.text().contains(VAULT_VALUE));
    }
    let message = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &member,
            Some((
                "application/json",
                json!({"message": format!("pasted {VAULT_VALUE}"),
                       "changes": [{"path": "m.txt", "action": "write", "content": "m"}]})
                .to_string(),
            )),
        )
        .await;
    assert_eq!(message.status, 422, "{}", message.text());
    assert!(listed_paths(&harness, &member).await.is_empty());
    let history = harness
        .call("GET", "/api/workspace/revisions", &member, None)
        .await;
    // Only the harness's seed of its workflows.
    assert_eq!(history.json().as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn g22_paths_outside_the_workspace_or_protected_are_refused() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    for path in [
        "../escape.txt",
        "/etc/passwd",
        "a/../../b",
        ".secrets",
        "",
        "a\u{0}b",
    ] {
        let answer = harness
            .call(
                "POST",
                "/api/workspace/revisions",
                &member,
                write_body(json!([{"path": path, "action": "write", "content": "x"}])),
            )
            .await;
        assert_eq!(answer.status, 400, "{path:?}: {}", answer.text());
    }
    for query in [
        "path=../stepward.db",
        "path=%2Fetc%2Fpasswd",
        "",
        "path=.secrets",
    ] {
        let answer = harness
            .call(
                "GET",
                &format!("/api/workspace/file?{query}"),
                &member,
                None,
            )
            .await;
        assert!(
            answer.status == 400 || answer.status == 404,
            "{query}: {} {}",
            answer.status,
            answer.text()
        );
    }
    let unknown = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &member,
            write_body(json!([{"path": "gone.txt", "action": "delete"}])),
        )
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.text());
    assert!(listed_paths(&harness, &member).await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_another_accounts_workspace_is_never_reached() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    write_one(&harness, &member, "plan.txt", "acct's own plan").await;
    for stranger in [Caller::StrangerPerson, Caller::StrangerKey] {
        let stranger = harness.credentials(stranger);
        assert!(listed_paths(&harness, &stranger).await.is_empty());
        let read = harness
            .call("GET", "/api/workspace/file?path=plan.txt", &stranger, None)
            .await;
        assert_eq!(read.status, 404);
        let history = harness
            .call("GET", "/api/workspace/revisions", &stranger, None)
            .await;
        assert_eq!(history.json(), json!([]));
    }
    // A stranger's file of the same name lands in their own account's folder.
    let stranger = harness.credentials(Caller::StrangerKey);
    write_one(&harness, &stranger, "plan.txt", "the other plan").await;
    let ours = harness
        .call("GET", "/api/workspace/file?path=plan.txt", &member, None)
        .await;
    assert_eq!(ours.json()["content"], "acct's own plan");
    let _theirs = harness
        .engine
        .workspaces()
        .for_account(&ids::AccountId::parse(OTHER_ACCOUNT).unwrap())
        .unwrap();
    assert_eq!(
        std::fs::read(harness.working_folder(OTHER_ACCOUNT).join("plan.txt")).unwrap(),
        b"the other plan"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_console_writes_shows_escaped_and_deletes_files() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let written = harness
        .call(
            "POST",
            "/files",
            &member,
            form("path=notes%2Ftodo.html&content=%3Cscript%3Ealert(1)%3C%2Fscript%3E&message=plan"),
        )
        .await;
    assert_eq!(written.status, 303, "{}", written.text());
    assert_eq!(
        written.header("location").as_deref(),
        Some("/files/view?path=notes/todo.html")
    );
    let page = harness
        .call("GET", "/files/view?path=notes/todo.html", &member, None)
        .await;
    assert_eq!(page.status, 200);
    assert!(
        page.text()
            .contains("&#60;script&#62;alert(1)&#60;/script&#62;")
    );
    assert!(!page.text().contains("<script>"));
    let listing = harness.call("GET", "/files", &member, None).await;
    assert!(listing.text().contains("notes/todo.html"));
    assert!(
        listing.text().contains("by The member:"),
        "the author, by name"
    );
    // A viewer reads without a write form.
    let viewer = harness.credentials(Caller::Person(Role::Viewer));
    let viewed = harness.call("GET", "/files", &viewer, None).await;
    assert!(viewed.text().contains("notes/todo.html"));
    assert!(!viewed.text().contains("action=\"/files\""));
    let deleted = harness
        .call(
            "POST",
            "/files/delete",
            &member,
            form("path=notes%2Ftodo.html"),
        )
        .await;
    assert_eq!(deleted.status, 303, "{}", deleted.text());
    assert!(listed_paths(&harness, &member).await.is_empty());
    let history = harness
        .call("GET", "/api/workspace/revisions", &member, None)
        .await
        .json();
    // The harness's seed, the write and the deletion.
    assert_eq!(history.as_array().unwrap().len(), 3);
    assert_eq!(history[0]["changes"][0]["deleted"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn g19_a_file_put_in_the_folder_by_hand_is_answered_scrubbed() {
    let harness = Harness::new();
    let _folder = harness
        .engine
        .workspaces()
        .for_account(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    std::fs::write(
        harness.working_folder(ACCOUNT).join("by-hand.txt"),
        format!("token={VAULT_VALUE}\n"),
    )
    .unwrap();
    let member = harness.credentials(Caller::Person(Role::Member));
    let read = harness
        .call("GET", "/api/workspace/file?path=by-hand.txt", &member, None)
        .await;
    assert_eq!(read.status, 200);
    assert!(!read.text().contains(VAULT_VALUE), "{}", read.text());
    let page = harness
        .call("GET", "/files/view?path=by-hand.txt", &member, None)
        .await;
    assert!(!page.text().contains(VAULT_VALUE));
}

#[tokio::test(flavor = "multi_thread")]
async fn g17_a_value_across_the_cut_of_a_long_file_is_never_half_shown() {
    let harness = Harness::new();
    let _folder = harness
        .engine
        .workspaces()
        .for_account(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    // The value starts 10 bytes before the 1 MiB the server shows and ends after it.
    let mut contents = vec![b'x'; 1024 * 1024 - 10];
    contents.extend_from_slice(VAULT_VALUE.as_bytes());
    contents.extend_from_slice(b"\nrest\n");
    std::fs::write(harness.working_folder(ACCOUNT).join("long.log"), &contents).unwrap();
    let member = harness.credentials(Caller::Person(Role::Member));
    let read = harness
        .call("GET", "/api/workspace/file?path=long.log", &member, None)
        .await;
    assert_eq!(read.status, 200);
    let view = read.json();
    assert_eq!(view["truncated"], true);
    let shown = view["content"].as_str().unwrap();
    assert!(
        !shown.ends_with(&VAULT_VALUE[..10]) && !shown.contains(&VAULT_VALUE[..8]),
        "half a value is shown: {}",
        &shown[shown.len() - 40..]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn g16_listing_and_history_are_scrubbed_of_values_written_before_they_were_secret() {
    let harness = Harness::new();
    let folder = harness
        .engine
        .workspaces()
        .for_account(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    const LATER: &str = "sk_live_entered_the_vault_later_5Qx";
    // Written while the value was nothing secret: by hand, and as a revision.
    std::fs::write(
        harness.working_folder(ACCOUNT).join(format!("{LATER}.txt")),
        b"x",
    )
    .unwrap();
    folder
        .commit(
            &workspace::Author::Cli {
                os_user: "ops".into(),
            },
            &format!("notes about {LATER}"),
            vec![(
                workspace::RelPath::parse(&format!("dir/{LATER}")).unwrap(),
                workspace::Change::Write(b"y".to_vec()),
            )],
            &|_: &[u8]| false,
        )
        .unwrap();
    harness
        .vault
        .secrets()
        .set(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "LATER",
            redact::SecretValue::new(LATER.into()),
        )
        .unwrap();
    let member = harness.credentials(Caller::Person(Role::Member));
    for path in ["/api/workspace/files", "/api/workspace/revisions", "/files"] {
        let answer = harness.call("GET", path, &member, None).await;
        assert_eq!(answer.status, 200, "{path}");
        assert!(!answer.text().contains(LATER), "{path}: {}", answer.text());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_refused_writes_are_audited_without_the_value_and_conflicts_are_409() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let refused = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &member,
            write_body(json!([{"path": "leak.txt", "action": "write", "content": VAULT_VALUE}])),
        )
        .await;
    assert_eq!(refused.status, 422);
    let entries = harness.store.audit_entries().unwrap();
    let recorded = entries
        .iter()
        .find(|entry| entry.action == "workspace.write_refused")
        .expect("the refusal is audited");
    assert_eq!(recorded.detail["paths"], json!(["leak.txt"]));
    assert!(!format!("{entries:?}").contains(VAULT_VALUE));

    write_one(&harness, &member, "data", "a file").await;
    let conflict = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &member,
            write_body(json!([
                {"path": "fine.txt", "action": "write", "content": "fine"},
                {"path": "data/inner.txt", "action": "write", "content": "x"},
            ])),
        )
        .await;
    assert_eq!(conflict.status, 409, "{}", conflict.text());
    assert!(
        conflict.text().contains("data is a file"),
        "{}",
        conflict.text()
    );
    assert_eq!(listed_paths(&harness, &member).await, vec!["data"]);
    let history = harness
        .call("GET", "/api/workspace/revisions", &member, None)
        .await;
    // The harness's seed and the one write.
    assert_eq!(history.json().as_array().unwrap().len(), 2);
}

/// No account fills the disk for the others: a write beyond the account's history quota is
/// refused whole (507), and the refusal is audited.
#[tokio::test(flavor = "multi_thread")]
async fn g25_a_write_beyond_the_accounts_quota_is_refused_whole() {
    let harness = Harness::with_workspace_quota(128 * 1024);
    let member = harness.credentials(Caller::Person(Role::Member));
    write_one(&harness, &member, "first.txt", &"a".repeat(40 * 1024)).await;
    let refused = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &member,
            write_body(json!([{"path": "second.txt", "action": "write", "content": "b".repeat(40 * 1024)}])),
        )
        .await;
    assert_eq!(refused.status, 507, "{}", refused.text());
    assert_eq!(listed_paths(&harness, &member).await, vec!["first.txt"]);
    let entries = harness.store.audit_entries().unwrap();
    assert!(
        entries
            .iter()
            .any(|entry| entry.action == "workspace.write_refused"),
        "the refusal is audited"
    );
    // Another account's quota is its own.
    let stranger = harness.credentials(Caller::StrangerKey);
    write_one(&harness, &stranger, "theirs.txt", &"c".repeat(40 * 1024)).await;
}

/// G16 (review N6): an error answer is scrubbed like any other. A refusal of a path that holds
/// a value of the account, or one set after the request was written, never repeats it, in JSON
/// or on a page.
#[tokio::test(flavor = "multi_thread")]
async fn g16_error_answers_never_repeat_a_value_of_the_account() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    for path in [
        format!("../{VAULT_VALUE}"),
        format!("/{VAULT_VALUE}"),
        format!("a/../../{VAULT_VALUE}/b"),
        format!(".secrets/{VAULT_VALUE}"),
    ] {
        let route = format!("/api/workspace/file?path={path}");
        let answer = harness.call("GET", &route, &member, None).await;
        assert!(answer.status >= 400, "{route}: {}", answer.status);
        assert!(
            !answer.text().contains(VAULT_VALUE),
            "{route}: {}",
            answer.text()
        );
        let written = harness
            .call(
                "POST",
                "/api/workspace/revisions",
                &member,
                write_body(json!([{"path": path, "action": "write", "content": "x"}])),
            )
            .await;
        assert!(written.status >= 400, "{path}: {}", written.status);
        assert!(
            !written.text().contains(VAULT_VALUE),
            "{path}: {}",
            written.text()
        );
        let deleted = harness
            .call(
                "POST",
                "/api/workspace/revisions",
                &member,
                write_body(json!([{"path": format!("ok/{VAULT_VALUE}"), "action": "delete", "content": "x"}])),
            )
            .await;
        assert!(deleted.status >= 400, "{path}: {}", deleted.status);
        assert!(
            !deleted.text().contains(VAULT_VALUE),
            "{path}: {}",
            deleted.text()
        );
    }
}

/// G27, agents review finding 3: through the API and the console, a write of an agent file
/// that changes what a saved workflow may reach is refused with the workflow and its changed
/// rows, nothing written, until the workflow is confirmed by name.
#[tokio::test(flavor = "multi_thread")]
async fn g27_a_write_that_widens_a_saved_workflows_reach_needs_its_confirmation() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let filer =
        "---\nname: filer\ndescription: Files.\ntools: [Read]\nnetwork: none\n---\nFiles.\n";
    let wider = "---\nname: filer\ndescription: Files.\ntools: [Read]\nnetwork: public_egress\n---\nFiles.\n";
    write_one(&harness, &member, "agents/filer/AGENT.md", filer).await;
    write_one(
        &harness,
        &member,
        "workflows/payroll.yaml",
        "name: payroll\npython: \"3.11\"\nsteps:\n  - id: summarise\n    agent: filer\n    task: Summarise.\n",
    )
    .await;
    let change = json!([{"path": "agents/filer/AGENT.md", "action": "write", "content": wider}]);
    let refused = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &member,
            write_body(change.clone()),
        )
        .await;
    assert!(
        refused.status >= 400 && refused.status < 500,
        "{}",
        refused.text()
    );
    let said = refused.text();
    assert!(
        said.contains("payroll") && said.contains("internet yes"),
        "{said}"
    );
    // The console's form answers the page again with the list and a box that confirms it.
    let page = harness
        .call(
            "POST",
            "/files",
            &member,
            form(&format!(
                "path=agents%2Ffiler%2FAGENT.md&content={}&message=m",
                urlencoding(wider)
            )),
        )
        .await;
    assert!(
        page.text().contains("name=\"confirm_reach\""),
        "{}",
        page.text()
    );
    let confirmed = harness
        .call(
            "POST",
            "/api/workspace/revisions",
            &member,
            Some((
                "application/json",
                json!({"message": "wider", "changes": change, "confirm_reach": ["payroll"]})
                    .to_string(),
            )),
        )
        .await;
    assert_eq!(confirmed.status, 201, "{}", confirmed.text());
}

fn urlencoding(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                (byte as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}
