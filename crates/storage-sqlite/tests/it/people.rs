//! People, roles, sessions, API keys, sign-in links and share links (G24, G26), through the
//! `PeopleStore` trait object so that any backend can be dropped in.

use storage::people::{
    LinkRedemption, NewApiKey, NewPerson, NewSession, NewShareLink, NewSignInLink, PeopleChange,
    PeopleStore, RoleName, TokenHash,
};
use storage::{Account, AccountId, AccountStore, Error, RunId, Timestamp};

use crate::support::temp_store;

fn account(id: &str) -> AccountId {
    AccountId::parse(id).unwrap()
}

fn person(id: &str, account_id: &str, role: RoleName) -> NewPerson {
    NewPerson {
        id: id.to_owned(),
        account: account(account_id),
        display_name: format!("Person {id}"),
        email: format!("{id}@example.test"),
        role,
        password_hash: None,
        created_at: Timestamp(1),
    }
}

fn hash(byte: u8) -> TokenHash {
    TokenHash([byte; 32])
}

/// A store with account `acct` holding an owner `olive` and a member `max`.
fn seeded() -> (tempfile::TempDir, storage_sqlite::SqliteStore) {
    let (dir, store) = temp_store();
    for id in ["acct", "other"] {
        store
            .create_account(&Account {
                id: account(id),
                name: id.to_owned(),
                created_at: Timestamp(0),
            })
            .unwrap();
    }
    let people: &dyn PeopleStore = &store;
    assert_eq!(
        people
            .create_person(&person("olive", "acct", RoleName::Owner))
            .unwrap(),
        PeopleChange::Done
    );
    assert_eq!(
        people
            .create_person(&NewPerson {
                created_at: Timestamp(2),
                ..person("max", "acct", RoleName::Member)
            })
            .unwrap(),
        PeopleChange::Done
    );
    (dir, store)
}

fn roles(store: &dyn PeopleStore, account_id: &str) -> Vec<(String, RoleName)> {
    store
        .people(&account(account_id))
        .unwrap()
        .into_iter()
        .map(|person| (person.id, person.role))
        .collect()
}

#[test]
fn g26_first_person_of_an_account_must_be_its_owner() {
    let (_dir, store) = seeded();
    let people: &dyn PeopleStore = &store;
    assert_eq!(
        people
            .create_person(&person("vic", "other", RoleName::Viewer))
            .unwrap(),
        PeopleChange::WouldBreakSingleOwner {
            account: account("other"),
            owners: 0
        }
    );
    assert!(people.people(&account("other")).unwrap().is_empty());
}

#[test]
fn g26_a_second_owner_is_never_created_nor_granted() {
    let (_dir, store) = seeded();
    let people: &dyn PeopleStore = &store;
    assert_eq!(
        people
            .create_person(&person("oscar", "acct", RoleName::Owner))
            .unwrap(),
        PeopleChange::WouldBreakSingleOwner {
            account: account("acct"),
            owners: 2
        }
    );
    assert_eq!(
        people
            .change_role(&account("acct"), "max", RoleName::Owner, Timestamp(4))
            .unwrap(),
        PeopleChange::OwnerOnlyByTransfer {
            account: account("acct")
        }
    );
    assert_eq!(
        people
            .change_role(&account("acct"), "olive", RoleName::Admin, Timestamp(4))
            .unwrap(),
        PeopleChange::OwnerOnlyByTransfer {
            account: account("acct")
        }
    );
    assert_eq!(
        roles(people, "acct"),
        vec![
            ("olive".to_owned(), RoleName::Owner),
            ("max".to_owned(), RoleName::Member)
        ]
    );
}

#[test]
fn g26_the_database_itself_refuses_a_second_owner() {
    let (_dir, store) = seeded();
    let connection = rusqlite::Connection::open(store.path()).unwrap();
    let error = connection
        .execute("UPDATE people SET role = 'owner' WHERE id = 'max'", [])
        .unwrap_err();
    assert!(error.to_string().contains("UNIQUE"), "{error}");
}

#[test]
fn g26_change_role_between_non_owner_roles() {
    let (_dir, store) = seeded();
    let people: &dyn PeopleStore = &store;
    assert_eq!(
        people
            .change_role(&account("acct"), "max", RoleName::Admin, Timestamp(4))
            .unwrap(),
        PeopleChange::Done
    );
    assert_eq!(people.person("max").unwrap().unwrap().role, RoleName::Admin);
    assert_eq!(
        people
            .change_role(&account("other"), "max", RoleName::Viewer, Timestamp(4))
            .unwrap(),
        PeopleChange::NoSuchPerson {
            account: account("other"),
            person_id: "max".into()
        }
    );
    assert_eq!(people.person("max").unwrap().unwrap().role, RoleName::Admin);
}

