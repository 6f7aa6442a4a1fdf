//! G16 (the run's secret set grows when a resumed run looks values up again): replaced,
//! removed and revoked values stay available, sealed, to the scrub sets of runs that may have
//! seen them; they survive both rotations, are pruned after their retention, are never listed,
//! and never reach the database as plaintext (G20).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redact::{SecretName, SecretRequest, SecretSource, SourceError};
use rusqlite::Connection;
use storage::vault::VaultStore;
use vault::{DEFAULT_SUPERSEDED_RETENTION, RootKeySource, Vault};

use crate::support::{
    Dirs, Fault, FaultyStore, all_bytes_under, contains, distinctive_value, secret,
};

const ACCOUNT: &str = "acct-1";

fn now_millis() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// A moment strictly between two vault writes (the vault stamps changes in milliseconds).
fn tick() -> i64 {
    std::thread::sleep(Duration::from_millis(3));
    let moment = now_millis();
    std::thread::sleep(Duration::from_millis(3));
    moment
}

fn request_all() -> SecretRequest {
    SecretRequest {
        connections: vec!["payments".to_owned()],
        secrets: vec!["TOKEN".to_owned()],
        model_keys: vec!["anthropic".to_owned()],
    }
}

/// The superseded values as sorted (name, plaintext) pairs.
fn superseded(vault: &Vault, request: &SecretRequest, since: i64) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = vault
        .superseded_values(&ids::AccountId::parse(ACCOUNT).unwrap(), request, since)
        .unwrap()
        .into_iter()
        .map(|(name, value)| (name.to_string(), value.dangerously_expose().to_owned()))
        .collect();
    found.sort();
    found
}

