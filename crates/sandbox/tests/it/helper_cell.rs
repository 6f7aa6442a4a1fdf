//! The platform's helper processes run under limits like a sandbox (agents review, finding 1
//! and its notes): a cell gives each a uid no other live cell or sandbox has, and a group with
//! a memory and a task limit, entered before the helper gets any work; the cell's end kills
//! what is left and removes the group. Needs root (cgroups).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};

use sandbox::local::LocalBackend;
use sandbox::{HELPER_MEMORY_BYTES, HELPER_TASKS, Isolation};

/// The cgroup path of `pid` for `controller` (v1), or its v2 path.
fn group_of(pid: u32, controller: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let v1 = text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|name| name == controller)
            .then(|| path.to_owned())
    });
    v1.or_else(|| {
        text.lines()
            .find_map(|line| line.strip_prefix("0::").map(str::to_owned))
    })
    .unwrap()
}

#[test]
fn g10_a_helper_runs_in_a_cell_of_its_own_under_memory_and_task_limits_needs_root() {
    let state = tempfile::tempdir().unwrap();
    let backend =
        LocalBackend::for_tests(state.path(), Path::new(env!("CARGO_BIN_EXE_sandbox-jail")))
            .unwrap();
    let first = backend.helper_cell().unwrap();
    let second = backend.helper_cell().unwrap();
    let (first_uid, _) = first.user().unwrap();
    let (second_uid, _) = second.user().unwrap();
    assert_ne!(first_uid, second_uid, "two live cells share a uid");
    assert!(first_uid >= 1_000_000 && first_uid != 65534, "{first_uid}");
    let sandbox_ids =
        backend.options().uid_base..backend.options().uid_base + backend.options().slots;
    assert!(
        !sandbox_ids.contains(&first_uid),
        "a cell's uid is a sandbox's"
    );

    let mut child = Command::new("/bin/sleep")
        .arg("30")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    first.enter(pid).unwrap();
    let dirs = first.group_dirs();
    assert!(!dirs.is_empty());
    for controller in ["memory", "pids"] {
        let group = group_of(pid, controller);
        assert!(
            dirs.iter()
                .any(|dir| dir.to_string_lossy().ends_with(&group)),
            "{controller}: {group} is not one of {dirs:?}"
        );
    }
    let read = |file: &str| {
        dirs.iter()
            .find_map(|dir| std::fs::read_to_string(dir.join(file)).ok())
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    let memory = if read("memory.max").is_empty() {
        read("memory.limit_in_bytes")
    } else {
        read("memory.max")
    };
    assert_eq!(memory, HELPER_MEMORY_BYTES.to_string());
    assert_eq!(read("pids.max"), HELPER_TASKS.to_string());

    // The cell's end kills what is left in it and removes its group.
    drop(first);
    let status = child.wait().unwrap();
    assert!(!status.success(), "the helper outlived its cell");
    assert!(dirs.iter().all(|dir| !dir.exists()), "{dirs:?} left behind");
    drop(second);
    let _ = backend.cgroup_layout().sweep();
    backend.cgroup_layout().remove_parents();
}
