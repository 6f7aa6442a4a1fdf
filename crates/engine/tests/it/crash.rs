//! G14 and G25 under crashes: a fault injected at every journal boundary (every write to the
//! store, before it commits and after it commits), then a fresh engine on the same SQLite file
//! recovers. No event is lost (gapless sequence numbers, and the events still rebuild the
//! stored state), and no networked step is ever executed twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use engine::{Decision, GateDecision, PersonSupervisor};
use redact::Redacted;
use serde_json::{Value, json};
use std::time::Duration;
use storage::queue::{
    Fence, Holder, JobId, JobRecord, Lease, NewJob, Reaped, Release, Slots, WorkQueue,
};
use storage::{
    Account, AccountId, AccountStore, AttemptFinish, AttemptRecord, AttemptStatus, AuditEntry,
    AuditLog, DecisionRecord, DecisionStore, Door, Error, EventLog, EventRecord, NewAttempt,
    NewAuditEntry, NewDecision, NewEvent, NewRun, ParkedRecord, RunId, RunRecord, RunStatus,
    RunStore, Timestamp,
};
use storage_sqlite::SqliteStore;

use crate::support::{Harness, account, cli, workflow};

/// prepare (offline) → send (networked, with a connection) → approve! (gate) → finish.
const JOURNEY: &str = r#"name: journey
python: "3.11"
steps:
  - id: prepare
    explain: Prepares the request.
    code: |
      def main():
          return 1
  - id: send
    explain: Sends it.
    network: public_egress
    connections: [payments]
    inputs: { prepared: { from: prepare } }
    code: |
      def main(prepared):
          return prepared
  - id: approve!
    explain: A person approves the follow-up.
    inputs: { sent: { from: send } }
    code: |
      def main(sent):
          return sent
  - id: finish
    explain: Finishes.
    code: |
      def main():
          return 2
"#;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CrashPoint {
    /// The write never happens.
    BeforeCommit,
    /// The write commits, then the process dies before it learns so.
    AfterCommit,
}

/// Delegates to SQLite and "crashes" (fails every write from then on) at write number `at`.
struct CrashingStore {
    inner: Arc<SqliteStore>,
    writes: AtomicUsize,
    at: usize,
    point: CrashPoint,
}

impl CrashingStore {
    fn write<R>(&self, operation: impl FnOnce() -> Result<R, Error>) -> Result<R, Error> {
        let number = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        let crashed = || Error::Backend {
            operation: "injected crash",
            source: "crash".into(),
        };
        if number > self.at {
            return Err(crashed());
        }
        if number == self.at && self.point == CrashPoint::BeforeCommit {
            return Err(crashed());
        }
        let result = operation();
        if number == self.at {
            Err(crashed())
        } else {
            result
        }
    }
}

/// Keeps no live view: a step's printed text is shown when it ends.
impl storage::LiveOutputs for CrashingStore {}
impl storage::tool_tests::ToolTestLog for CrashingStore {}

impl WorkQueue for CrashingStore {
    fn enqueue(&self, job: &NewJob) -> Result<JobId, Error> {
        self.write(|| self.inner.enqueue(job))
    }
    fn claim(
        &self,
        holder: &Holder,
        slots: Slots,
        lease: Duration,
    ) -> Result<Option<Lease>, Error> {
        self.write(|| self.inner.claim(holder, slots, lease))
    }
    fn claim_job(
        &self,
        job: JobId,
        holder: &Holder,
        lease: Duration,
    ) -> Result<Option<Lease>, Error> {
        self.write(|| self.inner.claim_job(job, holder, lease))
    }
    fn start(&self, lease: &Lease) -> Result<Fence, Error> {
        self.write(|| self.inner.start(lease))
    }
    fn renew(&self, lease: &Lease, lease_for: Duration) -> Result<Option<Timestamp>, Error> {
        self.write(|| self.inner.renew(lease, lease_for))
    }
    fn release(&self, lease: &Lease, release: Release) -> Result<Fence, Error> {
        self.write(|| self.inner.release(lease, release))
    }
    fn reap(&self, dead: &dyn Fn(&Holder) -> bool) -> Result<Reaped, Error> {
        self.write(|| self.inner.reap(dead))
    }
    fn settle(&self, job: JobId) -> Result<(), Error> {
        self.write(|| self.inner.settle(job))
    }
    fn requeue_stranded(&self, job: JobId) -> Result<bool, Error> {
        self.write(|| self.inner.requeue_stranded(job))
    }
    fn finish_stranded(&self, job: JobId) -> Result<bool, Error> {
        self.write(|| self.inner.finish_stranded(job))
    }
    fn job(&self, id: JobId) -> Result<Option<JobRecord>, Error> {
        self.inner.job(id)
    }
    fn jobs_of_run(&self, run: &RunId) -> Result<Vec<JobRecord>, Error> {
        self.inner.jobs_of_run(run)
    }
}

