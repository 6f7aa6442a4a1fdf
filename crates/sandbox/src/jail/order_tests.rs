//! The order of jail setup, checked with a recording fake of the system calls (no root
//! needed): namespaces, then maps, then the mapped id, mounts, pivot_root, rlimits,
//! capabilities, no_new_privs, and seccomp last, right before exec.

use std::io;
use std::path::{Path, PathBuf};

use crate::jail::plan::{
    CgroupNamespaceTiming, FileStep, LandlockPlan, MountStep, NetnsPlan, Plan, Rlimit,
    RlimitResource,
};
use crate::jail::sys::{Forked, LandlockOutcome, MountFlags, ProcView, Sys};
use crate::jail::{Failure, Layer, PrivateNetwork, Started, Status, start};

/// Records every call; `clone_child` answers with the side under test.
struct Recorder {
    calls: Vec<String>,
    side: Forked,
    fail_on: Option<&'static str>,
    /// The errno a failing call answers (EPERM unless a test says otherwise).
    fail_errno: i32,
    /// What `mount_proc` answers (the sandbox's processes only, unless a test says otherwise).
    proc_view: ProcView,
}

impl Recorder {
    fn new(side: Forked) -> Self {
        Self {
            calls: Vec::new(),
            side,
            fail_on: None,
            fail_errno: libc::EPERM,
            proc_view: ProcView::OwnProcesses,
        }
    }

    fn record(&mut self, call: String) -> io::Result<()> {
        let failing = self.fail_on.is_some_and(|prefix| call.starts_with(prefix));
        self.calls.push(call);
        if failing {
            Err(io::Error::from_raw_os_error(self.fail_errno))
        } else {
            Ok(())
        }
    }
}

