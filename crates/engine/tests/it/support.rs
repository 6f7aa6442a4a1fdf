//! Test harness: a scripted executor, a counting clock and ids, scripted supervisors, and an
//! engine over a SQLite file in a temp dir.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use engine::{
    Clock, CodePhase, Engine, EngineOptions, ExecutionOutcome, ExecutionReport, ExecutionRequest,
    FailureView, IdSource, PersonSupervisor, StepError, StepExecutor, Supervisor,
    SupervisorDecision,
};
use redact::testing::MemorySource;
use serde_json::{Value, json};
use storage::{Account, AccountId, AccountStore, RunId, RunStore, Store, Timestamp};
use storage_sqlite::SqliteStore;

pub const ACCOUNT: &str = "acct";
pub const SECRET: &str = "sk_live_Zq8vX2mN4pL7tR1wY6kJ";
pub const ROTATED: &str = "sk_live_Rotated9Hc3Vb5Nm7Qw2";

/// A workflow with a gate before a networked step that holds a connection.
pub const REFUND: &str = r#"name: refund
python: "3.11"
inputs: { ticket_id: string }
steps:
  - id: build_request
    explain: Turns the ticket into a refund request.
    inputs: { ticket_id: { from: input.ticket_id } }
    code: |
      def main(ticket_id):
          return {"ticket": ticket_id}
  - id: send_refund!
    explain: Sends the refund to the payments provider.
    network: public_egress
    connections: [payments]
    inputs: { request: { from: build_request } }
    code: |
      def main(request):
          return request
  - id: confirm
    explain: Confirms the refund.
    inputs: { sent: { from: send_refund } }
    code: |
      def main(sent):
          return sent
"#;

/// A networked step then an offline one, no gate.
pub const FETCH: &str = r#"name: fetch
python: "3.11"
steps:
  - id: fetch
    explain: Fetches the orders.
    network: public_egress
    connections: [payments]
    code: |
      def main():
          return {}
  - id: summarize
    explain: Summarizes them.
    inputs: { orders: { from: fetch } }
    code: |
      def main(orders):
          return orders
"#;

/// Two offline steps; the first holds the connection.
pub const OFFLINE: &str = r#"name: offline
python: "3.11"
inputs: { count: integer }
steps:
  - id: compute
    explain: Computes a number.
    connections: [payments]
    inputs: { count: { from: input.count }, factor: 2 }
    code: |
      def main(count, factor):
          return count * factor
  - id: report
    explain: Reports it.
    inputs: { value: { from: compute } }
    code: |
      def main(value):
          return value
"#;

pub fn workflow(text: &str) -> spec::Workflow {
    spec::parse_workflow("workflow.yaml", text).unwrap()
}

pub fn account() -> AccountId {
    AccountId::parse(ACCOUNT).unwrap()
}

pub type Script = Box<dyn Fn(&ExecutionRequest<'_>) -> ExecutionReport + Send + Sync>;

/// One call the executor saw.
#[derive(Debug, Clone)]
pub struct Call {
    pub step: String,
    pub inputs: Value,
    /// The environment, values exposed (only tests look at them).
    pub env: Vec<(String, String)>,
}

/// Runs queued scripts per step; with none queued, succeeds with `{"step": id}`.
#[derive(Default)]
pub struct ScriptedExecutor {
    scripts: Mutex<HashMap<String, VecDeque<Script>>>,
    pub calls: Mutex<Vec<Call>>,
}

impl ScriptedExecutor {
    pub fn then(
        &self,
        step: &str,
        script: impl Fn(&ExecutionRequest<'_>) -> ExecutionReport + Send + Sync + 'static,
    ) {
        self.scripts
            .lock()
            .unwrap()
            .entry(step.to_owned())
            .or_default()
            .push_back(Box::new(script));
    }

    pub fn calls_of(&self, step: &str) -> Vec<Call> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|call| call.step == step)
            .cloned()
            .collect()
    }
}

impl StepExecutor for ScriptedExecutor {
    fn execute(&self, request: ExecutionRequest<'_>) -> ExecutionReport {
        self.calls.lock().unwrap().push(Call {
            step: request.step.id().to_owned(),
            inputs: request.inputs.clone(),
            env: request
                .env
                .iter()
                .map(|(name, value)| (name.clone(), value.dangerously_expose().to_owned()))
                .collect(),
        });
        let script = self
            .scripts
            .lock()
            .unwrap()
            .get_mut(request.step.id())
            .and_then(VecDeque::pop_front);
        match script {
            Some(script) => script(&request),
            None => succeeded(json!({"step": request.step.id()})),
        }
    }
}

pub fn succeeded(output: Value) -> ExecutionReport {
    ExecutionReport {
        interpreter_version: Some("3.11.2".into()),
        ..ExecutionReport::outcome_only(
            ExecutionOutcome::Succeeded {
                output: engine::StepOutput::from_value(&output),
            },
            "fake",
        )
    }
}

pub fn failed_after_code_started(message: &str) -> ExecutionReport {
    ExecutionReport::outcome_only(
        ExecutionOutcome::Failed {
            error: StepError {
                kind: "RuntimeError".into(),
                message: message.into(),
                traceback: String::new(),
            },
            phase: CodePhase::CodeStarted,
        },
        "fake",
    )
}

