//! The sandbox's comparison benchmark (issue 3, DESIGN section 6): every figure is printed
//! beside a baseline measured in the same run, as a ratio, so a slow or busy machine moves both
//! sides together.
//!
//! 1. Cold step (create, trivial `main`, tear down): the `local` backend against bare
//!    `python3 -I -S -c pass`, and against bubblewrap and crun running the same `main`; and
//!    the floor of any sandbox that makes its namespaces per step: one clone into fresh
//!    namespaces and the exec of `python -c pass`, beside the same clone without them.
//! 2. Warm request → result: a backend with a warm pool, each request timed with the pool full.
//! 3. Sustained sandboxed steps per second with two concurrent workers, always cold and with
//!    the warm pool.
//! 4. A `public_egress` cold step with its egress network built and torn down each time. The
//!    platform side lives in a network namespace this benchmark makes (never the host's), and
//!    the step sends no packet at all.
//! 5. The gvisor backend, cold and warm, beside `runsc do` (see `compare/gvisor.rs`).
//!
//! Section 0 first: the seccomp layout by a syscall microbenchmark beside a filter-off control
//! (see `compare/seccomp.rs`).
//!
//! `cargo bench -p sandbox --bench compare` runs it; `scripts/bench` installs bubblewrap and
//! crun first and runs the other crates' benchmarks after. A missed target is printed as
//! MISSED; only an error (a tool missing, a step that did not succeed) exits non-zero.
//!
//! Tuning through the environment: `STEPWARD_BENCH_RUNS` (cold runs per method, 200),
//! `STEPWARD_BENCH_WARMUP` (10), `STEPWARD_BENCH_SECONDS` (throughput window, 10),
//! `STEPWARD_BENCH_EGRESS_RUNS` (50), `STEPWARD_BENCH_POOL` (warm sandboxes per class, 2),
//! `STEPWARD_BENCH_ONLY` (some sections only, e.g. `egress,gvisor`),
//! `STEPWARD_BENCH_TAG` (digits naming this run's temp dirs, cgroups, containers and
//! namespaces, so `scripts/bench` can remove them after a kill).

// The crun driver re-executes this binary inside a private mount namespace; no unsafe code is
// needed for that, the `unshare` and `mount` commands do it.
#![forbid(unsafe_code)]

#[path = "compare/crun.rs"]
mod crun;
#[path = "compare/egress.rs"]
mod egress;
#[path = "compare/gvisor.rs"]
mod gvisor;
#[path = "compare/seccomp.rs"]
mod seccomp;
#[path = "compare/throughput.rs"]
mod throughput;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sandbox::cgroup::CgroupLayout;
use sandbox::jail::{FloorClone, namespace_floor};
use sandbox::local::{LocalBackend, LocalOptions};
use sandbox::net::EgressOptions;
use sandbox::{Invocation, Isolation, Limits, NetworkMode, Outcome, PythonPin};

use crate::crun::{CrunBundle, crun_driver};
use crate::egress::egress_section;
use crate::throughput::throughput_section;

const PYTHON: &str = "/usr/bin/python3";
const BWRAP: &str = "bwrap";
const CRUN: &str = "crun";
const UNSHARE: &str = "/usr/bin/unshare";
const MOUNT: &str = "/usr/bin/mount";
const IP: &str = "/usr/sbin/ip";
const NFT: &str = "/usr/sbin/nft";
const NSENTER: &str = "/usr/bin/nsenter";
const SYSCTL: &str = "/usr/sbin/sysctl";

/// The trivial step every method runs: a `main` returning a small dict.
const STEP_CODE: &str = "def main():\n    return {'ok': True, 'n': 1}\n";
/// The same step for the baselines, which have no harness: call `main` and print its result.
/// It prints `repr`, not JSON: importing `json` (and with it `re`, `enum`, ...) costs about as
/// much as the interpreter's own start on this class of machine, and the harness avoids it
/// too, so a baseline that imported it would flatter the sandbox.
const BASELINE_SCRIPT: &str = "def main():\n    return {'ok': True, 'n': 1}\nprint(repr(main()))\n";
/// What the baselines must print.
const BASELINE_OUTPUT: &str = "{'ok': True, 'n': 1}";
/// The argument the benchmark re-executes itself with to drive crun.
const CRUN_DRIVER: &str = "__crun-driver";
/// Every name this benchmark creates on the host starts with this and the run's tag.
const NAME_PREFIX: &str = "stepward-bench";

