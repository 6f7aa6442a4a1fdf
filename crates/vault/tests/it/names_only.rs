//! G19: reads of the vault return names, never values; values reach a run only through
//! `resolve`, for exactly what it names; missing and revoked names are refused by name.

use redact::{RunSecrets, SecretName, SecretRequest, SecretSource, SourceError};
use vault::{Error, Vault};

use crate::support::{Dirs, resolve_secret, secret};

fn vault_with_data(dirs: &Dirs) -> Vault {
    let vault = dirs.open(&dirs.default_options());
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "GITHUB_TOKEN",
            secret("ghp_listing_value_1"),
        )
        .unwrap();
    vault
        .connections()
        .add(
            &ids::AccountId::parse("acct").unwrap(),
            "payments",
            vec![
                ("api_key".to_owned(), secret("pay_api_value_2")),
                ("account-id".to_owned(), secret("pay_account_value_3")),
            ],
        )
        .unwrap();
    vault
        .connections()
        .add(
            &ids::AccountId::parse("acct").unwrap(),
            "crm",
            vec![("token".to_owned(), secret("crm_value_4"))],
        )
        .unwrap();
    vault
        .model_keys()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "anthropic",
            secret("model_value_5"),
        )
        .unwrap();
    vault
}

const VALUES: [&str; 5] = [
    "ghp_listing_value_1",
    "pay_api_value_2",
    "pay_account_value_3",
    "crm_value_4",
    "model_value_5",
];

