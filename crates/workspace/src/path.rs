//! Validated relative paths and confinement of requested paths to a workspace folder.
//!
//! A [`RelPath`] is purely lexical: it never touches the filesystem, so it cannot know about
//! symbolic links. That is why it refuses every `..` component, even one that would stay
//! inside (`a/../b`): through a link, `a/..` may be somewhere else entirely. Code that opens a
//! `RelPath` must still open component by component without following links.

use std::fmt;
use std::path::{Component, Path};

use crate::suggest;

/// The longest path, in bytes, that a [`RelPath`] may have (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// The longest single component, in bytes (Linux's `NAME_MAX`).
pub const MAX_COMPONENT_BYTES: usize = 255;
/// The most components a [`RelPath`] may have.
pub const MAX_DEPTH: usize = 64;

/// A normalised path relative to a workspace folder: no leading `/`, no `.` or `..`
/// components, no empty components, no NUL, valid UTF-8, at most [`MAX_DEPTH`] components of
/// at most [`MAX_COMPONENT_BYTES`] bytes, [`MAX_PATH_BYTES`] in all.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath {
    normalised: String,
}

impl RelPath {
    /// Validates a relative path written by someone (an agent, a step, a person).
    pub fn parse(requested: &str) -> Result<RelPath, Refusal> {
        parse_relative(requested).map_err(|reason| Refusal {
            requested: requested.to_owned(),
            reason,
            did_you_mean: None,
        })
    }

    /// This path with one more component, for walking a directory tree.
    pub fn join(&self, name: &str) -> Result<RelPath, Refusal> {
        if name.is_empty() || name == "." || name == ".." || name.contains('/') {
            return Err(Refusal {
                requested: format!("{}/{name}", self.normalised),
                reason: RefusalReason::BadComponent {
                    component: name.to_owned(),
                },
                did_you_mean: None,
            });
        }
        if self.normalised.is_empty() {
            RelPath::parse(name)
        } else {
            RelPath::parse(&format!("{}/{name}", self.normalised))
        }
    }

    /// This path with a relative path under it (`agents/digest` + `tools/x.py`).
    pub fn join_path(&self, relative: &str) -> Result<RelPath, Refusal> {
        let tail = RelPath::parse(relative)?;
        RelPath::parse(&format!("{}/{}", self.normalised, tail.normalised))
    }

    /// The path as text, components separated by `/`.
    pub fn as_str(&self) -> &str {
        &self.normalised
    }

    /// The components, outermost first.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.normalised.split('/')
    }

    /// How many components the path has.
    pub fn depth(&self) -> usize {
        self.components().count()
    }

    /// The path as a relative [`Path`], to join onto a folder.
    pub fn as_path(&self) -> &Path {
        Path::new(&self.normalised)
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.normalised)
    }
}

impl fmt::Debug for RelPath {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "RelPath({:?})", self.normalised)
    }
}

/// Why a requested path was refused, with a suggestion of what was probably meant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The path exactly as it was requested.
    pub requested: String,
    /// What is wrong with it.
    pub reason: RefusalReason,
    /// The path inside the folder that the requester probably meant, if one stands out.
    pub did_you_mean: Option<String>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "refused the path {:?}: {}",
            self.requested, self.reason
        )?;
        if let Some(suggestion) = &self.did_you_mean {
            write!(formatter, "; did you mean {suggestion:?}?")?;
        }
        Ok(())
    }
}

impl std::error::Error for Refusal {}

/// The rule a requested path broke.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefusalReason {
    /// The path is empty or names the folder itself.
    Empty,
    /// The path starts with `/`; paths are relative to the workspace folder.
    Absolute,
    /// The path is absolute and not inside the workspace folder at all.
    OutsideFolder,
    /// The path has a `..` component.
    Traversal,
    /// The path holds a NUL byte.
    Nul,
    /// The path is longer than [`MAX_PATH_BYTES`].
    TooLong { bytes: usize, max: usize },
    /// The path has more than [`MAX_DEPTH`] components.
    TooDeep { depth: usize, max: usize },
    /// A component is longer than [`MAX_COMPONENT_BYTES`].
    ComponentTooLong { bytes: usize, max: usize },
    /// A component that cannot be a file name (`.`, `..`, empty, or holding `/`).
    BadComponent { component: String },
    /// A control character (C0, DEL, C1) or a bidirectional formatting character: a name
    /// holding one starts a new line, drives a terminal or reorders what a person reads.
    ControlCharacter { character: char },
}

/// `name` as a record may show it: every character [`is_forbidden_in_names`] refuses written
/// as `\u{XXXX}`, so a refused name is named without starting a line or driving a terminal.
pub fn escape_forbidden(name: &str) -> String {
    let mut shown = String::with_capacity(name.len());
    for character in name.chars() {
        if is_forbidden_in_names(character) {
            shown.push_str(&format!("\\u{{{:04x}}}", u32::from(character)));
        } else {
            shown.push(character);
        }
    }
    shown
}

