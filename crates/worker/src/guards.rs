//! Executors and backends that wrap another one to hold something or to refuse: what the
//! binary used to implement itself (issue 37: the binary wires and prints, and implements no
//! port of the engine or the sandbox).

use std::sync::Arc;

use sandbox::Isolation;

/// A backend that keeps `held` (an engine lock, a state folder to remove) for as long as it
/// lives. Its fields drop in order: the backend, and its cleanup, is gone before what it
/// holds is let go (the backend removes the data directory's cgroup parent while the lock is
/// still held).
pub struct Holding<T: Send + Sync> {
    backend: Arc<dyn Isolation>,
    _held: T,
}

impl<T: Send + Sync> Holding<T> {
    pub fn new(backend: Arc<dyn Isolation>, held: T) -> Holding<T> {
        Holding {
            backend,
            _held: held,
        }
    }
}

impl<T: Send + Sync> Isolation for Holding<T> {
    fn name(&self) -> &'static str {
        self.backend.name()
    }

    fn run(&self, invocation: sandbox::Invocation) -> Result<sandbox::Observation, sandbox::Error> {
        self.backend.run(invocation)
    }

    fn availability(
        &self,
        python: sandbox::PythonPin,
        network: sandbox::NetworkMode,
    ) -> Result<(), sandbox::Unavailable> {
        self.backend.availability(python, network)
    }

    fn open_session(
        &self,
        spec: sandbox::session::SessionSpec,
    ) -> Result<Box<dyn sandbox::session::Session + '_>, sandbox::Error> {
        self.backend.open_session(spec)
    }

    fn helper_cell(&self) -> Result<sandbox::HelperCell, sandbox::Error> {
        self.backend.helper_cell()
    }
}

/// The unisolated backend's executor: refuses every attempt once the store holds more than one
/// account, however that account came to be (G13). Counted before every attempt, not only at
/// start: an account created beside a running server must not get steps run without isolation.
pub struct OneAccountOnly<E> {
    pub inner: E,
    pub store: Arc<dyn crate::Stores>,
}

impl<E: engine::StepExecutor> engine::StepExecutor for OneAccountOnly<E> {
    fn network_of(
        &self,
        query: engine::NetworkQuery<'_>,
    ) -> Result<spec::Network, engine::StepRefusal> {
        self.inner.network_of(query)
    }

    fn execute(&self, request: engine::ExecutionRequest<'_>) -> engine::ExecutionReport {
        let allowed = self
            .store
            .accounts()
            .map_err(|error| {
                format!(
                    "the accounts could not be counted: {:#}",
                    anyhow::Error::new(error)
                )
            })
            .and_then(|accounts| {
                sandbox::unisolated::unisolated_allowed(accounts.len())
                    .map_err(|error| error.to_string())
            });
        match allowed {
            Ok(()) => self.inner.execute(request),
            Err(reason) => engine::ExecutionReport::outcome_only(
                engine::ExecutionOutcome::Refused {
                    reason: format!("step {} was not run: {reason}", request.step.id()),
                },
                "unisolated",
            ),
        }
    }

    fn availability(
        &self,
        query: engine::NetworkQuery<'_>,
        python: spec::PythonVersion,
    ) -> Result<(), engine::StepRefusal> {
        self.inner.availability(query, python)
    }

    fn models_of(
        &self,
        query: engine::NetworkQuery<'_>,
    ) -> Result<Vec<engine::journal::PinnedModel>, engine::StepRefusal> {
        self.inner.models_of(query)
    }
}

/// The executor of an engine that only reads runs: it runs no step.
pub struct RefusingExecutor;

impl engine::StepExecutor for RefusingExecutor {
    fn execute(&self, request: engine::ExecutionRequest<'_>) -> engine::ExecutionReport {
        engine::ExecutionReport::outcome_only(
            engine::ExecutionOutcome::Refused {
                reason: format!(
                    "step {} was not run: this command only reads runs",
                    request.step.id()
                ),
            },
            "none",
        )
    }
}

/// The backend of a process that runs no step (a `serve --workers 0`, a command following a
/// run beside a live worker): it builds no sandbox and sweeps nothing, so it never touches
/// the sandboxes of the process that runs the steps. A run's start asks it nothing it could
/// answer: the worker that runs each attempt checks what the attempt needs, and refuses it
/// with the reason, as every backend does.
pub struct Elsewhere;

