//! Section 4: a `public_egress` cold step with its egress network built and removed each
//! time. The platform side (nftables table, gateway ends of the veths, forwarding) lives in a
//! network namespace made for the run, never the host's; the step sends no packet.

use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sandbox::NetworkMode;
use sandbox::net::EgressOptions;

use crate::{
    BenchBackend, BenchError, ColdFigures, IP, NFT, NSENTER, OutputCheck, Pool, SYSCTL, Settings,
    describe, median, milliseconds, progress, ratio, timed_command,
};

/// A network namespace that plays the platform's host for the egress network: the nftables
/// table, the gateway ends of the veths and forwarding live here, never in the real host.
/// Deleted on drop.
struct HostStandIn {
    name: String,
    path: PathBuf,
}

impl HostStandIn {
    fn create(name: String) -> Result<HostStandIn, BenchError> {
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

pub(crate) fn egress_section(
    settings: &Settings,
    scratch: &Path,
    uid_base: u32,
    work: &Path,
    cold: &ColdFigures,
) -> Result<(), BenchError> {
    println!();
    println!(
        "== 4. public_egress cold step, egress network built and removed each time (median of {}) ==",
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
    // The sandbox namespaces are named `<prefix>-<slot>-<random>`; the prefix carries the tag.
    let prefix = format!("swb{}", settings.tag);
    let stand_in = HostStandIn::create(format!("{prefix}host"))?;
    let mut egress = EgressOptions::with_resolver(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 53)));
    egress.host_netns = Some(stand_in.path.clone());
    egress.namespace_prefix = prefix;
    let backend = BenchBackend::new(
        settings,
        scratch,
        "egress",
        uid_base,
        Pool::AlwaysCold,
        Some(egress),
    )?;
    let pin = backend.pin()?;
    progress("public_egress: warming up");
    for _ in 0..settings.warmup.min(5) {
        backend.step(pin, work, NetworkMode::PublicEgress)?;
    }
    let mut samples = Vec::new();
    while samples.len() < settings.egress_runs {
        samples.push(backend.step(pin, work, NetworkMode::PublicEgress)?);
        if samples.len() % 10 == 0 {
            progress(&format!(
                "public_egress: {}/{}",
                samples.len(),
                settings.egress_runs
            ));
        }
    }
    drop(backend);
    drop(stand_in);
    let egress_median = median(&samples);
    println!(
        "  (the platform side runs in the namespace {}host made for this run; the step sends nothing)",
        format_args!("swb{}", settings.tag)
    );
    println!(
        "  bare python3 -I -S -c pass       {:7.2} ms  baseline (section 1)",
        milliseconds(cold.bare_pass)
    );
    println!(
        "  stepward local (network none)    {:7.2} ms  {:.2}x bare (section 1)",
        milliseconds(cold.stepward),
        ratio(cold.stepward, cold.bare_pass)
    );
    println!(
        "  stepward local (public_egress)   {}  {:.2}x bare, {:.2}x the none step",
        describe(&samples),
        ratio(egress_median, cold.bare_pass),
        ratio(egress_median, cold.stepward)
    );
    println!(
        "  egress setup and teardown cost   {:7.2} ms  (median difference)",
        milliseconds(egress_median.saturating_sub(cold.stepward))
    );
    let _ = std::io::stdout().flush();
    Ok(())
}
