//! G16: the vault's generation moves with every change of an account's values, in the same
//! transaction, and is seen by another process's vault over the same database; the account's
//! values for scrubbing are every current one and every superseded one still kept.

use redact::SecretSource;

use crate::support::{Dirs, secret};

#[test]
fn g16_every_vault_write_moves_the_accounts_generation_and_only_its_own() {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    // Another process's vault over the same database.
    let other_process = dirs.open(&dirs.default_options());
    let mut seen = vec![
        vault
            .generation(&ids::AccountId::parse("acct").unwrap())
            .unwrap(),
    ];
    let mut check = |what: &str| {
        let now = other_process
            .generation(&ids::AccountId::parse("acct").unwrap())
            .unwrap();
        assert!(
            now > *seen.last().unwrap(),
            "{what} did not move the generation: {seen:?} then {now}"
        );
        seen.push(now);
    };
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "GITHUB_TOKEN",
            secret("ghp_generation_value_1"),
        )
        .unwrap();
    check("setting a secret");
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "GITHUB_TOKEN",
            secret("ghp_generation_value_2"),
        )
        .unwrap();
    check("replacing a secret");
    vault
        .connections()
        .add(
            &ids::AccountId::parse("acct").unwrap(),
            "payments",
            vec![("api_key".to_owned(), secret("pay_generation_value"))],
        )
        .unwrap();
    check("adding a connection");
    vault
        .connections()
        .revoke(&ids::AccountId::parse("acct").unwrap(), "payments")
        .unwrap();
    check("revoking a connection");
    vault
        .model_keys()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "anthropic",
            secret("model_generation_value"),
        )
        .unwrap();
    check("setting a model key");
    vault
        .model_keys()
        .remove(&ids::AccountId::parse("acct").unwrap(), "anthropic")
        .unwrap();
    check("removing a model key");
    vault
        .rotate_account_key(&ids::AccountId::parse("acct").unwrap())
        .unwrap();
    check("rotating the account key");

    let before = vault
        .generation(&ids::AccountId::parse("someone-else").unwrap())
        .unwrap();
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "ANOTHER",
            secret("another_generation_value"),
        )
        .unwrap();
    assert_eq!(
        vault
            .generation(&ids::AccountId::parse("someone-else").unwrap())
            .unwrap(),
        before
    );
}

#[test]
fn g16_account_values_hold_superseded_values_still_kept() {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "GITHUB_TOKEN",
            secret("ghp_replaced_value_1"),
        )
        .unwrap();
    vault
        .secrets()
        .set(
            &ids::AccountId::parse("acct").unwrap(),
            "GITHUB_TOKEN",
            secret("ghp_current_value_2"),
        )
        .unwrap();
    vault
        .connections()
        .add(
            &ids::AccountId::parse("acct").unwrap(),
            "crm",
            vec![("token".to_owned(), secret("crm_removed_value"))],
        )
        .unwrap();
    vault
        .connections()
        .remove(&ids::AccountId::parse("acct").unwrap(), "crm")
        .unwrap();
    let mut values: Vec<String> = vault
        .account_values(&ids::AccountId::parse("acct").unwrap())
        .unwrap()
        .iter()
        .map(|value| value.dangerously_expose().to_owned())
        .collect();
    values.sort();
    assert_eq!(
        values,
        [
            "crm_removed_value",
            "ghp_current_value_2",
            "ghp_replaced_value_1"
        ]
    );
}
