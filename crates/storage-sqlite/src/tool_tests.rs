//! Tool tests (migration 0018, [`storage::tool_tests::ToolTestLog`]): each test a row, written
//! with its audit entry in one transaction.

use rusqlite::params;
use storage::tool_tests::{MAX_LISTED_TOOL_TESTS, NewToolTest, ToolTest, ToolTestLog};
use storage::{AccountId, Actor, Error, NewAuditEntry, Timestamp};

use crate::audit::{append_audit_in, prepare_entry};
use crate::{Durability, SqliteStore};

/// One row as read, before it is checked.
type Row = (
    String,
    Option<String>,
    String,
    i64,
    (String, String, String),
    i64,
    String,
    String,
    Option<String>,
    Option<String>,
    String,
    i64,
);

impl ToolTestLog for SqliteStore {
    fn record_tool_test(&self, test: &NewToolTest, entry: &NewAuditEntry) -> Result<(), Error> {
        let prepared = prepare_entry(entry)?;
        let actor = test.actor.get();
        let arguments =
            serde_json::to_string(test.arguments.get()).map_err(|source| Error::Invalid {
                what: format!("a tool test's arguments cannot be encoded: {source}"),
            })?;
        let result = match &test.result {
            None => None,
            Some(result) => {
                Some(
                    serde_json::to_string(result.get()).map_err(|source| Error::Invalid {
                        what: format!("a tool test's result cannot be encoded: {source}"),
                    })?,
                )
            }
        };
        self.transaction(Durability::Synced, |transaction| {
            transaction.execute(
                "INSERT INTO tool_tests (id, account_id, agent, tool, revision, script_sha256,
                 with_secrets, actor_kind, actor_id, actor_name, at, arguments, outcome, result,
                 error, printed, truncated)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                 ?17)",
                params![
                    test.id,
                    test.account.as_str(),
                    test.agent,
                    test.tool,
                    test.revision,
                    test.script_sha256,
                    test.with_secrets,
                    actor.kind(),
                    actor.id(),
                    actor.display_name(),
                    test.at.0,
                    arguments,
                    test.outcome,
                    result,
                    test.error.as_ref().map(|error| error.get().clone()),
                    test.printed.get(),
                    test.truncated,
                ],
            )?;
            append_audit_in(transaction, &prepared)?;
            Ok(())
        })
    }

    fn tool_tests(
        &self,
        account: &AccountId,
        agent: &str,
        tool: &str,
        with_secrets_only: bool,
        limit: usize,
    ) -> Result<Vec<ToolTest>, Error> {
        let limit = i64::try_from(limit.min(MAX_LISTED_TOOL_TESTS)).unwrap_or(0);
        self.read_records(
            "reading a tool's tests",
            "SELECT id, revision, script_sha256, with_secrets, actor_kind, actor_id, actor_name,
             at, arguments, outcome, result, error, printed, truncated
             FROM tool_tests WHERE account_id = ?1 AND agent = ?2 AND tool = ?3
             AND (?4 = 0 OR (with_secrets = 1 AND outcome != 'refused'))
             ORDER BY at DESC, rowid DESC LIMIT ?5",
            params![account.as_str(), agent, tool, with_secrets_only, limit],
            |row| -> rusqlite::Result<Row> {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    (row.get(4)?, row.get(5)?, row.get(6)?),
                    row.get(7)?,
                    row.get(8)?,
                    row.get(9)?,
                    row.get(10)?,
                    row.get(11)?,
                    row.get(12)?,
                    row.get(13)?,
                ))
            },
            |(
                id,
                revision,
                script_sha256,
                with_secrets,
                (kind, actor_id, name),
                at,
                arguments,
                outcome,
                result,
                error,
                printed,
                truncated,
            )| {
                let json = |what: &str, text: &str| {
                    serde_json::from_str(text).map_err(|source| Error::Invalid {
                        what: format!("a stored tool test's {what} does not read: {source}"),
                    })
                };
                Ok(ToolTest {
                    actor: Actor::from_parts(&kind, &actor_id, &name).map_err(|unknown| {
                        Error::Invalid {
                            what: format!("a stored tool test's actor: {unknown}"),
                        }
                    })?,
                    arguments: json("arguments", &arguments)?,
                    result: result
                        .as_deref()
                        .map(|text| json("result", text))
                        .transpose()?,
                    id,
                    account: account.clone(),
                    agent: agent.to_owned(),
                    tool: tool.to_owned(),
                    revision,
                    script_sha256,
                    with_secrets: with_secrets != 0,
                    at: Timestamp(at),
                    outcome,
                    error,
                    printed,
                    truncated: truncated != 0,
                })
            },
        )
    }
}
