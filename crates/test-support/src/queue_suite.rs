//! The run queue's conformance suite, written once (issue 38): every implementation of
//! [`WorkQueue`] runs each check through [`queue_conformance!`], one test per check. Today
//! SQLite's (`storage-sqlite`, `it/work_queue.rs`) and the in-memory one of this crate
//! ([`crate::memory_queue`]) run it, so the suite is proven to run against two; the Postgres
//! store runs it next.
//!
//! A job is held by one worker at a time; a lease's end is the store's clock; a lease taken
//! from its worker fences off every later call of that worker; a claimed job whose lease ends
//! goes back to the queue; a started one is handed to the engine's rules until settled and
//! never re-queued by the store; a holder proven dead is reaped at once.

use std::time::Duration;

use storage::queue::{Fence, Holder, JobState, NewJob, Release, SlotKind, Slots, WorkQueue};
use storage::{AccountId, RunId, Timestamp};

use crate::time::now_millis;

/// A queue for one check, fresh for each.
pub trait QueueUnderTest {
    fn queue(&self) -> &dyn WorkQueue;
    /// A run of [`ACCOUNT`] for jobs to belong to, made as the store makes runs.
    fn run(&self, id: &str) -> RunId;
}

/// The account every check's runs belong to.
pub const ACCOUNT: &str = "acct";

const SHORT: Duration = Duration::from_millis(150);
const LONG: Duration = Duration::from_secs(60);
const BOTH: Slots = Slots {
    sandbox: 1,
    model: 1,
};

fn holder(pid: u32) -> Holder {
    Holder {
        host: "host-a".into(),
        boot: "boot-1".into(),
        pid,
        process_start: 1000 + u64::from(pid),
    }
}

fn account() -> AccountId {
    AccountId::parse(ACCOUNT).unwrap()
}

fn job(run: &RunId, step: &str, attempt: u32, slot: SlotKind) -> NewJob {
    NewJob {
        account: account(),
        run: run.clone(),
        step: step.into(),
        attempt,
        slot,
        at: Timestamp(2),
    }
}

pub fn a_claim_takes_the_oldest_job_its_slots_have_room_for_and_a_job_is_queued_once(
    under_test: &dyn QueueUnderTest,
) {
    let queue = under_test.queue();
    let run = under_test.run("run-1");
    let agent = queue
        .enqueue(&job(&run, "ask", 1, SlotKind::Model))
        .unwrap();
    let code = queue
        .enqueue(&job(&run, "fetch", 1, SlotKind::Sandbox))
        .unwrap();
    assert_eq!(
        queue
            .enqueue(&job(&run, "fetch", 1, SlotKind::Sandbox))
            .unwrap(),
        code,
        "the same attempt queued twice is one job"
    );
    assert!(
        queue
            .claim(&holder(1), Slots::default(), LONG)
            .unwrap()
            .is_none()
    );
    let sandboxed = queue
        .claim(
            &holder(1),
            Slots {
                sandbox: 1,
                model: 0,
            },
            LONG,
        )
        .unwrap()
        .expect("the sandboxed job");
    assert_eq!(sandboxed.job, code, "an agent's job takes a model slot");
    assert_eq!((sandboxed.attempt, sandboxed.claim), (1, 1));
    let model = queue.claim(&holder(2), BOTH, LONG).unwrap().unwrap();
    assert_eq!(model.job, agent);
    assert!(queue.claim(&holder(3), BOTH, LONG).unwrap().is_none());
    let stored = queue.job(code).unwrap().unwrap();
    assert_eq!(stored.state, JobState::Claimed);
    assert_eq!(stored.holder, Some(holder(1)));
    assert_eq!(queue.jobs_of_run(&run).unwrap().len(), 2);
}