fn history_rows(dirs: &Dirs) -> Vec<(String, i64, i64)> {
    let connection = Connection::open(dirs.db_path()).unwrap();
    let mut statement = connection
        .prepare(
            "SELECT name || '.' || field, version, key_version FROM vault_value_history
             ORDER BY history_id",
        )
        .unwrap();
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn set_token(vault: &Vault, value: &str) {
    vault
        .secrets()
        .set(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "TOKEN",
            secret(value),
        )
        .unwrap();
}

fn add_payments(vault: &Vault, api_key: &str) {
    vault
        .connections()
        .add(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "payments",
            vec![("api_key".to_owned(), secret(api_key))],
        )
        .unwrap();
}

#[test]
fn g16_superseded_values_are_returned_for_requested_names_since_a_time_only() {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    let token_1 = distinctive_value("token1");
    let token_2 = distinctive_value("token2");
    let token_3 = distinctive_value("token3");
    let key_1 = distinctive_value("key1");
    let key_2 = distinctive_value("key2");
    let model = distinctive_value("model");
    let unrelated = distinctive_value("unrelated");

    set_token(&vault, &token_1);
    add_payments(&vault, &key_1);
    vault
        .model_keys()
        .set(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "anthropic",
            secret(&model),
        )
        .unwrap();
    vault
        .secrets()
        .set(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "OTHER",
            secret(&unrelated),
        )
        .unwrap();
    set_token(&vault, &token_2);
    let since = tick();
    // Everything below happens after `since`: a run started then may have seen these values.
    set_token(&vault, &token_3);
    add_payments(&vault, &key_2);
    vault
        .model_keys()
        .remove(&ids::AccountId::parse(ACCOUNT).unwrap(), "anthropic")
        .unwrap();
    vault
        .secrets()
        .set(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "OTHER",
            secret(&distinctive_value("other")),
        )
        .unwrap();

    let mut expected = vec![
        ("connection:payments.api_key".to_owned(), key_1.clone()),
        ("model_key:anthropic".to_owned(), model.clone()),
        ("secret:TOKEN".to_owned(), token_2.clone()),
    ];
    expected.sort();
    assert_eq!(superseded(&vault, &request_all(), since), expected);
    // From the beginning, the first token is there too.
    let everything = superseded(&vault, &request_all(), 0);
    assert!(everything.contains(&("secret:TOKEN".to_owned(), token_1.clone())));
    assert_eq!(everything.len(), 4);
    // Current values are never "superseded", and names not asked for are not returned.
    for (_, value) in &everything {
        assert_ne!(value, &token_3);
        assert_ne!(value, &key_2);
        assert_ne!(value, &unrelated);
    }
    let only_token = SecretRequest {
        secrets: vec!["TOKEN".to_owned()],
        ..SecretRequest::default()
    };
    assert_eq!(
        superseded(&vault, &only_token, since),
        vec![("secret:TOKEN".to_owned(), token_2.clone())]
    );
    assert!(superseded(&vault, &request_all(), now_millis() + 60_000).is_empty());
    assert!(superseded(&vault, &SecretRequest::default(), 0).is_empty());
    // Another account sees none of it.
    assert!(
        vault
            .superseded_values(&ids::AccountId::parse("acct-2").unwrap(), &request_all(), 0)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn g16_a_connection_revoked_after_a_time_counts_as_superseded_then() {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    let key = distinctive_value("key");
    add_payments(&vault, &key);
    let before_revocation = tick();
    vault
        .connections()
        .revoke(&ids::AccountId::parse(ACCOUNT).unwrap(), "payments")
        .unwrap();
    let after_revocation = tick();
    assert_eq!(
        superseded(&vault, &request_all(), before_revocation),
        vec![("connection:payments.api_key".to_owned(), key.clone())]
    );
    assert!(superseded(&vault, &request_all(), after_revocation).is_empty());
}

#[test]
fn g16_superseded_values_survive_account_key_and_root_rotation() {
    let dirs = Dirs::new();
    let options = dirs.default_options();
    let vault = dirs.open(&options);
    let old_token = distinctive_value("old");
    let old_key = distinctive_value("oldkey");
    let removed = distinctive_value("removed");
    set_token(&vault, &old_token);
    add_payments(&vault, &old_key);
    vault
        .model_keys()
        .set(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "anthropic",
            secret(&removed),
        )
        .unwrap();
    set_token(&vault, &distinctive_value("new"));
    add_payments(&vault, &distinctive_value("newkey"));
    vault
        .model_keys()
        .remove(&ids::AccountId::parse(ACCOUNT).unwrap(), "anthropic")
        .unwrap();
    let mut expected = vec![
        ("connection:payments.api_key".to_owned(), old_key.clone()),
        ("model_key:anthropic".to_owned(), removed.clone()),
        ("secret:TOKEN".to_owned(), old_token.clone()),
    ];
    expected.sort();
    assert_eq!(superseded(&vault, &request_all(), 0), expected);
    let sealed_before = history_rows(&dirs);
    assert!(
        sealed_before
            .iter()
            .all(|(_, _, key_version)| *key_version == 1)
    );

    assert_eq!(
        vault
            .rotate_account_key(&ids::AccountId::parse(ACCOUNT).unwrap())
            .unwrap(),
        2
    );
    let sealed_after = history_rows(&dirs);
    assert_eq!(sealed_after.len(), sealed_before.len());
    assert!(
        sealed_after
            .iter()
            .all(|(_, _, key_version)| *key_version == 2),
        "{sealed_after:?}"
    );
    // Each row keeps the item version it was sealed under.
    let identities = |rows: &[(String, i64, i64)]| -> Vec<(String, i64)> {
        rows.iter()
            .map(|(name, version, _)| (name.clone(), *version))
            .collect()
    };
    assert_eq!(identities(&sealed_after), identities(&sealed_before));
    assert_eq!(superseded(&vault, &request_all(), 0), expected);

    let managed = dirs.new_key_file("managed.key");
    vault
        .rotate_root(&RootKeySource::File(managed.clone()))
        .unwrap();
    assert_eq!(superseded(&vault, &request_all(), 0), expected);
    drop(vault);
    let reopened = dirs.open(&dirs.options(RootKeySource::File(managed)));
    assert_eq!(superseded(&reopened, &request_all(), 0), expected);
    // The root rotation rotated the account key too (version 3); its kept values moved with it.
    assert!(
        history_rows(&dirs)
            .iter()
            .all(|(_, _, key_version)| *key_version == 3)
    );
    assert_eq!(
        reopened
            .rotate_account_key(&ids::AccountId::parse(ACCOUNT).unwrap())
            .unwrap(),
        4
    );
    assert_eq!(superseded(&reopened, &request_all(), 0), expected);
}

#[test]
fn g16_account_key_rotation_killed_while_resealing_superseded_values_loses_nothing() {
    let dirs = Dirs::new();
    let options = dirs.default_options();
    let old_token = distinctive_value("old");
    {
        let vault = dirs.open(&options);
        set_token(&vault, &old_token);
        set_token(&vault, &distinctive_value("new"));
    }
    let before = history_rows(&dirs);
    // One item then one superseded value: the fault hits the superseded value.
    for fault in [Fault::ErrorAfterRows(1), Fault::PanicAfterRows(1)] {
        let inner: Arc<dyn VaultStore> = dirs.store();
        let vault = Vault::open(&options, Arc::new(FaultyStore::new(inner, fault)))
            .unwrap()
            .0;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            vault.rotate_account_key(&ids::AccountId::parse(ACCOUNT).unwrap())
        }));
        assert!(!matches!(outcome, Ok(Ok(_))), "{fault:?}");
        drop(vault);
        assert_eq!(history_rows(&dirs), before, "{fault:?}");
    }
    let vault = dirs.open(&options);
    assert_eq!(
        superseded(&vault, &request_all(), 0),
        vec![("secret:TOKEN".to_owned(), old_token)]
    );
}