/// Whether `character` may not be part of a workspace name: C0 and C1 controls and DEL, and
/// the bidirectional formatting characters (marks, embeddings, overrides, isolates).
pub fn is_forbidden_in_names(character: char) -> bool {
    character.is_control()
        || matches!(
            character,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

impl fmt::Display for RefusalReason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefusalReason::Empty => write!(formatter, "it is empty; name a file inside the folder"),
            RefusalReason::Absolute => write!(
                formatter,
                "it is absolute; paths are relative to the workspace folder"
            ),
            RefusalReason::OutsideFolder => {
                write!(formatter, "it is outside the workspace folder")
            }
            RefusalReason::Traversal => write!(
                formatter,
                "it has a `..` component; paths may not climb out of a folder"
            ),
            RefusalReason::Nul => write!(formatter, "it holds a NUL byte"),
            RefusalReason::TooLong { bytes, max } => {
                write!(formatter, "it is {bytes} bytes long; the limit is {max}")
            }
            RefusalReason::TooDeep { depth, max } => {
                write!(formatter, "it is {depth} folders deep; the limit is {max}")
            }
            RefusalReason::ComponentTooLong { bytes, max } => write!(
                formatter,
                "one of its names is {bytes} bytes long; the limit is {max}"
            ),
            RefusalReason::BadComponent { component } => {
                write!(formatter, "{component:?} cannot be a file name")
            }
            RefusalReason::ControlCharacter { character } => write!(
                formatter,
                "it holds the control or bidirectional formatting character U+{:04X}; a name \
                 may hold none, since it would start a new line, drive a terminal or reorder \
                 what a person reads",
                u32::from(*character)
            ),
        }
    }
}

/// Confines `requested` to the folder `root`: returns the validated relative path, or a
/// refusal. An absolute path is always refused, even one inside `root` (the suggestion then
/// names the relative form), so that callers never mix the two spellings.
pub fn confine(root: &Path, requested: &str) -> Result<RelPath, Refusal> {
    confine_suggesting(root, requested, &[])
}

/// [`confine`], and on refusal suggest the entry of `listing` (the relative paths that exist in
/// the folder, supplied by the caller so this stays pure) that was most probably meant.
pub fn confine_suggesting(
    root: &Path,
    requested: &str,
    listing: &[&str],
) -> Result<RelPath, Refusal> {
    let reason = match parse_relative(requested) {
        Ok(path) => return Ok(path),
        Err(reason) => reason,
    };
    let reason = match reason {
        RefusalReason::Absolute if !Path::new(requested).starts_with(root) => {
            RefusalReason::OutsideFolder
        }
        other => other,
    };
    let did_you_mean = suggest::for_refused(root, requested, listing);
    Err(Refusal {
        requested: requested.to_owned(),
        reason,
        did_you_mean,
    })
}

/// Checks and normalises a relative path; removes `.` and empty components.
fn parse_relative(requested: &str) -> Result<RelPath, RefusalReason> {
    if requested.contains('\0') {
        return Err(RefusalReason::Nul);
    }
    if requested.len() > MAX_PATH_BYTES {
        return Err(RefusalReason::TooLong {
            bytes: requested.len(),
            max: MAX_PATH_BYTES,
        });
    }
    if requested.starts_with('/') {
        return Err(RefusalReason::Absolute);
    }
    if let Some(character) = requested.chars().find(|c| is_forbidden_in_names(*c)) {
        return Err(RefusalReason::ControlCharacter { character });
    }
    let mut components: Vec<&str> = Vec::new();
    for component in Path::new(requested).components() {
        match component {
            Component::Normal(name) => {
                // The input is a &str, so every component is valid UTF-8.
                let name = name.to_str().ok_or(RefusalReason::Nul)?;
                if name.len() > MAX_COMPONENT_BYTES {
                    return Err(RefusalReason::ComponentTooLong {
                        bytes: name.len(),
                        max: MAX_COMPONENT_BYTES,
                    });
                }
                components.push(name);
            }
            Component::CurDir => {}
            Component::ParentDir => return Err(RefusalReason::Traversal),
            Component::RootDir | Component::Prefix(_) => return Err(RefusalReason::Absolute),
        }
    }
    if components.is_empty() {
        return Err(RefusalReason::Empty);
    }
    if components.len() > MAX_DEPTH {
        return Err(RefusalReason::TooDeep {
            depth: components.len(),
            max: MAX_DEPTH,
        });
    }
    Ok(RelPath {
        normalised: components.join("/"),
    })
}
