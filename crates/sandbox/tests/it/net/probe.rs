//! Runs the Python probe inside a sandbox's network namespace, the way a step would see it: its
//! `/etc/resolv.conf` is the network's `resolv_conf()`, and it runs as an unprivileged host user
//! that is root of a user namespace of its own (the strongest position a sandboxed process could
//! reach), never with the test's privileges, except for the explicit control runs.

use std::process::{Command, Stdio};

use sandbox::net::EgressNetwork;
use serde_json::{Value, json};

use crate::net::support::{NSENTER, PYTHON};
use crate::net::topology::Topology;

/// Who runs the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeUser {
    /// Host uid 65534, root of its own user namespace: what a sandboxed step could be at most.
    Sandboxed,
    /// Host root, for the control run that shows a probe of changes would work.
    HostRootControl,
}

/// A TCP target over IPv4.
pub fn tcp(id: &str, host: &str, port: u16) -> Value {
    json!({"id": id, "family": "inet", "proto": "tcp", "host": host, "port": port})
}

/// A UDP target over IPv4.
pub fn udp(id: &str, host: &str, port: u16) -> Value {
    json!({"id": id, "family": "inet", "proto": "udp", "host": host, "port": port})
}

/// A TCP target through an IPv6 socket (for the mapped, NAT64 and 6to4 forms).
pub fn tcp6(id: &str, host: &str, port: u16) -> Value {
    json!({"id": id, "family": "inet6", "proto": "tcp", "host": host, "port": port})
}

/// Runs the probe with `request` (see probe.py) in the network's namespace; returns its report.
pub fn run_probe(
    topology: &Topology,
    network: &EgressNetwork,
    request: &Value,
    user: ProbeUser,
) -> Value {
    let scratch = topology.scratch.path();
    let request_path = scratch.join(format!("request-{}.json", std::process::id()));
    std::fs::write(&request_path, request.to_string()).unwrap();
    set_readable(&request_path);
    let resolv_path = scratch.join("resolv.conf");
    std::fs::write(&resolv_path, network.resolv_conf()).unwrap();
    set_readable(&resolv_path);
    // Only DNS: no host daemon (systemd-resolved, nscd, mDNS) may answer for the sandbox.
    let nsswitch_path = scratch.join("nsswitch.conf");
    std::fs::write(&nsswitch_path, "hosts: dns\n").unwrap();
    set_readable(&nsswitch_path);

    let mut command = Command::new(NSENTER);
    command
        .arg(format!("--net={}", network.netns_path().display()))
        .args(["--", "/usr/bin/unshare", "--mount", "--propagation", "private", "--"])
        .args([
            "/bin/sh",
            "-c",
            "mount --bind \"$1\" /etc/resolv.conf && mount --bind \"$2\" /etc/nsswitch.conf && shift 2 && exec \"$@\"",
            "sh",
        ])
        .arg(&resolv_path)
        .arg(&nsswitch_path);
    if user == ProbeUser::Sandboxed {
        command.args([
            "/usr/bin/setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "/usr/bin/unshare",
            "--user",
            "--map-root-user",
            "--",
        ]);
    }
    command
        .args([PYTHON, "-I", "-S"])
        .arg(scratch.join("probe.py"))
        .arg(&request_path)
        .env_clear()
        .stdin(Stdio::null());
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "the probe failed: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "bad probe report ({error}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// The result of one target: `hit` (the listener answered), `connected`, `refused` (a packet got
/// there and back), `timeout` or `error:ERRNO`.
pub fn result<'a>(report: &'a Value, id: &str) -> &'a str {
    report["connect"][id]
        .as_str()
        .unwrap_or_else(|| panic!("no result for {id} in {report}"))
}

/// True when the target answered in any way: a packet reached it and came back.
pub fn reached(outcome: &str) -> bool {
    matches!(outcome, "hit" | "connected" | "refused")
}

fn set_readable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
}