#[test]
fn g16_superseded_values_are_pruned_after_their_retention() {
    let dirs = Dirs::new();
    let options = dirs.default_options();
    let default_vault = dirs.open(&options);
    assert_eq!(
        default_vault.superseded_retention(),
        DEFAULT_SUPERSEDED_RETENTION
    );
    drop(default_vault);
    let retention = Duration::from_millis(200);
    let vault = dirs.open(&options).with_superseded_retention(retention);
    let old_token = distinctive_value("old");
    set_token(&vault, &old_token);
    set_token(&vault, &distinctive_value("new"));
    // Reads never prune: the value stays until a write after its retention.
    assert_eq!(
        superseded(&vault, &request_all(), 0),
        vec![("secret:TOKEN".to_owned(), old_token.clone())]
    );
    std::thread::sleep(retention + Duration::from_millis(50));
    assert_eq!(history_rows(&dirs).len(), 1);
    // Any write prunes, of every name; a write that supersedes keeps its own fresh value.
    add_payments(&vault, &distinctive_value("key"));
    assert!(history_rows(&dirs).is_empty());
    assert!(superseded(&vault, &request_all(), 0).is_empty());
    add_payments(&vault, &distinctive_value("key2"));
    let left = superseded(&vault, &request_all(), 0);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].0, "connection:payments.api_key");

    // An account key rotation prunes too; a removal keeps what it removed.
    std::thread::sleep(retention + Duration::from_millis(50));
    vault
        .rotate_account_key(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    assert!(history_rows(&dirs).is_empty());
    assert!(superseded(&vault, &request_all(), 0).is_empty());
    std::thread::sleep(retention + Duration::from_millis(50));
    vault
        .secrets()
        .remove(&ids::AccountId::parse(ACCOUNT).unwrap(), "TOKEN")
        .unwrap();
    assert_eq!(history_rows(&dirs).len(), 1, "the removed value is kept");
}

