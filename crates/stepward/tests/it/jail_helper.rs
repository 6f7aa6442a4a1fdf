//! Issue 13: `stepward` builds its sandboxes through the small `stepward-jail` program
//! installed beside it, refuses one that others could replace, and runs its own `__jail` where
//! none is installed (part 2); `--warm-pool` keeps sandboxes started (part 5).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{Home, TINY_WORKFLOW, stderr, stdout};

/// A folder holding `stepward` (a hard link to the built binary, or a copy) and, when asked,
/// a copy of `stepward-jail` with `helper_mode`.
fn installed(home: &Home, helper_mode: Option<u32>) -> PathBuf {
    let bin = home.dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let program = bin.join("stepward");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_stepward"), &program).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_stepward"), &program).unwrap();
    }
    if let Some(mode) = helper_mode {
        // A copy: the mode of the built helper itself is never changed.
        let helper = bin.join("stepward-jail");
        std::fs::copy(env!("CARGO_BIN_EXE_stepward-jail"), &helper).unwrap();
        std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    program
}

fn run_with(program: &Path, home: &Home) -> Output {
    let workflow = home.dir.path().join("tiny.yaml");
    std::fs::write(&workflow, TINY_WORKFLOW).unwrap();
    home.command(program)
        .arg("--startup-timings")
        .arg("--data-dir")
        .arg(home.data_dir())
        .arg("--sandbox-state-dir")
        .arg(home.dir.path().join("sandbox"))
        .arg("run")
        .arg(&workflow)
        .output()
        .unwrap()
}

#[test]
fn g10_stepward_run_refuses_a_jail_helper_others_can_write_needs_root() {
    let home = Home::new();
    let program = installed(&home, Some(0o757));
    let ran = run_with(&program, &home);
    let said = stderr(&ran);
    assert_eq!(ran.status.code(), Some(2), "{said}");
    assert!(
        said.contains("refusing the jail helper") && said.contains("lets others write it"),
        "{said}"
    );
    assert!(!stdout(&ran).contains("succeeded"), "{}", stdout(&ran));
}

#[test]
fn g10_stepward_run_without_a_helper_beside_it_builds_through_its_own_needs_root() {
    let home = Home::new();
    let program = installed(&home, None);
    let ran = run_with(&program, &home);
    assert!(ran.status.success(), "{}", stderr(&ran));
    assert!(stdout(&ran).contains("succeeded"), "{}", stdout(&ran));
    assert!(
        stderr(&ran).contains("the first sandbox's helper (stepward __jail)"),
        "{}",
        stderr(&ran)
    );
}

#[test]
fn g10_stepward_run_builds_through_a_safe_helper_beside_it_needs_root() {
    let home = Home::new();
    let program = installed(&home, Some(0o755));
    let ran = run_with(&program, &home);
    assert!(ran.status.success(), "{}", stderr(&ran));
    assert!(stdout(&ran).contains("succeeded"), "{}", stdout(&ran));
    assert!(
        stderr(&ran).contains("the first sandbox's helper (stepward-jail)"),
        "{}",
        stderr(&ran)
    );
}

/// `--warm-pool` (issue 13, part 5: the binary keeps sandboxes started when asked): a run
/// with a pool succeeds, and the command leaves neither a waiting sandbox's groups nor the
/// data directory's cgroup parent behind; a pool above the maximum is a usage error that says
/// the range.
#[test]
fn g6_a_warm_pool_serves_steps_and_leaves_nothing_behind_needs_root() {
    let home = Home::new();
    let workflow = home.dir.path().join("tiny.yaml");
    std::fs::write(&workflow, TINY_WORKFLOW).unwrap();
    for _ in 0..2 {
        let ran = home.stepward(&["--warm-pool", "2", "run", workflow.to_str().unwrap()]);
        assert!(ran.status.success(), "{}", stderr(&ran));
        assert!(stdout(&ran).contains("succeeded"), "{}", stdout(&ran));
        assert!(
            home.cgroup_parents().is_empty(),
            "a finished command leaves no cgroup parent behind: {:?}",
            home.cgroup_parents()
        );
    }
    let refused = home.stepward(&["--warm-pool", "17", "run", workflow.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("0..=16"), "{}", stderr(&refused));
}
