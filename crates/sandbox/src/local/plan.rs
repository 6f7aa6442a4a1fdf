//! Turns one invocation's pieces (runtime, slot, scratch folder, cgroups, network) into the
//! jail plan the helper carries out. Everything the sandbox will see is listed here.

use std::path::{Path, PathBuf};

use crate::Limits;
use crate::cgroup::SandboxCgroup;
use crate::jail::plan::{
    CgroupNamespaceTiming, FileStep, LandlockPlan, MountStep, Plan, Rlimit, RlimitResource,
};
use crate::runtime::{Runtime, RuntimeMount};

/// The sandbox user's ids inside its user namespace.
pub(crate) const SANDBOX_UID: u32 = 1000;
pub(crate) const SANDBOX_GID: u32 = 1000;

/// Files in /proc that expose the host's kernel or let a process poke it; hidden behind
/// /dev/null.
const PROC_MASKED_FILES: [&str; 11] = [
    "/proc/kcore",
    "/proc/keys",
    "/proc/key-users",
    "/proc/timer_list",
    "/proc/sched_debug",
    "/proc/latency_stats",
    "/proc/sysrq-trigger",
    "/proc/kallsyms",
    "/proc/kpagecount",
    "/proc/kpageflags",
    "/proc/config.gz",
];

/// Directories in /proc with host hardware and driver knobs; hidden behind empty tmpfs.
const PROC_MASKED_DIRS: [&str; 5] = [
    "/proc/acpi",
    "/proc/scsi",
    "/proc/asound",
    "/proc/firmware",
    "/proc/driver",
];

/// Host knobs that stay readable but never writable.
const PROC_READ_ONLY: [&str; 5] = [
    "/proc/sys",
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sysvipc",
];

/// Public host tables bound read-only when the host has them: they hold no secret, and a
/// normal container image has them.
pub(crate) const ETC_TABLES: [&str; 2] = ["/etc/services", "/etc/protocols"];

/// The sandbox's small `/etc`, shared by every backend: the sandbox user (home `/tmp`, the one
/// writable place that is always there) and its group, `root` and `nobody` by name only (no
/// id but the sandbox user's is mapped), so that `getpass.getuser()`, `pwd`,
/// `grp`, `os.path.expanduser` and `tarfile`'s owner lookups work; localhost and the
/// sandbox's hostname; and a name
/// service configuration that uses only these files and, where a resolver is configured,
/// DNS. No `HOME`, `USER` or `LOGNAME` is set in the environment (G7).
pub(crate) fn etc_files() -> Vec<(&'static str, String)> {
    vec![
        (
            "passwd",
            format!(
                "root:x:0:0:root:/nonexistent:/nonexistent\nsandbox:x:{SANDBOX_UID}:{SANDBOX_GID}:sandbox:/tmp:/nonexistent\nnobody:x:65534:65534:nobody:/nonexistent:/nonexistent\n"
            ),
        ),
        (
            "group",
            format!("root:x:0:\nsandbox:x:{SANDBOX_GID}:\nnogroup:x:65534:\n"),
        ),
        (
            "hosts",
            String::from(
                "127.0.0.1 localhost\n127.0.1.1 sandbox\n::1 localhost ip6-localhost ip6-loopback\n",
            ),
        ),
        (
            "nsswitch.conf",
            String::from(
                "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n",
            ),
        ),
    ]
}

/// What a `public_egress` sandbox gets read-only on top (every backend): the host's public CA
/// bundle, for TLS, at Debian's path and at OpenSSL's default `cert.pem`. Public data.
pub(crate) fn egress_read_only() -> Vec<(PathBuf, PathBuf)> {
    let bundle = Path::new("/etc/ssl/certs/ca-certificates.crt");
    match bundle.canonicalize() {
        Ok(source) => vec![
            (source.clone(), bundle.to_path_buf()),
            (source, PathBuf::from("/usr/lib/ssl/cert.pem")),
        ],
        Err(_) => Vec::new(),
    }
}

