//! The identifiers one crate hands another: an account's id and a run's id. Each is validated
//! where it is made (typed by a person, read from a path, a stored row or a clock), so a crate
//! that receives one never has to ask whether a free string is safe to use as a folder name, a
//! scrub scope or a key. Nothing here does IO.

#![forbid(unsafe_code)]

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

/// The longest id of either kind, in bytes.
mod network;
pub use network::{Network, UnknownName};

pub const MAX_ID_BYTES: usize = 64;

/// The reserved id of the server's own audit chain: entries about no account (a refused
/// request that named none). Outside the account grammar (it starts with `_`), so no account
/// can be made with it.
pub const SERVER_CHAIN: &str = "_server";

/// An account (tenant) id: 1 to 64 bytes of lowercase ASCII letters, digits, `-` and `_`,
/// starting with a letter or a digit. It names a folder on disk (the account's workspace), so
/// `.`, `/` and the empty id are outside the grammar.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(into = "String", try_from = "String")]
pub struct AccountId(String);

/// A run id: 1 to 64 bytes of ASCII letters, digits, `-` and `_` (the engine's clock makes
/// `run_` and 32 hex digits). Never a `:`, so no run id can pass for another kind of scope.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(into = "String", try_from = "String")]
pub struct RunId(String);

/// Text that is not an id of the kind asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{shown}` is not {kind}: use {grammar}, at most {MAX_ID_BYTES} characters")]
pub struct InvalidId {
    kind: &'static str,
    grammar: &'static str,
    /// The text as given, cut and with control characters escaped: it may be anything a
    /// request carried.
    shown: String,
}

impl InvalidId {
    fn new(kind: &'static str, grammar: &'static str, text: &str) -> InvalidId {
        const SHOWN_CHARS: usize = 80;
        let mut shown: String = text
            .chars()
            .take(SHOWN_CHARS)
            .flat_map(char::escape_default)
            .collect();
        if text.chars().nth(SHOWN_CHARS).is_some() {
            shown.push('…');
        }
        InvalidId {
            kind,
            grammar,
            shown,
        }
    }

    /// What kind of id was asked for ("an account id", "a run id").
    pub fn kind(&self) -> &'static str {
        self.kind
    }
}

const ACCOUNT_GRAMMAR: &str =
    "lowercase letters, digits, `-` and `_`, starting with a letter or a digit";
const RUN_GRAMMAR: &str = "letters, digits, `-` and `_`";

fn is_account_id(text: &str) -> bool {
    (1..=MAX_ID_BYTES).contains(&text.len())
        && text
            .bytes()
            .next()
            .is_some_and(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit())
        && text.bytes().all(|byte| {
            byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-' || byte == b'_'
        })
}