#[test]
fn g19_list_returns_names_versions_and_dates_only() {
    let dirs = Dirs::new();
    let vault = vault_with_data(&dirs);
    let secrets = vault
        .secrets()
        .list(&ids::AccountId::parse("acct").unwrap())
        .unwrap();
    assert_eq!(secrets.len(), 1);
    assert_eq!(secrets[0].name, "GITHUB_TOKEN");
    assert_eq!(secrets[0].version, 1);
    assert!(secrets[0].created_at.0 > 0);
    let connections = vault
        .connections()
        .list(&ids::AccountId::parse("acct").unwrap())
        .unwrap();
    let aliases: Vec<(&str, Vec<&str>)> = connections
        .iter()
        .map(|info| {
            (
                info.alias.as_str(),
                info.fields.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        aliases,
        vec![
            ("crm", vec!["token"]),
            ("payments", vec!["account-id", "api_key"])
        ]
    );
    let model_keys = vault
        .model_keys()
        .list(&ids::AccountId::parse("acct").unwrap())
        .unwrap();
    assert_eq!(model_keys[0].name, "anthropic");
    // Everything a listing returns, printed, holds no value.
    let printed = format!("{secrets:?}{connections:?}{model_keys:?}");
    for value in VALUES {
        assert!(!printed.contains(value), "listing shows {value}");
    }
    assert!(
        vault
            .secrets()
            .list(&ids::AccountId::parse("another-account").unwrap())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn g19_changing_a_value_keeps_the_name_and_bumps_the_version() {
    let dirs = Dirs::new();
    let vault = vault_with_data(&dirs);
    let first = vault
        .secrets()
        .list(&ids::AccountId::parse("acct").unwrap())
        .unwrap()
        .remove(0);
    let changed = vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "GITHUB_TOKEN",
            secret("ghp_new_value"),
        )
        .unwrap();
    assert_eq!(changed.name, "GITHUB_TOKEN");
    assert_eq!(changed.version, 2);
    assert_eq!(changed.created_at, first.created_at);
    assert!(changed.updated_at >= first.updated_at);
    assert_eq!(
        resolve_secret(&vault, "acct", "GITHUB_TOKEN"),
        "ghp_new_value"
    );
    let connection = vault
        .connections()
        .add(
            &ids::AccountId::parse("acct").unwrap(),
            "crm",
            vec![("token".to_owned(), secret("crm_new_value"))],
        )
        .unwrap();
    assert_eq!(connection.version, 2);
    assert_eq!(
        vault
            .secrets()
            .list(&ids::AccountId::parse("acct").unwrap())
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn g19_resolve_returns_every_field_of_each_requested_connection_and_nothing_else() {
    let dirs = Dirs::new();
    let vault = vault_with_data(&dirs);
    let request = SecretRequest {
        connections: vec!["payments".to_owned(), "payments".to_owned()],
        secrets: vec!["GITHUB_TOKEN".to_owned()],
        model_keys: vec!["anthropic".to_owned()],
    };
    let resolved = vault
        .resolve(&ids::AccountId::parse("acct").unwrap(), &request)
        .unwrap();
    let pairs: Vec<(SecretName, String)> = resolved
        .iter()
        .map(|(name, value)| (name.clone(), value.dangerously_expose().to_owned()))
        .collect();
    let field = |field: &str| SecretName::ConnectionField {
        alias: "payments".to_owned(),
        field: field.to_owned(),
    };
    assert_eq!(
        pairs,
        vec![
            (field("account-id"), "pay_account_value_3".to_owned()),
            (field("api_key"), "pay_api_value_2".to_owned()),
            (
                SecretName::AgentSecret {
                    name: "GITHUB_TOKEN".to_owned()
                },
                "ghp_listing_value_1".to_owned()
            ),
            (
                SecretName::ModelKey {
                    provider: "anthropic".to_owned()
                },
                "model_value_5".to_owned()
            ),
        ]
    );
    // The crm connection was not asked for, so it is not handed out.
    assert!(!pairs.iter().any(|(_, value)| value == "crm_value_4"));
    assert!(
        vault
            .resolve(
                &ids::AccountId::parse("acct").unwrap(),
                &SecretRequest::default()
            )
            .unwrap()
            .is_empty()
    );
}

#[test]
fn g19_missing_connection_and_secret_are_named_in_the_error() {
    let dirs = Dirs::new();
    let vault = vault_with_data(&dirs);
    let request = SecretRequest {
        connections: vec!["payments".to_owned(), "billing".to_owned()],
        secrets: vec!["GITHUB_TOKEN".to_owned(), "SLACK_TOKEN".to_owned()],
        model_keys: vec!["openai".to_owned()],
    };
    let error = vault
        .resolve(&ids::AccountId::parse("acct").unwrap(), &request)
        .err()
        .unwrap();
    assert_eq!(
        error,
        SourceError::Missing {
            names: vec![
                "connection billing".to_owned(),
                "secret SLACK_TOKEN".to_owned(),
                "model key openai".to_owned(),
            ]
        }
    );
    // Another account's connection of the same name does not count.
    let error = vault
        .resolve(
            &ids::AccountId::parse("other").unwrap(),
            &SecretRequest {
                connections: vec!["payments".to_owned()],
                ..SecretRequest::default()
            },
        )
        .err()
        .unwrap();
    assert_eq!(
        error,
        SourceError::Missing {
            names: vec!["connection payments".to_owned()]
        }
    );
}

#[test]
fn g20_revoked_or_removed_connection_is_refused_by_name() {
    let dirs = Dirs::new();
    let vault = vault_with_data(&dirs);
    let request = SecretRequest {
        connections: vec!["payments".to_owned(), "crm".to_owned()],
        ..SecretRequest::default()
    };
    assert_eq!(
        vault
            .resolve(&ids::AccountId::parse("acct").unwrap(), &request)
            .unwrap()
            .len(),
        3
    );

    vault
        .connections()
        .revoke(&ids::AccountId::parse("acct").unwrap(), "payments")
        .unwrap();
    assert_eq!(
        vault
            .resolve(&ids::AccountId::parse("acct").unwrap(), &request)
            .err()
            .unwrap(),
        SourceError::Revoked {
            names: vec!["connection payments".to_owned()]
        }
    );
    let listed = vault
        .connections()
        .list(&ids::AccountId::parse("acct").unwrap())
        .unwrap();
    assert!(
        listed
            .iter()
            .any(|info| info.alias == "payments" && info.revoked_at.is_some())
    );
    // A revoked credential is still a credential: it stays in the scrub set.
    let current: Vec<String> = vault
        .account_values(&ids::AccountId::parse("acct").unwrap())
        .unwrap()
        .iter()
        .map(|value| value.dangerously_expose().to_owned())
        .collect();
    assert!(current.contains(&"pay_api_value_2".to_owned()));

    vault
        .connections()
        .remove(&ids::AccountId::parse("acct").unwrap(), "crm")
        .unwrap();
    assert_eq!(
        vault
            .resolve(&ids::AccountId::parse("acct").unwrap(), &request)
            .err()
            .unwrap(),
        SourceError::Missing {
            names: vec!["connection crm".to_owned()]
        }
    );
    assert!(matches!(
        vault
            .connections()
            .remove(&ids::AccountId::parse("acct").unwrap(), "crm")
            .err()
            .unwrap(),
        Error::NotFound { .. }
    ));
    assert!(matches!(
        vault
            .connections()
            .revoke(&ids::AccountId::parse("acct").unwrap(), "crm")
            .err()
            .unwrap(),
        Error::NotFound { .. }
    ));

    // Adding the connection again lifts the revocation, with a new version.
    let readded = vault
        .connections()
        .add(
            &ids::AccountId::parse("acct").unwrap(),
            "payments",
            vec![("api_key".to_owned(), secret("pay_value_v2"))],
        )
        .unwrap();
    assert_eq!(readded.revoked_at, None);
    assert_eq!(readded.version, 2);
}

#[test]
fn g19_account_values_are_every_value_of_that_account_only() {
    let dirs = Dirs::new();
    let vault = vault_with_data(&dirs);
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("someone-else").unwrap(),
            "TOKEN",
            secret("not_this_account"),
        )
        .unwrap();
    let mut current: Vec<String> = vault
        .account_values(&ids::AccountId::parse("acct").unwrap())
        .unwrap()
        .iter()
        .map(|value| value.dangerously_expose().to_owned())
        .collect();
    current.sort();
    let mut expected: Vec<String> = VALUES.iter().map(|value| (*value).to_owned()).collect();
    expected.sort();
    assert_eq!(current, expected);
    // A removed value is no longer current, but the vault keeps it for its retention, and
    // every writer keeps refusing and scrubbing it.
    vault
        .secrets()
        .remove(&ids::AccountId::parse("acct").unwrap(), "GITHUB_TOKEN")
        .unwrap();
    assert_eq!(
        vault
            .account_values(&ids::AccountId::parse("acct").unwrap())
            .unwrap()
            .len(),
        VALUES.len()
    );
}

#[test]
fn g19_a_run_collects_its_values_from_the_vault_and_scrubs_them() {
    let dirs = Dirs::new();
    let vault = vault_with_data(&dirs);
    let request = SecretRequest {
        connections: vec!["payments".to_owned()],
        ..SecretRequest::default()
    };
    let vault = std::sync::Arc::new(vault);
    let sets = redact::ScrubSets::new(vault.clone());
    let run = RunSecrets::collect(
        &ids::RunId::parse("run-1").unwrap(),
        &ids::AccountId::parse("acct").unwrap(),
        &sets,
        &request,
    )
    .unwrap();
    let scrubbed = run
        .redactor()
        .scrub("the key is pay_api_value_2, the id pay_account_value_3");
    assert!(!scrubbed.as_str().contains("pay_api_value_2"));
    assert!(!scrubbed.as_str().contains("pay_account_value_3"));
    assert!(scrubbed.as_str().contains(redact::MASK));
}

#[test]
fn g19_names_that_would_not_make_clean_variables_are_refused() {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    assert!(matches!(
        vault
            .secrets()
            .set(
                &ids::AccountId::parse("acct").unwrap(),
                "NOT-A-VARIABLE",
                secret("valid-length-value")
            )
            .err()
            .unwrap(),
        Error::InvalidName { .. }
    ));
    assert!(matches!(
        vault
            .connections()
            .add(
                &ids::AccountId::parse("acct").unwrap(),
                "Payments",
                vec![("api_key".to_owned(), secret("valid-length-value"))]
            )
            .err()
            .unwrap(),
        Error::InvalidName { .. }
    ));
    let collision = vault
        .connections()
        .add(
            &ids::AccountId::parse("acct").unwrap(),
            "payments",
            vec![
                ("api-key".to_owned(), secret("value-one")),
                ("api_key".to_owned(), secret("value-two")),
            ],
        )
        .err()
        .unwrap();
    assert!(
        collision.to_string().contains("CONN_PAYMENTS_API_KEY"),
        "{collision}"
    );
    assert!(matches!(
        vault
            .connections()
            .add(&ids::AccountId::parse("acct").unwrap(), "empty", vec![])
            .err()
            .unwrap(),
        Error::NoFields { .. }
    ));
    assert!(matches!(
        vault
            .secrets()
            .set(&ids::AccountId::parse("acct").unwrap(), "EMPTY", secret(""))
            .err()
            .unwrap(),
        Error::EmptyValue { .. }
    ));
    // Nothing of the refused writes was stored.
    assert!(
        vault
            .secrets()
            .list(&ids::AccountId::parse("acct").unwrap())
            .unwrap()
            .is_empty()
    );
    assert!(
        vault
            .connections()
            .list(&ids::AccountId::parse("acct").unwrap())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn g20_a_resumed_run_gets_the_new_value_and_is_refused_a_revoked_connection() {
    let dirs = Dirs::new();
    let vault = vault_with_data(&dirs);
    let request = SecretRequest {
        connections: vec!["crm".to_owned()],
        secrets: vec!["GITHUB_TOKEN".to_owned()],
        ..SecretRequest::default()
    };
    let vault = std::sync::Arc::new(vault);
    let sets = redact::ScrubSets::new(vault.clone());
    let mut run = RunSecrets::collect(
        &ids::RunId::parse("run-parked").unwrap(),
        &ids::AccountId::parse("acct").unwrap(),
        &sets,
        &request,
    )
    .unwrap();
    // While the run waits at a gate, the person changes a value.
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "GITHUB_TOKEN",
            secret("ghp_rotated_while_parked"),
        )
        .unwrap();
    run.refresh(&request).unwrap();
    let token = SecretName::AgentSecret {
        name: "GITHUB_TOKEN".to_owned(),
    };
    assert_eq!(
        run.get(&token).unwrap().dangerously_expose(),
        "ghp_rotated_while_parked"
    );
    let scrubbed = run
        .redactor()
        .scrub("old ghp_listing_value_1 new ghp_rotated_while_parked");
    assert!(!scrubbed.as_str().contains("ghp_listing_value_1"));
    assert!(!scrubbed.as_str().contains("ghp_rotated_while_parked"));

    // Then revokes the connection: resuming is refused.
    vault
        .connections()
        .revoke(&ids::AccountId::parse("acct").unwrap(), "crm")
        .unwrap();
    assert!(run.refresh(&request).is_err());
    assert_eq!(
        vault
            .resolve(&ids::AccountId::parse("acct").unwrap(), &request)
            .err()
            .unwrap(),
        SourceError::Revoked {
            names: vec!["connection crm".to_owned()]
        }
    );
}
