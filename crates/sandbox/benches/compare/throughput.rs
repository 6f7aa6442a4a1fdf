//! Section 3: sustained sandboxed steps per second with two concurrent workers, beside bare
//! Python's rate measured the same way in the same run.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sandbox::{NetworkMode, PythonPin};

use crate::{
    Backends, BenchError, OutputCheck, Settings, bare_pass, median, milliseconds, progress,
    timed_command, verdict,
};

pub(crate) fn throughput_section(
    settings: &Settings,
    backends: &Backends<'_>,
    pin: PythonPin,
    work: &Path,
    bare_cold: Duration,
) -> Result<(), BenchError> {
    const WORKERS: usize = 2;
    println!();
    println!(
        "== 3. Sustained throughput: {WORKERS} concurrent workers, {} s each (target >= 60 sandboxed steps/s) ==",
        settings.throughput_window.as_secs()
    );
    progress("throughput: bare python3 -I -S -c pass");
    let bare = sustained(WORKERS, settings.throughput_window, || {
        timed_command(&mut bare_pass(), OutputCheck::Nothing)
    })?;
    progress("throughput: stepward, always cold");
    let cold = sustained(WORKERS, settings.throughput_window, || {
        backends.cold.step(pin, work, NetworkMode::None)
    })?;
    progress("throughput: stepward, warm pool");
    let warm = sustained(WORKERS, settings.throughput_window, || {
        backends.warm.step(pin, work, NetworkMode::None)
    })?;
    println!(
        "  bare python3 -I -S -c pass       {:7.1} /s  (median {:.2} ms under load; {:.2} ms alone)  baseline",
        bare.rate,
        milliseconds(median(&bare.samples)),
        milliseconds(bare_cold)
    );
    for (label, figures) in [
        ("stepward local, always cold    ", &cold),
        ("stepward local, warm pool      ", &warm),
    ] {
        println!(
            "  {label} {:7.1} /s  (median {:.2} ms per step)  {:.2}x bare's rate",
            figures.rate,
            milliseconds(median(&figures.samples)),
            figures.rate / bare.rate.max(f64::MIN_POSITIVE)
        );
    }
    println!(
        "  target: >= 60 sandboxed steps/s (pool of {})   {:.1}/s  {}",
        settings.pool_size,
        warm.rate,
        verdict(warm.rate >= 60.0)
    );
    println!(
        "  target: >= 60 sandboxed steps/s (always cold) {:.1}/s  {}",
        cold.rate,
        verdict(cold.rate >= 60.0)
    );
    Ok(())
}

struct Sustained {
    rate: f64,
    samples: Vec<Duration>,
}

/// Runs `one` from `workers` threads until the window closes; the rate counts every completed
/// run over the time until the last worker finished.
fn sustained(
    workers: usize,
    window: Duration,
    one: impl Fn() -> Result<Duration, BenchError> + Sync,
) -> Result<Sustained, BenchError> {
    let completed = AtomicUsize::new(0);
    let started = Instant::now();
    let deadline = started + window;
    let results: Vec<Result<Vec<Duration>, BenchError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|worker| {
                let one = &one;
                let completed = &completed;
                scope.spawn(move || {
                    let mut samples = Vec::new();
                    let mut next_report = started + Duration::from_secs(2);
                    while Instant::now() < deadline {
                        samples.push(one()?);
                        completed.fetch_add(1, Ordering::Relaxed);
                        if worker == 0 && Instant::now() >= next_report {
                            next_report += Duration::from_secs(2);
                            progress(&format!(
                                "{:.0} s: {} completed",
                                started.elapsed().as_secs_f64(),
                                completed.load(Ordering::Relaxed)
                            ));
                        }
                    }
                    Ok(samples)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(BenchError::Unsafe {
                        detail: String::from("a throughput worker panicked"),
                    })
                })
            })
            .collect()
    });
    let elapsed = started.elapsed();
    let mut samples = Vec::new();
    for result in results {
        samples.extend(result?);
    }
    Ok(Sustained {
        rate: samples.len() as f64 / elapsed.as_secs_f64(),
        samples,
    })
}