impl Sys for Recorder {
    fn drop_supplementary_groups(&mut self) -> io::Result<()> {
        self.record(String::from("setgroups(0)"))
    }
    fn join_network_namespace(&mut self, netns: &NetnsPlan) -> io::Result<()> {
        self.record(format!("setns {}", netns.path.display()))
    }
    fn clone_child(&mut self, flags: u64, cgroup_v2_dir: Option<&Path>) -> io::Result<Forked> {
        let newnet = flags & libc::CLONE_NEWNET as u64 != 0;
        let newcgroup = flags & libc::CLONE_NEWCGROUP as u64 != 0;
        self.record(format!(
            "clone newnet={newnet} newcgroup={newcgroup} into={}",
            cgroup_v2_dir.map_or(String::from("-"), |dir| dir.display().to_string())
        ))?;
        Ok(self.side)
    }
    fn write_control_file(&mut self, path: &Path, contents: &str) -> io::Result<()> {
        self.record(format!("write {} {}", path.display(), contents.trim()))
    }
    fn release_child(&mut self) -> io::Result<()> {
        self.record(String::from("release"))
    }
    fn signal_network_ready(&mut self) -> io::Result<()> {
        self.record(String::from("network ready"))
    }
    fn kill_child(&mut self, child: i32) {
        self.calls.push(format!("kill {child}"));
    }
    fn set_parent_death_signal(&mut self) -> io::Result<()> {
        self.record(String::from("pdeathsig"))
    }
    fn wait_for_release(&mut self) -> io::Result<()> {
        self.record(String::from("wait_for_release"))
    }
    fn wait_for_network(&mut self) -> io::Result<()> {
        self.record(String::from("wait_for_network"))
    }
    fn unshare_cgroup_namespace(&mut self) -> io::Result<()> {
        self.record(String::from("unshare cgroup"))
    }
    fn unshare_network_namespace(&mut self) -> io::Result<()> {
        self.record(String::from("unshare net"))
    }
    fn bring_up_loopback(&mut self) -> io::Result<()> {
        self.record(String::from("loopback up"))
    }
    fn set_hostname(&mut self, name: &str) -> io::Result<()> {
        self.record(format!("hostname {name}"))
    }
    fn make_mounts_private(&mut self) -> io::Result<()> {
        self.record(String::from("mount private /"))
    }
    fn mount_tmpfs(&mut self, target: &Path, _flags: MountFlags, _options: &str) -> io::Result<()> {
        self.record(format!("mount tmpfs {}", target.display()))
    }
    fn bind(&mut self, source: &Path, target: &Path) -> io::Result<()> {
        self.record(format!(
            "mount bind {} {}",
            source.display(),
            target.display()
        ))
    }
    fn remount_bind(&mut self, target: &Path, flags: MountFlags) -> io::Result<()> {
        let read_only = flags & libc::MS_RDONLY != 0;
        let no_exec = flags & libc::MS_NOEXEC != 0;
        self.record(format!(
            "mount remount {} ro={read_only} noexec={no_exec}",
            target.display()
        ))
    }
    fn mount_proc(&mut self, target: &Path, only_processes: bool) -> io::Result<ProcView> {
        self.record(format!(
            "mount proc {} only_processes={only_processes}",
            target.display()
        ))?;
        Ok(self.proc_view)
    }
    fn create_dir_all(&mut self, path: &Path, _mode: u32) -> io::Result<()> {
        self.record(format!("mkdir {}", path.display()))
    }
    fn create_file(&mut self, path: &Path, _contents: &[u8], _mode: u32) -> io::Result<()> {
        self.record(format!("create {}", path.display()))
    }
    fn symlink(&mut self, points_to: &Path, link: &Path) -> io::Result<()> {
        self.record(format!(
            "symlink {} {}",
            link.display(),
            points_to.display()
        ))
    }
    fn probe(&mut self, path: &Path) -> io::Result<Option<bool>> {
        // Everything exists; directories are the paths without a dot in their last part.
        let is_dir = !path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().contains('.'));
        Ok(Some(is_dir))
    }
    fn pivot_root(&mut self, new_root: &Path) -> io::Result<()> {
        self.record(format!("pivot_root {}", new_root.display()))
    }
    fn remount_root_read_only(&mut self) -> io::Result<()> {
        self.record(String::from("mount remount / ro"))
    }
    fn change_directory(&mut self, path: &Path) -> io::Result<()> {
        self.record(format!("chdir {}", path.display()))
    }
    fn close_other_fds(&mut self) -> io::Result<()> {
        self.record(String::from("close_range"))
    }
    fn new_session(&mut self) -> io::Result<()> {
        self.record(String::from("setsid"))
    }
    fn set_rlimit(&mut self, limit: Rlimit) -> io::Result<()> {
        self.record(format!("rlimit {:?}={}", limit.resource, limit.value))
    }
    fn drop_bounding_set(&mut self) -> io::Result<()> {
        self.record(String::from("caps bounding"))
    }
    fn set_ids(&mut self, uid: u32, gid: u32) -> io::Result<()> {
        self.record(format!("setresid {uid}:{gid}"))
    }
    fn clear_capabilities(&mut self) -> io::Result<()> {
        self.record(String::from("caps clear"))
    }
    fn set_no_new_privs(&mut self) -> io::Result<()> {
        self.record(String::from("no_new_privs"))
    }
    fn apply_landlock(&mut self, _plan: &LandlockPlan) -> LandlockOutcome {
        self.calls.push(String::from("landlock"));
        LandlockOutcome::Unavailable {
            detail: String::from("fake kernel"),
        }
    }
    fn load_seccomp(&mut self) -> io::Result<()> {
        self.record(String::from("seccomp"))
    }
    fn exec(&mut self, path: &Path, _argv: &[String]) -> io::Error {
        self.calls.push(format!("exec {}", path.display()));
        io::Error::from_raw_os_error(libc::ENOENT)
    }
    fn child_report(&mut self, status: &Status) {
        self.calls.push(format!("report {status:?}"));
    }
}

