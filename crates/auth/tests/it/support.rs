//! Principals for the tests: people and keys of one account, and a stranger of another.

use auth::{Principal, Role};

/// The account every test principal belongs to, unless it says otherwise.
pub const ACCOUNT: &str = "acct-home";
/// Another account on the same server.
pub const OTHER_ACCOUNT: &str = "acct-other";

/// A person of [`ACCOUNT`] with `role`.
pub fn person(role: Role) -> Principal {
    Principal::Person {
        person_id: format!("person-{role}"),
        account_id: ids::AccountId::parse(ACCOUNT).unwrap(),
        role,
    }
}

/// An API key of [`ACCOUNT`] carrying `role`.
pub fn key(role: Role) -> Principal {
    Principal::ApiKey {
        key_id: format!("key-{role}"),
        account_id: ids::AccountId::parse(ACCOUNT).unwrap(),
        role,
    }
}

/// A person of [`OTHER_ACCOUNT`] with `role`.
pub fn stranger(role: Role) -> Principal {
    Principal::Person {
        person_id: format!("stranger-{role}"),
        account_id: ids::AccountId::parse(OTHER_ACCOUNT).unwrap(),
        role,
    }
}

/// An API key of [`OTHER_ACCOUNT`] carrying `role`.
pub fn stranger_key(role: Role) -> Principal {
    Principal::ApiKey {
        key_id: format!("stranger-key-{role}"),
        account_id: ids::AccountId::parse(OTHER_ACCOUNT).unwrap(),
        role,
    }
}