/// Time that moves one millisecond per reading.
#[derive(Default)]
pub struct CountingClock(AtomicI64);

impl Clock for CountingClock {
    fn now(&self) -> Timestamp {
        Timestamp(1_700_000_000_000 + self.0.fetch_add(1, Ordering::SeqCst))
    }
}

/// `run-1`, `run-2`, ... continuing across engines that share it.
#[derive(Default)]
pub struct CountingIds(AtomicU64);

impl IdSource for CountingIds {
    fn new_run_id(&self) -> RunId {
        RunId::parse(&format!(
            "run-{}",
            self.0.fetch_add(1, Ordering::SeqCst) + 1
        ))
        .unwrap()
    }
}

/// A supervisor that answers from a script and remembers what it saw.
pub struct ScriptedSupervisor {
    pub answer: Box<dyn Fn(&FailureView) -> SupervisorDecision + Send + Sync>,
    pub seen: Mutex<Vec<FailureView>>,
}

impl ScriptedSupervisor {
    pub fn new(
        answer: impl Fn(&FailureView) -> SupervisorDecision + Send + Sync + 'static,
    ) -> Arc<ScriptedSupervisor> {
        Arc::new(ScriptedSupervisor {
            answer: Box::new(answer),
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl Supervisor for ScriptedSupervisor {
    fn on_failure(&self, view: &FailureView) -> engine::Supervised {
        self.seen.lock().unwrap().push(view.clone());
        engine::Supervised {
            decision: (self.answer)(view),
            note: "scripted".to_owned(),
            by: engine::SupervisorIdentity::Model {
                provider: "scripted".to_owned(),
                model: "script-1".to_owned(),
            },
        }
    }
}

/// Everything a test needs, over one SQLite file.
pub struct Harness {
    pub dir: tempfile::TempDir,
    pub store: Arc<SqliteStore>,
    pub executor: Arc<ScriptedExecutor>,
    pub source: Arc<MemorySource>,
    pub clock: Arc<CountingClock>,
    pub ids: Arc<CountingIds>,
    pub options: EngineOptions,
}

impl Harness {
    pub fn new() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("stepward.db")).unwrap());
        store
            .ensure_account(&Account {
                id: account(),
                name: "local".into(),
                created_at: Timestamp(0),
            })
            .unwrap();
        let source = Arc::new(MemorySource::new());
        source.set_connection_field(ACCOUNT, "payments", "api_key", SECRET);
        let options = EngineOptions::new(workspace::Workspaces::new(dir.path().join("accounts")));
        Harness {
            dir,
            store,
            executor: Arc::new(ScriptedExecutor::default()),
            source,
            clock: Arc::new(CountingClock::default()),
            ids: Arc::new(CountingIds::default()),
            options,
        }
    }

    /// The test account's working folder.
    pub fn work_dir(&self) -> PathBuf {
        self.dir
            .path()
            .join("accounts")
            .join(ACCOUNT)
            .join("workspace")
    }

    /// The test account's revision store.
    pub fn revisions_dir(&self) -> PathBuf {
        self.dir
            .path()
            .join("accounts")
            .join(ACCOUNT)
            .join("revisions")
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.path().join("stepward.db")
    }

    /// An engine with the default supervisor (every failure to a person).
    pub fn engine(&self) -> Engine {
        self.engine_with(Arc::new(PersonSupervisor))
    }

    pub fn engine_with(&self, supervisor: Arc<dyn Supervisor>) -> Engine {
        self.engine_on(self.store.clone(), supervisor)
    }

    pub fn engine_on(&self, store: Arc<dyn Store>, supervisor: Arc<dyn Supervisor>) -> Engine {
        Engine::new(
            self.options.clone(),
            store,
            self.executor.clone(),
            redact::ScrubSets::new(self.source.clone()),
            supervisor,
            self.clock.clone(),
            self.ids.clone(),
        )
    }

    /// Every byte of the database: the main file, the WAL and the shared-memory file.
    pub fn database_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        for entry in std::fs::read_dir(self.dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                bytes.extend(std::fs::read(path).unwrap());
            }
        }
        bytes
    }

    pub fn events_kinds(&self, run: &RunId) -> Vec<String> {
        storage::EventLog::events(self.store.as_ref(), run)
            .unwrap()
            .into_iter()
            .map(|event| event.kind)
            .collect()
    }
}

/// G25 for every run every test makes: when a test ends (and did not already fail), each run
/// of every account, rebuilt from its typed events alone, has the state the store holds.
impl Drop for Harness {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let engine = self.engine();
        for account in self.store.accounts().unwrap() {
            for run in self.store.runs(&account.id).unwrap() {
                assert_eq!(
                    engine::reconstruct(&engine.journal(&run.id).unwrap()),
                    engine.stored_state(&run.id).unwrap(),
                    "run {} rebuilt from its events",
                    run.id
                );
            }
        }
    }
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

pub fn cli(user: &str) -> storage::Actor {
    storage::Actor::Cli {
        os_user: user.into(),
    }
}