/// Why the benchmark could not measure something. A missed target is not an error.
#[derive(Debug, thiserror::Error)]
enum BenchError {
    #[error("{action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("could not start `{command}`")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}): {stderr}")]
    CommandFailed {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("`{command}` printed {printed:?}, not the step's result {BASELINE_OUTPUT}")]
    WrongOutput { command: String, printed: String },
    #[error("the sandbox failed")]
    Sandbox(#[from] sandbox::Error),
    #[error("the sandboxed step did not succeed: {outcome}; stderr: {stderr}")]
    StepFailed { outcome: String, stderr: String },
    #[error("the setting {name}={value:?} is not valid: {reason}")]
    Setting {
        name: &'static str,
        value: String,
        reason: &'static str,
    },
    #[error("{tool} is not installed; scripts/bench installs it (Debian package `{package}`)")]
    ToolMissing {
        tool: &'static str,
        package: &'static str,
    },
    #[error("the warm pool was not refilled {waited:?} after the last request")]
    PoolNotRefilled { waited: Duration },
    #[error("refusing to continue: {detail}")]
    Unsafe { detail: String },
    #[error("the egress network failed")]
    Egress(#[from] sandbox::net::Error),
}

/// What this run measures, read once from the environment.
struct Settings {
    tag: String,
    /// `STEPWARD_BENCH_ONLY`: the sections to run (comma-separated names: seccomp, cold,
    /// warm, throughput, egress, gvisor); all of them when unset.
    only: Option<Vec<String>>,
    cold_runs: usize,
    warmup: usize,
    throughput_window: Duration,
    egress_runs: usize,
    pool_size: usize,
}

impl Settings {
    fn from_environment() -> Result<Settings, BenchError> {
        let tag =
            std::env::var("STEPWARD_BENCH_TAG").unwrap_or_else(|_| std::process::id().to_string());
        if tag.is_empty() || tag.len() > 7 || !tag.chars().all(|c| c.is_ascii_digit()) {
            return Err(BenchError::Setting {
                name: "STEPWARD_BENCH_TAG",
                value: tag,
                reason: "must be 1 to 7 digits (it names namespaces, which are short)",
            });
        }
        let only = std::env::var("STEPWARD_BENCH_ONLY").ok().map(|list| {
            list.split(',')
                .map(|name| name.trim().to_owned())
                .filter(|name| !name.is_empty())
                .collect()
        });
        Ok(Settings {
            tag,
            only,
            cold_runs: number_setting("STEPWARD_BENCH_RUNS", 200)?.max(1),
            warmup: number_setting("STEPWARD_BENCH_WARMUP", 10)?,
            throughput_window: Duration::from_secs(
                number_setting("STEPWARD_BENCH_SECONDS", 10)?.max(1) as u64,
            ),
            egress_runs: number_setting("STEPWARD_BENCH_EGRESS_RUNS", 50)?.max(1),
            pool_size: number_setting("STEPWARD_BENCH_POOL", 2)?.max(1),
        })
    }

    fn wants(&self, section: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|sections| sections.iter().any(|name| name == section))
    }

    fn name(&self, what: &str) -> String {
        format!("{NAME_PREFIX}-{}-{what}", self.tag)
    }
}

fn number_setting(name: &'static str, default: usize) -> Result<usize, BenchError> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(value) => value.trim().parse().map_err(|_| BenchError::Setting {
            name,
            value,
            reason: "must be a whole number",
        }),
    }
}

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().collect();
    let result = if arguments.get(1).map(String::as_str) == Some(CRUN_DRIVER) {
        crun_driver(&arguments[2..])
    } else {
        Settings::from_environment().and_then(|settings| benchmark(&settings))
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let mut text = error.to_string();
            let mut cause = std::error::Error::source(&error);
            while let Some(next) = cause {
                text.push_str(": ");
                text.push_str(&next.to_string());
                cause = next.source();
            }
            eprintln!("benchmark error: {text}");
            ExitCode::FAILURE
        }
    }
}

