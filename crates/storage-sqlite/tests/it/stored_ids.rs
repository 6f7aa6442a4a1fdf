//! Ids read back from the database go through the same validation as ids typed by a person
//! (`ids::AccountId`, `ids::RunId`): a row whose id is no id is reported as unreadable, never
//! handed on as one (a folder name, a scrub scope).

use storage::{Account, AccountId, AccountStore, Error, Timestamp};

use crate::support::temp_store;

#[test]
fn g20_the_servers_own_chain_cannot_be_made_an_account() {
    let (_dir, store) = temp_store();
    let chain = Account {
        id: AccountId::server_chain(),
        name: "server".to_owned(),
        created_at: Timestamp(1),
    };
    assert!(matches!(
        store.create_account(&chain),
        Err(Error::Invalid { .. })
    ));
    assert!(matches!(
        store.ensure_account(&chain),
        Err(Error::Invalid { .. })
    ));
    assert!(store.accounts().unwrap().is_empty());
}

#[test]
fn g20_a_stored_account_id_that_is_no_id_is_reported_unreadable() {
    let (dir, store) = temp_store();
    store
        .create_account(&Account {
            id: AccountId::parse("acme").unwrap(),
            name: "Acme".to_owned(),
            created_at: Timestamp(1),
        })
        .unwrap();
    assert_eq!(store.accounts().unwrap().len(), 1);
    // Written behind the store's back, as a damaged or hand-edited database would hold it.
    let connection = rusqlite::Connection::open(dir.path().join("stepward.db")).unwrap();
    connection
        .execute(
            "INSERT INTO accounts (id, name, created_at) VALUES ('../other', 'x', 2)",
            [],
        )
        .unwrap();
    match store.accounts() {
        Err(Error::Corrupt { what, detail }) => {
            assert_eq!(what, "an account id");
            assert!(detail.contains("../other"), "{detail}");
        }
        other => panic!("expected an unreadable account id, got {other:?}"),
    }
    // The good row still reads on its own.
    assert!(
        store
            .account(&AccountId::parse("acme").unwrap())
            .unwrap()
            .is_some()
    );
}
