//! Engine overhead per step: the same workflow run through the engine on SQLite (journal,
//! scrubbing, store) and on an in-memory store, both with an executor that does nothing.
//! Prints absolute medians per step and their ratio, in one run. Target: < 1 ms per step on
//! SQLite.

// A benchmark is test code: a failed unwrap is a failed measurement, reported as such.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engine::{
    Engine, EngineOptions, ExecutionOutcome, ExecutionReport, ExecutionRequest, PersonSupervisor,
    RandomRunIds, StepExecutor, SystemClock,
};
use redact::Redacted;
use serde_json::{Value, json};
use storage::queue::{
    Fence, Holder, JobId, JobRecord, Lease, NewJob, Reaped, Release, Slots, WorkQueue,
};
use storage::{
    Account, AccountId, AccountStore, Actor, AttemptFinish, AttemptRecord, AttemptStatus,
    AuditEntry, AuditLog, DecisionRecord, DecisionStore, Error, EventLog, EventRecord, NewAttempt,
    NewAuditEntry, NewDecision, NewEvent, NewRun, ParkedRecord, RunId, RunRecord, RunStatus,
    RunStore, Store, Tallied, Timestamp,
};

const STEPS: usize = 20;
const WARMUP_RUNS: usize = 3;
const MEASURED_RUNS: usize = 40;

/// Returns at once, with a small output and a line of printed text (so scrubbing has work).
struct NoopExecutor;

impl StepExecutor for NoopExecutor {
    fn execute(&self, request: ExecutionRequest<'_>) -> ExecutionReport {
        let mut report = ExecutionReport::outcome_only(
            ExecutionOutcome::Succeeded {
                output: engine::StepOutput::from_value(&json!({"step": request.step.id(), "n": 1})),
            },
            "noop",
        );
        report.stdout = b"step finished with nothing to say\n".to_vec().into();
        report
    }
}

/// The smallest store the engine can run on: maps in memory, no durability, no journal.
#[derive(Default)]
struct MemoryStore {
    runs: Mutex<HashMap<RunId, RunRecord>>,
    attempts: Mutex<HashMap<RunId, Vec<AttemptRecord>>>,
    seqs: Mutex<HashMap<RunId, u64>>,
    audit: AtomicU64,
    queue: test_support::memory_queue::MemoryQueue,
}

/// Keeps no live view: a step's printed text is shown when it ends.
impl storage::LiveOutputs for MemoryStore {}
impl storage::tool_tests::ToolTestLog for MemoryStore {}

impl WorkQueue for MemoryStore {
    fn enqueue(&self, job: &NewJob) -> Result<JobId, Error> {
        self.queue.enqueue(job)
    }
    fn claim(
        &self,
        holder: &Holder,
        slots: Slots,
        lease: Duration,
    ) -> Result<Option<Lease>, Error> {
        self.queue.claim(holder, slots, lease)
    }
    fn claim_job(
        &self,
        job: JobId,
        holder: &Holder,
        lease: Duration,
    ) -> Result<Option<Lease>, Error> {
        self.queue.claim_job(job, holder, lease)
    }
    fn start(&self, lease: &Lease) -> Result<Fence, Error> {
        self.queue.start(lease)
    }
    fn renew(&self, lease: &Lease, lease_for: Duration) -> Result<Option<Timestamp>, Error> {
        self.queue.renew(lease, lease_for)
    }
    fn release(&self, lease: &Lease, release: Release) -> Result<Fence, Error> {
        self.queue.release(lease, release)
    }
    fn reap(&self, dead: &dyn Fn(&Holder) -> bool) -> Result<Reaped, Error> {
        self.queue.reap(dead)
    }
    fn settle(&self, job: JobId) -> Result<(), Error> {
        self.queue.settle(job)
    }
    fn requeue_stranded(&self, job: JobId) -> Result<bool, Error> {
        self.queue.requeue_stranded(job)
    }
    fn finish_stranded(&self, job: JobId) -> Result<bool, Error> {
        self.queue.finish_stranded(job)
    }
    fn job(&self, id: JobId) -> Result<Option<JobRecord>, Error> {
        self.queue.job(id)
    }
    fn jobs_of_run(&self, run: &RunId) -> Result<Vec<JobRecord>, Error> {
        self.queue.jobs_of_run(run)
    }
}

