//! Protected entries of a workspace (DESIGN section 2): the secrets file `.secrets`, the run
//! journal's mirror `.journal/`, and generated knowledge indexes `knowledge/*/index/`.
//!
//! Comparison is on the exact bytes first, and then again on a folded form, because the
//! workspace may live on (or be copied to) a case-insensitive or normalising filesystem: on
//! macOS or Windows `.Secrets`, `.JOURNAL/x` or a full-width `ｋnowledge` open the same file as
//! the protected name, and HFS+ even ignores zero-width characters (the lesson of git's
//! CVE-2014-9390). The folded form therefore applies Unicode NFKC, lower-cases, removes
//! default-ignorable characters and trims trailing dots and spaces (which Windows drops). The
//! rule matches at any depth, not only at the workspace root, since the sandbox sees an agent's
//! folder whose root is not the workspace's.

use std::fmt;

use unicode_normalization::UnicodeNormalization;

use crate::path::RelPath;

/// Which protected entry a path falls under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProtectedKind {
    /// The local secrets file `.secrets` (or anything under it, were it a folder).
    SecretsFile,
    /// The run journal's mirror `.journal/` and everything under it.
    Journal,
    /// A knowledge bundle's generated index `knowledge/*/index/` and everything under it.
    KnowledgeIndex,
}

impl fmt::Display for ProtectedKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            ProtectedKind::SecretsFile => "the secrets file",
            ProtectedKind::Journal => "the run journal",
            ProtectedKind::KnowledgeIndex => "a knowledge bundle's generated index",
        })
    }
}

/// Whether `path` is, or is inside, a protected entry; case variants and Unicode look-alikes
/// count (see the module documentation).
pub fn is_protected(path: &RelPath) -> Option<ProtectedKind> {
    let exact: Vec<&str> = path.components().collect();
    if let Some(kind) = match_components(&exact) {
        return Some(kind);
    }
    let folded: Vec<String> = exact.iter().map(|component| fold(component)).collect();
    let folded: Vec<&str> = folded.iter().map(String::as_str).collect();
    match_components(&folded)
}

fn match_components(components: &[&str]) -> Option<ProtectedKind> {
    for (index, component) in components.iter().enumerate() {
        match *component {
            ".secrets" => return Some(ProtectedKind::SecretsFile),
            ".journal" => return Some(ProtectedKind::Journal),
            "knowledge" if components.get(index + 2) == Some(&"index") => {
                return Some(ProtectedKind::KnowledgeIndex);
            }
            _ => {}
        }
    }
    None
}

/// The form a case-insensitive, normalising filesystem might compare names in.
pub(crate) fn fold(component: &str) -> String {
    let folded: String = component
        .nfkc()
        .filter(|character| !is_default_ignorable(*character))
        .flat_map(char::to_lowercase)
        .collect();
    folded.trim_end_matches(['.', ' ']).to_owned()
}

/// Characters that HFS+ and others ignore in names: zero-width and format characters.
fn is_default_ignorable(character: char) -> bool {
    matches!(
        character,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}
