//! The warm pool every isolating backend shares (issue 37: the local and gVisor backends held
//! two copies of it). Per class (what makes two sandboxes interchangeable before they are
//! claimed: the backend decides), up to `size` sandboxes built ahead of time on their own
//! threads, off the request's path. A sandbox holds nothing of any tenant until it is claimed,
//! serves exactly one invocation and is destroyed; a used sandbox is never returned. Size 0
//! means always cold, unless the caller announces a request ahead of it ([`WarmPool::ahead`]:
//! one sandbox built for that request alone, nothing refilled).
//!
//! The backend says how a sandbox of a class is built (a closure per refill); the pool says
//! how many, on which thread, and who gets them. Dropping an idle sandbox destroys it.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a claim waits for a sandbox being built ahead of it before it builds its own:
/// far longer than a build takes, so only a build that hangs makes the request cold.
const AHEAD_WAIT: Duration = Duration::from_secs(30);

struct State<C, S> {
    idle: HashMap<C, Vec<S>>,
    /// Refills under way per class, so concurrent claims do not overfill.
    pending: HashMap<C, usize>,
    /// Sandboxes built ahead of a request announced by the caller, still being built, per
    /// class: a claim of that class waits for them instead of building a second one beside
    /// them.
    ahead: HashMap<C, usize>,
    threads: Vec<JoinHandle<()>>,
    closed: bool,
}

struct Inner<C, S> {
    size: usize,
    state: Mutex<State<C, S>>,
    /// Signalled whenever a sandbox built ahead is pooled or given up.
    ahead_done: Condvar,
}