impl AccountStore for MemoryStore {
    fn create_account(&self, _account: &Account) -> Result<(), Error> {
        Ok(())
    }
    fn account(&self, _id: &AccountId) -> Result<Option<Account>, Error> {
        Ok(None)
    }
    fn accounts(&self) -> Result<Vec<Account>, Error> {
        Ok(Vec::new())
    }
    fn ensure_account(&self, account: &Account) -> Result<Account, Error> {
        Ok(account.clone())
    }
    fn supervisor_retries(&self, _account: &AccountId) -> Result<Option<u32>, Error> {
        Ok(None)
    }
    fn set_supervisor_retries(
        &self,
        _account: &AccountId,
        _retries: Option<u32>,
    ) -> Result<bool, Error> {
        Ok(false)
    }
}

impl RunStore for MemoryStore {
    fn create_run(&self, run: &NewRun, event: &NewEvent) -> Result<(), Error> {
        let number = self
            .runs
            .lock()
            .unwrap()
            .values()
            .filter(|other| {
                other.account == run.account && &other.workflow_name == run.workflow_name.get()
            })
            .count() as u64
            + 1;
        let record = RunRecord {
            id: run.id.clone(),
            account: run.account.clone(),
            status: run.status,
            workflow_name: run.workflow_name.get().clone(),
            workflow_file_name: run.workflow_file_name.get().clone(),
            workflow_source: run.workflow_source.get().clone(),
            workflow_hash: run.workflow_hash.to_string(),
            inputs: run.inputs.get().clone(),
            started_by: run.started_by.get().clone(),
            created_at: run.created_at,
            updated_at: run.created_at,
            number,
        };
        self.runs.lock().unwrap().insert(run.id.clone(), record);
        self.append(&run.id, event).map(drop)
    }
    fn run(&self, id: &RunId) -> Result<Option<RunRecord>, Error> {
        Ok(self.runs.lock().unwrap().get(id).cloned())
    }
    fn runs(&self, _account: &AccountId) -> Result<Vec<RunRecord>, Error> {
        Ok(Vec::new())
    }
    fn runs_with_status(&self, _statuses: &[RunStatus]) -> Result<Vec<RunRecord>, Error> {
        Ok(Vec::new())
    }
    fn set_run_status(
        &self,
        id: &RunId,
        status: RunStatus,
        at: Timestamp,
        event: &NewEvent,
    ) -> Result<(), Error> {
        if let Some(run) = self.runs.lock().unwrap().get_mut(id) {
            run.status = status;
            run.updated_at = at;
        }
        self.append(id, event).map(drop)
    }
    fn replace_run_workflow(
        &self,
        id: &RunId,
        source: &Redacted<String>,
        hash: &storage::Sha256Hex,
        event: &NewEvent,
    ) -> Result<(), Error> {
        if let Some(run) = self.runs.lock().unwrap().get_mut(id) {
            run.workflow_source = source.get().clone();
            run.workflow_hash = hash.to_string();
        }
        self.append(id, event).map(drop)
    }
    fn begin_attempt(&self, attempt: &NewAttempt, event: &NewEvent) -> Result<(), Error> {
        self.attempts
            .lock()
            .unwrap()
            .entry(attempt.run.clone())
            .or_default()
            .push(AttemptRecord {
                run: attempt.run.clone(),
                step_id: attempt.step_id.to_string(),
                attempt: attempt.attempt,
                network: attempt.network,
                status: AttemptStatus::Running,
                inputs: attempt.inputs.get().clone(),
                started_at: attempt.started_at,
                finished_at: None,
                interpreter_version: None,
                backend: None,
                isolation_notes: None,
                output: None,
                reason: None,
            });
        self.append(&attempt.run, event).map(drop)
    }
    fn finish_attempt(
        &self,
        run: &RunId,
        step: &str,
        attempt: u32,
        finish: &AttemptFinish,
        event: &NewEvent,
    ) -> Result<(), Error> {
        if let Some(record) = self
            .attempts
            .lock()
            .unwrap()
            .get_mut(run)
            .and_then(|attempts| {
                attempts
                    .iter_mut()
                    .find(|record| record.step_id == step && record.attempt == attempt)
            })
        {
            record.status = finish.status;
            record.output = finish.output.as_ref().map(|output| output.get().clone());
        }
        self.append(run, event).map(drop)
    }
    fn attempts(&self, run: &RunId) -> Result<Vec<AttemptRecord>, Error> {
        Ok(self
            .attempts
            .lock()
            .unwrap()
            .get(run)
            .cloned()
            .unwrap_or_default())
    }
    fn running_attempts(&self) -> Result<Vec<AttemptRecord>, Error> {
        Ok(Vec::new())
    }
    fn park(
        &self,
        _run: &RunId,
        _step: &str,
        _state: &Redacted<Value>,
        _at: Timestamp,
        _event: &NewEvent,
        _mail: &storage::mail::NewGateMail,
    ) -> Result<(), Error> {
        Ok(())
    }
    fn parked(&self, _run: &RunId) -> Result<Option<ParkedRecord>, Error> {
        Ok(None)
    }
    fn clear_parked(&self, _run: &RunId) -> Result<(), Error> {
        Ok(())
    }
}

