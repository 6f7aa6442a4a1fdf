//! Tool tests (issue 40): a person ran one custom tool of an agent, in a fresh sandbox, with or
//! without the agent's secrets. Each is kept as a record of its own, scrubbed like every durable
//! write, beside its audit entry: both or neither.

use redact::Redacted;

use crate::{AccountId, Actor, Error, NewAuditEntry, Timestamp};

/// A tool test as it is written: everything a person or a script chose is scrubbed.
#[derive(Debug, Clone)]
pub struct NewToolTest {
    /// `tt_` and 32 hex digits.
    pub id: String,
    pub account: AccountId,
    pub agent: String,
    pub tool: String,
    /// The workspace's revision the agent file and its script were pinned at.
    pub revision: Option<String>,
    /// The SHA-256 (hex) of the script that ran.
    pub script_sha256: String,
    pub with_secrets: bool,
    pub actor: Redacted<Actor>,
    pub at: Timestamp,
    pub arguments: Redacted<serde_json::Value>,
    /// `succeeded`, `failed`, `unknown`, `needs_repair` or `refused`.
    pub outcome: String,
    /// The tool's result (JSON) when it succeeded.
    pub result: Option<Redacted<serde_json::Value>>,
    /// Why it failed or was refused, in words.
    pub error: Option<Redacted<String>>,
    /// What it printed (stdout, then stderr), bounded like a step's.
    pub printed: Redacted<String>,
    /// Whether the printed text was cut at its bound.
    pub truncated: bool,
}

/// A tool test as stored (already scrubbed when written).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolTest {
    pub id: String,
    pub account: AccountId,
    pub agent: String,
    pub tool: String,
    pub revision: Option<String>,
    pub script_sha256: String,
    pub with_secrets: bool,
    pub actor: Actor,
    pub at: Timestamp,
    pub arguments: serde_json::Value,
    pub outcome: String,
    pub result: Option<serde_json::Value>,
    pub error: Option<String>,
    pub printed: String,
    pub truncated: bool,
}

/// The most tool tests [`ToolTestLog::tool_tests`] returns at once.
pub const MAX_LISTED_TOOL_TESTS: usize = 100;

/// Where tool tests are kept. A store that keeps none refuses to record one, so no test runs
/// unrecorded.
pub trait ToolTestLog: Send + Sync {
    /// Records `test` and its audit `entry` in one transaction: both or neither.
    fn record_tool_test(&self, _test: &NewToolTest, _entry: &NewAuditEntry) -> Result<(), Error> {
        Err(Error::Invalid {
            what: "this store keeps no tool tests".to_owned(),
        })
    }

    /// The newest tests of `tool` of `agent` in `account`, newest first, at most `limit`
    /// (and at most [`MAX_LISTED_TOOL_TESTS`]); with `with_secrets_only`, only those that ran
    /// with the agent's secrets (a refused one ran nothing).
    fn tool_tests(
        &self,
        _account: &AccountId,
        _agent: &str,
        _tool: &str,
        _with_secrets_only: bool,
        _limit: usize,
    ) -> Result<Vec<ToolTest>, Error> {
        Ok(Vec::new())
    }
}
