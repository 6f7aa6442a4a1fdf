//! Section 4: `public_egress` steps (issue 13, part 4). A cold step with its egress network
//! built and removed each time, beside a `none` cold step of the same backend in the same run
//! (target: at most twice as long), a warm one from a pool of pre-built, never-used networks
//! (target: 3 ms), and the network alone. The platform side (nftables table, gateway ends of
//! the veths, forwarding) lives in a network namespace made for the run, never the host's; the
//! step sends no packet.

use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use std::time::{Duration, Instant};

use sandbox::NetworkMode;
use sandbox::net::{EgressNetwork, EgressOptions};

use crate::{
    BenchBackend, BenchError, ColdFigures, IP, NFT, NSENTER, OutputCheck, Pool, SYSCTL, Settings,
    describe, median, milliseconds, progress, ratio, timed_command, verdict,
};

/// A network namespace that plays the platform's host for the egress network: the nftables
/// table, the gateway ends of the veths and forwarding live here, never in the real host.
/// Deleted on drop.
pub(crate) struct HostStandIn {
    name: String,
    pub(crate) path: PathBuf,
}

impl HostStandIn {
    pub(crate) fn create(name: String) -> Result<HostStandIn, BenchError> {
        timed_command(
            Command::new(IP).args(["netns", "add", &name]),
            OutputCheck::Nothing,
        )?;
        let stand_in = HostStandIn {
            path: Path::new("/run/netns").join(&name),
            name,
        };
        let own = std::fs::metadata("/proc/self/ns/net").map_err(|source| BenchError::Io {
            action: "cannot stat",
            path: PathBuf::from("/proc/self/ns/net"),
            source,
        })?;
        let made = std::fs::metadata(&stand_in.path).map_err(|source| BenchError::Io {
            action: "cannot stat",
            path: stand_in.path.clone(),
            source,
        })?;
        if (own.dev(), own.ino()) == (made.dev(), made.ino()) {
            return Err(BenchError::Unsafe {
                detail: format!(
                    "{} is the host's own network namespace",
                    stand_in.path.display()
                ),
            });
        }
        // Forwarding is a per-namespace setting: this writes the stand-in's, never the host's.
        let enter = format!("--net={}", stand_in.path.display());
        timed_command(
            Command::new(NSENTER).args([
                enter.as_str(),
                "--",
                SYSCTL,
                "-q",
                "-w",
                "net.ipv4.ip_forward=1",
            ]),
            OutputCheck::Nothing,
        )?;
        Ok(stand_in)
    }
}

impl Drop for HostStandIn {
    fn drop(&mut self) {
        let _ = Command::new(IP)
            .args(["netns", "delete", &self.name])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A host stand-in namespace (`swb<tag><label>`) and egress options whose host side it is.
pub(crate) fn stand_in_egress(
    settings: &Settings,
    label: &str,
) -> Result<(HostStandIn, EgressOptions), BenchError> {
    let prefix = format!("swb{}", settings.tag);
    let stand_in = HostStandIn::create(format!("{prefix}{label}"))?;
    let mut egress = EgressOptions::with_resolver(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 53)));
    egress.host_netns = Some(stand_in.path.clone());
    egress.namespace_prefix = prefix;
    Ok((stand_in, egress))
}