fn is_run_id(text: &str) -> bool {
    (1..=MAX_ID_BYTES).contains(&text.len())
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

impl AccountId {
    /// The id, if `text` has an account id's grammar.
    pub fn parse(text: &str) -> Result<AccountId, InvalidId> {
        if is_account_id(text) {
            Ok(AccountId(text.to_owned()))
        } else {
            Err(InvalidId::new("an account id", ACCOUNT_GRAMMAR, text))
        }
    }

    /// The id of the server's own audit chain ([`SERVER_CHAIN`]).
    pub fn server_chain() -> AccountId {
        AccountId(SERVER_CHAIN.to_owned())
    }

    /// An id read back from a record that may also belong to the server's own chain (the audit
    /// log): an account id, or exactly [`SERVER_CHAIN`].
    pub fn parse_stored(text: &str) -> Result<AccountId, InvalidId> {
        if text == SERVER_CHAIN {
            Ok(AccountId::server_chain())
        } else {
            AccountId::parse(text)
        }
    }

    /// Whether this is the server's own chain rather than an account.
    pub fn is_server_chain(&self) -> bool {
        self.0 == SERVER_CHAIN
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl RunId {
    /// The id, if `text` has a run id's grammar.
    pub fn parse(text: &str) -> Result<RunId, InvalidId> {
        if is_run_id(text) {
            Ok(RunId(text.to_owned()))
        } else {
            Err(InvalidId::new("a run id", RUN_GRAMMAR, text))
        }
    }

    /// The id of a new run from 16 random bytes: `run_` and their 32 lower-case hex digits.
    pub fn from_random(bytes: [u8; 16]) -> RunId {
        use std::fmt::Write;
        let mut text = String::with_capacity(4 + 32);
        text.push_str("run_");
        for byte in bytes {
            // Writing to a String cannot fail.
            let _ = write!(text, "{byte:02x}");
        }
        RunId(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! text_traits {
    ($name:ident) => {
        impl FromStr for $name {
            type Err = InvalidId;

            fn from_str(text: &str) -> Result<$name, InvalidId> {
                $name::parse(text)
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidId;

            fn try_from(text: String) -> Result<$name, InvalidId> {
                $name::parse(&text)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        // A map keyed by the id can be searched with its text (the derived `Hash`, `Eq` and
        // `Ord` are the inner string's, so they agree).
        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }
    };
}

text_traits!(AccountId);
text_traits!(RunId);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn account_ids_that_could_leave_their_folder_or_pass_for_the_server_are_refused() {
        for bad in [
            "", ".", "..", "a/b", "../other", "-a", "_server", "Acme", "a b", "a:b", "a\0",
            "acme\n",
        ] {
            let error = AccountId::parse(bad).expect_err(bad);
            assert_eq!(error.kind(), "an account id");
        }
        assert!(AccountId::parse(&"a".repeat(MAX_ID_BYTES + 1)).is_err());
        for good in [
            "local",
            "acme",
            "9lives",
            "a-b_c",
            &"a".repeat(MAX_ID_BYTES),
        ] {
            assert_eq!(AccountId::parse(good).expect(good).as_str(), good);
        }
    }

    #[test]
    fn only_a_stored_record_may_name_the_server_chain() {
        assert!(AccountId::parse(SERVER_CHAIN).is_err());
        let chain = AccountId::parse_stored(SERVER_CHAIN).expect("the server chain");
        assert!(chain.is_server_chain());
        assert!(
            !AccountId::parse_stored("acme")
                .expect("acme")
                .is_server_chain()
        );
        assert!(AccountId::parse_stored("_other").is_err());
    }

    #[test]
    fn run_ids_have_no_scope_prefix_separator_or_path() {
        for bad in ["", "account:acme", "run/1", "run 1", "run.1", "rün"] {
            assert_eq!(RunId::parse(bad).expect_err(bad).kind(), "a run id");
        }
        assert!(RunId::parse(&"r".repeat(MAX_ID_BYTES + 1)).is_err());
        for good in [
            "run-1",
            "run_1",
            "run_0123456789abcdef0123456789abcdef",
            "R1",
        ] {
            assert_eq!(RunId::parse(good).expect(good).to_string(), good);
        }
    }

    #[test]
    fn a_new_run_id_is_run_and_its_bytes_in_hex() {
        let id = RunId::from_random([0xab; 16]);
        assert_eq!(id.as_str(), format!("run_{}", "ab".repeat(16)));
        assert_eq!(RunId::parse(id.as_str()), Ok(id));
    }

    #[test]
    fn an_invalid_id_is_shown_cut_and_escaped() {
        let text = format!("{}\u{1b}[31m", "x".repeat(100));
        let message = RunId::parse(&text).expect_err("too long").to_string();
        assert!(!message.contains('\u{1b}'), "{message}");
        assert!(message.contains('…'), "{message}");
        assert!(message.len() < 300, "{message}");
        let message = AccountId::parse("a\u{1b}").expect_err("escape").to_string();
        assert!(message.contains("\\u{1b}"), "{message}");
    }

    #[test]
    fn ids_read_from_json_are_validated() {
        let id: RunId = serde_json::from_str("\"run-1\"").expect("a run id");
        assert_eq!(serde_json::to_string(&id).expect("serialise"), "\"run-1\"");
        assert!(serde_json::from_str::<RunId>("\"account:acme\"").is_err());
        assert!(serde_json::from_str::<AccountId>("\"../b\"").is_err());
        // The server's chain is never read back from JSON as an account.
        assert!(serde_json::from_str::<AccountId>("\"_server\"").is_err());
    }

    proptest! {
        #[test]
        fn every_parsed_account_id_is_a_plain_folder_name(text in ".{0,70}") {
            if let Ok(id) = AccountId::parse(&text) {
                prop_assert!(id.as_str() != "." && id.as_str() != "..");
                prop_assert!(!id.as_str().contains('/'));
                prop_assert!(!id.as_str().is_empty() && id.as_str().len() <= MAX_ID_BYTES);
                prop_assert_eq!(id.as_str().parse::<AccountId>().ok(), Some(id.clone()));
            }
        }
    }
}
