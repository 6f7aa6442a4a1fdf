//! G20 integrity: a changed ciphertext, nonce or associated data, and a ciphertext moved to
//! another name, account, kind or version, all fail to open, loudly.

use redact::{SecretRequest, SecretSource, SourceError};
use rusqlite::{Connection, params};
use vault::{Error, Vault};

use crate::support::{Dirs, resolve_secret, secret};

fn setup() -> (Dirs, Vault) {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "FIRST",
            secret("first-value"),
        )
        .unwrap();
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "SECOND",
            secret("second-value"),
        )
        .unwrap();
    (dirs, vault)
}

/// A second connection to the database, playing someone who edits the file.
fn tamper(dirs: &Dirs) -> Connection {
    Connection::open(dirs.db_path()).unwrap()
}

fn assert_tampered(vault: &Vault, account: &str, name: &str) {
    let error = vault
        .secrets()
        .dangerously_reveal(&ids::AccountId::parse(account).unwrap(), name)
        .err()
        .unwrap();
    assert!(matches!(error, Error::ValueTampered { .. }), "{error}");
    assert!(error.to_string().contains("altered or moved"), "{error}");
    let request = SecretRequest {
        secrets: vec![name.to_owned()],
        ..SecretRequest::default()
    };
    match vault.resolve(&ids::AccountId::parse(account).unwrap(), &request) {
        Err(SourceError::Unavailable { detail }) => {
            assert!(detail.contains("altered or moved"), "{detail}")
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("a tampered value resolved"),
    }
}

fn flip_first_byte(dirs: &Dirs, column: &str, name: &str) {
    let connection = tamper(dirs);
    let bytes: Vec<u8> = connection
        .query_row(
            &format!("SELECT {column} FROM vault_values WHERE name = ?1"),
            params![name],
            |row| row.get(0),
        )
        .unwrap();
    let mut changed = bytes.clone();
    changed[0] ^= 0x01;
    connection
        .execute(
            &format!("UPDATE vault_values SET {column} = ?1 WHERE name = ?2"),
            params![changed, name],
        )
        .unwrap();
}

#[test]
fn g20_tampered_ciphertext_is_detected() {
    let (dirs, vault) = setup();
    flip_first_byte(&dirs, "ciphertext", "FIRST");
    assert_tampered(&vault, "acct", "FIRST");
    // Untouched values still open.
    assert_eq!(resolve_secret(&vault, "acct", "SECOND"), "second-value");
}

#[test]
fn g20_tampered_nonce_is_detected() {
    let (dirs, vault) = setup();
    flip_first_byte(&dirs, "nonce", "FIRST");
    assert_tampered(&vault, "acct", "FIRST");
}

#[test]
fn g20_tampered_associated_data_is_detected() {
    let (dirs, vault) = setup();
    // The item's version is bound into the associated data.
    tamper(&dirs)
        .execute(
            "UPDATE vault_items SET version = version + 1 WHERE name = 'FIRST'",
            [],
        )
        .unwrap();
    assert_tampered(&vault, "acct", "FIRST");
}

#[test]
fn g20_ciphertext_swapped_between_two_names_does_not_open() {
    let (dirs, vault) = setup();
    let connection = tamper(&dirs);
    let read = |name: &str| -> (Vec<u8>, Vec<u8>) {
        connection
            .query_row(
                "SELECT nonce, ciphertext FROM vault_values WHERE name = ?1",
                params![name],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap()
    };
    let first = read("FIRST");
    let second = read("SECOND");
    for (name, (nonce, ciphertext)) in [("FIRST", &second), ("SECOND", &first)] {
        connection
            .execute(
                "UPDATE vault_values SET nonce = ?1, ciphertext = ?2 WHERE name = ?3",
                params![nonce, ciphertext, name],
            )
            .unwrap();
    }
    assert_tampered(&vault, "acct", "FIRST");
    assert_tampered(&vault, "acct", "SECOND");
}

#[test]
fn g20_ciphertext_moved_to_another_account_or_version_does_not_open() {
    let (dirs, vault) = setup();
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("other").unwrap(),
            "FIRST",
            secret("other-value"),
        )
        .unwrap();
    let connection = tamper(&dirs);
    // Another account's ciphertext under this account's row.
    connection
        .execute(
            "UPDATE vault_values SET
                 nonce = (SELECT nonce FROM vault_values WHERE account_id = 'other'),
                 ciphertext = (SELECT ciphertext FROM vault_values WHERE account_id = 'other')
             WHERE account_id = 'acct' AND name = 'FIRST'",
            [],
        )
        .unwrap();
    assert_tampered(&vault, "acct", "FIRST");

    // An old version's ciphertext put back after the value changed (a rollback attack).
    let old: (Vec<u8>, Vec<u8>) = connection
        .query_row(
            "SELECT nonce, ciphertext FROM vault_values WHERE account_id = 'acct' AND name = 'SECOND'",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "SECOND",
            secret("second-value-v2"),
        )
        .unwrap();
    connection
        .execute(
            "UPDATE vault_values SET nonce = ?1, ciphertext = ?2
             WHERE account_id = 'acct' AND name = 'SECOND'",
            params![old.0, old.1],
        )
        .unwrap();
    assert_tampered(&vault, "acct", "SECOND");
}

#[test]
fn g20_ciphertext_moved_between_kinds_does_not_open() {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    vault
        .connections()
        .add(
            &ids::AccountId::parse("acct").unwrap(),
            "crm",
            vec![("token".to_owned(), secret("conn-value"))],
        )
        .unwrap();
    vault
        .model_keys()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "crm",
            secret("model-value"),
        )
        .unwrap();
    tamper(&dirs)
        .execute(
            "UPDATE vault_values SET
                 nonce = (SELECT nonce FROM vault_values WHERE kind = 'connection'),
                 ciphertext = (SELECT ciphertext FROM vault_values WHERE kind = 'connection')
             WHERE kind = 'model_key'",
            [],
        )
        .unwrap();
    let request = SecretRequest {
        model_keys: vec!["crm".to_owned()],
        ..SecretRequest::default()
    };
    assert!(matches!(
        vault.resolve(&ids::AccountId::parse("acct").unwrap(), &request),
        Err(SourceError::Unavailable { .. })
    ));
}

#[test]
fn g20_tampered_account_key_is_detected() {
    let (dirs, vault) = setup();
    let connection = tamper(&dirs);
    let wrapped: Vec<u8> = connection
        .query_row(
            "SELECT wrapped_key FROM vault_account_keys WHERE account_id = 'acct'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    let mut changed = wrapped.clone();
    changed[5] ^= 0x80;
    connection
        .execute(
            "UPDATE vault_account_keys SET wrapped_key = ?1 WHERE account_id = 'acct'",
            params![changed],
        )
        .unwrap();
    let error = vault
        .secrets()
        .dangerously_reveal(&ids::AccountId::parse("acct").unwrap(), "FIRST")
        .err()
        .unwrap();
    assert!(matches!(error, Error::AccountKeyTampered { .. }), "{error}");
    // Setting a value does not silently replace the damaged key either.
    assert!(
        vault
            .secrets()
            .set(
                &ids::AccountId::parse("acct").unwrap(),
                "THIRD",
                secret("third-value-long-enough")
            )
            .is_err()
    );
}
