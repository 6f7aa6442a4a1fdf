//! G20 rotation: root and account key rotations keep every value, and a rotation killed
//! half-way (an error or a panic between rows, or a crash right after commit) loses nothing and
//! leaves a vault that opens with the right key.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use rusqlite::Connection;
use storage::vault::VaultStore;
use vault::{Error, RootKeySource, Vault, VaultOptions};

use crate::support::{Dirs, Fault, FaultyStore, resolve_secret, secret};

const ACCOUNTS: [&str; 3] = ["acct-a", "acct-b", "acct-c"];

/// Fills three accounts with two secrets and a connection each.
fn fill(vault: &Vault) {
    for account in ACCOUNTS {
        for name in ["ALPHA", "BETA"] {
            vault
                .secrets()
                .set(
                    &ids::AccountId::parse(account).unwrap(),
                    name,
                    secret(&format!("{account}-{name}")),
                )
                .unwrap();
        }
        vault
            .connections()
            .add(
                &ids::AccountId::parse(account).unwrap(),
                "payments",
                vec![
                    ("api_key".to_owned(), secret(&format!("{account}-api"))),
                    ("secret".to_owned(), secret(&format!("{account}-sec"))),
                ],
            )
            .unwrap();
    }
}

/// Checks every value of [`fill`].
fn assert_filled(vault: &Vault) {
    for account in ACCOUNTS {
        for name in ["ALPHA", "BETA"] {
            assert_eq!(
                resolve_secret(vault, account, name),
                format!("{account}-{name}")
            );
        }
        let fields = vault
            .connections()
            .dangerously_reveal(&ids::AccountId::parse(account).unwrap(), "payments")
            .unwrap();
        let fields: Vec<(String, String)> = fields
            .iter()
            .map(|(field, value)| (field.clone(), value.dangerously_expose().to_owned()))
            .collect();
        assert_eq!(
            fields,
            vec![
                ("api_key".to_owned(), format!("{account}-api")),
                ("secret".to_owned(), format!("{account}-sec")),
            ]
        );
    }
}

/// Every stored row of the vault, to compare before and after a rotation.
#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    values: Vec<String>,
    account_keys: Vec<String>,
    key_check: Vec<String>,
}

