//! "Test this tool" (issue 40): a person runs one custom tool of an agent with arguments they
//! give, in a fresh sandbox like any step, with an allowlisted environment: the agent's secrets
//! only when an admin or owner asks for them and confirms the script they will run with.
//!
//! The engine pins the agent's folder as it is saved now (the agent file parsed first, G1),
//! hands the executor the tool's script and a snapshot of the agent's tree, and keeps what
//! came back as a record of its own, scrubbed of every value of the account and bounded like
//! a step's output, beside its audit entry (G25). Who may ask for what is the door's to check
//! (the server's roles, the command line's operating-system user); the confirmation is the
//! engine's, so no door can skip it.

use std::collections::BTreeMap;

use redact::Redactor;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use storage::tool_tests::{NewToolTest, ToolTest};
use storage::{AccountId, Actor, AuditAction, NewAuditEntry};
use workspace::{RelPath, StepFiles};

use crate::Error;
use crate::engine::Engine;
use crate::executor::{ExecutionOutcome, ToolTestRun};

/// The Python a tool test runs under unless the request names one.
pub const TOOL_TEST_PYTHON: spec::PythonVersion = spec::PythonVersion {
    major: 3,
    minor: 11,
};

/// The largest diff a confirmation shows; past it, it says where it was cut.
const MAX_DIFF_BYTES: usize = 64 * 1024;
/// The largest script a confirmation diffs, and how long the diff may take.
const MAX_DIFF_INPUT: usize = 1024 * 1024;
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);
/// The most files of `shared/` and `library/` a tool test's tree holds, and their bytes.
const MAX_SHARED_FILES: usize = 4_096;
const MAX_SHARED_BYTES: u64 = 64 * 1024 * 1024;

/// The tool's arguments as the door received them.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolArguments {
    /// A JSON object (the API).
    Json(Map<String, Value>),
    /// `NAME=VALUE` pairs (the command line, the console's form): each value read as its
    /// declared type says (a string as typed; a number, a boolean, an object or a list as
    /// JSON).
    Text(Vec<(String, String)>),
}

/// Whether the tool runs with its agent's secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretsChoice {
    Without,
    /// With them, once confirmed: `confirmed` names what
    /// [`ToolTestConfirmation::confirm_sha256`] names (the script, the agent file and every file
    /// the tool runs with). None yet, or anything of them changed since, runs nothing and is
    /// answered with the confirmation.
    With {
        confirmed: Option<String>,
    },
}

impl SecretsChoice {
    /// What a door's request asks: with secrets only when `with_secrets`, confirmed as
    /// `confirm` says.
    pub fn asked(with_secrets: bool, confirm: Option<String>) -> SecretsChoice {
        match with_secrets {
            false => SecretsChoice::Without,
            true => SecretsChoice::With { confirmed: confirm },
        }
    }
}

/// One tool test, as asked.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolTestRequest {
    pub agent: String,
    pub tool: String,
    pub arguments: ToolArguments,
    pub secrets: SecretsChoice,
    /// The Python the tool runs under; [`TOOL_TEST_PYTHON`] when not given (a tool pins no
    /// version of its own).
    pub python: Option<spec::PythonVersion>,
}

/// What a person confirms before a tool runs with its agent's secrets: the script, who last
/// changed it and when, and what changed in it since the last test with secrets (a member
/// who may edit the script could otherwise ask an admin to run a version that prints one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolTestConfirmation {
    pub agent: String,
    pub tool: String,
    /// The script's workspace path.
    pub script: String,
    pub script_sha256: String,
    /// What the person confirms, in one SHA-256: the script, the agent file (its `secrets:`,
    /// `network` and limits) and every file staged for the tool. Sent back to run.
    pub confirm_sha256: String,
    /// The secrets the tool would receive, by name, and its network.
    pub secrets: Vec<String>,
    pub network: String,
    /// Who wrote the script's current version, in words, and when (milliseconds since the
    /// epoch); `None` for a script no revision wrote (put there by hand).
    pub last_changed_by: Option<String>,
    pub last_changed_at: Option<u64>,
    /// The last test with secrets: who (each door says it in its words), when, and the
    /// script's SHA-256 then.
    pub last_tested_with_secrets: Option<(Actor, i64, String)>,
    /// The unified diff from the script of the last test with secrets to now (the whole
    /// script when it never ran with secrets), scrubbed of the account's values.
    pub diff: String,
}