impl EventLog for MemoryStore {
    fn append(&self, run: &RunId, _event: &NewEvent) -> Result<u64, Error> {
        let mut seqs = self.seqs.lock().unwrap();
        let seq = seqs.entry(run.clone()).or_insert(0);
        *seq += 1;
        Ok(*seq)
    }
    fn events(&self, _run: &RunId) -> Result<Vec<EventRecord>, Error> {
        Ok(Vec::new())
    }
}

impl DecisionStore for MemoryStore {
    fn record_decision(
        &self,
        _decision: &NewDecision,
        _event: &NewEvent,
        _audit: &NewAuditEntry,
    ) -> Result<DecisionRecord, Error> {
        Err(Error::Corrupt {
            what: "decision",
            detail: "not supported by the benchmark store".into(),
        })
    }
    fn record_decision_moving(
        &self,
        _decision: &NewDecision,
        _event: &NewEvent,
        _audit: &NewAuditEntry,
        _from: &[RunStatus],
        _to: RunStatus,
        _status_event: &NewEvent,
    ) -> Result<DecisionRecord, Error> {
        Err(Error::Corrupt {
            what: "decision",
            detail: "not supported by the benchmark store".into(),
        })
    }
    fn decisions(&self, _run: &RunId) -> Result<Vec<DecisionRecord>, Error> {
        Ok(Vec::new())
    }
}

impl AuditLog for MemoryStore {
    fn append_audit(&self, entry: &NewAuditEntry) -> Result<AuditEntry, Error> {
        let seq = self.audit.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(AuditEntry {
            seq,
            account: entry.account.clone(),
            run: entry.run.clone(),
            actor: entry.actor.get().clone(),
            action: entry.action.as_str().to_owned(),
            detail: entry.detail.get().clone(),
            at: entry.at,
            prev_hash: String::new(),
            hash: String::new(),
            count: 1,
            last_at: entry.at,
            legacy_seq: None,
        })
    }
    fn tally_audit_uses(
        &self,
        entry: &NewAuditEntry,
        _tally: &str,
        _uses: u64,
    ) -> Result<Tallied, Error> {
        // The engine never tallies; the benchmark store appends like any entry.
        self.append_audit(entry)
            .map(|appended| Tallied::Appended { seq: appended.seq })
    }
    fn audit_entries(&self) -> Result<Vec<AuditEntry>, Error> {
        Ok(Vec::new())
    }
}