impl<C, S> Inner<C, S> {
    fn lock(&self) -> MutexGuard<'_, State<C, S>> {
        // Vectors and counters stay consistent whatever panicked while the lock was held, so
        // a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The pool. [`WarmPool::close`] destroys every idle sandbox; a backend calls it when it is
/// dropped.
pub(crate) struct WarmPool<C, S> {
    inner: Arc<Inner<C, S>>,
}

impl<C, S> WarmPool<C, S>
where
    C: Clone + Eq + Hash + Send + 'static,
    S: Send + 'static,
{
    pub(crate) fn new(size: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                size,
                state: Mutex::new(State {
                    idle: HashMap::new(),
                    pending: HashMap::new(),
                    ahead: HashMap::new(),
                    threads: Vec::new(),
                    closed: false,
                }),
                ahead_done: Condvar::new(),
            }),
        }
    }

    /// Takes a warm sandbox of this class, if one is ready, or, when one is being built
    /// ahead for this request ([`WarmPool::ahead`]), once it is.
    pub(crate) fn claim(&self, class: &C) -> Option<S> {
        let mut state = self.inner.lock();
        let deadline = Instant::now()
            .checked_add(AHEAD_WAIT)
            .unwrap_or_else(Instant::now);
        loop {
            // A closing pool hands out nothing: what is idle is being destroyed.
            if state.closed {
                return None;
            }
            if let Some(sandbox) = state.idle.get_mut(class).and_then(Vec::pop) {
                return Some(sandbox);
            }
            let building = state.ahead.get(class).copied().unwrap_or(0);
            let now = Instant::now();
            if building == 0 || state.closed || now >= deadline {
                return None;
            }
            state = self
                .inner
                .ahead_done
                .wait_timeout(state, deadline - now)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        }
    }

    /// Starts building sandboxes of this class on background threads until the class has
    /// `size` idle or pending. `build` runs once per sandbox, on its thread; `None` (a failed
    /// build) leaves the class one short, and the next request runs cold and reports its own
    /// error there.
    pub(crate) fn refill<F>(&self, class: &C, build: F)
    where
        F: Fn() -> Option<S> + Clone + Send + 'static,
    {
        let mut state = self.inner.lock();
        // Builds that ended are joined here (also those announced ahead, with size 0), so the
        // handles kept are only of builds under way.
        let (ended, running): (Vec<_>, Vec<_>) = std::mem::take(&mut state.threads)
            .into_iter()
            .partition(JoinHandle::is_finished);
        state.threads = running;
        drop(state);
        for handle in ended {
            let _ = handle.join();
        }
        if self.inner.size == 0 {
            return;
        }
        // Counted as pending under the lock (so concurrent refills do not overfill), built on
        // threads started outside it: a thread that cannot start drops its `Pending`, which
        // takes the lock to give the count back.
        let announced: Vec<Pending<C, S>> = {
            let mut state = self.inner.lock();
            if state.closed {
                return;
            }
            let idle = state.idle.get(class).map_or(0, Vec::len);
            let pending = state.pending.get(class).copied().unwrap_or(0);
            (idle + pending..self.inner.size)
                .map(|_| {
                    *state.pending.entry(class.clone()).or_default() += 1;
                    Pending {
                        inner: Arc::clone(&self.inner),
                        class: class.clone(),
                    }
                })
                .collect()
        };
        let mut started = Vec::new();
        for pending in announced {
            let build = build.clone();
            let spawned = std::thread::Builder::new()
                .name(String::from("stepward-warm"))
                .spawn(move || {
                    // Gives the pending count back however the build ends: pooled, failed or
                    // panicked (dropped after the guard below).
                    let pending = pending;
                    let built = build();
                    let mut state = pending.inner.lock();
                    if let Some(sandbox) = built
                        && !state.closed
                    {
                        state
                            .idle
                            .entry(pending.class.clone())
                            .or_default()
                            .push(sandbox);
                    }
                });
            // No thread: this class is one short until the next refill; the request runs
            // cold meanwhile.
            if let Ok(handle) = spawned {
                started.push(handle);
            }
        }
        let mut state = self.inner.lock();
        if state.closed {
            // The pool closed meanwhile and no longer joins its threads: these are joined
            // here (each pools nothing once it sees the pool closed).
            drop(state);
            for handle in started {
                let _ = handle.join();
            }
        } else {
            state.threads.extend(started);
        }
    }

    /// Announces one sandbox of `class` built for a request the caller knows is coming: from
    /// now until the returned [`Ahead`] is finished or dropped, a claim of that class waits
    /// for it instead of building its own. `None` once the pool is closed.
    pub(crate) fn ahead(&self, class: &C) -> Option<Ahead<C, S>> {
        let mut state = self.inner.lock();
        if state.closed {
            return None;
        }
        *state.ahead.entry(class.clone()).or_default() += 1;
        Some(Ahead {
            inner: Arc::clone(&self.inner),
            class: class.clone(),
        })
    }

    /// How many warm sandboxes wait, over all classes.
    pub(crate) fn idle_count(&self) -> usize {
        self.inner.lock().idle.values().map(Vec::len).sum()
    }

    /// Stops refilling, waits for the builds under way, and destroys every idle sandbox.
    pub(crate) fn close(&self) {
        let threads = {
            let mut state = self.inner.lock();
            state.closed = true;
            std::mem::take(&mut state.threads)
        };
        self.inner.ahead_done.notify_all();
        for handle in threads {
            let _ = handle.join();
        }
        let idle = std::mem::take(&mut self.inner.lock().idle);
        drop(idle);
    }
}

/// A refill under way for `class`: its pending count is given back when this is dropped.
struct Pending<C: Eq + Hash, S> {
    inner: Arc<Inner<C, S>>,
    class: C,
}

impl<C: Eq + Hash, S> Drop for Pending<C, S> {
    fn drop(&mut self) {
        // Never dropped under the pool's lock: the refill thread drops it after its own guard,
        // and `refill` starts its threads outside the lock.
        let mut state = self.inner.lock();
        if let Some(count) = state.pending.get_mut(&self.class) {
            *count = count.saturating_sub(1);
        }
    }
}

/// A sandbox announced by [`WarmPool::ahead`]. Dropped unfinished (the build failed, panicked
/// or its thread could not start), it gives the announcement back and wakes the waiting
/// claims, so that no claim waits the full [`AHEAD_WAIT`] for a build that will never come.
pub(crate) struct Ahead<C: Eq + Hash, S> {
    inner: Arc<Inner<C, S>>,
    class: C,
}

