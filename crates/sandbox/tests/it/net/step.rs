//! G11 end to end: the same probe runs as the code of a real `public_egress` step in the local
//! backend's jail (joined to the EgressNetwork's namespace), with the platform side in the test
//! "host" namespace. The probe-level tests beside this one hold the control runs.

use std::path::Path;
use std::sync::Arc;

use sandbox::local::{LocalBackend, LocalOptions};
use sandbox::{Invocation, Isolation, Limits, NetworkMode, Observation, Outcome};
use serde_json::{Value, json};

use crate::net::probe::{reached, result, tcp, udp};
use crate::net::reach::{
    assert_positive_control, denied_targets_without_gateway, positive_targets,
};
use crate::net::topology::{
    Forwarding, HOST_UPLINK_ADDRESS, INTERNET, MULTI_ADDRESSES, MULTI_NAME, TCP_PORT, Topology,
    UDP_PORT, UplinkChoice,
};

struct NoSecrets;

impl sandbox::copyback::SecretScreen for NoSecrets {
    fn holds_secret(&self, _content: &[u8]) -> bool {
        false
    }
}

/// A local backend whose egress options are the topology's; removes its cgroups on drop.
struct Backend {
    backend: LocalBackend,
    _state: tempfile::TempDir,
}

impl Backend {
    fn new(topology: &Topology) -> Backend {
        let state = tempfile::tempdir().unwrap();
        let helper = Path::new(env!("CARGO_BIN_EXE_sandbox-jail"));
        let mut options = LocalOptions::new(
            state.path().to_path_buf(),
            (helper.to_path_buf(), Vec::new()),
        );
        options.cgroups.parent = format!("stepward-nettest-{}", topology.options.namespace_prefix);
        // A uid range of its own, away from the jail's and the hostile tests' ranges.
        options.uid_base = 1_950_000_000 + (std::process::id() % 10_000) * 64;
        options.slots = 64;
        options.egress = Some(topology.options.clone());
        Backend {
            backend: LocalBackend::new(options).unwrap(),
            _state: state,
        }
    }
}

/// Runs the probe as the code of a `public_egress` step of `backend`.
pub(crate) fn run_probe_step(backend: &dyn Isolation, request: &Value) -> Observation {
    let work = tempfile::tempdir().unwrap();
    let invocation = Invocation {
        live: None,
        python: sandbox::PythonPin {
            major: 3,
            minor: 11,
        },
        code: include_str!("probe.py").to_owned(),
        inputs_json: request.to_string(),
        env: Vec::new(),
        network: NetworkMode::PublicEgress,
        limits: Limits::default(),
        files: workspace::StepFiles::scratch_folder(work.path().to_path_buf()),
        screen: Arc::new(NoSecrets),
    };
    backend
        .run(invocation)
        .unwrap_or_else(|error| panic!("{}: {error}", backend.name()))
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.backend.cgroup_layout().sweep();
        self.backend.cgroup_layout().remove_parents();
    }
}

fn report(observation: &Observation) -> Value {
    match &observation.outcome {
        Outcome::Succeeded { result_json } => serde_json::from_str(result_json).unwrap(),
        other => panic!(
            "the step did not succeed: {other:?}\nstdout: {}\nstderr: {}\nnotes: {:?}",
            String::from_utf8_lossy(&observation.stdout),
            String::from_utf8_lossy(&observation.stderr),
            observation.isolation_notes
        ),
    }
}

#[test]
fn g11_public_egress_step_reaches_the_test_internet_and_nothing_else_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    let backend = Backend::new(&topology);
    assert_step_reaches_the_test_internet_and_nothing_else(&topology, &backend.backend);
}