/// The names a tool test's tree gives the view's own entries: the agent's folder at its root,
/// the workspace's `shared/` and the account's `library/` inside it (as a step's agent sees).
const SHARED_FOLDERS: [&str; 2] = ["shared", "library"];

impl Engine {
    /// What an admin or owner confirms before `tool` of `agent` runs with the agent's
    /// secrets (see [`ToolTestConfirmation`]).
    pub fn tool_test_confirmation(
        &self,
        account: &AccountId,
        agent: &str,
        tool: &str,
    ) -> Result<ToolTestConfirmation, Error> {
        let pinned = self.pin_tool(account, agent, tool)?;
        self.confirmation_of(account, &pinned)
    }

    /// Runs one custom tool as `request` says and keeps the scrubbed record (refusals of the
    /// tool's arguments included); the record is returned. With secrets, the request must carry
    /// the confirmation of the script that is saved now ([`Error::ToolTestNeedsConfirmation`]
    /// otherwise, nothing run).
    pub fn test_tool(
        &self,
        account: &AccountId,
        who: Actor,
        request: &ToolTestRequest,
    ) -> Result<ToolTest, Error> {
        let pinned = self.pin_tool(account, &request.agent, &request.tool)?;
        let with_secrets = match &request.secrets {
            SecretsChoice::Without => false,
            SecretsChoice::With { confirmed } => {
                if confirmed.as_deref() != Some(pinned.confirm_sha256.as_str()) {
                    return Err(Error::ToolTestNeedsConfirmation {
                        confirmation: Box::new(self.confirmation_of(account, &pinned)?),
                    });
                }
                true
            }
        };
        let redactor = self.account_redactor(account)?;
        let arguments = arguments_for(&pinned, &request.arguments);
        let id = tool_test_id()?;
        let detail = |outcome: &str| {
            redactor.scrub_json(&serde_json::json!({
                "test": id,
                "agent": request.agent,
                "tool": request.tool,
                "revision": pinned.revision,
                "script_sha256": pinned.script_sha256,
                "confirm_sha256": pinned.confirm_sha256,
                "with_secrets": with_secrets,
                "outcome": outcome,
            }))
        };
        let report = match &arguments {
            Err(problems) => Err(problems.join("; ")),
            Ok(arguments) => {
                let script = String::from_utf8(pinned.script.clone()).map_err(|_| {
                    refused(
                        &pinned,
                        format!("its script {} is not UTF-8 text", pinned.path),
                    )
                })?;
                // Before anything runs: a test whose record never comes (its process killed,
                // the store failing at the end) is still in the audit log.
                self.store.append_audit(&NewAuditEntry {
                    account: account.clone(),
                    run: None,
                    actor: redactor.scrub_fields(who.clone()),
                    action: AuditAction::ToolTest,
                    detail: detail("started"),
                    at: self.clock.now(),
                })?;
                self.executor
                    .test_tool(ToolTestRun {
                        account,
                        agent: &pinned.agent,
                        tool: &request.tool,
                        script: &script,
                        arguments,
                        with_secrets,
                        files: &pinned.files,
                        python: request.python.unwrap_or(TOOL_TEST_PYTHON),
                    })
                    .map_err(|refusal| refusal.to_string())
            }
        };
        let shown_arguments = match (&arguments, &request.arguments) {
            (Ok(arguments), _) | (Err(_), ToolArguments::Json(arguments)) => {
                Value::Object(arguments.clone())
            }
            (Err(_), ToolArguments::Text(pairs)) => Value::Object(
                pairs
                    .iter()
                    .map(|(name, value)| (name.clone(), Value::String(value.clone())))
                    .collect(),
            ),
        };
        let bound = self.options.max_printed_bytes;
        let (outcome, result, error, printed, truncated) = match report {
            Err(reason) => ("refused", None, Some(reason), String::new(), false),
            Ok(report) => {
                // Each stream scrubbed as a step's is, from its bytes (a value the sandbox's
                // own cap cut is masked by its beginning), then bounded.
                let mut printed = redactor.scrub_printed(&report.stdout, bound).into_inner();
                if !report.stderr.is_empty() {
                    printed.push_str("\n[stderr]\n");
                    printed.push_str(&redactor.scrub_printed(&report.stderr, bound).into_inner());
                }
                let truncated = report.stdout.len() > bound || report.stderr.len() > bound;
                let (outcome, result, error) = match report.outcome {
                    ExecutionOutcome::Succeeded { output } => {
                        ("succeeded", Some(output.as_text().to_owned()), None)
                    }
                    ExecutionOutcome::Failed { error, .. } => (
                        "failed",
                        None,
                        Some(format!(
                            "{}: {}\n{}",
                            error.kind, error.message, error.traceback
                        )),
                    ),
                    ExecutionOutcome::NeedsRepair { module, detail } => (
                        "needs_repair",
                        None,
                        Some(if module.is_empty() {
                            detail
                        } else {
                            format!("`{module}` is not in Python's standard library: {detail}")
                        }),
                    ),
                    ExecutionOutcome::Unknown { reason } => ("unknown", None, Some(reason)),
                    ExecutionOutcome::Refused { reason } => ("refused", None, Some(reason)),
                };
                (outcome, result, error, printed, truncated)
            }
        };
        // Bounded as a step's error and output are.
        let error =
            error.map(|error| redactor.scrub_truncated(&error, self.options.max_error_bytes));
        let result = result.map(|text| {
            let scrubbed = redactor
                .scrub_json_text(&text)
                .unwrap_or_else(|_| redactor.scrub_json(&Value::String(text.clone())));
            let length = serde_json::to_string(scrubbed.get()).map_or(0, |json| json.len());
            if length > bound {
                redactor.scrub_json(&Value::String(format!(
                    "(the result is {length} bytes, more than the {bound} a tool test keeps)"
                )))
            } else {
                scrubbed
            }
        });
        let test = NewToolTest {
            id: id.clone(),
            account: account.clone(),
            agent: request.agent.clone(),
            tool: request.tool.clone(),
            revision: pinned.revision.clone(),
            script_sha256: pinned.script_sha256.clone(),
            with_secrets,
            actor: redactor.scrub_fields(who.clone()),
            at: self.clock.now(),
            arguments: redactor.scrub_json(&shown_arguments),
            outcome: outcome.to_owned(),
            result,
            error,
            printed: redactor.scrub(&printed),
            truncated,
        };
        let entry = NewAuditEntry {
            account: account.clone(),
            run: None,
            actor: redactor.scrub_fields(who),
            action: AuditAction::ToolTest,
            detail: detail(outcome),
            at: test.at,
        };
        self.store.record_tool_test(&test, &entry)?;
        // Answered from what was written: never read back (another test of the same tool,
        // a clock stepping back, could make the newest someone else's).
        Ok(ToolTest {
            id: test.id,
            account: test.account,
            agent: test.agent,
            tool: test.tool,
            revision: test.revision,
            script_sha256: test.script_sha256,
            with_secrets: test.with_secrets,
            actor: test.actor.get().clone(),
            at: test.at,
            arguments: test.arguments.get().clone(),
            outcome: test.outcome,
            result: test.result.map(|result| result.get().clone()),
            error: test.error.map(|error| error.get().clone()),
            printed: test.printed.get().clone(),
            truncated: test.truncated,
        })
    }