fn plan() -> Plan {
    Plan {
        build: crate::jail::plan::BUILD.to_owned(),
        host_uid: 1_800_000_007,
        host_gid: 1_800_000_007,
        sandbox_uid: 1000,
        sandbox_gid: 1000,
        hostname: String::from("sandbox"),
        root_dir: PathBuf::from("/scratch/root"),
        root_size_bytes: 1 << 20,
        mounts: vec![
            MountStep::BindReadOnly {
                source: PathBuf::from("/usr/bin/python3.11"),
                target: PathBuf::from("/usr/bin/python3.11"),
            },
            MountStep::Proc {
                target: PathBuf::from("/proc"),
            },
            MountStep::ReadOnly {
                target: PathBuf::from("/proc/sys"),
            },
            MountStep::BindWritableNoExec {
                source: PathBuf::from("/scratch/work"),
                target: PathBuf::from("/work"),
            },
        ],
        files: vec![FileStep {
            target: PathBuf::from("/etc/passwd"),
            contents: String::from("sandbox:x:1000:1000::/work:/nonexistent\n"),
            mode: 0o444,
        }],
        cgroup_v2_dir: Some(PathBuf::from("/sys/fs/cgroup/unified/stepward/sb-7")),
        cgroup_v1_tasks: vec![PathBuf::from("/sys/fs/cgroup/memory/stepward/sb-7/tasks")],
        cgroup_v1_home_tasks: vec![PathBuf::from("/sys/fs/cgroup/memory/tasks")],
        cgroup_namespace: CgroupNamespaceTiming::AfterAttach,
        netns: None,
        rlimits: vec![Rlimit {
            resource: RlimitResource::Processes,
            value: 64,
            ceiling: 64,
        }],
        landlock: LandlockPlan::default(),
        cwd: PathBuf::from("/work"),
        exec_path: PathBuf::from("/usr/bin/python3.11"),
        exec_argv: vec![String::from("python3.11")],
        #[cfg(feature = "test-controls")]
        test_seccomp: crate::jail::plan::SeccompSwitch::Enforced,
        #[cfg(feature = "test-controls")]
        test_whole_proc: false,
    }
}

/// Runs the helper's side, then the child's, into one recording (the child waits for the
/// helper's release, so this is the order the kernel sees).
fn both_sides(plan: &Plan) -> (Vec<String>, Started) {
    let mut parent = Recorder::new(Forked::Parent {
        child: 4242,
        pidfd: 9,
    });
    let parent_result = start(&mut parent, plan, PrivateNetwork::AtClone).unwrap();
    assert_eq!(
        parent_result,
        Started::Helper {
            child: 4242,
            pidfd: 9
        }
    );
    let mut child = Recorder::new(Forked::Child);
    let child_result = start(&mut child, plan, PrivateNetwork::AtClone).unwrap();
    let mut calls = parent.calls;
    // The child's copy of steps 1-3 ran once, in the helper, before the clone.
    let after_clone = child
        .calls
        .iter()
        .position(|call| call.starts_with("clone"))
        .unwrap()
        + 1;
    calls.extend(child.calls.into_iter().skip(after_clone));
    (calls, child_result)
}

fn position(calls: &[String], prefix: &str) -> usize {
    calls
        .iter()
        .position(|call| call.starts_with(prefix))
        .unwrap_or_else(|| panic!("no call starting with {prefix:?} in {calls:#?}"))
}

fn last_position(calls: &[String], prefix: &str) -> usize {
    calls
        .iter()
        .rposition(|call| call.starts_with(prefix))
        .unwrap_or_else(|| panic!("no call starting with {prefix:?} in {calls:#?}"))
}