pub fn a_lease_ends_by_the_stores_clock_and_renewing_moves_its_end(
    under_test: &dyn QueueUnderTest,
) {
    let queue = under_test.queue();
    let run = under_test.run("run-1");
    queue
        .enqueue(&job(&run, "fetch", 1, SlotKind::Sandbox))
        .unwrap();
    let before = now_millis();
    let lease = queue.claim(&holder(1), BOTH, SHORT).unwrap().unwrap();
    let after = now_millis();
    assert!(
        lease.until.0 >= before + 150 - 5 && lease.until.0 <= after + 150 + 5,
        "{} not about 150 ms after the claim",
        lease.until.0
    );
    let renewed = queue.renew(&lease, LONG).unwrap().expect("still held");
    assert!(renewed.0 >= before + 60_000 - 5, "{}", renewed.0);
    std::thread::sleep(SHORT * 2);
    let reaped = queue.reap(&|_| false).unwrap();
    assert!(reaped.requeued.is_empty(), "a renewed lease has not ended");
}

pub fn a_claimed_job_whose_lease_ends_is_queued_again_and_its_old_holder_is_fenced_off(
    under_test: &dyn QueueUnderTest,
) {
    let queue = under_test.queue();
    let run = under_test.run("run-1");
    let id = queue
        .enqueue(&job(&run, "fetch", 1, SlotKind::Sandbox))
        .unwrap();
    let first = queue.claim(&holder(1), BOTH, SHORT).unwrap().unwrap();
    assert!(
        queue.reap(&|_| false).unwrap().requeued.is_empty(),
        "not yet"
    );
    std::thread::sleep(SHORT * 2);
    let reaped = queue.reap(&|_| false).unwrap();
    assert_eq!(reaped.requeued, vec![id]);
    assert!(reaped.stranded.is_empty());
    let second = queue.claim(&holder(2), BOTH, LONG).unwrap().unwrap();
    assert_eq!((second.job, second.attempt, second.claim), (id, 1, 2));
    // Every later call of the first holder changes nothing.
    assert_eq!(queue.start(&first).unwrap(), Fence::Lost);
    assert_eq!(queue.renew(&first, LONG).unwrap(), None);
    assert_eq!(queue.release(&first, Release::Done).unwrap(), Fence::Lost);
    assert_eq!(queue.job(id).unwrap().unwrap().state, JobState::Claimed);
    assert_eq!(queue.start(&second).unwrap(), Fence::Held);
    assert_eq!(queue.release(&second, Release::Done).unwrap(), Fence::Held);
    let done = queue.job(id).unwrap().unwrap();
    assert_eq!((done.state, done.holder), (JobState::Done, None));
    assert_eq!(queue.release(&second, Release::Done).unwrap(), Fence::Lost);
}

pub fn a_started_job_whose_lease_ends_is_stranded_never_queued_again_and_counted_per_step(
    under_test: &dyn QueueUnderTest,
) {
    let queue = under_test.queue();
    let run = under_test.run("run-1");
    for attempt in 1..=2 {
        let id = queue
            .enqueue(&job(&run, "fetch", attempt, SlotKind::Sandbox))
            .unwrap();
        let lease = queue.claim(&holder(attempt), BOTH, SHORT).unwrap().unwrap();
        assert_eq!(queue.start(&lease).unwrap(), Fence::Held);
        std::thread::sleep(SHORT * 2);
        let reaped = queue.reap(&|_| false).unwrap();
        assert!(reaped.requeued.is_empty());
        assert_eq!(reaped.stranded.len(), 1);
        let stranded = &reaped.stranded[0];
        assert_eq!(stranded.job.id, id);
        assert_eq!(stranded.job.state, JobState::Stranded);
        assert_eq!(stranded.job.attempt, attempt);
        assert_eq!(
            stranded.stranded_before,
            attempt - 1,
            "the step's earlier strandings"
        );
        assert!(
            queue.claim(&holder(9), BOTH, LONG).unwrap().is_none(),
            "never re-run"
        );
        assert_eq!(queue.release(&lease, Release::Done).unwrap(), Fence::Lost);
        let again = queue.reap(&|_| false).unwrap();
        assert_eq!(
            again.stranded.len(),
            1,
            "handed on again until the engine settles it (a reaper may die first)"
        );
        queue.settle(id).unwrap();
        assert_eq!(queue.job(id).unwrap().unwrap().state, JobState::Settled);
        assert!(
            queue.reap(&|_| false).unwrap().stranded.is_empty(),
            "settled once"
        );
    }
}

