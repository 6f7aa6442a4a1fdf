//! G20 at rest: the database holds no plaintext, a data directory without its root key opens
//! nothing, wrong and missing keys give clear errors, the default key lives outside the data
//! directory.

use std::os::unix::fs::PermissionsExt;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use redact::{SecretName, SecretRequest, SecretSource};
use vault::{Error, RootKeySource, Vault};

use crate::support::{
    Dirs, all_bytes_under, contains, copy_dir, distinctive_value, resolve_secret, secret,
};

/// Every encoding a scan looks for: the value itself, base64 (all four alphabets and paddings)
/// and hex (both cases).
fn encodings(value: &str) -> Vec<Vec<u8>> {
    vec![
        value.as_bytes().to_vec(),
        STANDARD.encode(value).into_bytes(),
        STANDARD_NO_PAD.encode(value).into_bytes(),
        URL_SAFE.encode(value).into_bytes(),
        URL_SAFE_NO_PAD.encode(value).into_bytes(),
        hex::encode(value).into_bytes(),
        hex::encode_upper(value).into_bytes(),
    ]
}

#[test]
fn g20_database_file_never_contains_a_plaintext_value() {
    let dirs = Dirs::new();
    let options = dirs.default_options();
    let mut values = Vec::new();
    {
        let (vault, _) = Vault::open(&options, dirs.store()).unwrap();
        for index in 0..5 {
            let value = distinctive_value(&format!("secret{index}"));
            vault
                .secrets()
                .set(
                    &ids::AccountId::parse("acct-1").unwrap(),
                    &format!("TOKEN_{index}"),
                    secret(&value),
                )
                .unwrap();
            values.push(value);
        }
        let api_key = distinctive_value("api");
        let base_url = distinctive_value("url");
        vault
            .connections()
            .add(
                &ids::AccountId::parse("acct-1").unwrap(),
                "payments",
                vec![
                    ("api_key".to_owned(), secret(&api_key)),
                    ("base-url".to_owned(), secret(&base_url)),
                ],
            )
            .unwrap();
        values.extend([api_key, base_url]);
        let model_key = distinctive_value("model");
        vault
            .model_keys()
            .set(
                &ids::AccountId::parse("acct-2").unwrap(),
                "anthropic",
                secret(&model_key),
            )
            .unwrap();
        values.push(model_key);
        // A changed value: the old one must not linger either.
        let replaced = distinctive_value("replaced");
        vault
            .secrets()
            .set(
                &ids::AccountId::parse("acct-1").unwrap(),
                "ROTATING",
                secret(&replaced),
            )
            .unwrap();
        values.push(replaced);
        let current = distinctive_value("current");
        vault
            .secrets()
            .set(
                &ids::AccountId::parse("acct-1").unwrap(),
                "ROTATING",
                secret(&current),
            )
            .unwrap();
        values.push(current.clone());
        vault
            .rotate_account_key(&ids::AccountId::parse("acct-1").unwrap())
            .unwrap();
        // The values really are stored and open (the positive side of the scan).
        assert_eq!(resolve_secret(&vault, "acct-1", "ROTATING"), current);
    }

    let files = all_bytes_under(&dirs.data);
    assert!(!files.is_empty());
    // Control: the scan does see what is stored in the clear (names are not secret).
    assert!(
        files.iter().any(|(_, bytes)| contains(bytes, b"TOKEN_3")),
        "the scan found no secret name, so it would not find a value either"
    );
    for (path, bytes) in &files {
        for value in &values {
            for encoded in encodings(value) {
                assert!(
                    !contains(bytes, &encoded),
                    "{} holds a plaintext value (or an encoding of it)",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn g20_data_directory_copied_without_root_key_opens_nothing_with_a_clear_error() {
    let original = Dirs::new();
    {
        let vault = original.open(&original.default_options());
        vault
            .secrets()
            .set(
                &ids::AccountId::parse("acct").unwrap(),
                "GITHUB_TOKEN",
                secret("ghp_copied_value"),
            )
            .unwrap();
    }
    // Another machine: the same data directory, a user configuration without the key.
    let elsewhere = Dirs::new();
    copy_dir(&original.data, &elsewhere.data);
    let error = Vault::open(&elsewhere.default_options(), elsewhere.store())
        .err()
        .unwrap();
    assert!(matches!(error, Error::RootKeyMissing { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("is missing"), "{message}");
    assert!(
        message.contains(&elsewhere.config.display().to_string()),
        "the error names where the key was looked for: {message}"
    );
    // It must not quietly generate a new key that would then "open" an empty vault.
    assert!(all_bytes_under(&elsewhere.config).is_empty());

    // With the key restored to the other machine, the copy opens.
    let key_dir = |dirs: &Dirs| dirs.config.join("stepward").join("root-keys");
    copy_dir(&key_dir(&original), &key_dir(&elsewhere));
    let restored = elsewhere.open(&elsewhere.default_options());
    assert_eq!(
        resolve_secret(&restored, "acct", "GITHUB_TOKEN"),
        "ghp_copied_value"
    );
}

#[test]
fn g20_wrong_root_key_gives_a_clear_error_never_garbage() {
    let dirs = Dirs::new();
    let right = dirs.new_key_file("right.key");
    let wrong = dirs.new_key_file("wrong.key");
    {
        let vault = dirs.open(&dirs.options(RootKeySource::File(right.clone())));
        vault
            .secrets()
            .set(
                &ids::AccountId::parse("acct").unwrap(),
                "TOKEN",
                secret("value-one"),
            )
            .unwrap();
    }
    let error = Vault::open(
        &dirs.options(RootKeySource::File(wrong.clone())),
        dirs.store(),
    )
    .err()
    .unwrap();
    assert!(matches!(error, Error::RootKeyWrong { .. }), "{error}");
    assert!(
        error.to_string().contains(&format!(
            "the root key at {} does not open this data directory",
            wrong.display()
        )),
        "{error}"
    );
    let vault = dirs.open(&dirs.options(RootKeySource::File(right)));
    assert_eq!(resolve_secret(&vault, "acct", "TOKEN"), "value-one");
}

#[test]
fn g20_missing_or_malformed_root_key_gives_a_clear_error() {
    let dirs = Dirs::new();
    let absent = dirs.keys.join("absent.key");
    let error = Vault::open(
        &dirs.options(RootKeySource::File(absent.clone())),
        dirs.store(),
    )
    .err()
    .unwrap();
    assert!(matches!(error, Error::RootKeyMissing { .. }), "{error}");
    assert!(error.to_string().contains(&absent.display().to_string()));

    let unset = "STEPWARD_TEST_ROOT_KEY_THAT_IS_NEVER_SET";
    let error = Vault::open(
        &dirs.options(RootKeySource::Env(unset.to_owned())),
        dirs.store(),
    )
    .err()
    .unwrap();
    assert!(
        error
            .to_string()
            .contains(&format!("environment variable {unset} is missing")),
        "{error}"
    );

    let malformed = dirs.keys.join("malformed.key");
    std::fs::write(&malformed, "not a key\n").unwrap();
    let error = Vault::open(&dirs.options(RootKeySource::File(malformed)), dirs.store())
        .err()
        .unwrap();
    assert!(matches!(error, Error::RootKeyMalformed { .. }), "{error}");
}

#[test]
fn g20_default_root_key_is_generated_once_mode_0600_outside_the_data_directory() {
    let dirs = Dirs::new();
    let (vault, notice) = Vault::open(&dirs.default_options(), dirs.store()).unwrap();
    let notice = notice.expect("first start tells where the key is");
    let path = notice.root_key_path.clone().unwrap();
    assert_eq!(
        path,
        dirs.config
            .join("stepward")
            .join("root-keys")
            .join(format!("{}.key", vault.install_id()))
    );
    assert!(!path.starts_with(&dirs.data));
    assert!(notice.text.contains(&path.display().to_string()));
    assert!(notice.text.contains("key manager"));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let key_text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(key_text.trim().len(), 64);
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "TOKEN",
            secret("kept-value"),
        )
        .unwrap();
    drop(vault);

    let (reopened, notice) = Vault::open(&dirs.default_options(), dirs.store()).unwrap();
    assert!(notice.is_none(), "the key is generated only once");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), key_text);
    assert_eq!(resolve_secret(&reopened, "acct", "TOKEN"), "kept-value");
    assert_eq!(reopened.root_key_location(), path.display().to_string());
}

#[test]
fn g20_each_account_has_its_own_key() {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("a").unwrap(),
            "TOKEN",
            secret("same-value"),
        )
        .unwrap();
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("b").unwrap(),
            "TOKEN",
            secret("same-value"),
        )
        .unwrap();
    let connection = rusqlite::Connection::open(dirs.db_path()).unwrap();
    let keys: Vec<Vec<u8>> = connection
        .prepare("SELECT wrapped_key FROM vault_account_keys ORDER BY account_id")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(keys.len(), 2);
    assert_ne!(keys[0], keys[1]);
    // Each account only ever sees its own values.
    let request = SecretRequest {
        secrets: vec!["TOKEN".to_owned()],
        ..SecretRequest::default()
    };
    let resolved = vault
        .resolve(&ids::AccountId::parse("a").unwrap(), &request)
        .unwrap();
    assert_eq!(
        resolved[0].0,
        SecretName::AgentSecret {
            name: "TOKEN".to_owned()
        }
    );
    assert!(
        vault
            .account_values(&ids::AccountId::parse("nobody").unwrap())
            .unwrap()
            .is_empty()
    );
}