fn runs_no_steps() -> sandbox::Error {
    sandbox::Error::LayerFailed {
        layer: "elsewhere".to_owned(),
        detail: "this process runs no steps: the data directory's worker (`stepward worker`, \
                 or a `stepward serve` with workers) runs them"
            .to_owned(),
    }
}

impl Isolation for Elsewhere {
    fn name(&self) -> &'static str {
        "elsewhere"
    }

    fn run(&self, _: sandbox::Invocation) -> Result<sandbox::Observation, sandbox::Error> {
        Err(runs_no_steps())
    }

    fn availability(
        &self,
        _: sandbox::PythonPin,
        _: sandbox::NetworkMode,
    ) -> Result<(), sandbox::Unavailable> {
        Ok(())
    }

    fn open_session(
        &self,
        _: sandbox::session::SessionSpec,
    ) -> Result<Box<dyn sandbox::session::Session + '_>, sandbox::Error> {
        Err(runs_no_steps())
    }

    fn helper_cell(&self) -> Result<sandbox::HelperCell, sandbox::Error> {
        Err(runs_no_steps())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use redact::ScrubSets;
    use storage::{Account, AccountId, AccountStore as _, Timestamp};
    use storage_sqlite::SqliteStore;

    use super::OneAccountOnly;

    /// Counts the attempts that reached it.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl engine::StepExecutor for Counting {
        fn execute(&self, _request: engine::ExecutionRequest<'_>) -> engine::ExecutionReport {
            self.0.fetch_add(1, Ordering::SeqCst);
            engine::ExecutionReport::outcome_only(
                engine::ExecutionOutcome::Succeeded {
                    output: engine::StepOutput::from_value(&serde_json::json!(1)),
                },
                "unisolated",
            )
        }
    }

    #[test]
    fn g13_unisolated_refuses_every_attempt_once_a_second_account_exists() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("stepward.db")).unwrap());
        let account = |id: &str| Account {
            id: AccountId::parse(id).unwrap(),
            name: id.to_owned(),
            created_at: Timestamp(0),
        };
        store.ensure_account(&account("local")).unwrap();
        let executor = OneAccountOnly {
            inner: Counting::default(),
            store: store.clone(),
        };
        let workflow = spec::parse_workflow(
            "w.yaml",
            "name: w\npython: \"3.11\"\nsteps:\n  - id: s\n    explain: Does it.\n    code: |\n      \
             def main():\n          return 1\n",
        )
        .unwrap();
        let redactor = ScrubSets::new(Arc::new(redact::testing::MemorySource::new()))
            .for_account(&AccountId::parse("local").unwrap())
            .unwrap();
        struct NoJournal;
        impl engine::StepJournal for NoJournal {
            fn record(&self, _event: engine::AgentEvent) -> Result<(), engine::NotJournalled> {
                Err(engine::NotJournalled::Refused { kind: "agent" })
            }
        }
        let unpinned = engine::PinnedDefinitions::unpinned();
        let files = workspace::StepFiles::empty();
        let local = AccountId::parse("local").unwrap();
        let run = storage::RunId::parse("run_1").unwrap();
        let request = || engine::ExecutionRequest {
            account: &local,
            run_id: &run,
            step: &workflow.steps()[0],
            python: workflow.python(),
            inputs: serde_json::json!({}),
            env: Vec::new(),
            attempt: 1,
            files: &files,
            redactor: &redactor,
            journal: &NoJournal,
            definitions: &unpinned,
            live: None,
        };
        use engine::StepExecutor as _;
        let alone = executor.execute(request());
        assert!(matches!(
            alone.outcome,
            engine::ExecutionOutcome::Succeeded { .. }
        ));
        // An account created beside the running process (by `stepward accounts create`
        // without `--backend unisolated`): from the next attempt on, nothing runs.
        store.ensure_account(&account("acme")).unwrap();
        let refused = executor.execute(request());
        assert!(
            matches!(&refused.outcome, engine::ExecutionOutcome::Refused { reason } if reason.contains("one account")),
            "{:?}",
            refused.outcome
        );
        assert_eq!(executor.inner.0.load(Ordering::SeqCst), 1);
    }
}