fn benchmark(settings: &Settings) -> Result<(), BenchError> {
    print_machine_facts();
    let bubblewrap = require_tool(BWRAP, "bubblewrap")?;
    let crun = require_tool(CRUN, "crun")?;
    let scratch = tempfile::Builder::new()
        .prefix(&format!("{}-", settings.name("tmp")))
        .tempdir()
        .map_err(|source| BenchError::Io {
            action: "cannot create a temp dir in",
            path: std::env::temp_dir(),
            source,
        })?;
    let work = make_dir(scratch.path(), "work", 0o755)?;
    // Host ids of this run: 64 slots for each backend and one for crun's container, in a
    // range of their own (the crate's tests use 1.9e9 and up).
    let base_uid = 1_850_000_000 + (settings.tag.parse::<u32>().unwrap_or_default() % 10_000) * 256;
    let cold_backend = BenchBackend::new(
        settings,
        scratch.path(),
        "none",
        base_uid,
        Pool::AlwaysCold,
        None,
    )?;
    let pin = cold_backend.pin()?;
    let bundle = CrunBundle::write(scratch.path(), base_uid + 192)?;

    if settings.wants("seccomp") {
        seccomp::seccomp_section(settings)?;
    }

    let cold = if settings.wants("cold") {
        cold_section(
            settings,
            &cold_backend,
            pin,
            &work,
            &bubblewrap,
            &crun,
            &bundle,
        )?
    } else {
        bare_only(settings)?
    };
    let warm_backend = BenchBackend::new(
        settings,
        scratch.path(),
        "warm",
        base_uid + 128,
        Pool::Warm(settings.pool_size),
        None,
    )?;
    if settings.wants("warm") {
        warm_section(settings, &warm_backend, pin, &work, &cold)?;
    }
    let backends = Backends {
        cold: &cold_backend,
        warm: &warm_backend,
    };
    if settings.wants("throughput") {
        throughput_section(settings, &backends, pin, &work, cold.bare_pass)?;
    }
    drop(warm_backend);
    drop(cold_backend);
    if settings.wants("egress") {
        egress_section(settings, scratch.path(), base_uid + 64, &work, &cold)?;
    }
    if settings.wants("gvisor") {
        // Its own band of host ids: each gvisor slot maps 1024 of them.
        let gvisor_uid_base =
            1_880_000_000 + (settings.tag.parse::<u32>().unwrap_or_default() % 1000) * 8192;
        gvisor::gvisor_section(settings, scratch.path(), gvisor_uid_base, pin, &work)?;
    }
    println!();
    println!("load average at the end: {}", read_trimmed("/proc/loadavg"));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Machine facts and small helpers.

fn print_machine_facts() {
    println!(
        "== stepward sandbox benchmark (medians; every ratio against a baseline of this run) =="
    );
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!("cores (nproc): {cores}");
    println!("kernel: {}", read_trimmed("/proc/sys/kernel/osrelease"));
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| String::from("unknown"));
    println!("cpu: {cpu}");
    println!(
        "python: {}",
        first_line_of(
            PYTHON,
            &[
                "-I",
                "-S",
                "-c",
                "import sys; print(sys.version.split()[0])"
            ]
        )
    );
    println!("bubblewrap: {}", first_line_of(BWRAP, &["--version"]));
    println!("crun: {}", first_line_of(CRUN, &["--version"]));
    println!(
        "load average at the start: {}",
        read_trimmed("/proc/loadavg")
    );
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map_or_else(|_| String::from("unknown"), |text| text.trim().to_owned())
}

