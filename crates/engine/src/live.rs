//! The live view of a running code step (issue 38): what it printed so far, scrubbed and
//! bounded exactly as the record is (`Redactor::scrub_printed`, which also masks a value cut
//! at the end by its beginning, so a value half printed is never shown half), written to the
//! store every [`LIVE_EVERY`] by a thread of the attempt's own while the step runs, and
//! removed when it ends. The run page reads it from the store, so it works whichever process
//! runs the step.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, mpsc};
use std::time::Duration;

use crate::context::RunContext;
use crate::engine::Engine;
use crate::executor::LivePrinted;
use crate::journal::PrintedStream;

/// How often the view is written while the step prints.
const LIVE_EVERY: Duration = Duration::from_millis(500);

/// The bytes a step printed so far, per stream, up to twice what the record keeps (scrubbing
/// can only shorten what is shown; a value cut at this bound is masked by its beginning).
pub(crate) struct LiveView {
    cap: usize,
    printed: Mutex<Printed>,
    wrote: AtomicBool,
}

#[derive(Default)]
struct Printed {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    changed: bool,
}

impl LivePrinted for LiveView {
    fn printed(&self, stream: PrintedStream, bytes: &[u8]) {
        let mut printed = self.lock();
        let kept = match stream {
            PrintedStream::Stdout => &mut printed.stdout,
            PrintedStream::Stderr => &mut printed.stderr,
        };
        let room = self.cap.saturating_sub(kept.len()).min(bytes.len());
        if room > 0 {
            kept.extend_from_slice(&bytes[..room]);
            printed.changed = true;
        }
    }
}

impl LiveView {
    pub(crate) fn new(max_printed_bytes: usize) -> LiveView {
        LiveView {
            cap: max_printed_bytes.saturating_mul(2),
            printed: Mutex::new(Printed::default()),
            wrote: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Printed> {
        self.printed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Engine {
    /// Runs `work` (the executor's call) while a thread of its own writes `view` to the store
    /// every [`LIVE_EVERY`]; removes the view once `work` returned.
    pub(crate) fn with_live_view<R>(
        &self,
        context: &RunContext,
        step: &str,
        attempt: u32,
        view: &LiveView,
        work: impl FnOnce() -> R,
    ) -> R {
        let result = std::thread::scope(|scope| {
            let (done, wait) = mpsc::channel::<()>();
            scope.spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(LIVE_EVERY) {
                    self.write_live_view(context, step, attempt, view);
                }
            });
            let result = work();
            drop(done);
            result
        });
        if view.wrote.load(Ordering::SeqCst) {
            // The record has what it printed now; a view left behind is only not removed.
            let _ = self.store.clear_live_output(&context.run.id, step, attempt);
        }
        result
    }

    fn write_live_view(&self, context: &RunContext, step: &str, attempt: u32, view: &LiveView) {
        let (stdout, stderr) = {
            let mut printed = view.lock();
            if !printed.changed {
                return;
            }
            printed.changed = false;
            (printed.stdout.clone(), printed.stderr.clone())
        };
        let bound = self.options.max_printed_bytes;
        let stdout = context.redactor.scrub_printed(&stdout, bound);
        let stderr = context.redactor.scrub_printed(&stderr, bound);
        // A view that cannot be written is only not shown: the step goes on.
        if self
            .store
            .set_live_output(
                &context.run.id,
                step,
                attempt,
                &stdout,
                &stderr,
                self.clock.now(),
            )
            .is_ok()
        {
            view.wrote.store(true, Ordering::SeqCst);
        }
    }
}
