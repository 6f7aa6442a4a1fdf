//! Section 5, the gvisor backend (issue 13, part 5): a cold step and a warm request -> result,
//! beside `runsc do` running bare python in the same run, on the platform the backend chose
//! (systrap where runsc offers it, else ptrace; printed). Targets: warm <= 100 ms, cold <= 300
//! ms.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox::cgroup::CgroupLayout;
use sandbox::gvisor::{GvisorBackend, GvisorOptions};
use sandbox::{Invocation, Isolation, Limits, NetworkMode, Outcome, PythonPin};

use crate::{
    BenchError, NoSecrets, OutputCheck, STEP_CODE, Settings, describe, is_expected_result,
    make_dir, median, milliseconds, progress, ratio, timed_command, verdict,
};

/// Fewer runs than the local sections: a gVisor sandbox costs a hundred times more.
const RUNS: usize = 20;

struct Gvisor {
    backend: GvisorBackend,
    cgroups: CgroupLayout,
}

impl Drop for Gvisor {
    fn drop(&mut self) {
        let _ = self.cgroups.sweep();
        self.cgroups.remove_parents();
    }
}

fn backend(
    settings: &Settings,
    scratch: &Path,
    label: &str,
    uid_base: u32,
    pool_size: usize,
    egress: Option<sandbox::net::EgressOptions>,
) -> Result<Gvisor, BenchError> {
    let state = make_dir(scratch, &format!("state-gvisor-{label}"), 0o711)?;
    let mut options = GvisorOptions::new(state);
    options.cgroups.parent = settings.name(&format!("gvisor-{label}"));
    options.uid_base = uid_base;
    options.slots = 4;
    options.pool_size = pool_size;
    options.egress = egress;
    let cgroups = CgroupLayout::detect(&options.cgroups)?;
    let backend = GvisorBackend::new(options).map_err(|error| BenchError::StepFailed {
        outcome: format!("the gvisor backend cannot be built: {error}"),
        stderr: String::new(),
    })?;
    Ok(Gvisor { backend, cgroups })
}

fn step(
    backend: &GvisorBackend,
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
    let observation = backend.run(invocation)?;
    let elapsed = started.elapsed();
    match &observation.outcome {
        Outcome::Succeeded { result_json } if is_expected_result(result_json) => Ok(elapsed),
        other => Err(BenchError::StepFailed {
            outcome: format!("{other:?}"),
            stderr: String::from_utf8_lossy(&observation.stderr).into_owned(),
        }),
    }
}

/// Waits until the pool holds `count` warm sandboxes.
fn wait_for_idle(backend: &GvisorBackend, count: usize) -> Result<(), BenchError> {
    let started = Instant::now();
    while backend.idle_sandboxes() < count {
        if started.elapsed() > Duration::from_secs(60) {
            return Err(BenchError::PoolNotRefilled {
                waited: Duration::from_secs(60),
            });
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

/// The platform line of one run's notes (systrap, or ptrace and why).
fn platform_note(
    backend: &GvisorBackend,
    pin: PythonPin,
    work: &Path,
) -> Result<String, BenchError> {
    let observation = backend.run(Invocation {
        live: None,
        python: pin,
        code: STEP_CODE.to_owned(),
        inputs_json: String::from("{}"),
        env: Vec::new(),
        network: NetworkMode::None,
        limits: Limits::default(),
        files: workspace::StepFiles::scratch_folder(work.to_path_buf()),
        screen: Arc::new(NoSecrets),
    })?;
    Ok(observation
        .isolation_notes
        .into_iter()
        .find(|note| note.starts_with("gvisor platform"))
        .unwrap_or_else(|| String::from("gvisor platform: not recorded")))
}

pub(crate) fn gvisor_section(
    settings: &Settings,
    scratch: &Path,
    uid_base: u32,
    pin: PythonPin,
    work: &Path,
) -> Result<(), BenchError> {
    println!();
    println!("== 5. gvisor: cold and warm beside runsc do (median of {RUNS}) ==");
    // The gvisor backend maps 1024 ids per slot; 4 slots per backend.
    // public_egress through a platform-made namespace whose host side is a stand-in
    // namespace of this run, as in section 4; the step sends nothing.
    let (stand_in, egress) = crate::egress::stand_in_egress(settings, "gvhost")?;
    sandbox::net::install_policy(&egress)?;
    let cold = backend(settings, scratch, "cold", uid_base, 0, Some(egress.clone()))?;
    let warm = backend(
        settings,
        scratch,
        "warm",
        uid_base + 4 * 1024,
        1,
        Some(egress),
    )?;
    println!("  {}", platform_note(&cold.backend, pin, work)?);
    let mut runsc_do = Vec::new();
    let mut cold_samples = Vec::new();
    let mut warm_samples = Vec::new();
    let mut cold_egress = Vec::new();
    let mut warm_egress = Vec::new();
    step(&warm.backend, pin, work, NetworkMode::None)?;
    step(&warm.backend, pin, work, NetworkMode::PublicEgress)?;
    for index in 0..RUNS {
        let mut command = Command::new("/usr/bin/runsc");
        command.args([
            "--network=none",
            "--ignore-cgroups",
            "do",
            "/usr/bin/python3",
            "-I",
            "-S",
            "-c",
            "pass",
        ]);
        runsc_do.push(timed_command(&mut command, OutputCheck::Nothing)?);
        cold_samples.push(step(&cold.backend, pin, work, NetworkMode::None)?);
        cold_egress.push(step(&cold.backend, pin, work, NetworkMode::PublicEgress)?);
        // One warm sandbox per class (none and public_egress).
        wait_for_idle(&warm.backend, 2)?;
        warm_samples.push(step(&warm.backend, pin, work, NetworkMode::None)?);
        wait_for_idle(&warm.backend, 2)?;
        warm_egress.push(step(&warm.backend, pin, work, NetworkMode::PublicEgress)?);
        if (index + 1) % 5 == 0 {
            progress(&format!("gvisor: {}/{RUNS}", index + 1));
        }
    }
    drop(cold);
    drop(warm);
    drop(stand_in);
    let baseline = median(&runsc_do);
    let cold_median = median(&cold_samples);
    let warm_median = median(&warm_samples);
    println!(
        "  runsc do python3 -I -S -c pass   {}  baseline",
        describe(&runsc_do)
    );
    println!(
        "  stepward gvisor cold             {}  {:.2}x runsc do",
        describe(&cold_samples),
        ratio(cold_median, baseline)
    );
    println!(
        "  stepward gvisor warm             {}  {:.2}x runsc do",
        describe(&warm_samples),
        ratio(warm_median, baseline)
    );
    println!(
        "  stepward gvisor cold, egress     {}  {:.2}x the none cold step",
        describe(&cold_egress),
        ratio(median(&cold_egress), cold_median)
    );
    println!(
        "  stepward gvisor warm, egress     {}  {:.2}x the none warm step",
        describe(&warm_egress),
        ratio(median(&warm_egress), warm_median)
    );
    println!(
        "  target: gvisor warm <= 100 ms                {:.1} ms  {}",
        milliseconds(warm_median),
        verdict(warm_median <= Duration::from_millis(100))
    );
    println!(
        "  target: gvisor cold <= 300 ms                {:.1} ms  {}",
        milliseconds(cold_median),
        verdict(cold_median <= Duration::from_millis(300))
    );
    Ok(())
}