impl AccountStore for CrashingStore {
    fn create_account(&self, account: &Account) -> Result<(), Error> {
        self.write(|| self.inner.create_account(account))
    }
    fn account(&self, id: &AccountId) -> Result<Option<Account>, Error> {
        self.inner.account(id)
    }
    fn accounts(&self) -> Result<Vec<Account>, Error> {
        self.inner.accounts()
    }
    fn ensure_account(&self, account: &Account) -> Result<Account, Error> {
        self.write(|| self.inner.ensure_account(account))
    }
    fn supervisor_retries(&self, account: &AccountId) -> Result<Option<u32>, Error> {
        self.inner.supervisor_retries(account)
    }
    fn set_supervisor_retries(
        &self,
        account: &AccountId,
        retries: Option<u32>,
    ) -> Result<bool, Error> {
        self.write(|| self.inner.set_supervisor_retries(account, retries))
    }
}

impl RunStore for CrashingStore {
    fn create_run(&self, run: &NewRun, event: &NewEvent) -> Result<(), Error> {
        self.write(|| self.inner.create_run(run, event))
    }
    fn run(&self, id: &RunId) -> Result<Option<RunRecord>, Error> {
        self.inner.run(id)
    }
    fn runs(&self, account: &AccountId) -> Result<Vec<RunRecord>, Error> {
        self.inner.runs(account)
    }
    fn runs_with_status(&self, statuses: &[RunStatus]) -> Result<Vec<RunRecord>, Error> {
        self.inner.runs_with_status(statuses)
    }
    fn set_run_status(
        &self,
        id: &RunId,
        status: RunStatus,
        at: Timestamp,
        event: &NewEvent,
    ) -> Result<(), Error> {
        self.write(|| self.inner.set_run_status(id, status, at, event))
    }
    fn replace_run_workflow(
        &self,
        id: &RunId,
        source: &Redacted<String>,
        hash: &storage::Sha256Hex,
        event: &NewEvent,
    ) -> Result<(), Error> {
        self.write(|| self.inner.replace_run_workflow(id, source, hash, event))
    }
    fn begin_attempt(&self, attempt: &NewAttempt, event: &NewEvent) -> Result<(), Error> {
        self.write(|| self.inner.begin_attempt(attempt, event))
    }
    fn finish_attempt(
        &self,
        run: &RunId,
        step: &str,
        attempt: u32,
        finish: &AttemptFinish,
        event: &NewEvent,
    ) -> Result<(), Error> {
        self.write(|| self.inner.finish_attempt(run, step, attempt, finish, event))
    }
    fn attempts(&self, run: &RunId) -> Result<Vec<AttemptRecord>, Error> {
        self.inner.attempts(run)
    }
    fn running_attempts(&self) -> Result<Vec<AttemptRecord>, Error> {
        self.inner.running_attempts()
    }
    fn park(
        &self,
        run: &RunId,
        step: &str,
        state: &Redacted<Value>,
        at: Timestamp,
        event: &NewEvent,
        mail: &storage::mail::NewGateMail,
    ) -> Result<(), Error> {
        self.write(|| self.inner.park(run, step, state, at, event, mail))
    }
    fn parked(&self, run: &RunId) -> Result<Option<ParkedRecord>, Error> {
        self.inner.parked(run)
    }
    fn clear_parked(&self, run: &RunId) -> Result<(), Error> {
        self.write(|| self.inner.clear_parked(run))
    }
}

