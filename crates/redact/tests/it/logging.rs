//! G16: log records and panic messages pass through every live run's redactor.

use std::io;
use std::sync::{Arc, Mutex};

use redact::{ScrubRegistry, ScrubbingWriter};

use crate::common::redactor_for;

/// A `MakeWriter` target the test can read back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

#[test]
fn g16_log_records_are_scrubbed_by_every_live_run() {
    let registry = ScrubRegistry::new();
    let first = registry.register(redactor_for("run-log-1", &["first-run-secret-value"]));
    let second = registry.register(redactor_for("run-log-2", &["second-run-secret-value"]));
    assert_eq!(registry.live_registrations(), 2);

    let captured = Captured::default();
    let target = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(ScrubbingWriter::new(registry.clone(), move || {
            target.clone()
        }))
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!(
            token = "first-run-secret-value",
            "called with second-run-secret-value"
        );
    });
    let logged = captured.text();
    assert!(logged.contains("[REDACTED]"), "{logged}");
    assert!(!logged.contains("first-run-secret-value"), "{logged}");
    assert!(!logged.contains("second-run-secret-value"), "{logged}");

    drop(first);
    drop(second);
    assert_eq!(registry.live_registrations(), 0);
    assert_eq!(
        registry.scrub("first-run-secret-value"),
        "first-run-secret-value"
    );
}

#[test]
fn g16_panic_messages_are_scrubbed() {
    let registry = ScrubRegistry::new();
    let _registration = registry.register(redactor_for("run-panic", &["panicking-secret-value"]));
    let reports: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink_reports = Arc::clone(&reports);
    redact::install_panic_hook_with_sink(
        registry.clone(),
        Box::new(move |report: &str| sink_reports.lock().unwrap().push(report.to_owned())),
    );
    let caught = std::panic::catch_unwind(|| {
        let value = "panicking-secret-value";
        panic!("could not connect with {value}");
    });
    // Put the default hook back so a failing assertion below is reported normally.
    let _ = std::panic::take_hook();

    let payload = caught.unwrap_err();
    assert_eq!(
        registry.scrub_panic_payload(payload.as_ref()),
        "could not connect with [REDACTED]"
    );
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1);
    assert!(
        reports[0].contains("could not connect with [REDACTED]"),
        "{}",
        reports[0]
    );
    assert!(
        !reports[0].contains("panicking-secret-value"),
        "{}",
        reports[0]
    );
}