/// The whole G11 check from inside a real step of `backend` (any backend): every denied
/// range, the host's own addresses and the gateway unreached, the test internet reached (the
/// positive control), the resolver answering, no change to the step's own network possible,
/// masquerade on the way out, and the network gone after the step.
pub(crate) fn assert_step_reaches_the_test_internet_and_nothing_else(
    topology: &Topology,
    backend: &dyn Isolation,
) {
    let name = backend.name();
    topology.clear_hits();
    // First learn the sandbox's gateway from inside (the slot is the backend's choice).
    let first = report(&run_probe_step(backend, &json!({"gateway": true})));
    let gateway = first["gateway"].as_str().unwrap().to_owned();
    assert!(gateway.starts_with("10.231."), "{first}");

    let mut entries = positive_targets();
    entries.push(tcp("gateway/tcp", &gateway, TCP_PORT));
    entries.push(udp("gateway/udp", &gateway, UDP_PORT));
    let denied = denied_targets_without_gateway();
    entries.extend(denied.iter().map(|(_, entry, _)| entry.clone()));
    let request =
        json!({"connect": entries, "resolve": [MULTI_NAME], "netlink": {}, "timeout": 1.5});
    let observation = run_probe_step(backend, &request);
    let answer = report(&observation);

    assert_positive_control(&answer);
    let mut leaks = Vec::new();
    for id in denied
        .iter()
        .map(|(id, _, _)| id.as_str())
        .chain(["gateway/tcp", "gateway/udp"])
    {
        if reached(result(&answer, id)) {
            leaks.push(format!("{id}: {}", result(&answer, id)));
        }
    }
    assert!(
        leaks.is_empty(),
        "{name}: a public_egress step reached: {leaks:#?}"
    );
    let mut expected: Vec<&str> = MULTI_ADDRESSES.to_vec();
    expected.sort_unstable();
    assert_eq!(answer["resolve"][MULTI_NAME], json!(expected), "{answer}");
    for (change, outcome) in answer["netlink"].as_object().unwrap() {
        assert_ne!(
            outcome, "ok",
            "{name}: the step changed its network: {change}"
        );
    }
    // Only the internet listener (through the uplink's address) and the resolver saw anything.
    for line in topology.hits() {
        let allowed = line.starts_with(&format!("internet: tcp {INTERNET} "))
            || line.starts_with(&format!("internet: udp {INTERNET} "))
            || line.starts_with("dns: ");
        assert!(
            allowed,
            "{name}: a listener was reached by the step: {line}"
        );
        assert!(
            line.contains(&format!("from {HOST_UPLINK_ADDRESS}")),
            "not masqueraded: {line}"
        );
    }
    // The sandbox's network is gone after the step: its gateway address at once (the kernel
    // frees the veth itself a moment later, with the namespace nobody holds any more).
    let addresses = crate::net::support::run_in(
        &topology.host.path,
        crate::net::support::IP,
        &["-o", "addr", "show"],
    );
    assert!(!addresses.contains(&gateway), "{addresses}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while topology
        .host
        .links()
        .iter()
        .any(|link| link.starts_with("swh"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the sandbox's veth outlived it: {:?}",
            topology.host.links()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// F1 of sandbox review 3 in a `public_egress` sandbox: its sockets live in the egress
/// namespace, and their buffers count against the step's memory limit as in `none`.
#[test]
fn g10_socket_buffers_of_a_public_egress_step_count_against_its_memory_limit_needs_root() {
    let topology = Topology::build(UplinkChoice::DefaultRoute, Forwarding::On);
    let backend = Backend::new(&topology);
    crate::hostile::resources::announce_memory_layout();
    let limit_mib = 96;
    for kind in ["tcp", "udp"] {
        let work = tempfile::tempdir().unwrap();
        let invocation = Invocation {
            live: None,
            python: sandbox::PythonPin {
                major: 3,
                minor: 11,
            },
            code: include_str!("../../probes/socket_memory.py").to_owned(),
            inputs_json: json!({"kind": kind, "ceiling_mib": 320, "hold_s": 0}).to_string(),
            env: Vec::new(),
            network: NetworkMode::PublicEgress,
            limits: Limits {
                memory_bytes: limit_mib << 20,
                open_files: 512,
                ..Limits::default()
            },
            files: workspace::StepFiles::scratch_folder(work.path().to_path_buf()),
            screen: Arc::new(NoSecrets),
        };
        let observation = backend.backend.run(invocation).unwrap();
        match &observation.outcome {
            Outcome::Succeeded { .. } => {
                let answer = report(&observation);
                let queued = answer["queued_mib"].as_u64().unwrap();
                assert!(
                    queued <= limit_mib + limit_mib / 8,
                    "{kind}: {queued} MiB held against {limit_mib} MiB: {answer}"
                );
            }
            Outcome::Unknown { reason } => assert!(
                matches!(
                    reason,
                    sandbox::UnknownReason::MemoryLimit | sandbox::UnknownReason::Killed { .. }
                ),
                "{kind}: {reason:?}"
            ),
            other => panic!("{kind}: the probe ended as {other:?}"),
        }
    }
}
