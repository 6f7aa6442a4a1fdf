//! Leaks (G7, G10): the environment, pid 1's environment, inherited descriptors, the cwd and
//! root, host processes.

use serde_json::json;

use crate::hostile::support::{Filter, Probe, report};

const PROBE: &str = include_str!("../../probes/leaks.py");

fn leaks_report() -> serde_json::Value {
    let observation = Probe::new(PROBE, json!({ "host_pid": std::process::id() }))
        .env("DECLARED_VARIABLE", "declared-value")
        .run(Filter::Enforced);
    report(&observation)
}

#[test]
fn g7_the_environment_holds_only_what_the_step_declared_needs_root() {
    let answer = leaks_report();
    let environ = answer["environ"].as_object().unwrap();
    assert_eq!(environ["DECLARED_VARIABLE"], "declared-value");
    // Only what the interpreter itself sets may join the declared variable (DESIGN G7).
    for name in environ.keys() {
        assert!(
            name == "DECLARED_VARIABLE" || name == "LC_CTYPE",
            "unexpected variable {name} in the sandbox: {environ:?}"
        );
    }
    // The test process's own environment (cargo's variables, PATH) must not be there.
    for (name, _) in std::env::vars() {
        assert!(
            !environ.contains_key(&name) || name == "LC_CTYPE",
            "{name} leaked"
        );
    }
}

#[test]
fn g7_pid_1_shows_nothing_of_the_host_needs_root() {
    let answer = leaks_report();
    let pid1_environ = &answer["pid1_environ"];
    if pid1_environ["ok"] == true {
        let text = pid1_environ["data"].as_str().unwrap();
        for (name, _) in std::env::vars() {
            assert!(
                !text.contains(&format!("{name}=")),
                "the host variable {name} is visible in /proc/1/environ"
            );
        }
    }
    let pids: Vec<u64> = answer["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pid| pid.as_u64().unwrap())
        .collect();
    assert!(
        pids.len() < 8,
        "the sandbox sees too many processes: {pids:?}"
    );
    assert!(!pids.contains(&u64::from(std::process::id())));
    assert_eq!(answer["host_pid_visible"], false);
    assert_eq!(answer["signal_host_pid"], "no such process");
}

#[test]
fn g7_no_host_descriptor_is_inherited_needs_root() {
    let answer = leaks_report();
    let descriptors = answer["descriptors"].as_object().unwrap();
    for (number, target) in descriptors {
        let number: u32 = number.parse().unwrap();
        let target = target.as_str().unwrap();
        // 0-2 are the request pipe and the output pipes; 3 is the harness's report channel;
        // the descriptor that lists /proc/self/fd shows up as that folder.
        let allowed = number <= 3 && (target.starts_with("pipe:") || target == "/dev/null")
            || target.starts_with("/proc/")
            || target.starts_with("/usr/lib/python3")
            || target.starts_with("/work")
            || target.starts_with("/tmp");
        assert!(allowed, "descriptor {number} -> {target} was inherited");
        for host_marker in ["/root", "/home", "/var", "socket:", "/work/main", "target"] {
            assert!(
                !target.contains(host_marker),
                "descriptor {number} -> {target} reaches the host"
            );
        }
    }
}

#[test]
fn g7_cwd_and_root_stay_inside_the_sandbox_needs_root() {
    let answer = leaks_report();
    assert_eq!(answer["cwd_at_start"], "/work");
    assert_eq!(answer["proc_self_root"], "/");
    assert_eq!(answer["climbed_to"], "/");
    let listing: Vec<&str> = answer["root_listing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry.as_str().unwrap())
        .collect();
    for host_only in ["root", "home", "var", "boot", "srv", "opt", "mnt", "media"] {
        assert!(
            !listing.contains(&host_only),
            "/{host_only} of the host is visible: {listing:?}"
        );
    }
    let mountinfo = answer["mountinfo"]["data"].as_str().unwrap_or_default();
    let manifest_dir = env!("CARGO_MANIFEST_DIR");
    assert!(
        !mountinfo.contains(manifest_dir),
        "the repository is mounted: {mountinfo}"
    );
}