fn workflow_text(network: &str) -> String {
    let mut text = String::from("name: bench\npython: \"3.11\"\nsteps:\n");
    for index in 0..STEPS {
        text.push_str(&format!(
            "  - id: step_{index}\n    explain: Step {index} of the benchmark.\n    network: {network}\n    connections: [payments]\n    code: |\n      def main():\n          return 1\n"
        ));
    }
    text
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn measure(store: Arc<dyn Store>, label: &str, network: &str) -> Duration {
    let workspaces = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let source = Arc::new(redact::testing::MemorySource::new());
    source.set_connection_field(
        "acct",
        "payments",
        "api_key",
        "sk_live_benchmark_0123456789abcdef",
    );
    let engine = Engine::new(
        EngineOptions::new(workspace::Workspaces::new(workspaces.path())),
        store.clone(),
        Arc::new(NoopExecutor),
        redact::ScrubSets::new(source),
        Arc::new(PersonSupervisor),
        Arc::new(SystemClock),
        Arc::new(RandomRunIds),
    );
    let account = AccountId::parse("acct").unwrap_or_else(|error| panic!("{error}"));
    store
        .ensure_account(&Account {
            id: account.clone(),
            name: "bench".into(),
            created_at: Timestamp(0),
        })
        .unwrap();
    let workflow = spec::parse_workflow("bench.yaml", &workflow_text(network)).unwrap();
    let mut per_step = Vec::new();
    for round in 0..WARMUP_RUNS + MEASURED_RUNS {
        let started = Instant::now();
        let summary = engine
            .start_run(&account, &workflow, json!({}), Actor::Engine)
            .unwrap();
        let elapsed = started.elapsed();
        assert_eq!(summary.status, RunStatus::Succeeded);
        if round >= WARMUP_RUNS {
            per_step.push(elapsed / STEPS as u32);
        }
        eprint!(
            "\r{label}: run {}/{}",
            round + 1,
            WARMUP_RUNS + MEASURED_RUNS
        );
    }
    eprintln!();
    median(per_step)
}

fn main() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let sqlite = Arc::new(storage_sqlite::SqliteStore::open(&dir.path().join("bench.db")).unwrap());
    let offline_sqlite = measure(sqlite.clone(), "offline steps, sqlite", "none");
    let offline_memory = measure(
        Arc::new(MemoryStore::default()),
        "offline steps, in-memory",
        "none",
    );
    let networked_sqlite = measure(sqlite, "networked steps, sqlite", "public_egress");
    let networked_memory = measure(
        Arc::new(MemoryStore::default()),
        "networked steps, in-memory",
        "public_egress",
    );
    let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    println!(
        "engine overhead per step ({STEPS} steps per run, {MEASURED_RUNS} runs, medians, no-op executor):"
    );
    println!(
        "  offline steps,   sqlite:    {:>8.3} ms/step",
        ms(offline_sqlite)
    );
    println!(
        "  offline steps,   in-memory: {:>8.3} ms/step",
        ms(offline_memory)
    );
    println!(
        "  offline ratio sqlite / in-memory:   {:>8.2}x",
        ratio(offline_sqlite, offline_memory)
    );
    println!(
        "  networked steps, sqlite:    {:>8.3} ms/step (one fsync of the attempt row, G14)",
        ms(networked_sqlite)
    );
    println!(
        "  networked steps, in-memory: {:>8.3} ms/step",
        ms(networked_memory)
    );
    println!(
        "  networked ratio sqlite / in-memory: {:>8.2}x",
        ratio(networked_sqlite, networked_memory)
    );
    println!(
        "  target < 1 ms/step on sqlite (offline): {}",
        if offline_sqlite < Duration::from_millis(1) {
            "met"
        } else {
            "NOT met"
        }
    );
}