impl EventLog for CrashingStore {
    fn append(&self, run: &RunId, event: &NewEvent) -> Result<u64, Error> {
        self.write(|| self.inner.append(run, event))
    }
    fn events(&self, run: &RunId) -> Result<Vec<EventRecord>, Error> {
        self.inner.events(run)
    }
}

impl DecisionStore for CrashingStore {
    fn record_decision(
        &self,
        decision: &NewDecision,
        event: &NewEvent,
        audit: &NewAuditEntry,
    ) -> Result<DecisionRecord, Error> {
        self.write(|| self.inner.record_decision(decision, event, audit))
    }
    fn record_decision_moving(
        &self,
        decision: &NewDecision,
        event: &NewEvent,
        audit: &NewAuditEntry,
        from: &[RunStatus],
        to: RunStatus,
        status_event: &NewEvent,
    ) -> Result<DecisionRecord, Error> {
        self.write(|| {
            self.inner
                .record_decision_moving(decision, event, audit, from, to, status_event)
        })
    }
    fn decisions(&self, run: &RunId) -> Result<Vec<DecisionRecord>, Error> {
        self.inner.decisions(run)
    }
}

impl AuditLog for CrashingStore {
    fn append_audit(&self, entry: &NewAuditEntry) -> Result<AuditEntry, Error> {
        self.write(|| self.inner.append_audit(entry))
    }
    fn tally_audit_uses(
        &self,
        entry: &NewAuditEntry,
        tally: &str,
        uses: u64,
    ) -> Result<storage::Tallied, Error> {
        self.write(|| self.inner.tally_audit_uses(entry, tally, uses))
    }
    fn audit_entries(&self) -> Result<Vec<AuditEntry>, Error> {
        self.inner.audit_entries()
    }
}

fn approve() -> Decision {
    Decision {
        kind: GateDecision::Approve,
        who: cli("alice"),
        door: Door::Cli,
        note: "go".into(),
    }
}

/// The harness's store, crashing at write `at`.
fn crashing_store(harness: &Harness, at: usize, point: CrashPoint) -> Arc<CrashingStore> {
    Arc::new(CrashingStore {
        inner: harness.store.clone(),
        writes: AtomicUsize::new(0),
        at,
        point,
    })
}

/// Runs the journey with a crash at write `at` (or never), then recovers with a fresh engine
/// and finishes the journey; returns the harness and how many writes the first engine made.
fn journey_with_crash(at: usize, point: CrashPoint) -> (Harness, usize) {
    let harness = Harness::new();
    let crashing = crashing_store(&harness, at, point);
    let first = harness.engine_on(crashing.clone(), Arc::new(PersonSupervisor));
    let run = RunId::parse("run-1").unwrap();
    if let Ok(summary) = first.start_run(&account(), &workflow(JOURNEY), json!({}), cli("alice"))
        && summary.status == RunStatus::WaitingApproval
    {
        let _ = first.decide(&run, "approve", approve());
    }
    let writes = crashing.writes.load(Ordering::SeqCst);
    drop(first);

    // The process restarts: a fresh engine on the same file recovers, and the person acts.
    let second = harness.engine();
    second.recover().unwrap();
    if let Some(record) = harness.store.run(&run).unwrap()
        && record.status == RunStatus::WaitingApproval
    {
        second.decide(&run, "approve", approve()).unwrap();
    }
    (harness, writes)
}

fn check_invariants(harness: &Harness, label: &str) {
    let run = RunId::parse("run-1").unwrap();
    assert!(
        harness.executor.calls_of("send").len() <= 1,
        "{label}: the networked step ran twice"
    );
    let Some(record) = harness.store.run(&run).unwrap() else {
        assert!(
            harness.executor.calls.lock().unwrap().is_empty(),
            "{label}: steps ran without a run"
        );
        return;
    };
    let events = harness.store.events(&run).unwrap();
    let seqs: Vec<u64> = events.iter().map(|event| event.seq).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "{label}: gap in the log"
    );
    let engine = harness.engine();
    assert_eq!(
        engine::reconstruct(&engine::journal::read_all(&events).unwrap()),
        engine.stored_state(&run).unwrap(),
        "{label}: events disagree with state"
    );
    assert!(
        harness.store.running_attempts().unwrap().is_empty(),
        "{label}: an attempt left running"
    );
    let attempts = harness.store.attempts(&run).unwrap();
    match record.status {
        RunStatus::Succeeded => {
            for step in ["prepare", "send", "approve", "finish"] {
                assert!(
                    attempts.iter().any(|attempt| attempt.step_id == step
                        && attempt.status == AttemptStatus::Succeeded),
                    "{label}: {step} did not succeed"
                );
            }
        }
        RunStatus::NeedsAttention => {
            let send = attempts
                .iter()
                .rev()
                .find(|attempt| attempt.step_id == "send");
            assert_eq!(
                send.map(|attempt| attempt.status),
                Some(AttemptStatus::Unknown),
                "{label}"
            );
        }
        other => panic!("{label}: unexpected final status {other}"),
    }
}