/// The same holder (workers of one process share it) claiming a job again after its lease
/// was taken: the earlier claim is fenced off by its claim number alone.
pub fn the_same_holders_earlier_claim_is_fenced_off_by_its_claim_number(
    under_test: &dyn QueueUnderTest,
) {
    let queue = under_test.queue();
    let run = under_test.run("run-1");
    let id = queue
        .enqueue(&job(&run, "fetch", 1, SlotKind::Sandbox))
        .unwrap();
    let first = queue.claim(&holder(1), BOTH, SHORT).unwrap().unwrap();
    std::thread::sleep(SHORT * 2);
    assert_eq!(
        queue.start(&first).unwrap(),
        Fence::Lost,
        "a lease ended by the store's clock starts nothing, reaped or not"
    );
    assert_eq!(
        queue.renew(&first, LONG).unwrap(),
        None,
        "nor is it renewed"
    );
    assert_eq!(queue.reap(&|_| false).unwrap().requeued, vec![id]);
    let second = queue.claim(&holder(1), BOTH, LONG).unwrap().unwrap();
    assert_eq!(second.holder, first.holder);
    assert_eq!(second.claim, 2);
    assert_eq!(
        queue.release(&first, Release::Unstarted).unwrap(),
        Fence::Lost
    );
    assert_eq!(queue.release(&first, Release::Done).unwrap(), Fence::Lost);
    assert_eq!(queue.job(id).unwrap().unwrap().state, JobState::Claimed);
    assert_eq!(queue.start(&second).unwrap(), Fence::Held);
}

pub fn a_holder_proven_dead_is_reaped_at_once_and_a_live_one_is_not(
    under_test: &dyn QueueUnderTest,
) {
    let queue = under_test.queue();
    let run = under_test.run("run-1");
    let claimed = queue
        .enqueue(&job(&run, "one", 1, SlotKind::Sandbox))
        .unwrap();
    queue
        .enqueue(&job(&run, "two", 1, SlotKind::Sandbox))
        .unwrap();
    let dead_lease = queue.claim(&holder(1), BOTH, LONG).unwrap().unwrap();
    let live_lease = queue.claim(&holder(2), BOTH, LONG).unwrap().unwrap();
    assert_eq!(dead_lease.job, claimed);
    queue.start(&live_lease).unwrap();
    let reaped = queue.reap(&|who| who.pid == 1).unwrap();
    assert_eq!(
        reaped.requeued,
        vec![claimed],
        "without waiting out its lease"
    );
    assert!(reaped.stranded.is_empty(), "the live holder keeps its job");
    let reaped = queue.reap(&|who| who.pid == 2).unwrap();
    assert_eq!(reaped.stranded.len(), 1);
    assert_eq!(reaped.stranded[0].job.id, live_lease.job);
}

pub fn a_job_released_unstarted_is_claimed_again(under_test: &dyn QueueUnderTest) {
    let queue = under_test.queue();
    let run = under_test.run("run-1");
    let id = queue
        .enqueue(&job(&run, "fetch", 1, SlotKind::Sandbox))
        .unwrap();
    let lease = queue.claim(&holder(1), BOTH, LONG).unwrap().unwrap();
    assert_eq!(
        queue.release(&lease, Release::Unstarted).unwrap(),
        Fence::Held
    );
    let again = queue.claim(&holder(2), BOTH, LONG).unwrap().unwrap();
    assert_eq!((again.job, again.claim), (id, 2));
    queue.start(&again).unwrap();
    assert_eq!(
        queue.release(&again, Release::Unstarted).unwrap(),
        Fence::Lost,
        "a started job is never handed back as if it had not run"
    );
}

