//! Privileges (G10): no capabilities, no_new_privs, seccomp in filter mode, a single-line id
//! map to an unprivileged host id, setgroups denied.

use serde_json::json;

use crate::hostile::support::{Filter, Probe, report};

const PROBE: &str = include_str!("../../probes/privileges.py");

#[test]
fn g10_no_capabilities_no_new_privs_and_seccomp_filter_mode_needs_root() {
    let answer = report(&Probe::new(PROBE, json!({})).run(Filter::Enforced));
    for set in ["CapEff", "CapPrm", "CapInh", "CapAmb"] {
        assert_eq!(answer[set], "0000000000000000", "{set}: {answer}");
    }
    assert_eq!(answer["NoNewPrivs"], "1");
    assert_eq!(answer["Seccomp"], "2");
    assert_ne!(answer["Seccomp_filters"], "0");
    assert_ne!(answer["setuid_root"], "succeeded");
    assert_ne!(answer["setgroups_call"], "succeeded");
}

#[test]
fn g10_the_id_maps_are_one_line_to_an_unprivileged_host_id_needs_root() {
    let answer = report(&Probe::new(PROBE, json!({})).run(Filter::Enforced));
    for map in ["uid_map", "gid_map"] {
        let text = answer[map].as_str().unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{map} must have exactly one line: {text:?}");
        let fields: Vec<u64> = lines[0]
            .split_whitespace()
            .map(|field| field.parse().unwrap())
            .collect();
        assert_eq!(fields.len(), 3, "{map}: {text:?}");
        assert_ne!(fields[1], 0, "{map} maps to host id 0: {text:?}");
        assert_eq!(fields[2], 1, "{map} must map a single id: {text:?}");
    }
    assert_eq!(answer["setgroups"].as_str().unwrap().trim(), "deny");
}