#[test]
fn g10_jail_order_namespaces_maps_mounts_pivot_rlimits_caps_nnp_seccomp_last() {
    let (calls, child_result) = both_sides(&plan());
    let clone = position(&calls, "clone");
    let setgroups_deny = position(&calls, "write /proc/4242/setgroups deny");
    let uid_map = position(&calls, "write /proc/4242/uid_map 1000 1800000007 1");
    let gid_map = position(&calls, "write /proc/4242/gid_map 1000 1800000007 1");
    let v1_join = position(&calls, "write /sys/fs/cgroup/memory/stepward/sb-7/tasks 0");
    let v1_leave = position(&calls, "write /sys/fs/cgroup/memory/tasks 0");
    let release = position(&calls, "release");
    let wait = position(&calls, "wait_for_release");
    let first_mount = position(&calls, "mount");
    let proc_mount = position(&calls, "mount proc /scratch/root/proc");
    let last_mount_before_pivot = calls[..position(&calls, "pivot_root")]
        .iter()
        .rposition(|call| call.starts_with("mount"))
        .unwrap();
    let pivot = position(&calls, "pivot_root /scratch/root");
    let root_read_only = position(&calls, "mount remount / ro");
    let first_rlimit = position(&calls, "rlimit");
    let last_rlimit = last_position(&calls, "rlimit");
    let first_caps = position(&calls, "caps");
    let ids = position(&calls, "setresid 1000:1000");
    let last_caps = last_position(&calls, "caps");
    let nnp = position(&calls, "no_new_privs");
    let landlock = position(&calls, "landlock");
    let network_ready = position(&calls, "network ready");
    let wait_for_network = position(&calls, "wait_for_network");
    let seccomp = position(&calls, "seccomp");
    let exec = position(&calls, "exec");

    assert_eq!(calls[0], "setgroups(0)", "{calls:#?}");
    // The child inherits its v1 groups at the clone: the helper is in them right before it
    // and leaves right after, before anything else.
    assert!(
        v1_join < clone && clone + 1 == v1_leave && v1_leave < setgroups_deny,
        "{calls:#?}"
    );
    assert!(setgroups_deny < uid_map && uid_map < gid_map, "{calls:#?}");
    assert!(gid_map < release && release < wait, "{calls:#?}");
    // The helper's last word comes after the release (the child's wait for it is checked
    // below: after every other step of its own but the filter).
    assert!(release < network_ready, "{calls:#?}");
    assert!(wait < ids && ids < first_mount, "{calls:#?}");
    assert!(
        first_mount < proc_mount && last_mount_before_pivot < pivot,
        "{calls:#?}"
    );
    assert!(
        pivot < root_read_only && root_read_only < first_rlimit,
        "{calls:#?}"
    );
    assert!(
        last_rlimit < first_caps && first_caps < last_caps,
        "{calls:#?}"
    );
    assert!(
        last_caps < nnp && nnp < landlock && landlock < wait_for_network,
        "{calls:#?}"
    );
    assert_eq!(wait_for_network + 1, seccomp, "{calls:#?}");
    assert_eq!(
        exec,
        seccomp + 1,
        "seccomp must be the last step before exec: {calls:#?}"
    );
    assert!(calls.contains(&String::from(
        "clone newnet=true newcgroup=false into=/sys/fs/cgroup/unified/stepward/sb-7"
    )));
    assert!(
        calls[wait..first_mount].contains(&String::from("unshare cgroup")),
        "{calls:#?}"
    );
    // The exec failed in the fake: the child reports the layer by name.
    assert!(matches!(
        child_result,
        Started::ChildFailed(Failure {
            layer: Layer::Exec,
            ..
        })
    ));
    // Landlock's absence is recorded as a note.
    assert!(
        calls
            .iter()
            .any(|call| call.starts_with("report Note") && call.contains("landlock unavailable"))
    );
}

#[test]
fn g10_writable_mounts_are_noexec_and_runtime_is_read_only() {
    let (calls, _) = both_sides(&plan());
    assert!(
        calls.contains(&String::from(
            "mount remount /scratch/root/usr/bin/python3.11 ro=true noexec=false"
        )),
        "{calls:#?}"
    );
    assert!(
        calls.contains(&String::from(
            "mount remount /scratch/root/work ro=false noexec=true"
        )),
        "{calls:#?}"
    );
}

#[test]
fn g10_egress_joins_the_platform_netns_instead_of_a_new_one() {
    let mut egress = plan();
    egress.netns = Some(NetnsPlan {
        path: PathBuf::from("/run/netns/stepward-3-abc"),
        device: 4,
        inode: 4_026_532_178,
    });
    egress.cgroup_namespace = CgroupNamespaceTiming::AtClone;
    let (calls, _) = both_sides(&egress);
    let setns = position(&calls, "setns /run/netns/stepward-3-abc");
    let clone = position(&calls, "clone newnet=false newcgroup=true");
    assert!(setns < clone, "{calls:#?}");
    assert!(
        !calls.iter().any(|call| call == "unshare cgroup"),
        "{calls:#?}"
    );
}