    /// The newest tests of `tool` of `agent`, newest first.
    pub fn tool_tests(
        &self,
        account: &AccountId,
        agent: &str,
        tool: &str,
        limit: usize,
    ) -> Result<Vec<ToolTest>, Error> {
        Ok(self.store.tool_tests(account, agent, tool, false, limit)?)
    }

    fn account_redactor(&self, account: &AccountId) -> Result<Redactor, Error> {
        self.scrub_sets
            .for_account(account)
            .map_err(|source| Error::AccountValues {
                account: account.clone(),
                source,
            })
    }

    /// The agent's folder as saved now, pinned for the test's duration (its bytes kept by
    /// hash, whatever is written meanwhile), its file parsed (G1), and the tool's script.
    fn pin_tool(&self, account: &AccountId, agent: &str, tool: &str) -> Result<PinnedTool, Error> {
        let refuse = |reason: String| Error::ToolTestRefused {
            agent: agent.to_owned(),
            tool: tool.to_owned(),
            reason,
        };
        let missing = |reason: String| Error::ToolTestNotFound {
            agent: agent.to_owned(),
            tool: tool.to_owned(),
            reason,
        };
        let folder = RelPath::parse(&format!("agents/{agent}"))
            .ok()
            .filter(|_| crate::definitions::is_definition_name(agent))
            .ok_or_else(|| missing(format!("`{agent}` is not an agent's name")))?;
        let workspace = self.options.workspaces.for_account(account)?;
        let session = workspace.pin_session()?;
        let revision = session.head()?.map(|id| id.to_string());
        let files = session
            .pin_folder(&folder)
            .map_err(|error| refuse(self.without_host_paths(&crate::with_causes(&error))))?;
        let file_path = format!("agents/{agent}/AGENT.md");
        let Some(hash) = files.get(&file_path) else {
            return Err(missing(format!("the workspace has no {file_path}")));
        };
        let text = String::from_utf8(session.pinned_bytes(hash)?)
            .map_err(|_| refuse(format!("{file_path} is not UTF-8 text")))?;
        let parsed = self.parse_agent_file(&file_path, &text).map_err(refuse)?;
        let Some(custom) = parsed.custom_tool(tool) else {
            let declared: Vec<&str> = parsed
                .custom_tools()
                .iter()
                .map(spec::CustomTool::name)
                .collect();
            return Err(missing(format!(
                "{file_path} declares no custom tool `{tool}` (its custom tools: {})",
                if declared.is_empty() {
                    "none".to_owned()
                } else {
                    declared.join(", ")
                }
            )));
        };
        let path = format!("agents/{agent}/{}", custom.script());
        let Some(script_hash) = files.get(&path).cloned() else {
            return Err(missing(format!(
                "its script {path} is not in the workspace"
            )));
        };
        let script = session.pinned_bytes(&script_hash)?;
        // The tool's tree: the agent's folder at its root, and `shared/` and `library/` as
        // they are now (as a step's agent sees them).
        let prefix = format!("agents/{agent}/");
        let mut tree: Vec<(RelPath, Vec<u8>)> = Vec::new();
        for (file, hash) in &files {
            let Some(relative) = file.strip_prefix(&prefix) else {
                continue;
            };
            if SHARED_FOLDERS.contains(&relative.split('/').next().unwrap_or_default()) {
                continue;
            }
            if let Ok(relative) = RelPath::parse(relative) {
                tree.push((relative, session.pinned_bytes(hash)?));
            }
        }
        drop(session);
        let reader = workspace
            .step_files()
            .reader()
            .map_err(|error| refuse(error.to_string()))?;
        let mut shared_bytes = 0_u64;
        for shared in SHARED_FOLDERS {
            let Ok(start) = RelPath::parse(shared) else {
                continue;
            };
            if reader.kind(&start).ok() != Some("folder") {
                continue;
            }
            let (entries, cut) = reader
                .walk(Some(&start), MAX_SHARED_FILES)
                .map_err(|error| refuse(error.to_string()))?;
            let too_many = || {
                refuse(format!(
                    "shared/ and library/ hold more than {MAX_SHARED_FILES} files or \
                     {MAX_SHARED_BYTES} bytes, more than a tool test stages"
                ))
            };
            if cut {
                return Err(too_many());
            }
            for entry in entries.into_iter().filter(|entry| entry.kind == "file") {
                // The bytes read count, not the sizes the walk saw: a file may grow between.
                let left = MAX_SHARED_BYTES.saturating_sub(shared_bytes);
                let (bytes, size) = reader
                    .read(&entry.path, 0, left)
                    .map_err(|error| refuse(error.to_string()))?;
                if size > left {
                    return Err(too_many());
                }
                shared_bytes = shared_bytes.saturating_add(bytes.len() as u64);
                tree.push((entry.path, bytes));
            }
        }
        // What a person confirms before secrets, in one hash: the script, the agent file (its
        // secrets, network and limits) and every file staged for the tool.
        let mut confirmed = Sha256::new();
        confirmed.update(b"stepward tool test\0script\0");
        confirmed.update(script_hash.as_bytes());
        confirmed.update(b"\0agent file\0");
        confirmed.update(hash.as_bytes());
        tree.sort_by(|left, right| left.0.cmp(&right.0));
        for (path, bytes) in &tree {
            confirmed.update(b"\0file\0");
            confirmed.update(path.as_str().as_bytes());
            confirmed.update(b"\0");
            confirmed.update(Sha256::digest(bytes));
        }
        let confirm_sha256 = hex::encode(confirmed.finalize());
        let files = StepFiles::in_memory(tree)?;
        Ok(PinnedTool {
            agent: parsed.clone(),
            tool: custom.clone(),
            path,
            script_sha256: script_hash,
            confirm_sha256,
            script,
            revision,
            files,
        })
    }

