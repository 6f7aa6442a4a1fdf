//! Logs and panic messages pass through the same scrubbing as a run's output (G16).
//!
//! A [`ScrubRegistry`] is a cloneable handle on what a process scrubs its logs with: redactors
//! and whole [`ScrubSets`] (every account's live set: a server registers its sets once and so
//! scrubs every account it has touched). A registration is taken out again when its
//! [`ScrubRegistration`] is dropped. [`ScrubbingWriter`] (a tracing `MakeWriter`) and the panic
//! hook scrub with everything registered at that moment, using the sets as last built: a log
//! line never waits on the database (a server refreshes the sets now and then, and every write
//! refreshes its account's). The only process-wide state is the panic hook itself, which std
//! keeps globally by design (`std::panic::set_hook`); the registry is handed to it.

use std::any::Any;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};

use tracing_subscriber::fmt::MakeWriter;

use crate::live::ScrubSets;
use crate::redactor::Redactor;
use crate::scrub_set::{SetList, replace_spans};

/// The redactors of every live run; clones share one set.
#[derive(Clone, Default)]
pub struct ScrubRegistry {
    state: Arc<Mutex<RegistryState>>,
}

#[derive(Default)]
struct RegistryState {
    next_registration: u64,
    live: BTreeMap<u64, Registered>,
}

/// One registration: a redactor, or every account set of a process.
#[derive(Clone)]
enum Registered {
    Redactor(Redactor),
    Sets(ScrubSets),
}

/// Keeps a redactor in the registry; dropping it takes the redactor out.
#[must_use = "the redactor leaves the registry as soon as the registration is dropped"]
pub struct ScrubRegistration {
    state: Arc<Mutex<RegistryState>>,
    registration: u64,
}

impl Drop for ScrubRegistration {
    fn drop(&mut self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.live.remove(&self.registration);
    }
}

impl ScrubRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a redactor until the returned registration is dropped.
    pub fn register(&self, redactor: Redactor) -> ScrubRegistration {
        self.add(Registered::Redactor(redactor))
    }

    /// Adds every account set of `sets` (those built so far and those built later) until the
    /// returned registration is dropped.
    pub fn register_sets(&self, sets: ScrubSets) -> ScrubRegistration {
        self.add(Registered::Sets(sets))
    }

    /// Adds every account set of `sets` for as long as the registry itself lives (no
    /// registration to drop): a command's error is printed by `main` after the command, and
    /// whatever it opened, are gone, and must still be scrubbed with the account's values.
    pub fn keep_sets(&self, sets: ScrubSets) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let registration = state.next_registration;
        state.next_registration += 1;
        state.live.insert(registration, Registered::Sets(sets));
    }

    fn add(&self, registered: Registered) -> ScrubRegistration {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let registration = state.next_registration;
        state.next_registration += 1;
        state.live.insert(registration, registered);
        ScrubRegistration {
            state: Arc::clone(&self.state),
            registration,
        }
    }

    /// How many registrations are live.
    pub fn live_registrations(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .live
            .len()
    }

    /// `text` scrubbed with every registered set as last built.
    pub fn scrub(&self, text: &str) -> String {
        let mut sets = Vec::new();
        for registered in self.live_registrations_cloned() {
            match registered {
                Registered::Redactor(redactor) => sets.extend(redactor.cached_sets().0),
                Registered::Sets(all) => sets.extend(all.cached_sets()),
            }
        }
        let sets = SetList(sets);
        let spans = sets.masked_spans(text.as_bytes());
        if spans.is_empty() {
            text.to_owned()
        } else {
            replace_spans(text, &spans)
        }
    }

    /// The message of a panic payload (as `catch_unwind` or a thread join hands it back),
    /// scrubbed; payloads that are not strings are described, not shown.
    pub fn scrub_panic_payload(&self, payload: &(dyn Any + Send)) -> String {
        self.scrub(panic_payload_text(payload))
    }

    /// Clones the registrations out so no lock is held while scrubbing.
    fn live_registrations_cloned(&self) -> Vec<Registered> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.live.values().cloned().collect()
    }
}

fn panic_payload_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "Box<dyn Any>"
    }
}

/// Replaces the process's panic hook with one that prints the panic (thread, location, message,
/// and a backtrace when `RUST_BACKTRACE` asks for one) to stderr, scrubbed with every live run's
/// redactor. The previous hook is dropped, not chained: it would print the message unscrubbed.
pub fn install_panic_hook(registry: ScrubRegistry) {
    install_panic_hook_with_sink(
        registry,
        Box::new(|text: &str| {
            // Nothing sensible can be done if stderr is gone while panicking.
            let _ = writeln!(io::stderr().lock(), "{text}");
        }),
    );
}

/// Like [`install_panic_hook`], but hands the scrubbed report to `sink` instead of stderr (for
/// a service that routes panics into its own log, and for tests).
pub fn install_panic_hook_with_sink(
    registry: ScrubRegistry,
    sink: Box<dyn Fn(&str) + Send + Sync + 'static>,
) {
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current();
        let thread_name = thread.name().unwrap_or("<unnamed>");
        let location = info.location().map_or_else(
            || "an unknown location".to_owned(),
            |location| {
                format!(
                    "{}:{}:{}",
                    location.file(),
                    location.line(),
                    location.column()
                )
            },
        );
        let message = panic_payload_text(info.payload());
        let mut report = format!("thread '{thread_name}' panicked at {location}:\n{message}");
        let backtrace = std::backtrace::Backtrace::capture();
        if backtrace.status() == std::backtrace::BacktraceStatus::Captured {
            report.push_str(&format!("\nstack backtrace:\n{backtrace}"));
        }
        sink(&registry.scrub(&report));
    }));
}

/// A tracing `MakeWriter` that scrubs each log record with every live run's redactor before
/// handing it to the inner writer.
pub struct ScrubbingWriter<M> {
    registry: ScrubRegistry,
    inner: M,
}

impl<M> ScrubbingWriter<M> {
    /// Wraps `inner` (for example `std::io::stderr`).
    pub fn new(registry: ScrubRegistry, inner: M) -> Self {
        Self { registry, inner }
    }
}

impl<'writer, M: MakeWriter<'writer>> MakeWriter<'writer> for ScrubbingWriter<M> {
    type Writer = ScrubbingLogWriter<'writer, M::Writer>;

    fn make_writer(&'writer self) -> Self::Writer {
        ScrubbingLogWriter {
            registry: &self.registry,
            inner: self.inner.make_writer(),
            buffered: Vec::new(),
        }
    }
}

/// One log record being written: buffered whole, so a value cannot be split across two writes,
/// and scrubbed when flushed or dropped (tracing drops the writer after each record).
pub struct ScrubbingLogWriter<'writer, W: Write> {
    registry: &'writer ScrubRegistry,
    inner: W,
    buffered: Vec<u8>,
}

impl<W: Write> ScrubbingLogWriter<'_, W> {
    fn write_buffered(&mut self) -> io::Result<()> {
        if self.buffered.is_empty() {
            return Ok(());
        }
        let record = String::from_utf8_lossy(&self.buffered).into_owned();
        self.buffered.clear();
        self.inner
            .write_all(self.registry.scrub(&record).as_bytes())
    }
}

impl<W: Write> Write for ScrubbingLogWriter<'_, W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buffered.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_buffered()?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for ScrubbingLogWriter<'_, W> {
    fn drop(&mut self) {
        // Drop cannot report an error; a log line that cannot be written is lost, not leaked.
        let _ = self.write_buffered();
        let _ = self.inner.flush();
    }
}
