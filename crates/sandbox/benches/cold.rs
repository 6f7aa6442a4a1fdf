//! Start-up benchmark of the local backend, with its baseline measured in the same run: bare
//! `python3 -I -S -c pass` versus a complete cold sandboxed step (create, run a trivial
//! `main`, tear down) and a warm one (claim a pooled sandbox, run, tear down; the refill is
//! not timed), printed as medians and ratios. Run as root:
//! `cargo bench -p sandbox --bench cold` (`-- N` sets the number of rounds, default 30).
//! bubblewrap is measured too when `bwrap` is installed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox::local::LocalBackend;
use sandbox::{Invocation, Isolation, Limits, NetworkMode, Outcome};

struct NoSecrets;

impl sandbox::copyback::SecretScreen for NoSecrets {
    fn holds_secret(&self, _content: &[u8]) -> bool {
        false
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn measure(rounds: usize, label: &str, mut once: impl FnMut()) -> Duration {
    // One warm-up round fills the page cache.
    once();
    let mut samples = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let started = Instant::now();
        once();
        samples.push(started.elapsed());
        eprint!("\r{label}: {}/{rounds}", round + 1);
    }
    eprintln!();
    median(samples)
}

fn bare_python() {
    let status = Command::new("/usr/bin/python3")
        .args(["-I", "-S", "-c", "pass"])
        .env_clear()
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|argument| argument.parse().ok())
        .unwrap_or(30);
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let backend =
        LocalBackend::for_tests(state.path(), Path::new(env!("CARGO_BIN_EXE_sandbox-jail")))
            .unwrap();
    let warm_state = tempfile::tempdir().unwrap();
    let warm_backend = LocalBackend::for_tests_with(
        warm_state.path(),
        Path::new(env!("CARGO_BIN_EXE_sandbox-jail")),
        |options| {
            options.pool_size = 1;
        },
    )
    .unwrap();
    let pin = backend
        .runtimes()
        .list()
        .first()
        .expect("a Python 3 interpreter")
        .pin;
    let step = |backend: &LocalBackend| {
        let observation = backend
            .run(Invocation {
                live: None,
                python: pin,
                code: String::from("def main():\n    return 1\n"),
                inputs_json: String::from("{}"),
                env: Vec::new(),
                network: NetworkMode::None,
                limits: Limits::default(),
                files: workspace::StepFiles::scratch_folder(work.path().to_path_buf()),
                screen: Arc::new(NoSecrets),
            })
            .unwrap();
        assert!(
            matches!(observation.outcome, Outcome::Succeeded { .. }),
            "{:?}",
            observation.outcome
        );
    };

    let bare = measure(rounds, "bare python3 -I -S -c pass", bare_python);
    let cold = measure(rounds, "cold sandboxed step", || step(&backend));
    // Fill the pool once, then time each claim with a full pool (the refill is off the path).
    step(&warm_backend);
    let mut warm_samples = Vec::with_capacity(rounds);
    for round in 0..rounds {
        while warm_backend.idle_sandboxes() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let started = Instant::now();
        step(&warm_backend);
        warm_samples.push(started.elapsed());
        eprint!("\rwarm sandboxed step: {}/{rounds}", round + 1);
    }
    eprintln!();
    let warm = median(warm_samples);
    let ratio = |value: Duration| value.as_secs_f64() / bare.as_secs_f64();
    println!("rounds: {rounds}");
    println!(
        "bare python3 -I -S -c pass   median {:>8.2} ms   1.00x",
        bare.as_secs_f64() * 1e3
    );
    println!(
        "cold sandboxed trivial step   median {:>8.2} ms   {:.2}x (target <= 1.5x)",
        cold.as_secs_f64() * 1e3,
        ratio(cold)
    );
    let bwrap_installed = Command::new("bwrap")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if bwrap_installed {
        let bubblewrap = measure(rounds, "bubblewrap + python", || {
            let status = Command::new("bwrap")
                .args([
                    "--unshare-all",
                    "--die-with-parent",
                    "--ro-bind",
                    "/usr",
                    "/usr",
                    "--symlink",
                    "usr/lib",
                    "/lib",
                    "--symlink",
                    "usr/lib64",
                    "/lib64",
                    "--proc",
                    "/proc",
                    "--dev",
                    "/dev",
                    "--tmpfs",
                    "/tmp",
                    "/usr/bin/python3",
                    "-I",
                    "-S",
                    "-c",
                    "pass",
                ])
                .env_clear()
                .stdin(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
        });
        println!(
            "bubblewrap + python           median {:>8.2} ms   {:.2}x",
            bubblewrap.as_secs_f64() * 1e3,
            ratio(bubblewrap)
        );
    } else {
        println!(
            "bubblewrap + python           not measured: bwrap is not installed (apt-get install bubblewrap)"
        );
    }
    println!(
        "warm sandboxed trivial step   median {:>8.2} ms   {:.2}x (claim to observation, teardown included; target <= 2 ms)",
        warm.as_secs_f64() * 1e3,
        ratio(warm)
    );
}