/// Devices the sandbox gets.
const DEVICES: [&str; 4] = ["null", "zero", "random", "urandom"];

/// The inputs of one plan.
pub(crate) struct PlanInputs<'a> {
    pub runtime: &'a Runtime,
    /// The runtime's view as mounted (the linked view where there is one).
    pub runtime_mounts: &'a [RuntimeMount],
    pub limits: &'a Limits,
    pub host_id: u32,
    pub root_dir: PathBuf,
    pub work_dir: PathBuf,
    pub harness_dir: PathBuf,
    pub cgroup: &'a SandboxCgroup,
    pub cgroup_v1_home_tasks: Vec<PathBuf>,
    pub cgroup_namespace: CgroupNamespaceTiming,
    pub netns: Option<crate::jail::plan::NetnsPlan>,
    pub resolv_conf: Option<String>,
    pub extra_read_only: Vec<(PathBuf, PathBuf)>,
    /// The hard limits of a sandbox prepared before its invocation is known (warm, or built
    /// ahead); `None` for one built for its invocation (hard = soft).
    pub ceilings: Option<crate::LimitCeilings>,
}

pub(crate) fn build(inputs: PlanInputs<'_>) -> Plan {
    let mut mounts = Vec::new();
    // The runtime: interpreter, loader, libraries, standard library, all read-only.
    for mount in inputs.runtime_mounts {
        mounts.push(match mount {
            RuntimeMount::File { source, target } | RuntimeMount::Dir { source, target } => {
                MountStep::BindReadOnly {
                    source: source.clone(),
                    target: target.clone(),
                }
            }
            RuntimeMount::Mask { target } => MountStep::MaskDir {
                target: target.clone(),
            },
        });
    }
    // Public tables that name lookups read (`socket.getservbyname`, `getprotobyname`).
    for table in ETC_TABLES {
        if let Ok(source) = Path::new(table).canonicalize() {
            mounts.push(MountStep::BindReadOnly {
                source,
                target: PathBuf::from(table),
            });
        }
    }
    for (source, target) in &inputs.extra_read_only {
        mounts.push(MountStep::BindReadOnly {
            source: source.clone(),
            target: target.clone(),
        });
    }
    mounts.push(MountStep::BindReadOnly {
        source: inputs.harness_dir.clone(),
        target: PathBuf::from("/harness"),
    });
    // A minimal /dev.
    mounts.push(MountStep::Dir {
        target: PathBuf::from("/dev"),
        mode: 0o755,
    });
    for device in DEVICES {
        mounts.push(MountStep::BindDevice {
            source: Path::new("/dev").join(device),
            target: Path::new("/dev").join(device),
        });
    }
    for (name, points_to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        mounts.push(MountStep::Symlink {
            target: Path::new("/dev").join(name),
            points_to: PathBuf::from(points_to),
        });
    }
    // A fresh /proc for the sandbox's own pid namespace, its host knobs masked.
    mounts.push(MountStep::Proc {
        target: PathBuf::from("/proc"),
    });
    for file in PROC_MASKED_FILES {
        mounts.push(MountStep::MaskFile {
            target: PathBuf::from(file),
        });
    }
    for dir in PROC_MASKED_DIRS {
        mounts.push(MountStep::MaskDir {
            target: PathBuf::from(dir),
        });
    }
    for path in PROC_READ_ONLY {
        mounts.push(MountStep::ReadOnly {
            target: PathBuf::from(path),
        });
    }
    // The folder's copy and a private /tmp: writable, never executable.
    mounts.push(MountStep::BindWritableNoExec {
        source: inputs.work_dir.clone(),
        target: PathBuf::from("/work"),
    });
    mounts.push(MountStep::Tmpfs {
        target: PathBuf::from("/tmp"),
        size_bytes: inputs.limits.tmp_bytes,
        inodes: 16_384,
        mode: 0o1777,
    });
    // POSIX shared memory and semaphores (`multiprocessing`'s locks and queues) live here in a
    // normal container; a tmpfs like /tmp, its pages charged to the sandbox's memory limit.
    mounts.push(MountStep::Tmpfs {
        target: PathBuf::from("/dev/shm"),
        size_bytes: inputs.limits.tmp_bytes,
        inodes: 4_096,
        mode: 0o1777,
    });

    let mut files: Vec<FileStep> = etc_files()
        .into_iter()
        .map(|(name, contents)| FileStep {
            target: Path::new("/etc").join(name),
            contents,
            mode: 0o444,
        })
        .collect();
    if let Some(resolv_conf) = &inputs.resolv_conf {
        files.push(FileStep {
            target: PathBuf::from("/etc/resolv.conf"),
            contents: resolv_conf.clone(),
            mode: 0o444,
        });
    }

    let limits = inputs.limits;
    let fixed = |resource, value| Rlimit {
        resource,
        value,
        ceiling: value,
    };
    // What a claim may set: memory and CPU time (the declarable limits an rlimit carries).
    let address_space = crate::address_space(limits.memory_bytes);
    let (address_space_ceiling, cpu_ceiling) = match inputs.ceilings {
        Some(ceilings) => (
            crate::address_space(ceilings.memory_bytes).max(address_space),
            ceilings.cpu_seconds.max(limits.cpu_seconds),
        ),
        None => (address_space, limits.cpu_seconds),
    };
    let rlimits = vec![
        Rlimit {
            resource: RlimitResource::AddressSpace,
            value: address_space,
            ceiling: address_space_ceiling,
        },
        // The same bound as the address space: every thread's stack is private writable
        // memory, so a data limit at the memory limit stopped a step at about 30 threads.
        // The cgroup is what holds the memory a step uses.
        Rlimit {
            resource: RlimitResource::Data,
            value: address_space,
            ceiling: address_space_ceiling,
        },
        fixed(RlimitResource::Processes, u64::from(limits.pids)),
        Rlimit {
            resource: RlimitResource::CpuSeconds,
            value: limits.cpu_seconds,
            ceiling: cpu_ceiling,
        },
        fixed(RlimitResource::FileSize, limits.file_size_bytes),
        fixed(RlimitResource::OpenFiles, limits.open_files),
        fixed(RlimitResource::CoreSize, 0),
    ];

    let executable = inputs.runtime.executable.clone();
    Plan {
        build: crate::jail::plan::BUILD.to_owned(),
        host_uid: inputs.host_id,
        host_gid: inputs.host_id,
        sandbox_uid: SANDBOX_UID,
        sandbox_gid: SANDBOX_GID,
        hostname: String::from("sandbox"),
        root_dir: inputs.root_dir,
        root_size_bytes: 1024 * 1024,
        mounts,
        files,
        cgroup_v2_dir: inputs.cgroup.v2_dir().map(Path::to_path_buf),
        cgroup_v1_tasks: inputs.cgroup.v1_tasks_files(),
        cgroup_v1_home_tasks: inputs.cgroup_v1_home_tasks,
        cgroup_namespace: inputs.cgroup_namespace,
        netns: inputs.netns,
        rlimits,
        landlock: LandlockPlan {
            read_execute: vec![PathBuf::from("/")],
            read_write: vec![
                PathBuf::from("/work"),
                PathBuf::from("/tmp"),
                PathBuf::from("/dev/shm"),
            ],
            write_files: DEVICES
                .iter()
                .map(|device| Path::new("/dev").join(device))
                .collect(),
        },
        cwd: PathBuf::from("/work"),
        exec_path: executable.clone(),
        exec_argv: vec![
            executable.to_string_lossy().into_owned(),
            String::from("-I"),
            String::from("-S"),
            format!(
                "/harness/{}",
                crate::local::harness_bytecode_name(inputs.runtime.pin)
            ),
            String::from("--announce-ready"),
        ],
        #[cfg(feature = "test-controls")]
        test_seccomp: crate::jail::plan::SeccompSwitch::Enforced,
        #[cfg(feature = "test-controls")]
        test_whole_proc: false,
    }
}