#[test]
fn g11_a_network_namespace_the_helper_made_is_inherited_instead_of_cloned() {
    let mut parent = Recorder::new(Forked::Parent {
        child: 4242,
        pidfd: 9,
    });
    start(&mut parent, &plan(), PrivateNetwork::MadeByHelper).unwrap();
    assert!(
        parent
            .calls
            .iter()
            .any(|call| call.starts_with("clone newnet=false")),
        "{:#?}",
        parent.calls
    );
    // Its loopback comes up after the release, while the child builds its mounts, and before
    // the helper tells the child the network is ready (the child's last wait before exec).
    let release = position(&parent.calls, "release");
    let loopback = position(&parent.calls, "loopback up");
    let ready = position(&parent.calls, "network ready");
    assert!(
        release < loopback && loopback < ready,
        "{:#?}",
        parent.calls
    );
    let mut child = Recorder::new(Forked::Child);
    start(&mut child, &plan(), PrivateNetwork::MadeByHelper).unwrap();
    assert!(
        !child.calls.iter().any(|call| call == "loopback up"),
        "{:#?}",
        child.calls
    );
    let wait = position(&child.calls, "wait_for_network");
    assert!(wait < position(&child.calls, "exec"), "{:#?}", child.calls);
    // A loopback the helper cannot bring up stops the sandbox: the child is killed and never
    // hears that the network is ready.
    let mut parent = Recorder::new(Forked::Parent {
        child: 4242,
        pidfd: 9,
    });
    parent.fail_on = Some("loopback up");
    let Err(failure) = start(&mut parent, &plan(), PrivateNetwork::MadeByHelper) else {
        panic!("a failing loopback was not reported: {:#?}", parent.calls);
    };
    assert_eq!(failure.layer, Layer::Network, "{}", failure.detail);
    assert!(
        parent.calls.contains(&String::from("kill 4242")),
        "{:#?}",
        parent.calls
    );
    assert!(
        !parent.calls.iter().any(|call| call == "network ready"),
        "{:#?}",
        parent.calls
    );
    // A child that failed a step of its own has closed its end: the word finds no reader
    // (EPIPE), and the helper goes on to supervise, which reads and reports the child's own
    // layer instead of a failed release.
    let mut parent = Recorder::new(Forked::Parent {
        child: 4242,
        pidfd: 9,
    });
    parent.fail_on = Some("network ready");
    parent.fail_errno = libc::EPIPE;
    let started = start(&mut parent, &plan(), PrivateNetwork::MadeByHelper);
    assert_eq!(
        started,
        Ok(Started::Helper {
            child: 4242,
            pidfd: 9
        }),
        "{:#?}",
        parent.calls
    );
    // public_egress joins the platform's namespace whatever the helper made before.
    let mut egress = plan();
    egress.netns = Some(NetnsPlan {
        path: PathBuf::from("/run/netns/stepward-3-abc"),
        device: 4,
        inode: 4_026_532_178,
    });
    let mut parent = Recorder::new(Forked::Parent {
        child: 4242,
        pidfd: 9,
    });
    start(&mut parent, &egress, PrivateNetwork::MadeByHelper).unwrap();
    let setns = position(&parent.calls, "setns /run/netns/stepward-3-abc");
    let clone = position(&parent.calls, "clone newnet=false");
    assert!(setns < clone, "{:#?}", parent.calls);
}