impl<C, S> Ahead<C, S>
where
    C: Clone + Eq + Hash + Send + 'static,
    S: Send + 'static,
{
    /// Finishes the build on a thread of its own (named `name`) and pools its sandbox for the
    /// announced request.
    pub(crate) fn finish_on_thread<F>(self, name: &str, build: F)
    where
        F: FnOnce() -> Option<S> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        let spawned = std::thread::Builder::new()
            .name(String::from(name))
            .spawn(move || {
                let announced = self;
                let built = build();
                let mut state = announced.inner.lock();
                if let Some(sandbox) = built
                    && !state.closed
                {
                    state
                        .idle
                        .entry(announced.class.clone())
                        .or_default()
                        .push(sandbox);
                }
                drop(state);
                drop(announced);
            });
        // A thread that cannot start drops its closure: what was built is torn down and the
        // announcement given back.
        if let Ok(handle) = spawned {
            let mut state = inner.lock();
            if state.closed {
                // The pool closed while this was being built: it no longer joins its
                // threads, so this one is waited for here.
                drop(state);
                let _ = handle.join();
            } else {
                state.threads.push(handle);
            }
        }
    }
}

impl<C: Eq + Hash, S> Drop for Ahead<C, S> {
    fn drop(&mut self) {
        let mut state = self.inner.lock();
        if let Some(count) = state.ahead.get_mut(&self.class) {
            *count = count.saturating_sub(1);
        }
        drop(state);
        self.inner.ahead_done.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    /// A sandbox that counts its own destruction.
    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn wait_for(pool: &WarmPool<u8, Counted>, idle: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while pool.idle_count() != idle {
            assert!(Instant::now() < deadline, "the pool never held {idle}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_refill_fills_each_class_to_the_size_once_and_close_destroys_the_idle() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let built = Arc::new(AtomicUsize::new(0));
        let pool = WarmPool::<u8, Counted>::new(2);
        let build = {
            let dropped = Arc::clone(&dropped);
            let built = Arc::clone(&built);
            move || {
                built.fetch_add(1, Ordering::SeqCst);
                Some(Counted(Arc::clone(&dropped)))
            }
        };
        pool.refill(&1, build.clone());
        pool.refill(&1, build.clone());
        wait_for(&pool, 2);
        pool.refill(&1, build.clone());
        pool.refill(&2, build);
        wait_for(&pool, 4);
        assert_eq!(built.load(Ordering::SeqCst), 4, "no class is overfilled");
        let claimed = pool.claim(&1);
        assert!(claimed.is_some());
        assert!(pool.claim(&3).is_none(), "a class never built is cold");
        pool.close();
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            3,
            "every idle sandbox destroyed"
        );
        drop(claimed);
        assert_eq!(dropped.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn a_build_that_panics_leaves_no_count_behind_and_the_next_refill_builds_again() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let pool = WarmPool::<u8, Counted>::new(1);
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        pool.refill(&1, || panic!("the build failed badly"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while pool.inner.lock().pending.get(&1).copied().unwrap_or(0) != 0 {
            assert!(
                Instant::now() < deadline,
                "the pending count was never given back"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        std::panic::set_hook(previous);
        let counted = Arc::clone(&dropped);
        pool.refill(&1, move || Some(Counted(Arc::clone(&counted))));
        wait_for(&pool, 1);
        pool.close();
        assert!(pool.claim(&1).is_none(), "a closed pool hands out nothing");
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn size_zero_never_builds_but_a_request_announced_ahead_gets_its_sandbox() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let pool = WarmPool::<u8, Counted>::new(0);
        let counted = Arc::clone(&dropped);
        pool.refill(&1, move || Some(Counted(Arc::clone(&counted))));
        assert!(pool.claim(&1).is_none());
        let ahead = pool.ahead(&1).expect("open pool");
        let counted = Arc::clone(&dropped);
        ahead.finish_on_thread("test-ahead", move || {
            std::thread::sleep(Duration::from_millis(50));
            Some(Counted(counted))
        });
        // The claim waits for the build announced for it.
        assert!(pool.claim(&1).is_some());
        assert!(pool.claim(&1).is_none(), "one sandbox per announcement");
        pool.close();
    }

    #[test]
    fn an_announcement_given_up_wakes_the_claim_at_once() {
        let pool = WarmPool::<u8, Counted>::new(0);
        let ahead = pool.ahead(&1).expect("open pool");
        ahead.finish_on_thread("test-ahead", || {
            std::thread::sleep(Duration::from_millis(50));
            None
        });
        let started = Instant::now();
        assert!(pool.claim(&1).is_none());
        assert!(
            started.elapsed() < AHEAD_WAIT / 2,
            "the claim did not wait it out"
        );
        drop(pool.ahead(&2));
        assert!(pool.claim(&2).is_none());
        pool.close();
        assert!(
            pool.ahead(&1).is_none(),
            "a closed pool takes no announcement"
        );
    }
}