    fn confirmation_of(
        &self,
        account: &AccountId,
        pinned: &PinnedTool,
    ) -> Result<ToolTestConfirmation, Error> {
        let workspace = self.options.workspaces.for_account(account)?;
        let script_path =
            RelPath::parse(&pinned.path).map_err(|refusal| Error::ToolTestRefused {
                agent: pinned.agent.name().to_owned(),
                tool: pinned.tool.name().to_owned(),
                reason: refusal.to_string(),
            })?;
        // Who wrote the script as it is now: the newest version, when its bytes are these (a
        // script changed by hand since was written by no one the history names).
        let last = workspace
            .file_versions(&script_path)?
            .pop()
            .filter(|version| version.blob == pinned.script_sha256);
        let previous = self
            .store
            .tool_tests(account, pinned.agent.name(), pinned.tool.name(), true, 1)?
            .into_iter()
            .next();
        let before = match &previous {
            Some(test) if test.script_sha256 == pinned.script_sha256 => pinned.script.clone(),
            // A script by hand that no revision and no pin stored reads as empty.
            Some(test) => workspace
                .pinned_bytes(&test.script_sha256)
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let before = String::from_utf8_lossy(&before);
        let now = String::from_utf8_lossy(&pinned.script);
        let header = match &previous {
            Some(_) => "the script of the last test with secrets",
            None => "never run with secrets",
        };
        // Diffed within bounds: a script past MAX_DIFF_INPUT is named by its size and hash.
        let diff = if before.len() > MAX_DIFF_INPUT || now.len() > MAX_DIFF_INPUT {
            format!(
                "(the script is {} bytes, too large to show its changes; it is the script whose \
                 SHA-256 is {})",
                now.len(),
                pinned.script_sha256
            )
        } else {
            let mut diff = similar::TextDiff::configure();
            if let Some(deadline) = std::time::Instant::now().checked_add(DIFF_DEADLINE) {
                diff.deadline(deadline);
            }
            diff.diff_lines(before.as_ref(), now.as_ref())
                .unified_diff()
                .header(header, "the script now")
                .to_string()
        };
        let redactor = self.account_redactor(account)?;
        let diff = redactor.scrub_truncated(&diff, MAX_DIFF_BYTES).into_inner();
        Ok(ToolTestConfirmation {
            agent: pinned.agent.name().to_owned(),
            tool: pinned.tool.name().to_owned(),
            script: pinned.path.clone(),
            script_sha256: pinned.script_sha256.clone(),
            confirm_sha256: pinned.confirm_sha256.clone(),
            secrets: pinned.agent.secrets().to_vec(),
            network: pinned.agent.network().to_string(),
            last_changed_by: last.as_ref().map(|version| version.author.describe()),
            last_changed_at: last.as_ref().map(|version| version.unix_millis),
            last_tested_with_secrets: previous
                .map(|test| (test.actor, test.at.0, test.script_sha256)),
            diff,
        })
    }
}

/// The agent's folder pinned for one tool test.
struct PinnedTool {
    agent: spec::Agent,
    tool: spec::CustomTool,
    /// The script's workspace path.
    path: String,
    script_sha256: String,
    /// The hash a confirmation names (see [`ToolTestConfirmation::confirm_sha256`]).
    confirm_sha256: String,
    script: Vec<u8>,
    revision: Option<String>,
    files: StepFiles,
}

fn refused(pinned: &PinnedTool, reason: String) -> Error {
    Error::ToolTestRefused {
        agent: pinned.agent.name().to_owned(),
        tool: pinned.tool.name().to_owned(),
        reason,
    }
}

/// The arguments as the tool declares them: every one it requires, none it does not, each of
/// its type; the problems in words otherwise.
fn arguments_for(
    pinned: &PinnedTool,
    given: &ToolArguments,
) -> Result<Map<String, Value>, Vec<String>> {
    let declared: BTreeMap<&str, &spec::ToolArgument> = pinned
        .tool
        .arguments()
        .iter()
        .map(|argument| (argument.name(), argument))
        .collect();
    let mut problems = Vec::new();
    let mut arguments = Map::new();
    let mut put = |name: &str, value: Value, problems: &mut Vec<String>| {
        let Some(argument) = declared.get(name) else {
            let known: Vec<&str> = declared.keys().copied().collect();
            problems.push(format!(
                "`{name}` is not an argument of {} (its arguments: {})",
                pinned.tool.name(),
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ));
            return;
        };
        if !accepts(argument.kind(), &value) {
            problems.push(format!(
                "the argument `{name}` must be of type {}",
                argument.kind().as_str()
            ));
            return;
        }
        if arguments.insert(name.to_owned(), value).is_some() {
            problems.push(format!("the argument `{name}` is given twice"));
        }
    };
    match given {
        ToolArguments::Json(map) => {
            for (name, value) in map {
                put(name, value.clone(), &mut problems);
            }
        }
        ToolArguments::Text(pairs) => {
            for (name, text) in pairs {
                let value = match declared.get(name.as_str()).map(|a| a.kind()) {
                    Some(spec::InputKind::String) | None => Value::String(text.clone()),
                    Some(_) => serde_json::from_str(text).unwrap_or(Value::String(text.clone())),
                };
                put(name, value, &mut problems);
            }
        }
    }
    for (name, argument) in &declared {
        if !argument.optional() && !arguments.contains_key(*name) {
            problems.push(format!(
                "the argument `{name}` ({}) is missing",
                argument.kind().as_str()
            ));
        }
    }
    if problems.is_empty() {
        Ok(arguments)
    } else {
        Err(problems)
    }
}

fn accepts(kind: spec::InputKind, value: &Value) -> bool {
    match kind {
        spec::InputKind::String => value.is_string(),
        spec::InputKind::Integer => value.is_i64() || value.is_u64(),
        spec::InputKind::Number => value.is_number(),
        spec::InputKind::Boolean => value.is_boolean(),
        spec::InputKind::Object => value.is_object(),
        spec::InputKind::Array => value.is_array(),
    }
}

/// A fresh tool test id, `tt_` and 32 hex digits.
fn tool_test_id() -> Result<String, Error> {
    let mut bytes = [0_u8; 16];
    getrandom::fill(&mut bytes).map_err(|source| Error::Randomness {
        purpose: "a tool test's id",
        detail: source.to_string(),
    })?;
    Ok(format!("tt_{}", hex::encode(bytes)))
}

impl Engine {
    /// The agents of `account`'s workspace (`agents/NAME/AGENT.md`), by name, at most `max`.
    pub fn agent_names(&self, account: &AccountId, max: usize) -> Result<Vec<String>, Error> {
        let workspace = self.options.workspaces.for_account(account)?;
        let reader = match workspace.step_files().reader() {
            Ok(reader) => reader,
            Err(_) => return Ok(Vec::new()),
        };
        let mut names: Vec<String> = crate::definitions::agent_files(&reader)
            .map_err(|error| Error::ToolTestRefused {
                agent: String::new(),
                tool: String::new(),
                reason: error.to_string(),
            })?
            .into_iter()
            .map(|(name, _)| name)
            .filter(|name| crate::definitions::is_definition_name(name))
            .collect();
        names.sort();
        names.dedup();
        names.truncate(max);
        Ok(names)
    }