fn first_line_of(program: &str, arguments: &[&str]) -> String {
    Command::new(program)
        .args(arguments)
        .stdin(Stdio::null())
        .output()
        .ok()
        .and_then(|output| {
            String::from_utf8_lossy(&output.stdout)
                .lines()
                .next()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| String::from("not installed"))
}

/// The tool's full path, or an error naming the package: the comparison is part of the
/// benchmark's contract, so a missing competitor is an error, not a skipped line.
fn require_tool(tool: &'static str, package: &'static str) -> Result<PathBuf, BenchError> {
    for dir in ["/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"] {
        let candidate = Path::new(dir).join(tool);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(BenchError::ToolMissing { tool, package })
}

fn make_dir(parent: &Path, name: &str, mode: u32) -> Result<PathBuf, BenchError> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = parent.join(name);
    std::fs::create_dir_all(&path).map_err(|source| BenchError::Io {
        action: "cannot create",
        path: path.clone(),
        source,
    })?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).map_err(|source| {
        BenchError::Io {
            action: "cannot chmod",
            path: path.clone(),
            source,
        }
    })?;
    Ok(path)
}

fn unique_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or_default()
}

fn median(samples: &[Duration]) -> Duration {
    percentile(samples, 50)
}

fn percentile(samples: &[Duration], percent: usize) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[(sorted.len() - 1) * percent / 100]
}

fn milliseconds(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn ratio(numerator: Duration, denominator: Duration) -> f64 {
    if denominator.is_zero() {
        return f64::INFINITY;
    }
    numerator.as_secs_f64() / denominator.as_secs_f64()
}

fn verdict(met: bool) -> &'static str {
    if met { "ok" } else { "MISSED" }
}

fn describe(samples: &[Duration]) -> String {
    format!(
        "{:7.2} ms  (p10 {:.2}, p90 {:.2}, n={})",
        milliseconds(median(samples)),
        milliseconds(percentile(samples, 10)),
        milliseconds(percentile(samples, 90)),
        samples.len()
    )
}

fn progress(text: &str) {
    eprintln!("  .. {text}");
}

// ---------------------------------------------------------------------------------------------
// The local backend under test, removed (pool, cgroups, egress namespaces) on drop.

/// The always-cold backend and the one with a warm pool, side by side.
struct Backends<'a> {
    cold: &'a BenchBackend,
    warm: &'a BenchBackend,
}

/// How many warm sandboxes a backend keeps per class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pool {
    AlwaysCold,
    Warm(usize),
}

/// The backend and what removes its leftovers. Fields drop in order: the backend first (its
/// drop destroys the idle warm sandboxes), then the sweep of its cgroups and namespaces.
struct BenchBackend {
    backend: LocalBackend,
    _leftovers: Leftovers,
}

struct Leftovers {
    cgroups: CgroupLayout,
    egress: Option<EgressOptions>,
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        let _ = self.cgroups.sweep();
        self.cgroups.remove_parents();
        if let Some(egress) = &self.egress {
            let _ = sandbox::net::sweep(egress);
        }
    }
}

impl BenchBackend {
    fn new(
        settings: &Settings,
        scratch: &Path,
        label: &str,
        uid_base: u32,
        pool: Pool,
        egress: Option<EgressOptions>,
    ) -> Result<BenchBackend, BenchError> {
        let state = make_dir(scratch, &format!("state-{label}"), 0o711)?;
        let helper = PathBuf::from(env!("CARGO_BIN_EXE_sandbox-jail"));
        let mut options = LocalOptions::new(state, (helper, Vec::new()));
        options.cgroups.parent = settings.name(label);
        options.uid_base = uid_base;
        options.slots = 64;
        options.pool_size = match pool {
            Pool::AlwaysCold => 0,
            Pool::Warm(size) => size,
        };
        options.egress = egress.clone();
        // Detected before the backend exists, so the sweep runs even if building it fails.
        let leftovers = Leftovers {
            cgroups: CgroupLayout::detect(&options.cgroups)?,
            egress,
        };
        Ok(BenchBackend {
            backend: LocalBackend::new(options)?,
            _leftovers: leftovers,
        })
    }

    fn pin(&self) -> Result<PythonPin, BenchError> {
        self.backend
            .runtimes()
            .list()
            .iter()
            .find(|runtime| runtime.pin.major == 3)
            .map(|runtime| runtime.pin)
            .ok_or(BenchError::ToolMissing {
                tool: "python3",
                package: "python3",
            })
    }