#[test]
fn g26_ownership_transfer_swaps_both_roles_in_one_step() {
    let (_dir, store) = seeded();
    let people: &dyn PeopleStore = &store;
    assert_eq!(
        people
            .transfer_ownership(&account("acct"), "max", "olive")
            .unwrap(),
        PeopleChange::OwnerOnlyByTransfer {
            account: account("acct")
        }
    );
    assert_eq!(
        people
            .transfer_ownership(&account("acct"), "olive", "olive")
            .unwrap(),
        PeopleChange::OwnerOnlyByTransfer {
            account: account("acct")
        }
    );
    // Ownership goes only to a person who has signed in (issue 11, finding 8).
    assert_eq!(
        people
            .transfer_ownership(&account("acct"), "olive", "max")
            .unwrap(),
        PeopleChange::NewOwnerNeverSignedIn {
            account: account("acct"),
            person_id: "max".into()
        }
    );
    people
        .create_sign_in_link(&NewSignInLink {
            token_hash: hash(40),
            person_id: "max".into(),
            created_at: Timestamp(3),
            expires_at: Timestamp(100),
        })
        .unwrap();
    assert!(matches!(
        people
            .redeem_sign_in_link(&hash(40), "$argon2id$stand-in", Timestamp(4))
            .unwrap(),
        LinkRedemption::Redeemed { .. }
    ));
    assert_eq!(
        people
            .transfer_ownership(&account("acct"), "olive", "max")
            .unwrap(),
        PeopleChange::Done
    );
    assert_eq!(
        roles(people, "acct"),
        vec![
            ("olive".to_owned(), RoleName::Admin),
            ("max".to_owned(), RoleName::Owner)
        ]
    );
}

#[test]
fn g26_the_owner_cannot_be_removed_and_removal_revokes_sessions() {
    let (_dir, store) = seeded();
    let people: &dyn PeopleStore = &store;
    assert_eq!(
        people
            .remove_person(&account("acct"), "olive", Timestamp(5))
            .unwrap(),
        PeopleChange::OwnerOnlyByTransfer {
            account: account("acct")
        }
    );
    people
        .create_session(&NewSession {
            id: "s1".into(),
            token_hash: hash(1),
            person_id: "max".into(),
            created_at: Timestamp(2),
            browser: None,
            address: None,
        })
        .unwrap();
    assert_eq!(
        people
            .remove_person(&account("acct"), "max", Timestamp(5))
            .unwrap(),
        PeopleChange::Done
    );
    assert!(people.person("max").unwrap().is_none());
    assert!(people.session_by_token(&hash(1)).unwrap().is_none());
}

#[test]
fn g26_emails_are_unique_within_an_account() {
    let (_dir, store) = seeded();
    let people: &dyn PeopleStore = &store;
    let duplicate = NewPerson {
        id: "max2".into(),
        email: "max@example.test".into(),
        ..person("max2", "acct", RoleName::Viewer)
    };
    assert!(matches!(
        people.create_person(&duplicate),
        Err(Error::AlreadyExists { .. })
    ));
    let found = people
        .person_by_email(&account("acct"), "max@example.test")
        .unwrap()
        .unwrap();
    assert_eq!(found.id, "max");
    assert!(
        people
            .person_by_email(&account("other"), "max@example.test")
            .unwrap()
            .is_none()
    );
}

#[test]
fn g26_sign_in_link_is_single_use_and_expires() {
    let (_dir, store) = seeded();
    let people: &dyn PeopleStore = &store;
    people
        .create_sign_in_link(&NewSignInLink {
            token_hash: hash(7),
            person_id: "olive".into(),
            created_at: Timestamp(10),
            expires_at: Timestamp(100),
        })
        .unwrap();
    // Looking at a link does not use it.
    for _ in 0..2 {
        let link = people
            .usable_sign_in_link(&hash(7), Timestamp(50))
            .unwrap()
            .unwrap();
        assert_eq!(link.person.id, "olive");
    }
    assert!(
        people
            .usable_sign_in_link(&hash(7), Timestamp(100))
            .unwrap()
            .is_none(),
        "a link is dead at its expiry"
    );
    assert_eq!(
        people
            .redeem_sign_in_link(&hash(7), "$argon2id$v=19$late", Timestamp(100))
            .unwrap(),
        LinkRedemption::Unusable
    );
    let LinkRedemption::Redeemed { person } = people
        .redeem_sign_in_link(&hash(7), "$argon2id$v=19$first", Timestamp(50))
        .unwrap()
    else {
        panic!("the first use must redeem the link");
    };
    assert_eq!(
        person.password_hash.as_deref(),
        Some("$argon2id$v=19$first")
    );
    assert_eq!(
        people
            .redeem_sign_in_link(&hash(7), "$argon2id$v=19$second", Timestamp(51))
            .unwrap(),
        LinkRedemption::Unusable
    );
    assert!(
        people
            .usable_sign_in_link(&hash(7), Timestamp(52))
            .unwrap()
            .is_none()
    );
    assert_eq!(
        people
            .person("olive")
            .unwrap()
            .unwrap()
            .password_hash
            .as_deref(),
        Some("$argon2id$v=19$first")
    );
    assert_eq!(
        people
            .redeem_sign_in_link(&hash(8), "$argon2id$v=19$unknown", Timestamp(50))
            .unwrap(),
        LinkRedemption::Unusable
    );
}

