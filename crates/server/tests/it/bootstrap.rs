//! A new account gets exactly one owner, invited with a one-time link that sets a password.

use platform::accounts::{AccountError, NewOwner, create_account_with_owner};
use storage::people::{PeopleStore, RoleName};
use storage::{Account, AccountId, Actor, AuditLog, Timestamp};

use crate::support::{Credentials, Harness, START_MILLIS};

fn third_account() -> Account {
    Account {
        id: AccountId::parse("third").unwrap(),
        name: "Third".into(),
        created_at: Timestamp(START_MILLIS),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_new_account_has_one_owner_with_a_one_time_link() {
    let harness = Harness::new();
    let owner = NewOwner {
        display_name: "Tess".into(),
        email: "tess@example.test".into(),
    };
    let operator = Actor::Cli {
        os_user: "root".into(),
    };
    let invitation = create_account_with_owner(
        harness.store.as_ref(),
        harness.engine.scrub_sets(),
        &third_account(),
        &owner,
        operator.clone(),
        60_000,
    )
    .unwrap();
    let people = harness
        .store
        .people(&AccountId::parse("third").unwrap())
        .unwrap();
    assert_eq!(people.len(), 1);
    assert_eq!(people[0].role, RoleName::Owner);
    let page = harness
        .call("GET", &invitation.sign_in_path, &Credentials::None, None)
        .await;
    assert_eq!(page.status, 200);
    assert!(page.text().contains("Tess"));
    let again = create_account_with_owner(
        harness.store.as_ref(),
        harness.engine.scrub_sets(),
        &third_account(),
        &owner,
        operator,
        60_000,
    );
    assert!(
        matches!(
            again,
            Err(AccountError::Storage {
                source: storage::Error::AlreadyExists { .. },
                ..
            })
        ),
        "{again:?}"
    );
    assert_eq!(
        harness
            .store
            .people(&AccountId::parse("third").unwrap())
            .unwrap()
            .len(),
        1
    );
    let created = harness
        .store
        .audit_entries()
        .unwrap()
        .into_iter()
        .filter(|entry| entry.action == "account.create")
        .count();
    assert_eq!(created, 1);
}
