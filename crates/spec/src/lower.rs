//! Helpers shared by the workflow and agent rules: reading mappings with a fixed set of keys,
//! strings, lists and names out of the raw node tree, each reporting what is wrong where.

use std::collections::HashMap;

use crate::diagnostic::{Diagnostics, Position};
use crate::suggest::did_you_mean;
use crate::yaml::{Node, NodeValue, Resolved};

/// The entries of a mapping whose keys were all checked against the allowed set.
pub(crate) struct Fields<'node> {
    pub(crate) position: Position,
    entries: Vec<(&'node str, &'node Node, &'node Node)>,
}

impl<'node> Fields<'node> {
    pub(crate) fn get(&self, key: &str) -> Option<&'node Node> {
        self.entries
            .iter()
            .find(|(name, _, _)| *name == key)
            .map(|(_, _, value)| *value)
    }

    /// Where the key itself was written, for rules about the key rather than its value.
    pub(crate) fn key_position(&self, key: &str) -> Option<Position> {
        self.entries
            .iter()
            .find(|(name, _, _)| *name == key)
            .map(|(_, key_node, _)| key_node.position)
    }
}

/// Reads `node` as a mapping whose keys must all be in `allowed`. Unknown keys are reported
/// with a typo suggestion; `what` names the mapping in messages ("a step").
pub(crate) fn fields<'node>(
    node: &'node Node,
    what: &str,
    allowed: &[&str],
    diagnostics: &mut Diagnostics,
) -> Option<Fields<'node>> {
    let NodeValue::Mapping(entries) = &node.value else {
        diagnostics.report(
            node.position,
            "expected-mapping",
            format!(
                "{what} must be a mapping of keys to values, found {}",
                node.describe()
            ),
            format!(
                "write {what} as `key: value` lines; its keys are: {}",
                allowed.join(", ")
            ),
        );
        return None;
    };
    let mut found = Vec::with_capacity(entries.len());
    for entry in entries {
        let Some(key) = entry.key.scalar_text() else {
            continue;
        };
        if allowed.contains(&key) {
            found.push((key, &entry.key, &entry.value));
        } else {
            diagnostics.report(
                entry.key.position,
                "unknown-key",
                format!("`{key}` is not a key of {what}"),
                format!(
                    "{}the keys of {what} are: {}",
                    did_you_mean(key, allowed.iter().copied()),
                    allowed.join(", ")
                ),
            );
        }
    }
    Some(Fields {
        position: node.position,
        entries: found,
    })
}

/// Reads a string; anything else (a number, a list, null) is reported.
pub(crate) fn string<'node>(
    node: &'node Node,
    what: &str,
    diagnostics: &mut Diagnostics,
) -> Option<&'node str> {
    if let NodeValue::Scalar(scalar) = &node.value
        && let Resolved::String(text) = scalar.resolve()
    {
        return Some(text);
    }
    diagnostics.report(
        node.position,
        "expected-string",
        format!("{what} must be a string, found {}", node.describe()),
        "write it as text; put it in quotes if YAML would read it as something else",
    );
    None
}

/// Reads a string that must hold more than white space; a blank one is reported under
/// `blank_code`.
pub(crate) fn non_blank_string<'node>(
    node: &'node Node,
    what: &str,
    blank_code: &'static str,
    help_when_blank: &str,
    diagnostics: &mut Diagnostics,
) -> Option<&'node str> {
    let text = string(node, what, diagnostics)?;
    if text.trim().is_empty() {
        diagnostics.report(
            node.position,
            blank_code,
            format!("{what} is blank"),
            help_when_blank,
        );
        return None;
    }
    Some(text)
}

/// Reads a list of strings, each with its position.
pub(crate) fn string_list<'node>(
    node: &'node Node,
    what: &str,
    diagnostics: &mut Diagnostics,
) -> Vec<(&'node str, Position)> {
    let NodeValue::Sequence(items) = &node.value else {
        diagnostics.report(
            node.position,
            "expected-list",
            format!("{what} must be a list, found {}", node.describe()),
            format!("write {what} as `[a, b]` or as lines starting with `- `"),
        );
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            string(item, &format!("each entry of {what}"), diagnostics)
                .map(|text| (text, item.position))
        })
        .collect()
}

/// `[a-z][a-z0-9_]*`: step ids, connection aliases, input names.
pub(crate) fn is_snake_name(name: &str) -> bool {
    let mut characters = name.chars();
    matches!(characters.next(), Some('a'..='z'))
        && characters.all(|character| matches!(character, 'a'..='z' | '0'..='9' | '_'))
}

/// `[a-z][a-z0-9_-]*`: agent names (they are folder names too).
pub(crate) fn is_agent_name(name: &str) -> bool {
    let mut characters = name.chars();
    matches!(characters.next(), Some('a'..='z'))
        && characters.all(|character| matches!(character, 'a'..='z' | '0'..='9' | '_' | '-'))
}

/// A suggestion for a name that breaks `[a-z][a-z0-9_]*`: lower case, other characters as `_`.
pub(crate) fn snake_suggestion(name: &str) -> String {
    let mut suggestion: String = name
        .trim()
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() {
                character.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if !suggestion.starts_with(|character: char| character.is_ascii_lowercase()) {
        suggestion.insert(0, 'x');
    }
    suggestion
}

/// Names already listed, in order, with a hash index so that long lists stay linear.
#[derive(Default)]
pub(crate) struct Seen {
    in_order: Vec<String>,
    first_position: HashMap<String, Position>,
}

impl Seen {
    pub(crate) fn len(&self) -> usize {
        self.in_order.len()
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.first_position.contains_key(name)
    }

    pub(crate) fn into_names(self) -> Vec<String> {
        self.in_order
    }
}

/// Reports a name (or list entry) written twice; `seen` remembers the first of each.
pub(crate) fn check_unique(
    seen: &mut Seen,
    name: &str,
    position: Position,
    code: &'static str,
    what: &str,
    diagnostics: &mut Diagnostics,
) -> bool {
    if let Some(first) = seen.first_position.get(name) {
        diagnostics.report(
            position,
            code,
            format!("{what} `{name}` is listed twice"),
            format!("keep one; the first is at {first}"),
        );
        return false;
    }
    seen.first_position.insert(name.to_string(), position);
    seen.in_order.push(name.to_string());
    true
}

/// Reads `network:`: `none` or `public_egress`, nothing else, never a silent default (G3).
pub(crate) fn network(node: &Node, diagnostics: &mut Diagnostics) -> Option<crate::Network> {
    let text = match &node.value {
        NodeValue::Scalar(scalar) => match scalar.resolve() {
            Resolved::String(text) => Some(text),
            _ => None,
        },
        _ => None,
    };
    match text {
        Some("none") => Some(crate::Network::None),
        Some("public_egress") => Some(crate::Network::PublicEgress),
        _ => {
            let found = match text {
                Some(text) => format!("`{text}`"),
                None => node.describe(),
            };
            diagnostics.report(
                node.position,
                "unknown-network",
                format!("`network` must be `none` or `public_egress`, found {found}"),
                format!(
                    "{}use `none` (no network, the default) or `public_egress` (the public \
                     internet and nothing else); there is no per-domain allowlist",
                    text.map(|text| did_you_mean(text, ["none", "public_egress"]))
                        .unwrap_or_default()
                ),
            );
            None
        }
    }
}