/// A command driving its own run claims the one job it queued, of any slot kind, only while
/// it is queued.
pub fn a_named_job_is_claimed_only_while_queued(under_test: &dyn QueueUnderTest) {
    let queue = under_test.queue();
    let run = under_test.run("run-1");
    let older = queue
        .enqueue(&job(&run, "one", 1, SlotKind::Sandbox))
        .unwrap();
    let named = queue
        .enqueue(&job(&run, "two", 1, SlotKind::Model))
        .unwrap();
    let lease = queue.claim_job(named, &holder(1), LONG).unwrap().unwrap();
    assert_eq!(
        (lease.job, lease.claim, lease.step.as_str()),
        (named, 1, "two")
    );
    assert!(
        queue.claim_job(named, &holder(2), LONG).unwrap().is_none(),
        "held by another"
    );
    assert_eq!(queue.job(older).unwrap().unwrap().state, JobState::Queued);
    assert_eq!(queue.start(&lease).unwrap(), Fence::Held);
    assert_eq!(queue.release(&lease, Release::Done).unwrap(), Fence::Held);
    assert!(
        queue.claim_job(named, &holder(1), LONG).unwrap().is_none(),
        "a done job is never claimed again"
    );
}

/// A job that is done is queued again when its key is asked for again (the engine asks only
/// for an attempt never made); one queued, held or stranded is not touched.
pub fn a_done_job_asked_for_again_is_queued_again(under_test: &dyn QueueUnderTest) {
    let queue = under_test.queue();
    let run = under_test.run("run-1");
    let id = queue
        .enqueue(&job(&run, "fetch", 1, SlotKind::Sandbox))
        .unwrap();
    let lease = queue.claim(&holder(1), BOTH, LONG).unwrap().unwrap();
    assert_eq!(
        queue
            .enqueue(&job(&run, "fetch", 1, SlotKind::Sandbox))
            .unwrap(),
        id
    );
    assert_eq!(
        queue.job(id).unwrap().unwrap().state,
        JobState::Claimed,
        "held: untouched"
    );
    assert_eq!(queue.release(&lease, Release::Done).unwrap(), Fence::Held);
    assert_eq!(
        queue
            .enqueue(&job(&run, "fetch", 1, SlotKind::Sandbox))
            .unwrap(),
        id
    );
    let again = queue.job(id).unwrap().unwrap();
    assert_eq!((again.state, again.holder), (JobState::Queued, None));
    let second = queue.claim(&holder(2), BOTH, LONG).unwrap().unwrap();
    assert_eq!((second.job, second.claim), (id, 2));
    assert_eq!(
        queue.release(&lease, Release::Done).unwrap(),
        Fence::Lost,
        "the first claim stays fenced off"
    );
}

/// A stranded job whose step never began goes back to the queue once the engine says so; a
/// job in any other state does not move.
pub fn a_stranded_job_is_queued_again_only_when_the_engine_says_so(
    under_test: &dyn QueueUnderTest,
) {
    let queue = under_test.queue();
    let run = under_test.run("run-1");
    let id = queue
        .enqueue(&job(&run, "fetch", 1, SlotKind::Sandbox))
        .unwrap();
    assert!(
        !queue.requeue_stranded(id).unwrap(),
        "queued: nothing to do"
    );
    let lease = queue.claim(&holder(1), BOTH, LONG).unwrap().unwrap();
    assert!(!queue.requeue_stranded(id).unwrap(), "held: never taken");
    assert_eq!(queue.start(&lease).unwrap(), Fence::Held);
    assert!(!queue.requeue_stranded(id).unwrap(), "started: never taken");
    let reaped = queue.reap(&|who| who.pid == 1).unwrap();
    assert_eq!(reaped.stranded.len(), 1);
    assert!(queue.requeue_stranded(id).unwrap());
    assert_eq!(queue.job(id).unwrap().unwrap().state, JobState::Queued);
    let again = queue.claim(&holder(2), BOTH, LONG).unwrap().unwrap();
    assert_eq!((again.job, again.claim), (id, 2));
    assert_eq!(queue.release(&lease, Release::Done).unwrap(), Fence::Lost);
}