#[test]
fn g16_superseded_values_are_never_listed() {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    set_token(&vault, &distinctive_value("old"));
    set_token(&vault, &distinctive_value("new"));
    add_payments(&vault, &distinctive_value("key1"));
    vault
        .connections()
        .add(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "payments",
            vec![("secret".to_owned(), secret(&distinctive_value("key2")))],
        )
        .unwrap();
    vault
        .secrets()
        .set(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            "GONE",
            secret(&distinctive_value("gone")),
        )
        .unwrap();
    vault
        .secrets()
        .remove(&ids::AccountId::parse(ACCOUNT).unwrap(), "GONE")
        .unwrap();

    let secrets = vault
        .secrets()
        .list(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    assert_eq!(secrets.len(), 1);
    assert_eq!(secrets[0].name, "TOKEN");
    assert_eq!(secrets[0].version, 2);
    let connections = vault
        .connections()
        .list(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    assert_eq!(connections.len(), 1);
    // Only the current field: the superseded `api_key` field is not listed.
    assert_eq!(connections[0].fields, vec!["secret".to_owned()]);
    assert_eq!(connections[0].version, 2);
    assert!(history_rows(&dirs).len() >= 3);
    // The current values a run resolves are the new ones only.
    let resolved = vault
        .resolve(
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            &SecretRequest {
                connections: vec!["payments".to_owned()],
                ..SecretRequest::default()
            },
        )
        .unwrap();
    let names: Vec<SecretName> = resolved.into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        names,
        vec![SecretName::ConnectionField {
            alias: "payments".to_owned(),
            field: "secret".to_owned(),
        }]
    );
}

#[test]
fn g16_database_never_holds_a_superseded_plaintext() {
    let dirs = Dirs::new();
    let options = dirs.default_options();
    let mut old_values = Vec::new();
    {
        let vault = dirs.open(&options);
        for index in 0..3 {
            let value = distinctive_value(&format!("token{index}"));
            set_token(&vault, &value);
            old_values.push(value);
        }
        let key = distinctive_value("key");
        add_payments(&vault, &key);
        old_values.push(key);
        vault
            .connections()
            .remove(&ids::AccountId::parse(ACCOUNT).unwrap(), "payments")
            .unwrap();
        vault
            .rotate_account_key(&ids::AccountId::parse(ACCOUNT).unwrap())
            .unwrap();
        assert_eq!(superseded(&vault, &request_all(), 0).len(), 3);
    }
    let files = all_bytes_under(&dirs.data);
    assert!(!files.is_empty());
    for value in &old_values {
        let forms = [
            value.as_bytes().to_vec(),
            hex::encode(value).into_bytes(),
            {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD
                    .encode(value)
                    .into_bytes()
            },
        ];
        for (path, bytes) in &files {
            for form in &forms {
                assert!(
                    !contains(bytes, form),
                    "{} holds a superseded value",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn g16_a_superseded_value_moved_to_another_version_fails_to_open() {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    set_token(&vault, &distinctive_value("old"));
    set_token(&vault, &distinctive_value("new"));
    let connection = Connection::open(dirs.db_path()).unwrap();
    connection
        .execute("UPDATE vault_value_history SET version = version + 1", [])
        .unwrap();
    match vault.superseded_values(&ids::AccountId::parse(ACCOUNT).unwrap(), &request_all(), 0) {
        Err(SourceError::Unavailable { detail }) => {
            assert!(detail.contains("altered or moved"), "{detail}")
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(found) => panic!("a moved superseded value opened ({} values)", found.len()),
    }
}

/// G16 (review "credentials" A14): a superseded value past its retention is kept while a run
/// of its account that may have seen it (created before the value was replaced) has not
/// ended, however long it waits at a gate; once the run ends, the next write prunes it.
#[test]
fn g16_a_superseded_value_is_kept_while_a_run_that_may_have_seen_it_waits() {
    let dirs = Dirs::new();
    let retention = Duration::from_millis(200);
    let vault = dirs
        .open(&dirs.default_options())
        .with_superseded_retention(retention);
    let connection = Connection::open(dirs.db_path()).unwrap();
    connection
        .execute(
            "INSERT INTO accounts (id, name, created_at) VALUES (?1, ?1, 0)",
            [ACCOUNT],
        )
        .unwrap();
    // A run created now parks at a gate; the token is replaced after it started.
    connection
        .execute(
            "INSERT INTO runs (id, account_id, status, workflow_name, workflow_file_name,
                 workflow_source, workflow_hash, inputs, created_at, updated_at)
             VALUES ('run-parked', ?1, 'waiting_approval', 'w', 'w.yaml', '', '', '{}', ?2, ?2)",
            rusqlite::params![ACCOUNT, now_millis()],
        )
        .unwrap();
    let old_token = distinctive_value("seen-by-the-parked-run");
    set_token(&vault, &old_token);
    std::thread::sleep(Duration::from_millis(5));
    set_token(&vault, &distinctive_value("new"));
    std::thread::sleep(retention + Duration::from_millis(50));
    add_payments(&vault, &distinctive_value("key"));
    assert_eq!(
        superseded(&vault, &request_all(), 0),
        vec![("secret:TOKEN".to_owned(), old_token)],
        "pruned while a run that may have seen it waits"
    );
    connection
        .execute(
            "UPDATE runs SET status = 'succeeded' WHERE id = 'run-parked'",
            [],
        )
        .unwrap();
    add_payments(&vault, &distinctive_value("key2"));
    let left = superseded(&vault, &request_all(), 0);
    assert!(
        left.iter().all(|(name, _)| name != "secret:TOKEN"),
        "kept after the run ended: {left:?}"
    );
}
