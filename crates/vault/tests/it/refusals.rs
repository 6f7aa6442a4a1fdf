//! What the vault refuses before it stores or looks anything up (G16, G19): values too short
//! to scrub without masking ordinary text, secret names that would take over a step's
//! environment, and malformed names on removal and revocation. No refusal repeats a value, and
//! a "not found" leaves the name out (it is logged, and a name may be anything pasted).

use vault::{Error, MIN_VALUE_BYTES};

use crate::support::{Dirs, secret};

#[test]
fn g16_values_shorter_than_eight_bytes_are_refused_everywhere_without_repeating_them() {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    assert_eq!(MIN_VALUE_BYTES, 8);
    // Values are counted as given: surrounding spaces are not trimmed away, and they count.
    for short in ["1", "e", "true", "eu-west", "  1234 ", "Zq7#xW!"] {
        let refusals = [
            vault
                .secrets()
                .set(
                    &ids::AccountId::parse("acct").unwrap(),
                    "SHORT_TOKEN",
                    secret(short),
                )
                .err()
                .unwrap(),
            vault
                .connections()
                .add(
                    &ids::AccountId::parse("acct").unwrap(),
                    "payments",
                    vec![
                        ("api_key".to_owned(), secret("sk_live_long_enough_1")),
                        ("region".to_owned(), secret(short)),
                    ],
                )
                .err()
                .unwrap(),
            vault
                .model_keys()
                .set(
                    &ids::AccountId::parse("acct").unwrap(),
                    "anthropic",
                    secret(short),
                )
                .err()
                .unwrap(),
        ];
        for refused in refusals {
            assert!(
                matches!(refused, Error::ValueTooShort { min_bytes: 8, .. }),
                "{short:?}: {refused:?}"
            );
            let message = refused.to_string();
            assert!(
                message.contains("at least 8 bytes") && message.contains("step's inputs"),
                "{message}"
            );
            // Values of a letter or two occur in any sentence; the longer ones must not.
            if short.trim().len() >= 4 {
                assert!(
                    !format!("{message} {refused:?}").contains(short.trim()),
                    "{short:?} repeated: {message}"
                );
            }
        }
    }
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
    assert!(
        vault
            .model_keys()
            .list(&ids::AccountId::parse("acct").unwrap())
            .unwrap()
            .is_empty()
    );
    // Eight bytes are enough, as given (a region written out is nine).
    for (name, enough) in [
        ("EIGHT", "12345678"),
        ("REGION", "eu-west-1"),
        ("SPACED", " 123456 "),
    ] {
        vault
            .secrets()
            .set(
                &ids::AccountId::parse("acct").unwrap(),
                name,
                secret(enough),
            )
            .unwrap();
    }
    assert_eq!(
        vault
            .secrets()
            .list(&ids::AccountId::parse("acct").unwrap())
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn g19_reserved_secret_names_are_refused_saying_why_and_stored_nothing() {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    for reserved in [
        "PATH",
        "HOME",
        "LD_PRELOAD",
        "PYTHONPATH",
        "CONN_PAYMENTS_API_KEY",
        "STEPWARD_ROOT_KEY",
    ] {
        let refused = vault
            .secrets()
            .set(
                &ids::AccountId::parse("acct").unwrap(),
                reserved,
                secret("a-long-enough-value"),
            )
            .err()
            .unwrap();
        let Error::InvalidName { rule, .. } = &refused else {
            panic!("{reserved}: {refused:?}");
        };
        assert!(rule.contains("process environment"), "{rule}");
        // Removing under a reserved name is a plain "not found", so a secret stored before the
        // rule can still be removed.
        assert!(
            matches!(
                vault
                    .secrets()
                    .remove(&ids::AccountId::parse("acct").unwrap(), reserved)
                    .err()
                    .unwrap(),
                Error::NotFound { .. }
            ),
            "{reserved}"
        );
    }
    assert!(
        vault
            .secrets()
            .list(&ids::AccountId::parse("acct").unwrap())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn g19_remove_and_revoke_check_the_name_first_and_not_found_leaves_it_out() {
    let dirs = Dirs::new();
    let vault = dirs.open(&dirs.default_options());
    let pasted = "sk_live pasted/into the name";
    let refusals = [
        vault
            .secrets()
            .remove(&ids::AccountId::parse("acct").unwrap(), pasted)
            .err()
            .unwrap(),
        vault
            .connections()
            .remove(&ids::AccountId::parse("acct").unwrap(), pasted)
            .err()
            .unwrap(),
        vault
            .connections()
            .revoke(&ids::AccountId::parse("acct").unwrap(), pasted)
            .err()
            .unwrap(),
        vault
            .model_keys()
            .remove(&ids::AccountId::parse("acct").unwrap(), pasted)
            .err()
            .unwrap(),
        vault
            .secrets()
            .dangerously_reveal(&ids::AccountId::parse("acct").unwrap(), pasted)
            .err()
            .unwrap(),
        vault
            .connections()
            .dangerously_reveal(&ids::AccountId::parse("acct").unwrap(), pasted)
            .err()
            .unwrap(),
    ];
    for refused in refusals {
        assert!(matches!(refused, Error::InvalidName { .. }), "{refused:?}");
    }
    let missing = [
        (
            "GONE_TOKEN_4711",
            vault
                .secrets()
                .remove(&ids::AccountId::parse("acct").unwrap(), "GONE_TOKEN_4711"),
        ),
        (
            "gone_alias_4711",
            vault
                .connections()
                .remove(&ids::AccountId::parse("acct").unwrap(), "gone_alias_4711"),
        ),
        (
            "gone_alias_4711",
            vault
                .connections()
                .revoke(&ids::AccountId::parse("acct").unwrap(), "gone_alias_4711"),
        ),
        (
            "gone-provider-4711",
            vault.model_keys().remove(
                &ids::AccountId::parse("acct").unwrap(),
                "gone-provider-4711",
            ),
        ),
    ];
    for (name, answer) in missing {
        let refused = answer.err().unwrap();
        let Error::NotFound { name: kept, .. } = &refused else {
            panic!("{name}: {refused:?}");
        };
        assert_eq!(kept, name, "the caller can still tell which");
        assert!(
            !refused.to_string().contains("4711"),
            "the message names it: {refused}"
        );
    }
}
