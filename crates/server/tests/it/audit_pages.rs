//! The audit log over the API and in the console (issue 11 findings 2 and 7, issue 14): pages
//! read in the store with a cursor in the answer, filters by who, what and when, the account's
//! chain verified by its admin (`GET /api/audit/verify`, the console's "Verify" action), and
//! the console's details as readable rows, escaped.

use auth::Role;
use serde_json::json;
use storage::AuditLog;

use crate::support::{ACCOUNT, Caller, Harness};

fn add_entries(harness: &Harness, count: usize) {
    let redactor = harness
        .engine
        .scrub_sets()
        .for_account(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    for index in 0..count {
        harness
            .store
            .append_audit(&storage::NewAuditEntry {
                account: storage::AccountId::parse(ACCOUNT).unwrap(),
                run: None,
                actor: redactor.scrub_fields(storage::Actor::Person {
                    id: format!("p-{}", index % 2),
                    name: "<b>Bold</b> Person".into(),
                }),
                action: if index.is_multiple_of(2) {
                    storage::AuditAction::RoleChange
                } else {
                    storage::AuditAction::ApiKeyCreate
                },
                detail: redactor.scrub_json(&json!({
                    "index": index,
                    "note": "<script>alert(1)</script>",
                    "nested": {"role": "member"}
                })),
                at: storage::Timestamp(crate::support::START_MILLIS + index as i64),
            })
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_the_audit_api_pages_with_a_cursor_and_visits_every_entry_once() {
    let harness = Harness::new();
    add_entries(&harness, 25);
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let mut seen = Vec::new();
    let mut path = "/api/audit?action=role.change&limit=4".to_owned();
    let mut pages = 0;
    loop {
        let answer = harness.call("GET", &path, &admin, None).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        let body = answer.json();
        let entries = body["entries"].as_array().unwrap();
        assert!(entries.len() <= 4);
        for entry in entries {
            assert_eq!(entry["action"], "role.change");
            seen.push(entry["detail"]["index"].as_u64().unwrap());
        }
        pages += 1;
        match body["older"].as_str() {
            Some(cursor) => path = format!("/api/audit?action=role.change&limit=4&older={cursor}"),
            None => break,
        }
    }
    let expected: Vec<u64> = (0..25_u64)
        .rev()
        .filter(|index| index.is_multiple_of(2))
        .collect();
    assert_eq!(seen, expected);
    assert_eq!(pages, 4);
    // Who and when.
    let answer = harness
        .call(
            "GET",
            &format!(
                "/api/audit?actor=person:p-1&from={}&to={}",
                crate::support::START_MILLIS + 3,
                crate::support::START_MILLIS + 9
            ),
            &admin,
            None,
        )
        .await;
    let indexes: Vec<u64> = answer.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["detail"]["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indexes, vec![9, 7, 5, 3]);
    // A cursor that is not one the API wrote is refused in words.
    let bad = harness
        .call("GET", "/api/audit?older=yesterday", &admin, None)
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn g25_an_admin_verifies_the_accounts_chain_and_a_changed_entry_is_named() {
    let harness = Harness::new();
    add_entries(&harness, 5);
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let intact = harness.call("GET", "/api/audit/verify", &admin, None).await;
    assert_eq!(intact.status, 200, "{}", intact.text());
    assert_eq!(intact.json()["intact"], true);
    let member = harness.credentials(Caller::Person(Role::Member));
    assert_eq!(
        harness
            .call("GET", "/api/audit/verify", &member, None)
            .await
            .status,
        403
    );
    let connection = rusqlite::Connection::open(harness.store.path()).unwrap();
    connection
        .execute_batch(&format!(
            "DROP TRIGGER audit_is_append_only_update;
             UPDATE audit_log SET detail = '{{\"index\":99}}'
                 WHERE account_id = '{ACCOUNT}' AND seq = 3;"
        ))
        .unwrap();
    let broken = harness.call("GET", "/api/audit/verify", &admin, None).await;
    assert_eq!(broken.status, 200);
    let body = broken.json();
    assert_eq!(body["intact"], false, "{body}");
    assert_eq!(body["broken"]["seq"], 3);
    assert!(
        body["broken"]["message"]
            .as_str()
            .unwrap()
            .contains("entry 3 of account acct is broken"),
        "{body}"
    );
    // The console's action says the same.
    let page = harness.call("GET", "/audit/verify", &admin, None).await;
    assert_eq!(page.status, 200);
    assert!(
        page.text().contains("entry 3 of account acct is broken"),
        "{}",
        page.text()
    );
    // Another account's chain is not this account's business, and is intact.
    assert!(
        harness
            .store
            .verify_account_audit(
                &storage::AccountId::parse(crate::support::OTHER_ACCOUNT).unwrap()
            )
            .unwrap()
            .is_ok()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_console_audit_page_filters_pages_and_shows_details_as_escaped_rows() {
    let harness = Harness::new();
    add_entries(&harness, 120);
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let first = harness.call("GET", "/audit", &admin, None).await;
    assert_eq!(first.status, 200, "{}", first.text());
    let text = first.text();
    // Details as rows, escaped; no raw JSON.
    assert!(
        text.contains("&lt;script&gt;") || text.contains("&#60;script&#62;"),
        "not escaped: {text}"
    );
    assert!(!text.contains("<script>alert"), "markup reached the page");
    assert!(!text.contains("{\"index\""), "raw JSON on the page");
    assert!(text.contains("nested.role"), "nested fields are not rows");
    // Filters, and a next page link that keeps them.
    assert!(text.contains("name=\"action\""));
    assert!(text.contains("name=\"actor\""));
    assert!(text.contains("name=\"from\"") && text.contains("name=\"to\""));
    let next = text
        .split("href=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().replace("&amp;", "&"))
        .find(|href| href.starts_with("/audit?") && href.contains("older="))
        .expect("a link to older entries");
    let second = harness.call("GET", &next, &admin, None).await;
    assert_eq!(second.status, 200);
    let second_text = second.text();
    assert!(
        second_text.contains("Newer entries"),
        "no link back to newer entries"
    );
    let filtered = harness
        .call(
            "GET",
            "/audit?action=api_key.create&actor=person%3Ap-1",
            &admin,
            None,
        )
        .await;
    assert_eq!(filtered.status, 200);
    assert!(!filtered.text().contains(">role.change<"));
    assert!(filtered.text().contains("api_key.create"));
    // Each entry in one sentence, its details folded (issue 42, point 7).
    assert!(
        filtered
            .text()
            .contains("Bold&#60;/b&#62; Person created the API key</span>")
            || filtered
                .text()
                .contains("Bold&lt;/b&gt; Person created the API key</span>"),
        "{}",
        filtered.text()
    );
}