    /// One trivial step; any outcome but the expected result is an error.
    fn step(
        &self,
        pin: PythonPin,
        work: &Path,
        network: NetworkMode,
    ) -> Result<Duration, BenchError> {
        let invocation = Invocation {
            live: None,
            python: pin,
            code: STEP_CODE.to_owned(),
            inputs_json: String::from("{}"),
            env: Vec::new(),
            network,
            limits: Limits::default(),
            files: workspace::StepFiles::scratch_folder(work.to_path_buf()),
            screen: Arc::new(NoSecrets),
        };
        let started = Instant::now();
        let observation = self.backend.run(invocation)?;
        let elapsed = started.elapsed();
        match &observation.outcome {
            Outcome::Succeeded { result_json } if is_expected_result(result_json) => Ok(elapsed),
            other => Err(BenchError::StepFailed {
                outcome: format!("{other:?}"),
                stderr: String::from_utf8_lossy(&observation.stderr).into_owned(),
            }),
        }
    }

    /// Waits until the pool holds `count` warm sandboxes (refills run off the request's path).
    fn wait_for_warm_sandboxes(&self, count: usize, limit: Duration) -> Result<(), BenchError> {
        let started = Instant::now();
        while self.backend.idle_sandboxes() < count {
            if started.elapsed() > limit {
                return Err(BenchError::PoolNotRefilled { waited: limit });
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        Ok(())
    }
}

/// The benchmark's step holds no credential.
struct NoSecrets;

impl sandbox::copyback::SecretScreen for NoSecrets {
    fn holds_secret(&self, _content: &[u8]) -> bool {
        false
    }
}

fn is_expected_result(printed: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(printed.trim())
        .is_ok_and(|value| value == serde_json::json!({"ok": true, "n": 1}))
}

// ---------------------------------------------------------------------------------------------
// Baselines run as plain commands.

/// Runs a command to completion and returns how long it took; with `OutputCheck::StepResult`,
/// its stdout must be the step's result (so a baseline that silently did nothing cannot look
/// fast).
fn timed_command(command: &mut Command, check: OutputCheck) -> Result<Duration, BenchError> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let output = command.output().map_err(|source| BenchError::Spawn {
        command: format!("{command:?}"),
        source,
    })?;
    let elapsed = started.elapsed();
    if !output.status.success() {
        return Err(BenchError::CommandFailed {
            command: format!("{command:?}"),
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    if check == OutputCheck::StepResult {
        let printed = String::from_utf8_lossy(&output.stdout);
        if printed.trim() != BASELINE_OUTPUT {
            return Err(BenchError::WrongOutput {
                command: format!("{command:?}"),
                printed: printed.into_owned(),
            });
        }
    }
    Ok(elapsed)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OutputCheck {
    Nothing,
    StepResult,
}

fn bare_pass() -> Command {
    let mut command = Command::new(PYTHON);
    command.args(["-I", "-S", "-c", "pass"]);
    command
}

/// One floor sample (see `sandbox::jail::namespace_floor`).
fn floor(kind: FloorClone) -> Result<Duration, BenchError> {
    namespace_floor(Path::new(PYTHON), kind).map_err(|error| BenchError::StepFailed {
        outcome: format!("the namespace floor failed: {error}"),
        stderr: String::new(),
    })
}

fn bare_main() -> Command {
    let mut command = Command::new(PYTHON);
    command.args(["-I", "-S", "-c", BASELINE_SCRIPT]);
    command
}

fn bubblewrap_main(bubblewrap: &Path) -> Command {
    let mut command = Command::new(bubblewrap);
    command.args([
        "--unshare-all",
        "--die-with-parent",
        "--ro-bind",
        "/usr",
        "/usr",
        "--ro-bind",
        "/lib",
        "/lib",
        "--ro-bind",
        "/lib64",
        "/lib64",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        PYTHON,
        "-I",
        "-S",
        "-c",
        BASELINE_SCRIPT,
    ]);
    command
}

// ---------------------------------------------------------------------------------------------
// 1. Cold.

/// The medians later sections compare against.
struct ColdFigures {
    bare_pass: Duration,
    stepward: Duration,
}

fn cold_section(
    settings: &Settings,
    backend: &BenchBackend,
    pin: PythonPin,
    work: &Path,
    bubblewrap: &Path,
    crun: &Path,
    bundle: &CrunBundle,
) -> Result<ColdFigures, BenchError> {
    println!();
    println!(
        "== 1. Cold step: create, trivial main, tear down (median of {} each, after {} warm-up) ==",
        settings.cold_runs, settings.warmup
    );
    println!(
        "  <main>: define main() returning a small dict, call it, print its result; the sandbox"
    );
    println!("  runs the same main through its harness and returns the result as JSON");
    progress("warming up every method");
    for _ in 0..settings.warmup {
        timed_command(&mut bare_pass(), OutputCheck::Nothing)?;
        timed_command(&mut bare_main(), OutputCheck::StepResult)?;
        backend.step(pin, work, NetworkMode::None)?;
        timed_command(&mut bubblewrap_main(bubblewrap), OutputCheck::StepResult)?;
    }
    if settings.warmup > 0 {
        bundle.run(settings, crun, settings.warmup)?;
    }

    // Methods take turns in blocks, so a burst of load from elsewhere hits all of them alike.
    let block = 20usize;
    let mut pass_samples = Vec::new();
    let mut main_samples = Vec::new();
    let mut stepward_samples = Vec::new();
    let mut bubblewrap_samples = Vec::new();
    let mut crun_samples = Vec::new();
    let mut plain_clone_samples = Vec::new();
    let mut floor_samples = Vec::new();
    while pass_samples.len() < settings.cold_runs {
        let count = block.min(settings.cold_runs - pass_samples.len());
        for _ in 0..count {
            pass_samples.push(timed_command(&mut bare_pass(), OutputCheck::Nothing)?);
        }
        for _ in 0..count {
            main_samples.push(timed_command(&mut bare_main(), OutputCheck::StepResult)?);
        }
        for _ in 0..count {
            stepward_samples.push(backend.step(pin, work, NetworkMode::None)?);
        }
        for _ in 0..count {
            bubblewrap_samples.push(timed_command(
                &mut bubblewrap_main(bubblewrap),
                OutputCheck::StepResult,
            )?);
        }
        crun_samples.extend(bundle.run(settings, crun, count)?);
        for _ in 0..count {
            plain_clone_samples.push(floor(FloorClone::Plain)?);
        }
        for _ in 0..count {
            floor_samples.push(floor(FloorClone::FreshNamespaces)?);
        }
        progress(&format!(
            "cold: {}/{} runs of each method (stepward median so far {:.2} ms)",
            pass_samples.len(),
            settings.cold_runs,
            milliseconds(median(&stepward_samples))
        ));
    }

    let bare = median(&pass_samples);
    let stepward = median(&stepward_samples);
    let bubblewrap_median = median(&bubblewrap_samples);
    let crun_median = median(&crun_samples);
    println!(
        "  bare python3 -I -S -c pass       {}  baseline",
        describe(&pass_samples)
    );
    println!(
        "  bare python3 -I -S -c <main>     {}  {:.2}x bare (no isolation, for reference)",
        describe(&main_samples),
        ratio(median(&main_samples), bare)
    );
    println!(
        "  bubblewrap + python <main>       {}  {:.2}x bare",
        describe(&bubblewrap_samples),
        ratio(bubblewrap_median, bare)
    );
    println!(
        "  crun + python <main>             {}  {:.2}x bare",
        describe(&crun_samples),
        ratio(crun_median, bare)
    );
    println!(
        "  stepward local (network none)    {}  {:.2}x bare",
        describe(&stepward_samples),
        ratio(stepward, bare)
    );
    // What the kernel alone costs here for a per-step set of namespaces: the part of the
    // ratio above that no sandbox making them per step can remove.
    let plain_clone = median(&plain_clone_samples);
    let floor_median = median(&floor_samples);
    println!(
        "  clone3 + exec python -c pass     {}  {:.2}x bare (the floor's control: same code, no namespace)",
        describe(&plain_clone_samples),
        ratio(plain_clone, bare)
    );
    println!(
        "  clone3 into fresh namespaces     {}  {:.2}x bare, {:.2}x its control (the floor: user, mount, pid,",
        describe(&floor_samples),
        ratio(floor_median, bare),
        ratio(floor_median, plain_clone)
    );
    println!(
        "    + exec python -c pass            ipc, uts, net, cgroup namespaces; no map, cgroup, mount or filter)"
    );
    let versus_bare = ratio(stepward, bare);
    let versus_bubblewrap = ratio(stepward, bubblewrap_median);
    let versus_crun = ratio(stepward, crun_median);
    println!(
        "  target: stepward <= 1.40x bare python        {versus_bare:.2}x  {}",
        verdict(versus_bare <= 1.4)
    );
    println!(
        "  target: stepward faster than bubblewrap      {versus_bubblewrap:.2}x bubblewrap  {}",
        verdict(versus_bubblewrap < 1.0)
    );
    println!(
        "  target: stepward faster than crun            {versus_crun:.2}x crun  {}",
        verdict(versus_crun < 1.0)
    );
    Ok(ColdFigures {
        bare_pass: bare,
        stepward,
    })
}

/// The bare baseline alone, for a run that skips section 1 (`STEPWARD_BENCH_ONLY`); the
/// figures of section 1 that it did not measure are zero.
fn bare_only(settings: &Settings) -> Result<ColdFigures, BenchError> {
    let mut samples = Vec::new();
    for _ in 0..settings.cold_runs.min(40) {
        samples.push(timed_command(&mut bare_pass(), OutputCheck::Nothing)?);
    }
    Ok(ColdFigures {
        bare_pass: median(&samples),
        stepward: Duration::ZERO,
    })
}

// ---------------------------------------------------------------------------------------------
// 2. Warm.

fn warm_section(
    settings: &Settings,
    backend: &BenchBackend,
    pin: PythonPin,
    work: &Path,
    cold: &ColdFigures,
) -> Result<(), BenchError> {
    println!();
    println!(
        "== 2. Warm request -> result, pool of {} (median of {}; target <= 2 ms and below bare python's start) ==",
        settings.pool_size, settings.cold_runs
    );
    // The first request of a class runs cold and starts the refill; every timed request finds
    // the pool full, so no build of this benchmark is on its path (the refill it triggers runs
    // beside it, as it would in production).
    progress("warm: filling the pool");
    backend.step(pin, work, NetworkMode::None)?;
    let mut samples = Vec::with_capacity(settings.cold_runs);
    while samples.len() < settings.cold_runs {
        backend.wait_for_warm_sandboxes(settings.pool_size, Duration::from_secs(30))?;
        samples.push(backend.step(pin, work, NetworkMode::None)?);
        if samples.len() % 50 == 0 {
            progress(&format!("warm: {}/{}", samples.len(), settings.cold_runs));
        }
    }
    let warm = median(&samples);
    let versus_bare = ratio(warm, cold.bare_pass);
    println!(
        "  bare python3 -I -S -c pass       {:7.2} ms  baseline (section 1)",
        milliseconds(cold.bare_pass)
    );
    println!(
        "  stepward local cold              {:7.2} ms  {:.2}x bare (section 1)",
        milliseconds(cold.stepward),
        ratio(cold.stepward, cold.bare_pass)
    );
    println!(
        "  stepward local warm              {}  {versus_bare:.2}x bare, {:.2}x cold",
        describe(&samples),
        ratio(warm, cold.stepward)
    );
    println!(
        "  target: warm <= 2 ms median                  {:.2} ms  {}",
        milliseconds(warm),
        verdict(warm <= Duration::from_millis(2))
    );
    println!(
        "  target: warm below bare python's start       {versus_bare:.2}x bare  {}",
        verdict(versus_bare < 1.0)
    );
    Ok(())
}