fn snapshot(dirs: &Dirs) -> Snapshot {
    let connection = Connection::open(dirs.db_path()).unwrap();
    let rows = |query: &str| -> Vec<String> {
        let mut statement = connection.prepare(query).unwrap();
        statement
            .query_map([], |row| row.get::<_, String>(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    Snapshot {
        values: rows(
            "SELECT account_id || ' ' || kind || ' ' || name || ' ' || field || ' ' || \
             key_version || ' ' || hex(nonce) || hex(ciphertext) FROM vault_values ORDER BY 1",
        ),
        account_keys: rows(
            "SELECT account_id || ' ' || key_version || ' ' || root_key_id || ' ' || \
             hex(nonce) || hex(wrapped_key) FROM vault_account_keys ORDER BY 1",
        ),
        key_check: rows("SELECT root_key_id || hex(nonce) || hex(ciphertext) FROM vault_key_check"),
    }
}

fn faulty_vault(dirs: &Dirs, options: &VaultOptions, fault: Fault) -> Vault {
    let inner: Arc<dyn VaultStore> = dirs.store();
    Vault::open(options, Arc::new(FaultyStore::new(inner, fault)))
        .unwrap()
        .0
}

#[test]
fn g20_root_rotation_preserves_every_value_and_retires_the_old_key() {
    let dirs = Dirs::new();
    let default_options = dirs.default_options();
    let vault = dirs.open(&default_options);
    fill(&vault);
    let before = snapshot(&dirs);

    // Default file → a key file a key manager provides.
    let managed = dirs.new_key_file("managed.key");
    let notice = vault
        .rotate_root(&RootKeySource::File(managed.clone()))
        .unwrap();
    assert!(notice.text.contains(&managed.display().to_string()));
    assert_filled(&vault);
    // Every key row changed, and every value was re-encrypted under a new account key (G20:
    // the old root key with an old key table opens nothing stored afterwards).
    let after = snapshot(&dirs);
    assert!(after.values.iter().all(|row| !before.values.contains(row)));
    assert_eq!(after.values.len(), before.values.len());
    assert!(vault.pending_account_rotations().unwrap().is_empty());
    assert_ne!(after.key_check, before.key_check);
    assert!(
        after
            .account_keys
            .iter()
            .all(|row| !before.account_keys.contains(row))
    );
    drop(vault);

    let old = Vault::open(&default_options, dirs.store()).err().unwrap();
    assert!(matches!(old, Error::RootKeyWrong { .. }), "{old}");
    let managed_options = dirs.options(RootKeySource::File(managed.clone()));
    let vault = dirs.open(&managed_options);
    assert_filled(&vault);

    // And back to a freshly generated default file.
    vault.rotate_root(&RootKeySource::DefaultFile).unwrap();
    assert_filled(&vault);
    drop(vault);
    assert!(matches!(
        Vault::open(&managed_options, dirs.store()).err().unwrap(),
        Error::RootKeyWrong { .. }
    ));
    assert_filled(&dirs.open(&default_options));

    // The same key again is refused rather than silently doing nothing.
    let vault = dirs.open(&dirs.options(RootKeySource::DefaultFile));
    let key_path = vault.root_key_location();
    let unchanged = vault
        .rotate_root(&RootKeySource::File(key_path.into()))
        .err()
        .unwrap();
    assert!(
        matches!(unchanged, Error::RootKeyUnchanged { .. }),
        "{unchanged}"
    );
}

#[test]
fn g20_account_key_rotation_reencrypts_every_value_and_keeps_it() {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    fill(&vault);
    let before = snapshot(&dirs);
    assert_eq!(
        vault
            .rotate_account_key(&ids::AccountId::parse("acct-b").unwrap())
            .unwrap(),
        2
    );
    let after = snapshot(&dirs);
    let changed = |before: &[String], after: &[String]| -> Vec<String> {
        after
            .iter()
            .filter(|row| !before.contains(row))
            .cloned()
            .collect()
    };
    // acct-b's three values (two secrets, two connection fields) and its key changed; nothing
    // of the other accounts did, and the root key check stayed.
    let changed_values = changed(&before.values, &after.values);
    assert_eq!(changed_values.len(), 4, "{changed_values:#?}");
    assert!(changed_values.iter().all(|row| row.starts_with("acct-b ")));
    let changed_keys = changed(&before.account_keys, &after.account_keys);
    assert_eq!(changed_keys.len(), 1);
    assert!(changed_keys[0].starts_with("acct-b 2 "));
    assert_eq!(after.key_check, before.key_check);
    assert_filled(&vault);
    // Versions of the items are unchanged: rotation is not a change of value.
    let listed = vault
        .secrets()
        .list(&ids::AccountId::parse("acct-b").unwrap())
        .unwrap();
    assert!(listed.iter().all(|info| info.version == 1));
    assert!(matches!(
        vault
            .rotate_account_key(&ids::AccountId::parse("nobody").unwrap())
            .err()
            .unwrap(),
        Error::NoAccountKey { .. }
    ));
}

#[test]
fn g20_root_rotation_killed_between_rows_loses_nothing() {
    for fault in [Fault::ErrorAfterRows(1), Fault::PanicAfterRows(2)] {
        let dirs = Dirs::new();
        let old_key = dirs.new_key_file("old.key");
        let old_options = dirs.options(RootKeySource::File(old_key));
        fill(&dirs.open(&old_options));
        let before = snapshot(&dirs);

        let new_key = dirs.new_key_file("new.key");
        let vault = faulty_vault(&dirs, &old_options, fault);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            vault.rotate_root(&RootKeySource::File(new_key.clone()))
        }));
        assert!(
            !matches!(outcome, Ok(Ok(_))),
            "{fault:?}: the injected fault did not stop the rotation"
        );
        drop(vault);

        assert_eq!(snapshot(&dirs), before, "{fault:?}: rows changed");
        let reopened = dirs.open(&old_options);
        assert_filled(&reopened);
        assert!(matches!(
            Vault::open(
                &dirs.options(RootKeySource::File(new_key.clone())),
                dirs.store()
            )
            .err()
            .unwrap(),
            Error::RootKeyWrong { .. }
        ));
        // Running it again without the fault finishes the job.
        reopened
            .rotate_root(&RootKeySource::File(new_key.clone()))
            .unwrap();
        drop(reopened);
        assert_filled(&dirs.open(&dirs.options(RootKeySource::File(new_key))));
    }
}

