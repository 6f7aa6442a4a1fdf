//! Which names the vault accepts. Secret names reach scripts as environment variables, and a
//! connection's alias and fields reach steps as `CONN_<ALIAS>_<FIELD>`, so names are kept to
//! what makes a clean, unambiguous variable.

use storage::vault::ItemKind;

use crate::error::Error;

const MAX_SECRET_NAME: usize = 128;
const MAX_ALIAS: usize = 64;

/// A human name of an item kind, used in errors and in missing-name lists.
pub(crate) fn kind_label(kind: ItemKind) -> &'static str {
    match kind {
        ItemKind::Secret => "secret",
        ItemKind::Connection => "connection",
        ItemKind::ModelKey => "model key",
    }
}

/// Names a secret may not take, exactly (compared ignoring ASCII case): a step's own
/// environment needs them, so a secret of that name would replace the search path or the home
/// directory of the step that asks for it.
const RESERVED_SECRET_NAMES: [&str; 2] = ["PATH", "HOME"];

/// Beginnings a secret name may not have (compared ignoring ASCII case): `LD_` steers the
/// dynamic loader (`LD_PRELOAD`), `PYTHON` steers the interpreter (`PYTHONPATH`,
/// `PYTHONSTARTUP`), `CONN_` is where a step's connections arrive and `STEPWARD_` is the
/// platform's own.
const RESERVED_SECRET_PREFIXES: [&str; 4] = ["LD_", "PYTHON", "CONN_", "STEPWARD_"];

/// Why a reserved name is refused, in words safe to show (the name itself is not repeated).
const RESERVED_RULE: &str = "a secret reaches scripts as an environment variable, so it may \
                             not take a name the process environment depends on: PATH, HOME, \
                             or one starting with LD_, PYTHON, CONN_ (a step's connections) or \
                             STEPWARD_";

/// An agent secret about to be stored: an environment variable name (`GITHUB_TOKEN`) that does
/// not take over the step's environment.
pub(crate) fn check_secret_name(name: &str) -> Result<(), Error> {
    check_secret_name_format(name)?;
    let upper = name.to_ascii_uppercase();
    let reserved = RESERVED_SECRET_NAMES.contains(&upper.as_str())
        || RESERVED_SECRET_PREFIXES
            .iter()
            .any(|prefix| upper.starts_with(prefix));
    if reserved {
        Err(Error::InvalidName {
            kind: "secret",
            name: name.to_owned(),
            rule: RESERVED_RULE,
        })
    } else {
        Ok(())
    }
}

/// The shape of a secret name alone, for removing and revealing: a secret stored before a
/// name became reserved can still be removed.
pub(crate) fn check_secret_name_format(name: &str) -> Result<(), Error> {
    let mut characters = name.chars();
    let first_ok = characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_');
    let rest_ok = characters.all(|rest| rest.is_ascii_alphanumeric() || rest == '_');
    if first_ok && rest_ok && name.len() <= MAX_SECRET_NAME {
        Ok(())
    } else {
        Err(Error::InvalidName {
            kind: "secret",
            name: name.to_owned(),
            rule: "a secret reaches scripts as an environment variable: 1 to 128 ASCII letters, \
                   digits and `_`, not starting with a digit",
        })
    }
}

/// A connection alias, as workflow files write it: lower-case letters, digits and `_`,
/// starting with a letter.
pub(crate) fn check_alias(alias: &str) -> Result<(), Error> {
    if lower_name(alias, &['_']) {
        Ok(())
    } else {
        Err(Error::InvalidName {
            kind: "connection",
            name: alias.to_owned(),
            rule: "an alias is 1 to 64 lower-case letters, digits and `_`, starting with a letter",
        })
    }
}

/// A connection field (`api_key`, `base-url`).
pub(crate) fn check_field(field: &str) -> Result<(), Error> {
    if lower_name(field, &['_', '-']) {
        Ok(())
    } else {
        Err(Error::InvalidName {
            kind: "connection field",
            name: field.to_owned(),
            rule: "a field is 1 to 64 lower-case letters, digits, `_` and `-`, starting with a \
                   letter",
        })
    }
}

/// A model provider (`anthropic`, `openai-compatible`).
pub(crate) fn check_provider(provider: &str) -> Result<(), Error> {
    if lower_name(provider, &['_', '-']) {
        Ok(())
    } else {
        Err(Error::InvalidName {
            kind: "model key",
            name: provider.to_owned(),
            rule: "a provider is 1 to 64 lower-case letters, digits, `_` and `-`, starting with \
                   a letter",
        })
    }
}

fn lower_name(name: &str, extra: &[char]) -> bool {
    let mut characters = name.chars();
    let first_ok = characters
        .next()
        .is_some_and(|first| first.is_ascii_lowercase());
    let rest_ok = characters
        .all(|rest| rest.is_ascii_lowercase() || rest.is_ascii_digit() || extra.contains(&rest));
    first_ok && rest_ok && name.len() <= MAX_ALIAS
}

/// The part of a connection's environment variable that a field contributes (`base-url` →
/// `BASE_URL`); two fields with the same part would collide.
pub(crate) fn field_variable_part(field: &str) -> String {
    field
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() {
                character.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g19_secret_names_are_environment_variable_names() {
        assert!(check_secret_name("GITHUB_TOKEN").is_ok());
        assert!(check_secret_name("_private").is_ok());
        for bad in ["", "1TOKEN", "A-B", "A B", "A=B", "É", &"A".repeat(129)] {
            assert!(check_secret_name(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn g19_secret_names_that_would_hijack_the_environment_are_refused_saying_why() {
        for reserved in [
            "PATH",
            "HOME",
            "path",
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "PYTHONPATH",
            "PYTHONSTARTUP",
            "CONN_PAYMENTS_API_KEY",
            "STEPWARD_ROOT_KEY",
        ] {
            let refused = check_secret_name(reserved).err().unwrap();
            let Error::InvalidName { rule, .. } = &refused else {
                panic!("{reserved}: {refused}");
            };
            assert!(rule.contains("process environment"), "{reserved}: {rule}");
            assert!(
                check_secret_name_format(reserved).is_ok(),
                "{reserved}: a stored one can still be removed"
            );
        }
        for allowed in [
            "PATHFINDER_TOKEN",
            "HOMEBREW_TOKEN",
            "OLD_PATH",
            "MY_CONN_TOKEN",
        ] {
            assert!(check_secret_name(allowed).is_ok(), "{allowed} refused");
        }
    }

    #[test]
    fn g19_aliases_and_fields_follow_the_workflow_format() {
        assert!(check_alias("payments").is_ok());
        assert!(check_alias("crm_2").is_ok());
        for bad in ["", "Payments", "2crm", "a-b", "a.b"] {
            assert!(check_alias(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_field("api_key").is_ok());
        assert!(check_field("base-url").is_ok());
        assert!(check_field("API_KEY").is_err());
        assert_eq!(field_variable_part("base-url"), "BASE_URL");
    }
}
