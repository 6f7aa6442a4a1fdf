//! G4: input keys that would store a credential verbatim are refused, however they are spelt.

use unicode_normalization::UnicodeNormalization;

/// Keys that name a credential, in folded form (see [`fold_key`]). The lead's list is
/// `secret`, `credentials`, `api_key` and `token`; the singular and plural twins are included
/// because `secrets` or `credential` would store the very same thing.
const FORBIDDEN_FOLDED_KEYS: &[&str] = &[
    "secret",
    "secrets",
    "credential",
    "credentials",
    "apikey",
    "apikeys",
    "token",
    "tokens",
];

/// Folds a key for comparison: Unicode NFKC, full case folding, NFKC again (case folding can
/// un-normalise), then every character that is not a letter or digit dropped, zero-width and
/// other format characters included.
fn fold_key(key: &str) -> String {
    let normalised: String = key.nfkc().collect();
    let folded = caseless::default_case_fold_str(&normalised);
    folded
        .nfkc()
        .filter(|character| character.is_alphanumeric())
        .collect()
}

/// Whether `key` names a credential (G4): `apiKey`, `API-KEY`, `Token`, `api\u{200b}key` and
/// `ＳＥＣＲＥＴ` all do.
pub fn is_forbidden_key(key: &str) -> bool {
    let folded = fold_key(key);
    FORBIDDEN_FOLDED_KEYS.contains(&folded.as_str())
}

/// The paths (JSON-pointer style, `/outer/0/apiKey`) of every forbidden key at any depth of
/// `value`, sorted. The engine calls this on run-time input values; the parser checks
/// literals itself, so that it can point at the line and column.
pub fn forbidden_keys_in(value: &serde_json::Value) -> Vec<String> {
    // An explicit stack rather than recursion, and paths kept as links to their parent rather
    // than copied per level: run-time values can be nested arbitrarily deep, and this check
    // must not be what overflows the stack or the memory.
    let mut path_parts: Vec<(Option<usize>, String)> = Vec::new();
    let mut found_parts = Vec::new();
    let mut pending: Vec<(Option<usize>, &serde_json::Value)> = vec![(None, value)];
    while let Some((parent, value)) = pending.pop() {
        match value {
            serde_json::Value::Object(object) => {
                for (key, inner) in object {
                    path_parts.push((parent, escape_pointer_token(key)));
                    let part = path_parts.len() - 1;
                    if is_forbidden_key(key) {
                        found_parts.push(part);
                    }
                    pending.push((Some(part), inner));
                }
            }
            serde_json::Value::Array(items) => {
                for (index, inner) in items.iter().enumerate() {
                    path_parts.push((parent, index.to_string()));
                    pending.push((Some(path_parts.len() - 1), inner));
                }
            }
            _ => {}
        }
    }
    let mut found: Vec<String> = found_parts
        .into_iter()
        .map(|part| {
            let mut tokens = Vec::new();
            let mut next = Some(part);
            while let Some(index) = next {
                let (parent, token) = &path_parts[index];
                tokens.push(token.as_str());
                next = *parent;
            }
            tokens.reverse();
            format!("/{}", tokens.join("/"))
        })
        .collect();
    found.sort();
    found
}

/// RFC 6901 escaping, so a key holding `/` cannot fake a deeper path.
fn escape_pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use crate::forbidden::{forbidden_keys_in, is_forbidden_key};

    #[test]
    fn g4_every_spelling_of_a_credential_key_is_forbidden() {
        for key in [
            "secret",
            "Secret",
            "SECRETS",
            "credentials",
            "api_key",
            "apiKey",
            "API-KEY",
            "api\u{200b}key",
            "api\u{2060}key",
            "Token",
            "t.o.k.e.n",
            "ＴＯＫＥＮ",
            "api key",
            "ſecret",
        ] {
            assert!(is_forbidden_key(key), "{key:?} should be forbidden");
        }
    }

    #[test]
    fn g4_ordinary_keys_are_allowed() {
        for key in [
            "ticket_id",
            "tokenizer",
            "secretary",
            "api",
            "key",
            "amount",
            "",
        ] {
            assert!(!is_forbidden_key(key), "{key:?} should be allowed");
        }
    }

    #[test]
    fn g4_a_very_deep_value_is_checked_without_overflowing_the_stack() {
        let mut value = serde_json::json!({"token": 1});
        for _ in 0..100_000 {
            value = serde_json::Value::Array(vec![value]);
        }
        let found = forbidden_keys_in(&value);
        assert_eq!(found.len(), 1);
        assert!(found[0].ends_with("/0/token"));
        // Dropping a deep serde_json value recurses too; take it apart iteratively.
        let mut current = value;
        while let serde_json::Value::Array(mut items) = current {
            current = items.pop().unwrap_or(serde_json::Value::Null);
        }
    }

    #[test]
    fn g4_forbidden_keys_are_found_at_any_depth_with_their_paths() {
        let value = serde_json::json!({
            "ticket": {"items": [{"apiKey": 1}, {"ok": {"TOKEN": "x"}}]},
            "a/b": {"secret": true},
            "credentials": null
        });
        let mut found = forbidden_keys_in(&value);
        found.sort();
        assert_eq!(
            found,
            vec![
                "/a~1b/secret".to_string(),
                "/credentials".to_string(),
                "/ticket/items/0/apiKey".to_string(),
                "/ticket/items/1/ok/TOKEN".to_string(),
            ]
        );
    }
}