#[test]
fn g26_sessions_revoke_one_all_and_touch() {
    let (_dir, store) = seeded();
    let people: &dyn PeopleStore = &store;
    for (id, byte, person) in [("s1", 1, "max"), ("s2", 2, "max"), ("s3", 3, "olive")] {
        people
            .create_session(&NewSession {
                id: id.into(),
                token_hash: hash(byte),
                person_id: person.into(),
                created_at: Timestamp(i64::from(byte)),
                browser: (byte == 1).then(|| "Firefox 133 on Linux".to_owned()),
                address: (byte == 1).then(|| "192.0.2.7".to_owned()),
            })
            .unwrap();
    }
    let session = people.session_by_token(&hash(1)).unwrap().unwrap();
    assert_eq!(session.account, account("acct"));
    assert_eq!(session.browser.as_deref(), Some("Firefox 133 on Linux"));
    assert_eq!(session.address.as_deref(), Some("192.0.2.7"));
    let other = people.session_by_token(&hash(2)).unwrap().unwrap();
    assert_eq!((other.browser, other.address), (None, None));
    assert_eq!(session.last_used_at, Timestamp(1));
    people.touch_session("s1", Timestamp(40)).unwrap();
    people.touch_session("s1", Timestamp(30)).unwrap();
    assert_eq!(
        people
            .session_by_token(&hash(1))
            .unwrap()
            .unwrap()
            .last_used_at,
        Timestamp(40),
        "last use never moves back"
    );
    assert!(
        !people.revoke_session("olive", "s1", Timestamp(50)).unwrap(),
        "a person revokes only their own sessions"
    );
    assert!(people.revoke_session("max", "s1", Timestamp(50)).unwrap());
    assert!(!people.revoke_session("max", "s1", Timestamp(51)).unwrap());
    assert_eq!(
        people
            .session_by_token(&hash(1))
            .unwrap()
            .unwrap()
            .revoked_at,
        Some(Timestamp(50))
    );
    let live: Vec<String> = people
        .live_sessions("max")
        .unwrap()
        .into_iter()
        .map(|session| session.id)
        .collect();
    assert_eq!(live, vec!["s2".to_owned()]);
    assert_eq!(people.revoke_sessions_of("max", Timestamp(60)).unwrap(), 1);
    assert!(people.live_sessions("max").unwrap().is_empty());
    assert_eq!(people.live_sessions("olive").unwrap().len(), 1);
}

#[test]
fn g26_api_keys_store_hash_role_last_use_and_revocation() {
    let (_dir, store) = seeded();
    let people: &dyn PeopleStore = &store;
    people
        .create_api_key(&NewApiKey {
            key_id: "0123456789abcdef".into(),
            token_hash: hash(9),
            account: account("acct"),
            role: RoleName::Member,
            name: "ci".into(),
            created_by: "olive".into(),
            created_at: Timestamp(3),
        })
        .unwrap();
    let key = people.api_key("0123456789abcdef").unwrap().unwrap();
    assert_eq!(
        (key.role, key.token_hash, key.last_used_at, key.revoked_at),
        (RoleName::Member, hash(9), None, None)
    );
    people
        .touch_api_key("0123456789abcdef", Timestamp(20))
        .unwrap();
    assert_eq!(
        people
            .api_key("0123456789abcdef")
            .unwrap()
            .unwrap()
            .last_used_at,
        Some(Timestamp(20))
    );
    assert!(
        !people
            .revoke_api_key(&account("other"), "0123456789abcdef", Timestamp(30))
            .unwrap(),
        "another account cannot revoke the key"
    );
    assert!(
        people
            .revoke_api_key(&account("acct"), "0123456789abcdef", Timestamp(30))
            .unwrap()
    );
    assert_eq!(
        people.api_keys(&account("acct")).unwrap()[0].revoked_at,
        Some(Timestamp(30))
    );
    assert!(people.api_keys(&account("other")).unwrap().is_empty());
}