#[test]
fn g14_fault_at_every_journal_boundary_loses_no_event_and_never_reruns_a_networked_step() {
    let (clean, total_writes) = journey_with_crash(usize::MAX, CrashPoint::BeforeCommit);
    check_invariants(&clean, "no crash");
    assert_eq!(
        clean
            .store
            .run(&RunId::parse("run-1").unwrap())
            .unwrap()
            .unwrap()
            .status,
        RunStatus::Succeeded
    );
    assert!(total_writes > 10, "the journey makes {total_writes} writes");
    let mut outcomes = std::collections::BTreeMap::new();
    for at in 1..=total_writes {
        for point in [CrashPoint::BeforeCommit, CrashPoint::AfterCommit] {
            let (harness, _) = journey_with_crash(at, point);
            let label = format!("crash at write {at} {point:?}");
            check_invariants(&harness, &label);
            let status = harness
                .store
                .run(&RunId::parse("run-1").unwrap())
                .unwrap()
                .map_or("none".to_owned(), |run| run.status.to_string());
            *outcomes.entry(status).or_insert(0) += 1;
        }
    }
    // Both ends happen: some crashes leave the networked step unknown, most recover fully.
    assert!(
        outcomes.contains_key("succeeded") && outcomes.contains_key("needs_attention"),
        "{outcomes:?}"
    );
}

/// A networked step (its first attempt ends `unknown`), with an input to correct.
const CORRECTED: &str = r#"name: corrected
python: "3.11"
steps:
  - id: send
    explain: Sends the notice.
    network: public_egress
    inputs: { to: "old@example.com" }
    code: |
      def main(to):
          return to
"#;

fn person(note: &str) -> engine::PersonDecision {
    engine::PersonDecision {
        who: cli("alice"),
        door: Door::Cli,
        note: note.into(),
    }
}

fn unknown() -> engine::ExecutionReport {
    engine::ExecutionReport::outcome_only(
        engine::ExecutionOutcome::Unknown {
            reason: "the connection dropped after the request was sent".into(),
        },
        "fake",
    )
}

/// G14, G15: a person's retry with new inputs is a decision on those inputs. A crash at any
/// write after it (the decision committed, the attempt not begun) and a recovery never run the
/// step with the inputs the person corrected: the step runs with the new ones, or not at all.
#[test]
fn g15_a_retry_with_new_inputs_never_runs_with_the_old_inputs_after_a_crash() {
    let mut crashed_after_decision = 0;
    for at in 1..=12 {
        for point in [CrashPoint::BeforeCommit, CrashPoint::AfterCommit] {
            let harness = Harness::new();
            harness.executor.then("send", |_| unknown());
            let engine = harness.engine();
            let summary = engine
                .start_run(&account(), &workflow(CORRECTED), json!({}), cli("alice"))
                .unwrap();
            assert_eq!(summary.status, RunStatus::NeedsAttention);
            drop(engine);
            let crashing = crashing_store(&harness, at, point);
            let first = harness.engine_on(crashing, Arc::new(PersonSupervisor));
            let _ = first.retry_attempt(
                &summary.run,
                "send",
                1,
                Some(json!({"to": "new@example.com"})),
                person("the right address"),
            );
            drop(first);
            let decided = !harness.store.decisions(&summary.run).unwrap().is_empty();
            let second = harness.engine();
            second.recover().unwrap();
            let label = format!("crash at write {at} {point:?}");
            let calls = harness.executor.calls_of("send");
            for call in &calls[1..] {
                assert_eq!(
                    call.inputs["to"], "new@example.com",
                    "{label}: the retry ran with the old inputs"
                );
            }
            if decided && calls.len() == 1 {
                crashed_after_decision += 1;
            }
        }
    }
    assert!(
        crashed_after_decision > 0,
        "no crash fell between the decision and the attempt"
    );
}

