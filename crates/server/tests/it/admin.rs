//! The console's admin pages go through the same rules and audit as the API: what is shown
//! once (a sign-in link, a key, a share link) appears on the answer page only, and the vault
//! page never shows a value.

use auth::Role;
use storage::AuditLog;

use crate::support::{Caller, Credentials, Harness, VAULT_VALUE};

fn form(body: &str) -> Option<(&'static str, String)> {
    Some(("application/x-www-form-urlencoded", body.to_owned()))
}

#[tokio::test(flavor = "multi_thread")]
async fn console_invite_and_key_are_shown_once() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let invited = harness
        .call(
            "POST",
            "/people",
            &admin,
            form("display_name=Ola&email=ola%40example.test&role=member"),
        )
        .await;
    assert_eq!(invited.status, 200, "{}", invited.text());
    let text = invited.text();
    let start = text.find("/welcome/").unwrap();
    let link = &text[start..start + "/welcome/".len() + 43];
    assert_eq!(
        harness
            .call("GET", link, &Credentials::None, None)
            .await
            .status,
        200
    );
    let people = harness.call("GET", "/people", &admin, None).await;
    assert!(people.text().contains("Ola"));
    assert!(!people.text().contains(link), "the link is shown once");
    let created = harness
        .call("POST", "/keys", &admin, form("name=deploy&role=member"))
        .await;
    assert_eq!(created.status, 200, "{}", created.text());
    let text = created.text();
    let start = text.find("sw_").unwrap();
    let key = text[start..].split('<').next().unwrap().to_owned();
    let key_credentials = Credentials::Key { text: key.clone() };
    assert_eq!(
        harness
            .call("GET", "/api/runs", &key_credentials, None)
            .await
            .status,
        200
    );
    let keys = harness.call("GET", "/keys", &admin, None).await;
    assert!(keys.text().contains("deploy"));
    assert!(!keys.text().contains(&key));
    let actions: Vec<String> = harness
        .store
        .audit_entries()
        .unwrap()
        .into_iter()
        .map(|entry| entry.action)
        .collect();
    assert!(actions.contains(&"person.invite".to_owned()));
    assert!(actions.contains(&"api_key.create".to_owned()));
}

#[tokio::test(flavor = "multi_thread")]
async fn console_vault_page_never_shows_a_value() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let set = harness
        .call(
            "POST",
            "/vault/secrets",
            &admin,
            form("name=SLACK_TOKEN&value=xoxb-console-value-0123456789"),
        )
        .await;
    assert_eq!(set.status, 303, "{}", set.text());
    let page = harness.call("GET", "/vault", &admin, None).await;
    assert_eq!(page.status, 200);
    assert!(page.text().contains("SLACK_TOKEN") && page.text().contains("DEPLOY_TOKEN"));
    assert!(!page.text().contains("xoxb-console-value-0123456789"));
    assert!(!page.text().contains(VAULT_VALUE));
    let member = harness.credentials(Caller::Person(Role::Member));
    let refused = harness
        .call("POST", "/vault/secrets", &member, form("name=X&value=y"))
        .await;
    assert_eq!(refused.status, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn console_revoke_all_sessions_ends_this_one() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let page = harness.call("GET", "/sessions", &member, None).await;
    assert!(page.text().contains("(this one)"), "{}", page.text());
    let revoked = harness
        .call("POST", "/sessions/revoke-all", &member, form(""))
        .await;
    assert_eq!(revoked.status, 303);
    assert_eq!(
        harness.call("GET", "/sessions", &member, None).await.status,
        401
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn console_share_link_is_shown_once_and_revocable() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let created = harness
        .call(
            "POST",
            &format!("/runs/{}/shares", run.as_str()),
            &member,
            form(""),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.text());
    let text = created.text();
    let start = text.find("/s/").unwrap();
    let path = text[start..start + 3 + 32].to_owned();
    assert_eq!(
        harness
            .call("GET", &path, &Credentials::None, None)
            .await
            .status,
        200
    );
    let listed = harness.call("GET", "/shares", &member, None).await;
    assert!(!listed.text().contains(&path));
    let link_id = {
        let text = listed.text();
        let start = text.find("shr_").unwrap();
        text[start..start + 4 + 32].to_owned()
    };
    let revoked = harness
        .call(
            "POST",
            &format!("/shares/{link_id}/revoke"),
            &member,
            form(""),
        )
        .await;
    assert_eq!(revoked.status, 303, "{}", revoked.text());
    assert_eq!(
        harness
            .call("GET", &path, &Credentials::None, None)
            .await
            .status,
        404
    );
}