#[test]
fn g26_an_api_key_never_carries_the_owner_role() {
    let (_dir, store) = seeded();
    let people: &dyn PeopleStore = &store;
    let owner_key = NewApiKey {
        key_id: "fedcba9876543210".into(),
        token_hash: hash(10),
        account: account("acct"),
        role: RoleName::Owner,
        name: "root".into(),
        created_by: "olive".into(),
        created_at: Timestamp(3),
    };
    assert!(people.create_api_key(&owner_key).is_err());
    assert!(people.api_key("fedcba9876543210").unwrap().is_none());
}

#[test]
fn g24_share_links_are_found_by_hash_and_revoked_per_account() {
    let (_dir, store) = seeded();
    let connection = rusqlite::Connection::open(store.path()).unwrap();
    connection
        .execute(
            "INSERT INTO runs (id, account_id, status, workflow_name, workflow_file_name,
                 workflow_source, workflow_hash, inputs, created_at, updated_at)
             VALUES ('run-1', 'acct', 'succeeded', 'w', 'w.yaml', '', 'h', '{}', 1, 1)",
            [],
        )
        .unwrap();
    let people: &dyn PeopleStore = &store;
    people
        .create_share_link(&NewShareLink {
            id: "share-1".into(),
            token_hash: hash(11),
            account: account("acct"),
            run: RunId::parse("run-1").unwrap(),
            created_at: Timestamp(5),
            expires_at: Timestamp(500),
            include_tool_results: true,
            created_by: storage::Actor::Person {
                id: "max".into(),
                name: "Max".into(),
            },
        })
        .unwrap();
    let link = people.share_link_by_token(&hash(11)).unwrap().unwrap();
    assert_eq!(
        link.created_by,
        Some(storage::Actor::Person {
            id: "max".into(),
            name: "Max".into(),
        })
    );
    assert_eq!(
        (
            link.run.as_str(),
            link.expires_at,
            link.revoked_at,
            link.include_tool_results
        ),
        ("run-1", Timestamp(500), None, true)
    );
    assert!(people.share_link_by_token(&hash(12)).unwrap().is_none());
    assert!(
        !people
            .revoke_share_link(&account("other"), "share-1", Timestamp(6))
            .unwrap()
    );
    assert!(
        people
            .revoke_share_link(&account("acct"), "share-1", Timestamp(6))
            .unwrap()
    );
    assert_eq!(
        people.share_links(&account("acct")).unwrap()[0].revoked_at,
        Some(Timestamp(6))
    );
}

fn key_by(key_id: &str, creator: &str, role: RoleName, byte: u8) -> NewApiKey {
    NewApiKey {
        key_id: key_id.into(),
        token_hash: hash(byte),
        account: account("acct"),
        role,
        name: key_id.into(),
        created_by: creator.into(),
        created_at: Timestamp(3),
    }
}

#[test]
fn g26_a_persons_keys_are_revoked_above_their_new_role_and_when_they_are_removed() {
    let (_dir, store) = seeded();
    let people: &dyn PeopleStore = &store;
    people
        .create_api_key(&key_by("1111111111111111", "max", RoleName::Member, 21))
        .unwrap();
    people
        .create_api_key(&key_by("2222222222222222", "max", RoleName::Viewer, 22))
        .unwrap();
    people
        .create_api_key(&key_by("3333333333333333", "olive", RoleName::Admin, 23))
        .unwrap();
    let live = |key_id: &str| {
        people
            .api_key(key_id)
            .unwrap()
            .unwrap()
            .revoked_at
            .is_none()
    };
    assert_eq!(
        people
            .change_role(&account("acct"), "max", RoleName::Viewer, Timestamp(5))
            .unwrap(),
        PeopleChange::Done
    );
    assert!(!live("1111111111111111") && live("2222222222222222"));
    assert_eq!(
        people
            .remove_person(&account("acct"), "max", Timestamp(6))
            .unwrap(),
        PeopleChange::Done
    );
    assert!(!live("2222222222222222"));
    assert!(live("3333333333333333"), "another person's key stays");
    assert_eq!(
        people
            .api_key("3333333333333333")
            .unwrap()
            .unwrap()
            .created_by
            .as_deref(),
        Some("olive")
    );
}
