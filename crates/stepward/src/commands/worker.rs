//! `stepward worker`: the data directory's worker, for a `stepward serve --workers 0` (issue
//! 38), and the in-process worker `serve` starts. It holds the engine lock (its sandboxes are
//! the data directory's), recovers what a crash left, and claims queued step attempts in
//! slots until SIGINT or SIGTERM; then it finishes the steps it runs and gives back the ones
//! it has not started.

use std::sync::Arc;

use anyhow::Context;
use engine::Engine;
use storage::queue::Slots;

use crate::Outcome;
use crate::app::App;
use crate::cli::WorkerArgs;
use crate::config::Config;

/// The most steps one worker runs at once.
const MAX_WORKERS: u32 = worker::MAX_SLOTS;

/// The slots `--workers` asks for: that many sandboxed steps (the machine's cores by
/// default), and the default number of agent turns waiting on a model.
pub(crate) fn slots(workers: Option<u32>) -> anyhow::Result<Slots> {
    let mut slots = worker::Options::for_this_machine().slots;
    if let Some(workers) = workers {
        if workers > MAX_WORKERS {
            anyhow::bail!(
                "--workers {workers} is more than {MAX_WORKERS} steps at once; give at most \
                 {MAX_WORKERS}"
            );
        }
        slots.sandbox = workers;
        if workers == 0 {
            slots.model = 0;
        }
    }
    Ok(slots)
}

/// Starts a worker over `engine`'s runs with `slots`.
pub(crate) fn start(
    app: &App,
    engine: Arc<Engine>,
    slots: Slots,
) -> anyhow::Result<worker::Handle> {
    let holder = worker::holder::this_process()
        .context("cannot read this process's identity, which its leases name")?;
    let options = worker::Options {
        slots,
        ..worker::Options::for_this_machine()
    };
    worker::run(
        app.store.clone(),
        Arc::new(worker::engine_jobs::EngineJobs { engine }),
        holder,
        options,
        worker::Shutdown::new(),
    )
    .context("cannot start the worker")
}

pub fn run(args: &WorkerArgs, config: Config) -> anyhow::Result<Outcome> {
    let slots = slots(args.workers)?;
    if slots.sandbox == 0 {
        anyhow::bail!("--workers 0 runs no step; give at least 1");
    }
    let app = App::open_installed(config)?;
    let (engine, lock) = app.serving_engine(true).context(
        "cannot run the worker: another process runs this data directory's steps (a `stepward \
         serve` with workers, or another `stepward worker`)",
    )?;
    // Named, so that a command beside it follows its runs rather than waiting for it.
    if let Some(Err(error)) = lock.as_ref().map(|lock| lock.name_worker()) {
        errln!("warning: {error:#}");
    }
    let handle = start(&app, Arc::new(engine), slots)?;
    outln!(
        "stepward worker runs the steps of {} ({} at once)",
        app.config.data_dir.display(),
        slots.sandbox
    );
    // The runtime lives until the worker stopped: a second signal while it finishes the steps
    // it runs ends the process at once.
    let signals = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the signal listener")?;
    signals.block_on(async {
        crate::commands::serve::shutdown_signal(
            "stepward worker stopping: finishing the steps it runs",
        )?
        .await;
        anyhow::Ok(())
    })?;
    let report = handle.stop();
    errln!("stepward worker stopped after {} job(s)", report.jobs);
    Ok(Outcome::Done)
}