/// A stranded job whose attempt had ended is done when the engine says so: it no longer counts
/// toward its step's strandings; a job in any other state does not move.
pub fn a_stranded_job_whose_attempt_ended_is_done_and_counts_no_more(
    under_test: &dyn QueueUnderTest,
) {
    let queue = under_test.queue();
    let run = under_test.run("run-1");
    let first = queue
        .enqueue(&job(&run, "fetch", 1, SlotKind::Sandbox))
        .unwrap();
    assert!(
        !queue.finish_stranded(first).unwrap(),
        "queued: nothing to do"
    );
    let lease = queue.claim(&holder(1), BOTH, LONG).unwrap().unwrap();
    assert!(!queue.finish_stranded(first).unwrap(), "held: never taken");
    assert_eq!(queue.start(&lease).unwrap(), Fence::Held);
    let reaped = queue.reap(&|who| who.pid == 1).unwrap();
    assert_eq!(reaped.stranded.len(), 1);
    assert!(queue.finish_stranded(first).unwrap());
    assert_eq!(queue.job(first).unwrap().unwrap().state, JobState::Done);
    assert!(!queue.finish_stranded(first).unwrap(), "once");
    // The step's next job stranded: the first is not counted before it.
    let second = queue
        .enqueue(&job(&run, "fetch", 2, SlotKind::Sandbox))
        .unwrap();
    let lease = queue.claim(&holder(2), BOTH, LONG).unwrap().unwrap();
    assert_eq!(lease.job, second);
    assert_eq!(queue.start(&lease).unwrap(), Fence::Held);
    let reaped = queue.reap(&|who| who.pid == 2).unwrap();
    assert_eq!(reaped.stranded.len(), 1);
    assert_eq!(reaped.stranded[0].stranded_before, 0);
}

/// One `#[test]` per check of this suite, each on the fresh queue `$make()` returns (a value
/// of a type implementing [`QueueUnderTest`]).
#[macro_export]
macro_rules! queue_conformance {
    ($make:expr) => {
        #[test]
        fn a_claim_takes_the_oldest_job_its_slots_have_room_for_and_a_job_is_queued_once() {
            $crate::queue_suite::a_claim_takes_the_oldest_job_its_slots_have_room_for_and_a_job_is_queued_once(&$make());
        }
        #[test]
        fn a_lease_ends_by_the_stores_clock_and_renewing_moves_its_end() {
            $crate::queue_suite::a_lease_ends_by_the_stores_clock_and_renewing_moves_its_end(&$make());
        }
        #[test]
        fn a_claimed_job_whose_lease_ends_is_queued_again_and_its_old_holder_is_fenced_off() {
            $crate::queue_suite::a_claimed_job_whose_lease_ends_is_queued_again_and_its_old_holder_is_fenced_off(&$make());
        }
        #[test]
        fn a_started_job_whose_lease_ends_is_stranded_never_queued_again_and_counted_per_step() {
            $crate::queue_suite::a_started_job_whose_lease_ends_is_stranded_never_queued_again_and_counted_per_step(&$make());
        }
        #[test]
        fn the_same_holders_earlier_claim_is_fenced_off_by_its_claim_number() {
            $crate::queue_suite::the_same_holders_earlier_claim_is_fenced_off_by_its_claim_number(&$make());
        }
        #[test]
        fn a_holder_proven_dead_is_reaped_at_once_and_a_live_one_is_not() {
            $crate::queue_suite::a_holder_proven_dead_is_reaped_at_once_and_a_live_one_is_not(&$make());
        }
        #[test]
        fn a_job_released_unstarted_is_claimed_again() {
            $crate::queue_suite::a_job_released_unstarted_is_claimed_again(&$make());
        }
        #[test]
        fn a_named_job_is_claimed_only_while_queued() {
            $crate::queue_suite::a_named_job_is_claimed_only_while_queued(&$make());
        }
        #[test]
        fn a_done_job_asked_for_again_is_queued_again() {
            $crate::queue_suite::a_done_job_asked_for_again_is_queued_again(&$make());
        }
        #[test]
        fn a_stranded_job_is_queued_again_only_when_the_engine_says_so() {
            $crate::queue_suite::a_stranded_job_is_queued_again_only_when_the_engine_says_so(&$make());
        }
        #[test]
        fn a_stranded_job_whose_attempt_ended_is_done_and_counts_no_more() {
            $crate::queue_suite::a_stranded_job_whose_attempt_ended_is_done_and_counts_no_more(&$make());
        }
    };
}