    /// The agent `name` as its file is saved now, parsed (G1); a refusal says what is wrong
    /// and where.
    pub fn saved_agent(&self, account: &AccountId, name: &str) -> Result<spec::Agent, Error> {
        let refuse = |reason: String| Error::ToolTestRefused {
            agent: name.to_owned(),
            tool: String::new(),
            reason,
        };
        let missing = |reason: String| Error::ToolTestNotFound {
            agent: name.to_owned(),
            tool: String::new(),
            reason,
        };
        if !crate::definitions::is_definition_name(name) {
            return Err(missing(format!("`{name}` is not an agent's name")));
        }
        let workspace = self.options.workspaces.for_account(account)?;
        let path = RelPath::parse(&format!("agents/{name}/AGENT.md"))
            .map_err(|refusal| refuse(refusal.to_string()))?;
        let Some(file) = workspace.read_file(&path, 1024 * 1024)? else {
            return Err(missing(format!("the workspace has no {path}")));
        };
        let text = String::from_utf8(file.bytes)
            .map_err(|_| refuse(format!("{path} is not UTF-8 text")))?;
        self.parse_agent_file(path.as_str(), &text).map_err(refuse)
    }

    /// The agent file at `path` parsed (G1) against this server's maxima; what is wrong, in
    /// words with its `file:line:col`, otherwise.
    fn parse_agent_file(&self, path: &str, text: &str) -> Result<spec::Agent, String> {
        spec::parse_agent_within(path, text, &self.options.limit_maxima).map_err(|diagnostics| {
            format!(
                "{path} is not valid ({} problem(s)); the first: {}",
                diagnostics.len(),
                diagnostics
                    .first()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            )
        })
    }
}