/// An offline step that fails, then a networked gated step.
const CORRECTED_PAIR: &str = r#"name: corrected_pair
python: "3.11"
steps:
  - id: compute
    explain: Computes the amount.
    inputs: { amount: 1 }
    code: |
      def main(amount):
          return amount
  - id: send!
    explain: Sends the notice, after a person approves it.
    network: public_egress
    inputs: { to: "old@example.com" }
    code: |
      def main(to):
          return to
"#;

/// G15, G23 (review): a retry's new inputs stay the inputs in force through every crash: an
/// offline attempt with them that a crash interrupted runs again with them, and a crash in
/// the middle of the approval of a gated step's new inputs never runs the old ones.
#[test]
fn g23_new_inputs_stay_in_force_through_a_crash_in_their_attempt_or_their_approval() {
    // The offline step: its first attempt fails; the retry with new inputs is crashed at
    // every write, the attempt with them included.
    for at in 1..=12 {
        for point in [CrashPoint::BeforeCommit, CrashPoint::AfterCommit] {
            let harness = Harness::new();
            harness.executor.then("compute", |_| {
                crate::support::failed_after_code_started("bad")
            });
            let engine = harness.engine();
            let summary = engine
                .start_run(
                    &account(),
                    &workflow(CORRECTED_PAIR),
                    json!({}),
                    cli("alice"),
                )
                .unwrap();
            assert_eq!(summary.status, RunStatus::NeedsAttention, "{summary:?}");
            drop(engine);
            let first = harness.engine_on(
                crashing_store(&harness, at, point),
                Arc::new(PersonSupervisor),
            );
            let _ = first.retry_attempt(
                &summary.run,
                "compute",
                1,
                Some(json!({"amount": 5})),
                person("five"),
            );
            drop(first);
            harness.engine().recover().unwrap();
            let label = format!("compute, crash at write {at} {point:?}");
            let calls = harness.executor.calls_of("compute");
            for call in &calls[1..] {
                assert_eq!(call.inputs["amount"], 5, "{label}: ran with the old inputs");
            }
        }
    }
    // The gated step: approved, its attempt ends unknown, the retry with new inputs parks;
    // the approval of the new inputs is crashed at every write.
    for at in 1..=12 {
        for point in [CrashPoint::BeforeCommit, CrashPoint::AfterCommit] {
            let harness = Harness::new();
            harness.executor.then("send", |_| unknown());
            let engine = harness.engine();
            let summary = engine
                .start_run(
                    &account(),
                    &workflow(CORRECTED_PAIR),
                    json!({}),
                    cli("alice"),
                )
                .unwrap();
            assert_eq!(summary.status, RunStatus::WaitingApproval, "{summary:?}");
            engine.decide(&summary.run, "send", approve()).unwrap();
            let parked = engine
                .retry_attempt(
                    &summary.run,
                    "send",
                    1,
                    Some(json!({"to": "new@example.com"})),
                    person("the right address"),
                )
                .unwrap();
            assert_eq!(parked.status, RunStatus::WaitingApproval);
            drop(engine);
            let first = harness.engine_on(
                crashing_store(&harness, at, point),
                Arc::new(PersonSupervisor),
            );
            let _ = first.decide(&summary.run, "send", approve());
            drop(first);
            let second = harness.engine();
            second.recover().unwrap();
            if harness.store.run(&summary.run).unwrap().unwrap().status
                == RunStatus::WaitingApproval
            {
                second.decide(&summary.run, "send", approve()).unwrap();
            }
            let label = format!("send, crash at write {at} {point:?}");
            let calls = harness.executor.calls_of("send");
            assert!(
                calls.len() <= 2,
                "{label}: the networked step ran {} times",
                calls.len()
            );
            for call in &calls[1..] {
                assert_eq!(
                    call.inputs["to"], "new@example.com",
                    "{label}: ran with the old inputs"
                );
            }
        }
    }
}