#[test]
fn g20_account_key_rotation_killed_between_rows_loses_nothing() {
    for fault in [Fault::ErrorAfterRows(1), Fault::PanicAfterRows(2)] {
        let dirs = Dirs::new();
        let options = dirs.default_options();
        fill(&dirs.open(&options));
        let before = snapshot(&dirs);

        let vault = faulty_vault(&dirs, &options, fault);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            vault.rotate_account_key(&ids::AccountId::parse("acct-a").unwrap())
        }));
        assert!(
            !matches!(outcome, Ok(Ok(_))),
            "{fault:?}: the injected fault did not stop the rotation"
        );
        drop(vault);

        assert_eq!(snapshot(&dirs), before, "{fault:?}: rows changed");
        let reopened = dirs.open(&options);
        assert_filled(&reopened);
        assert_eq!(
            reopened
                .rotate_account_key(&ids::AccountId::parse("acct-a").unwrap())
                .unwrap(),
            2
        );
        assert_filled(&reopened);
    }
}

#[test]
fn g20_root_rotation_dying_after_commit_is_finished_when_the_vault_opens() {
    let dirs = Dirs::new();
    let options = dirs.default_options();
    fill(&dirs.open(&options));
    let vault = faulty_vault(&dirs, &options, Fault::ErrorAfterCommit);
    let key_path = std::path::PathBuf::from(vault.root_key_location());
    let old_key = std::fs::read_to_string(&key_path).unwrap();
    assert!(vault.rotate_root(&RootKeySource::DefaultFile).is_err());
    drop(vault);
    // Both keys are on disk: the old one in place, the new one beside it.
    let pending = key_path.with_extension("key.next");
    assert!(pending.exists());
    assert_eq!(std::fs::read_to_string(&key_path).unwrap(), old_key);

    let reopened = dirs.open(&options);
    assert_filled(&reopened);
    assert!(!pending.exists(), "opening finished the switch");
    assert_ne!(std::fs::read_to_string(&key_path).unwrap(), old_key);
}

#[test]
fn g20_root_rotation_that_never_committed_leaves_the_old_default_key_in_charge() {
    let dirs = Dirs::new();
    let options = dirs.default_options();
    fill(&dirs.open(&options));
    let vault = faulty_vault(&dirs, &options, Fault::ErrorAfterRows(0));
    let key_path = std::path::PathBuf::from(vault.root_key_location());
    let old_key = std::fs::read_to_string(&key_path).unwrap();
    assert!(vault.rotate_root(&RootKeySource::DefaultFile).is_err());
    drop(vault);
    let reopened = dirs.open(&options);
    assert_filled(&reopened);
    assert_eq!(std::fs::read_to_string(&key_path).unwrap(), old_key);
    // A later rotation replaces the stale pending key and succeeds.
    reopened.rotate_root(&RootKeySource::DefaultFile).unwrap();
    drop(reopened);
    assert_filled(&dirs.open(&options));
}

/// G20 (review "credentials" A5): a root rotation that dies while rotating the accounts' data
/// keys leaves every value readable with the new root key, and running it again finishes.
#[test]
fn g20_a_root_rotation_killed_among_the_account_keys_loses_nothing_and_finishes_when_run_again() {
    let dirs = Dirs::new();
    let default_options = dirs.default_options();
    fill(&dirs.open(&default_options));
    let managed = dirs.new_key_file("managed.key");
    // Three account keys rewrapped, then the first account's three items, then a fault.
    let faulty = faulty_vault(&dirs, &default_options, Fault::ErrorAfterRows(7));
    let failed = faulty
        .rotate_root(&RootKeySource::File(managed.clone()))
        .err()
        .unwrap();
    match &failed {
        Error::RotationUnfinished { left, .. } => {
            assert_eq!(
                left.iter().map(|id| id.as_str()).collect::<Vec<_>>(),
                ["acct-b", "acct-c"]
            );
        }
        other => panic!("expected an unfinished rotation, got {other}"),
    }
    assert!(failed.to_string().contains("stepward keys rotate-root"));
    drop(faulty);

    let vault = dirs.open(&dirs.options(RootKeySource::File(managed)));
    assert_filled(&vault);
    assert_eq!(
        vault
            .finish_account_rotations()
            .unwrap()
            .iter()
            .map(|id| id.to_string())
            .collect::<Vec<_>>(),
        ["acct-b".to_owned(), "acct-c".to_owned()]
    );
    assert!(vault.pending_account_rotations().unwrap().is_empty());
    assert_filled(&vault);
    let old = Vault::open(&default_options, dirs.store()).err().unwrap();
    assert!(matches!(old, Error::RootKeyWrong { .. }), "{old}");
}