#[test]
fn g10_a_failed_layer_stops_setup_and_is_named() {
    let mut child = Recorder::new(Forked::Child);
    child.fail_on = Some("mount proc");
    let result = start(&mut child, &plan(), PrivateNetwork::AtClone).unwrap();
    let Started::ChildFailed(failure) = result else {
        panic!("expected a failure, got {result:?}");
    };
    assert_eq!(failure.layer, Layer::Proc);
    assert!(
        !child.calls.iter().any(|call| call.starts_with("pivot_root")
            || call == "seccomp"
            || call.starts_with("exec"))
    );

    let mut no_nnp = Recorder::new(Forked::Child);
    no_nnp.fail_on = Some("no_new_privs");
    let Started::ChildFailed(failure) =
        start(&mut no_nnp, &plan(), PrivateNetwork::AtClone).unwrap()
    else {
        panic!("expected a failure");
    };
    assert_eq!(failure.layer, Layer::NoNewPrivs);
    assert!(!no_nnp.calls.iter().any(|call| call.starts_with("exec")));

    let mut no_seccomp = Recorder::new(Forked::Child);
    no_seccomp.fail_on = Some("seccomp");
    let Started::ChildFailed(failure) =
        start(&mut no_seccomp, &plan(), PrivateNetwork::AtClone).unwrap()
    else {
        panic!("expected a failure");
    };
    assert_eq!(failure.layer, Layer::Seccomp);
    assert!(!no_seccomp.calls.iter().any(|call| call.starts_with("exec")));
}

#[test]
fn g10_a_root_mapping_is_refused_before_any_map_is_written() {
    let mut rooted = plan();
    rooted.host_uid = 0;
    let mut parent = Recorder::new(Forked::Parent {
        child: 4242,
        pidfd: 9,
    });
    let result = start(&mut parent, &rooted, PrivateNetwork::AtClone);
    assert!(matches!(
        result,
        Err(Failure {
            layer: Layer::UidGidMaps,
            ..
        })
    ));
    assert!(!parent.calls.iter().any(|call| call.contains("uid_map")));
}

#[test]
fn g11_a_network_namespace_the_clone_made_gets_its_loopback_up_before_capabilities_go() {
    let (calls, _) = both_sides(&plan());
    let loopback = position(&calls, "loopback up");
    assert!(
        position(&calls, "clone newnet=true") < loopback,
        "{calls:#?}"
    );
    assert!(loopback < position(&calls, "caps"), "{calls:#?}");
    // A namespace the platform made (public_egress) has its loopback up already.
    let mut egress = plan();
    egress.netns = Some(NetnsPlan {
        path: PathBuf::from("/run/netns/stepward-3-abc"),
        device: 4,
        inode: 4_026_532_178,
    });
    let (calls, _) = both_sides(&egress);
    assert!(
        !calls.iter().any(|call| call == "loopback up"),
        "{calls:#?}"
    );
}