pub(crate) fn egress_section(
    settings: &Settings,
    scratch: &Path,
    uid_base: u32,
    work: &Path,
    cold: &ColdFigures,
) -> Result<(), BenchError> {
    println!();
    println!(
        "== 4. public_egress: cold (network built and removed each time) and warm, beside a none cold step (median of {} each) ==",
        settings.egress_runs
    );
    let missing: Vec<&str> = [IP, NFT, NSENTER, SYSCTL]
        .into_iter()
        .filter(|tool| !Path::new(tool).is_file())
        .collect();
    if !missing.is_empty() {
        println!(
            "  public_egress: skipped, {} not installed (Debian packages iproute2, nftables, util-linux, procps)",
            missing.join(", ")
        );
        return Ok(());
    }
    // The stand-in's name carries the tag, so scripts/bench removes it after a kill.
    let (stand_in, egress) = stand_in_egress(settings, "host")?;

    // The network alone: built, and dropped as a step's teardown drops it (the kernel frees
    // the namespace and the veth pair on its own thread afterwards; `destroy` waits for that,
    // so each round starts from a clean host side).
    sandbox::net::install_policy(&egress)?;
    let mut create_samples = Vec::new();
    let mut drop_samples = Vec::new();
    for _ in 0..settings.egress_runs {
        let started = Instant::now();
        let network = EgressNetwork::create(&egress, 0)?;
        create_samples.push(started.elapsed());
        let started = Instant::now();
        drop(network);
        drop_samples.push(started.elapsed());
        let network = EgressNetwork::create(&egress, 1)?;
        network.destroy()?;
    }

    let backend = BenchBackend::new(
        settings,
        scratch,
        "egress",
        uid_base,
        Pool::AlwaysCold,
        Some(egress.clone()),
    )?;
    let pin = backend.pin()?;
    progress("public_egress: warming up");
    for _ in 0..settings.warmup.min(5) {
        backend.step(pin, work, NetworkMode::PublicEgress)?;
        backend.step(pin, work, NetworkMode::None)?;
    }
    // The none and public_egress cold steps take turns in blocks, on the same backend, so the
    // ratio compares like with like.
    let block = 10usize;
    let mut none_samples = Vec::new();
    let mut egress_samples = Vec::new();
    while egress_samples.len() < settings.egress_runs {
        let count = block.min(settings.egress_runs - egress_samples.len());
        for _ in 0..count {
            none_samples.push(backend.step(pin, work, NetworkMode::None)?);
        }
        for _ in 0..count {
            egress_samples.push(backend.step(pin, work, NetworkMode::PublicEgress)?);
        }
        progress(&format!(
            "public_egress cold: {}/{}",
            egress_samples.len(),
            settings.egress_runs
        ));
    }
    drop(backend);

    let warm_backend = BenchBackend::new(
        settings,
        scratch,
        "egress-warm",
        uid_base + 32,
        Pool::Warm(settings.pool_size),
        Some(egress),
    )?;
    warm_backend.step(pin, work, NetworkMode::PublicEgress)?;
    let mut warm_samples = Vec::new();
    while warm_samples.len() < settings.egress_runs {
        warm_backend.wait_for_warm_sandboxes(settings.pool_size, Duration::from_secs(30))?;
        warm_samples.push(warm_backend.step(pin, work, NetworkMode::PublicEgress)?);
    }
    drop(warm_backend);
    drop(stand_in);

    let none_median = median(&none_samples);
    let egress_median = median(&egress_samples);
    let warm_median = median(&warm_samples);
    println!(
        "  (the platform side runs in the namespace {}host made for this run; the step sends nothing)",
        format_args!("swb{}", settings.tag)
    );
    println!(
        "  bare python3 -I -S -c pass       {:7.2} ms  baseline (section 1)",
        milliseconds(cold.bare_pass)
    );
    println!(
        "  egress network alone: built      {}",
        describe(&create_samples)
    );
    println!(
        "  egress network alone: dropped    {}",
        describe(&drop_samples)
    );
    println!(
        "  stepward local cold, none        {}  {:.2}x bare",
        describe(&none_samples),
        ratio(none_median, cold.bare_pass)
    );
    println!(
        "  stepward local cold, egress      {}  {:.2}x bare, {:.2}x the none step",
        describe(&egress_samples),
        ratio(egress_median, cold.bare_pass),
        ratio(egress_median, none_median)
    );
    println!(
        "  stepward local warm, egress      {}",
        describe(&warm_samples)
    );
    println!(
        "  target: egress cold <= 2x a none cold step   {:.2}x  {}",
        ratio(egress_median, none_median),
        verdict(ratio(egress_median, none_median) <= 2.0)
    );
    println!(
        "  target: egress warm <= 3 ms                  {:.2} ms  {}",
        milliseconds(warm_median),
        verdict(warm_median <= Duration::from_millis(3))
    );
    let _ = std::io::stdout().flush();
    Ok(())
}
