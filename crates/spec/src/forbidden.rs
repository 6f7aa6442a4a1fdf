//! G4: input keys that would store a credential verbatim are refused, however they are spelt.

use unicode_normalization::UnicodeNormalization;

/// The components that make a key name a credential (in their normalised form, see
/// [`normalise`]). `key` alone does not, nor the plural `tokens` (`max_tokens`, `tokens_used`
/// count things); `api` followed by `key` does.
const CREDENTIAL_COMPONENTS: &[&str] = &[
    "secret",
    "secrets",
    "credential",
    "credentials",
    "token",
    "password",
    "passwd",
    "apikey",
];

/// A component normalised for comparison: Unicode NFKC, full case folding, the UTS #39
/// confusable skeleton (a Cyrillic `е`, a zero for an `o`), and case folding again (the
/// skeleton's prototypes are of mixed case).
fn normalise(component: &str) -> String {
    let folded = caseless::default_case_fold_str(&component.nfkc().collect::<String>());
    let skeleton: String = unicode_security::skeleton(&folded.nfkc().collect::<String>()).collect();
    caseless::default_case_fold_str(&skeleton)
}

/// The key's components: split at every character that is not a letter or a digit (zero-width
/// and other format characters included) and where a lower-case letter is followed by an
/// upper-case one (`apiKey`, `pageToken`), after NFKC.
fn components(key: &str) -> Vec<String> {
    let mut components = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for character in key.nfkc() {
        if !character.is_alphanumeric() {
            if !current.is_empty() {
                components.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if previous_lower && character.is_uppercase() && !current.is_empty() {
            components.push(std::mem::take(&mut current));
        }
        previous_lower = character.is_lowercase();
        current.push(character);
    }
    if !current.is_empty() {
        components.push(current);
    }
    components
        .iter()
        .map(|component| normalise(component))
        .collect()
}

/// The normalised credential words, computed once per call (cheap: eight short words).
fn credential_words() -> Vec<String> {
    CREDENTIAL_COMPONENTS
        .iter()
        .map(|word| normalise(word))
        .collect()
}

/// Whether `key` names a credential (G4): a component is one of [`CREDENTIAL_COMPONENTS`], or
/// `api` is followed by `key`, or the components joined are one of them (`t.o.k.e.n`,
/// `api key`). `access_token`, `clientSecret`, `API-KEY`, `tokеn` with a Cyrillic `е` and
/// `ＳＥＣＲＥＴ` all do; `max_tokens`, `tokenizer` and `key` do not.
pub fn is_forbidden_key(key: &str) -> bool {
    credential_component(key).is_some()
}

/// Which component of `key` names a credential, if one does (its index, or the number of
/// components when only the joined key does).
pub(crate) fn credential_component(key: &str) -> Option<usize> {
    let parts = components(key);
    let words = credential_words();
    let (api, key_word) = (normalise("api"), normalise("key"));
    if let Some(index) = parts.iter().position(|part| words.contains(part)) {
        return Some(index);
    }
    if let Some(index) = parts
        .windows(2)
        .position(|pair| pair[0] == api && pair[1] == key_word)
    {
        return Some(index);
    }
    let joined: String = parts.concat();
    (words.contains(&joined) || joined == format!("{api}{key_word}")).then_some(parts.len())
}

/// A name to suggest instead of a key that names a credential but probably holds none: a
/// pagination token is a cursor (`page_token` → `page_cursor`).
pub(crate) fn suggested_rename(key: &str) -> Option<String> {
    let parts = components(key);
    let index = credential_component(key)?;
    let token = normalise("token");
    if parts.len() < 2 || parts.get(index) != Some(&token) {
        return None;
    }
    let mut renamed = parts;
    renamed[index] = "cursor".to_owned();
    Some(renamed.join("_"))
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
            "tokens",
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