/// Every numbered step that can fail reports its own layer (issue 18 §2: `close_range` and
/// `setsid` used to fail as "namespaces"), and nothing after it runs: neither the release of
/// the child (helper side) nor the exec (child side).
#[test]
fn g10_every_numbered_step_fails_under_its_own_layer() {
    let mut egress = plan();
    egress.netns = Some(NetnsPlan {
        path: PathBuf::from("/run/netns/stepward-3-abc"),
        device: 4,
        inode: 4_026_532_178,
    });
    let helper_steps: [(&str, Layer); 9] = [
        ("setgroups(0)", Layer::Identity),
        ("setns", Layer::Network),
        ("write /sys/fs/cgroup/memory/stepward", Layer::Cgroup),
        ("clone", Layer::Namespaces),
        ("write /sys/fs/cgroup/memory/tasks", Layer::Cgroup),
        ("write /proc/4242/setgroups", Layer::UidGidMaps),
        ("write /proc/4242/gid_map", Layer::UidGidMaps),
        ("release", Layer::Release),
        ("network ready", Layer::Release),
    ];
    for (call, layer) in helper_steps {
        let mut parent = Recorder::new(Forked::Parent {
            child: 4242,
            pidfd: 9,
        });
        parent.fail_on = Some(call);
        let result = start(&mut parent, &egress, PrivateNetwork::AtClone);
        let Err(failure) = result else {
            panic!("a failing `{call}` was not reported: {result:?}");
        };
        assert_eq!(failure.layer, layer, "`{call}`: {}", failure.detail);
        assert!(
            call == "release"
                || call == "network ready"
                || !parent.calls.iter().any(|made| made == "release"),
            "`{call}` failed but the child was released: {:#?}",
            parent.calls
        );
    }
    let child_steps: [(&str, Layer); 22] = [
        ("pdeathsig", Layer::ParentDeathSignal),
        ("wait_for_release", Layer::Release),
        ("setresid", Layer::Identity),
        ("unshare cgroup", Layer::Namespaces),
        ("hostname", Layer::Hostname),
        ("loopback up", Layer::Network),
        ("mount private", Layer::Mounts),
        ("mount tmpfs /scratch/root", Layer::Mounts),
        ("mount bind /usr/bin", Layer::Mounts),
        ("mount proc", Layer::Proc),
        ("create /scratch/root/etc/passwd", Layer::Files),
        ("pivot_root", Layer::PivotRoot),
        ("mount remount / ro", Layer::Mounts),
        ("chdir", Layer::Mounts),
        ("close_range", Layer::Descriptors),
        ("setsid", Layer::Session),
        ("rlimit", Layer::Rlimits),
        ("caps bounding", Layer::Capabilities),
        ("caps clear", Layer::Capabilities),
        ("no_new_privs", Layer::NoNewPrivs),
        ("wait_for_network", Layer::Network),
        ("seccomp", Layer::Seccomp),
    ];
    for (call, layer) in child_steps {
        let mut child = Recorder::new(Forked::Child);
        child.fail_on = Some(call);
        let result = start(&mut child, &plan(), PrivateNetwork::AtClone).unwrap();
        let Started::ChildFailed(failure) = result else {
            panic!("a failing `{call}` was not reported: {result:?}");
        };
        assert_eq!(failure.layer, layer, "`{call}`: {}", failure.detail);
        assert!(
            !child.calls.iter().any(|made| made.starts_with("exec")),
            "`{call}` failed but Python was exec'd: {:#?}",
            child.calls
        );
    }
}

#[test]
fn g10_a_plan_from_another_build_is_refused_before_anything_is_built() {
    assert!(crate::jail::same_build(&plan()).is_ok());
    let mut other = plan();
    other.build = String::from("0123456789abcdef");
    let failure = crate::jail::same_build(&other).unwrap_err();
    assert_eq!(failure.layer, Layer::Helper);
    assert!(
        failure
            .detail
            .contains("install stepward and stepward-jail together"),
        "{}",
        failure.detail
    );
}

#[test]
fn g10_a_proc_of_the_sandboxs_processes_only_needs_no_note_and_a_full_one_is_recorded() {
    let full_note = |calls: &[String]| {
        calls
            .iter()
            .any(|call| call.starts_with("report Note") && call.contains("subset=pid"))
    };
    let (calls, _) = both_sides(&plan());
    assert!(!full_note(&calls), "{calls:#?}");
    // Nothing under a /proc of the sandbox's processes only is masked: there is nothing.
    assert!(
        !calls
            .iter()
            .any(|call| call.starts_with("mount") && call.contains("/scratch/root/proc/")),
        "{calls:#?}"
    );
    // An older kernel: the whole procfs, its host knobs masked by the plan's steps, and the
    // record says so.
    let mut child = Recorder::new(Forked::Child);
    child.proc_view = ProcView::Full;
    let result = start(&mut child, &plan(), PrivateNetwork::AtClone).unwrap();
    assert!(matches!(
        result,
        Started::ChildFailed(Failure {
            layer: Layer::Exec,
            ..
        })
    ));
    assert!(full_note(&child.calls), "{:#?}", child.calls);
    let proc = child
        .calls
        .iter()
        .position(|call| call.starts_with("mount proc"))
        .unwrap();
    assert!(
        child.calls[proc..].contains(&String::from(
            "mount remount /scratch/root/proc/sys ro=true noexec=true"
        )),
        "{:#?}",
        child.calls
    );
}
