//! JSON wire types shared by the CLI's `--json` output and (later) the HTTP API.
//!
//! Plain data with `Serialize`/`Deserialize` and no logic: domain crates never serialize
//! themselves; the edge converts into these types (STYLE 14).

#![forbid(unsafe_code)]

pub mod runs;

use serde::{Deserialize, Serialize};

/// One problem found in a definition file, with its place and what would be right.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub code: String,
    pub message: String,
    pub help: String,
}

/// The result of `stepward check` for one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckReport {
    pub file: String,
    pub valid: bool,
    pub diagnostics: Vec<Diagnostic>,
}

/// Whether a step may reach the public internet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Internet {
    Yes,
    No,
    /// The reach could not be determined (an agent file that is missing); never read as "no".
    Unknown,
}

/// One row of the panel "What each step can reach" (G27).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReachRow {
    pub step: String,
    pub gate: bool,
    /// `code` or `agent`.
    pub kind: String,
    /// The agent an agent step hands its task to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub internet: Internet,
    /// Why `internet` is `unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown_reason: Option<String>,
    pub connections: Vec<String>,
    pub secrets: Vec<String>,
}

/// The whole panel: its caption, word for word, and one row per step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReachReport {
    pub workflow: String,
    pub caption: String,
    pub rows: Vec<ReachRow>,
}
