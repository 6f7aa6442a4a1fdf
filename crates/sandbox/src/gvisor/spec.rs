//! The OCI runtime spec (`config.json`) of one gVisor sandbox, built by a pure function from
//! the runtime, the limits and the bundle's paths, and the skeleton of mount points its
//! read-only root needs. Everything the step will see is listed here.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::runtime::{Runtime, RuntimeMount};
use crate::{Limits, NetworkMode};

/// The step's uid and gid inside the sandbox (as in the local backend).
pub(crate) const SANDBOX_UID: u32 = 1000;

/// How many ids each sandbox's user namespace maps: container ids 0..IDS_PER_SANDBOX go to
/// the sandbox's own host range, which no other sandbox shares. It covers the step's uid;
/// gVisor's file proxy runs as the namespace's root, i.e. the range's first host id.
pub(crate) const IDS_PER_SANDBOX: u32 = 1024;

// The step's uid must lie inside the mapped range, or runsc could not start it.
const _: () = assert!(SANDBOX_UID < IDS_PER_SANDBOX);

/// Where the report channel's file appears in the sandbox.
pub(crate) const REPORT_TARGET: &str = "/report";

/// The sandbox's harness folder.
pub(crate) const HARNESS_TARGET: &str = "/harness";

/// runsc passes no descriptor beyond stdio to the container's first process, so the report
/// channel (fd 3) cannot be inherited as in the local backend. This shim, run as the
/// interpreter's `-c` program before anything else, opens the report file mounted at
/// `/report` as fd 3 and then runs the unchanged harness as `__main__`. The harness and the
/// step later share this interpreter exactly as they do in the local backend.
/// The harness is asked to announce "ready" once loaded: a report without that line means
/// the sandbox never got as far as the harness (a runsc or setup failure, never the step's).
pub(crate) const SHIM: &str = "import os, sys\n\
sys.argv[:] = ['/harness/runner.py', '--announce-ready']\n\
fd = os.open('/report', os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)\n\
if fd != 3:\n    os.dup2(fd, 3, inheritable=False)\n    os.close(fd)\n\
with open('/harness/runner.py', 'rb') as handle:\n    source = handle.read()\n\
del fd, handle\n\
exec(compile(source, '/harness/runner.py', 'exec'), {'__name__': '__main__', '__file__': '/harness/runner.py', '__builtins__': __builtins__})\n";

/// The pieces of one sandbox's spec.
pub(crate) struct SpecInputs<'a> {
    pub runtime: &'a Runtime,
    pub limits: &'a Limits,
    /// The first host id of the sandbox's range (never 0): container id 0 maps to it, the
    /// step's uid 1000 to `host_id_base + 1000`.
    pub host_id_base: u32,
    pub harness_dir: &'a Path,
    pub work_dir: &'a Path,
    pub report_file: &'a Path,
    /// public_egress: the platform-made network namespace runsc joins (`--network=sandbox`:
    /// gVisor's own network stack on the namespace's veth, policed on the host side like the
    /// local backend's). `None`: a new, empty namespace (`--network=none`).
    pub netns: Option<&'a Path>,
}

/// What a mount point in the read-only root must be before runsc mounts over it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum MountPoint {
    File(PathBuf),
    Dir(PathBuf),
}

fn bind_read_only(source: &Path, target: &Path) -> Value {
    json!({
        "destination": target,
        "type": "bind",
        "source": source,
        "options": ["rbind", "ro", "nosuid", "nodev"],
    })
}

/// The OCI spec of one sandbox. Pure: the same inputs give the same document.
pub(crate) fn config(inputs: &SpecInputs<'_>) -> Value {
    let mut mounts = Vec::new();
    // The runtime: interpreter, loader, libraries, standard library, all read-only; an
    // empty read-only tmpfs over site-packages and dist-packages inside it.
    for mount in &inputs.runtime.mounts {
        mounts.push(match mount {
            RuntimeMount::File { source, target } | RuntimeMount::Dir { source, target } => {
                bind_read_only(source, target)
            }
            RuntimeMount::Mask { target } => json!({
                "destination": target,
                "type": "tmpfs",
                "source": "tmpfs",
                "options": ["ro", "nosuid", "nodev", "noexec", "size=4096", "mode=0555"],
            }),
        });
    }
    mounts.push(bind_read_only(
        inputs.harness_dir,
        Path::new(HARNESS_TARGET),
    ));
    // gVisor's own procfs and devices, implemented by its kernel: nothing of the host's /proc
    // or /dev is mounted.
    mounts.push(json!({
        "destination": "/proc",
        "type": "proc",
        "source": "proc",
        "options": ["nosuid", "nodev", "noexec"],
    }));
    mounts.push(json!({
        "destination": "/dev",
        "type": "tmpfs",
        "source": "tmpfs",
        "options": ["nosuid", "noexec", "mode=0755", "size=65536"],
    }));
    // POSIX shared memory, as in the local backend: a tmpfs like /tmp, never executable.
    mounts.push(json!({
        "destination": "/dev/shm",
        "type": "tmpfs",
        "source": "tmpfs",
        "options": [
            "nosuid",
            "nodev",
            "noexec",
            "mode=1777",
            format!("size={}", inputs.limits.tmp_bytes),
        ],
    }));
    // The public name tables, as in the local backend.
    for table in crate::local::plan::ETC_TABLES {
        if let Ok(source) = Path::new(table).canonicalize() {
            mounts.push(bind_read_only(&source, Path::new(table)));
        }
    }
    // gVisor adds its own (synthetic) sysfs when the spec has none; an empty read-only tmpfs
    // keeps /sys as bare as in the local backend.
    mounts.push(json!({
        "destination": "/sys",
        "type": "tmpfs",
        "source": "tmpfs",
        "options": ["ro", "nosuid", "nodev", "noexec", "size=4096", "mode=0555"],
    }));
    // The folder's copy, a private /tmp and the report file: writable, never executable.
    mounts.push(json!({
        "destination": "/tmp",
        "type": "tmpfs",
        "source": "tmpfs",
        "options": [
            "nosuid",
            "nodev",
            "noexec",
            "mode=1777",
            format!("size={}", inputs.limits.tmp_bytes),
        ],
    }));
    mounts.push(json!({
        "destination": "/work",
        "type": "bind",
        "source": inputs.work_dir,
        "options": ["rbind", "rw", "nosuid", "nodev", "noexec"],
    }));
    mounts.push(json!({
        "destination": REPORT_TARGET,
        "type": "bind",
        "source": inputs.report_file,
        "options": ["bind", "rw", "nosuid", "nodev", "noexec"],
    }));
    if inputs.netns.is_some() {
        // TLS needs the host's public CA bundle, as in the local backend; it is public data.
        for (source, target) in crate::local::plan::egress_read_only() {
            mounts.push(bind_read_only(&source, &target));
        }
    }

    let limits = inputs.limits;
    let rlimit =
        |name: &str, soft: u64, hard: u64| json!({"type": name, "soft": soft, "hard": hard});
    let rlimits = vec![
        // As in the local backend: the address space and data limits leave room for thread
        // stacks; the cgroup holds the memory a step uses.
        rlimit(
            "RLIMIT_AS",
            crate::address_space(limits.memory_bytes),
            crate::address_space(limits.memory_bytes),
        ),
        rlimit(
            "RLIMIT_DATA",
            crate::address_space(limits.memory_bytes),
            crate::address_space(limits.memory_bytes),
        ),
        rlimit(
            "RLIMIT_NPROC",
            u64::from(limits.pids),
            u64::from(limits.pids),
        ),
        // The soft limit sends SIGXCPU a second before the hard limit's SIGKILL, so the
        // outcome can name the CPU limit.
        rlimit(
            "RLIMIT_CPU",
            limits.cpu_seconds,
            limits.cpu_seconds.saturating_add(1),
        ),
        rlimit(
            "RLIMIT_FSIZE",
            limits.file_size_bytes,
            limits.file_size_bytes,
        ),
        rlimit("RLIMIT_NOFILE", limits.open_files, limits.open_files),
        rlimit("RLIMIT_CORE", 0, 0),
    ];
    let executable = inputs.runtime.executable.to_string_lossy().into_owned();
    json!({
        "ociVersion": "1.0.2",
        "process": {
            "terminal": false,
            "user": {"uid": SANDBOX_UID, "gid": SANDBOX_UID, "additionalGids": []},
            "args": [executable, "-I", "-S", "-c", SHIM],
            // Empty on purpose: the declared environment travels in the request on stdin and
            // the harness sets exactly it, so no credential value is ever written into the
            // bundle on disk.
            "env": [],
            "cwd": "/work",
            "capabilities": {
                "bounding": [],
                "effective": [],
                "inheritable": [],
                "permitted": [],
                "ambient": [],
            },
            "noNewPrivileges": true,
            "rlimits": rlimits,
        },
        "root": {"path": "rootfs", "readonly": true},
        "hostname": "sandbox",
        "mounts": mounts,
        "linux": {
            // The user namespace also holds gVisor's file proxy (the gofer): it runs as the
            // range's first host id, unprivileged on the host. gVisor's kernel (the sentry)
            // runs as nobody in a user namespace of its own.
            "namespaces": [
                {"type": "pid"},
                network_namespace(inputs.netns),
                {"type": "ipc"},
                {"type": "uts"},
                {"type": "mount"},
                {"type": "user"},
            ],
            "uidMappings": [
                {"containerID": 0, "hostID": inputs.host_id_base, "size": IDS_PER_SANDBOX},
            ],
            "gidMappings": [
                {"containerID": 0, "hostID": inputs.host_id_base, "size": IDS_PER_SANDBOX},
            ],
        },
    })
}

/// The spec's network namespace: the platform's (joined by path) or a new one.
fn network_namespace(netns: Option<&Path>) -> Value {
    match netns {
        Some(path) => json!({"type": "network", "path": path}),
        None => json!({"type": "network"}),
    }
}

/// Every path the read-only root must hold before runsc mounts over it: the mount targets
/// (a file for a file bind, a directory otherwise) and the folders above them. Sorted, so
/// parents come before children.
pub(crate) fn mount_points(runtime: &Runtime, network: NetworkMode) -> Vec<MountPoint> {
    let mut points = std::collections::BTreeSet::new();
    let add_parents = |points: &mut std::collections::BTreeSet<MountPoint>, path: &Path| {
        for ancestor in path.ancestors().skip(1) {
            if ancestor != Path::new("/") && !ancestor.as_os_str().is_empty() {
                points.insert(MountPoint::Dir(ancestor.to_path_buf()));
            }
        }
    };
    for mount in &runtime.mounts {
        match mount {
            RuntimeMount::File { target, .. } => {
                add_parents(&mut points, target);
                points.insert(MountPoint::File(target.clone()));
            }
            RuntimeMount::Dir { target, .. } => {
                add_parents(&mut points, target);
                points.insert(MountPoint::Dir(target.clone()));
            }
            // A mask lies inside a bound directory, which already has it.
            RuntimeMount::Mask { .. } => {}
        }
    }
    for dir in [
        HARNESS_TARGET,
        "/proc",
        "/dev",
        "/sys",
        "/tmp",
        "/work",
        "/etc",
    ] {
        points.insert(MountPoint::Dir(PathBuf::from(dir)));
    }
    points.insert(MountPoint::File(PathBuf::from(REPORT_TARGET)));
    for table in crate::local::plan::ETC_TABLES {
        if Path::new(table).exists() {
            points.insert(MountPoint::File(PathBuf::from(table)));
        }
    }
    if network == NetworkMode::PublicEgress {
        for (_, target) in crate::local::plan::egress_read_only() {
            add_parents(&mut points, &target);
            points.insert(MountPoint::File(target));
        }
    }
    let mut sorted: Vec<MountPoint> = points.into_iter().collect();
    sorted.sort_by(|left, right| point_path(left).cmp(point_path(right)));
    sorted
}

fn point_path(point: &MountPoint) -> &Path {
    match point {
        MountPoint::File(path) | MountPoint::Dir(path) => path,
    }
}

/// The sandbox's minimal `/etc`, written into the read-only root: the same as the local
/// backend's.
pub(crate) fn etc_files() -> Vec<(&'static str, String)> {
    crate::local::plan::etc_files()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::PythonPin;

    fn runtime() -> Runtime {
        Runtime {
            version: String::from("3.11.2"),
            pin: PythonPin {
                major: 3,
                minor: 11,
            },
            executable: PathBuf::from("/usr/bin/python3.11"),
            stdlib: PathBuf::from("/usr/lib/python3.11"),
            stdlib_module_names: Arc::new(vec![String::from("os")]),
            mounts: vec![
                RuntimeMount::File {
                    source: PathBuf::from("/usr/bin/python3.11"),
                    target: PathBuf::from("/usr/bin/python3.11"),
                },
                RuntimeMount::File {
                    source: PathBuf::from("/usr/lib/x86_64-linux-gnu/libc.so.6"),
                    target: PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                },
                RuntimeMount::Dir {
                    source: PathBuf::from("/usr/lib/python3.11"),
                    target: PathBuf::from("/usr/lib/python3.11"),
                },
                RuntimeMount::Mask {
                    target: PathBuf::from("/usr/lib/python3.11/site-packages"),
                },
            ],
        }
    }

    fn spec() -> Value {
        spec_with_netns(None)
    }

    fn spec_with_netns(netns: Option<&Path>) -> Value {
        let runtime = runtime();
        let limits = Limits::default();
        config(&SpecInputs {
            runtime: &runtime,
            limits: &limits,
            host_id_base: 1_810_007_168,
            harness_dir: Path::new("/state/harness"),
            work_dir: Path::new("/state/scratch/sb-7/work"),
            report_file: Path::new("/state/scratch/sb-7/report"),
            netns,
        })
    }

    #[test]
    fn g11_egress_joins_the_platform_namespace_by_path_and_none_gets_a_new_one() {
        let namespaces = |spec: &Value| -> Vec<Value> {
            spec["linux"]["namespaces"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|namespace| namespace["type"] == "network")
                .cloned()
                .collect()
        };
        assert_eq!(namespaces(&spec()), [json!({"type": "network"})]);
        let egress = spec_with_netns(Some(Path::new("/proc/4242/fd/17")));
        assert_eq!(
            namespaces(&egress),
            [json!({"type": "network", "path": "/proc/4242/fd/17"})]
        );
    }

    fn mount<'a>(spec: &'a Value, destination: &str) -> &'a Value {
        spec["mounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|mount| mount["destination"] == destination)
            .unwrap_or_else(|| panic!("no mount at {destination}"))
    }

    fn options(mount: &Value) -> Vec<&str> {
        mount["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|option| option.as_str().unwrap())
            .collect()
    }

    #[test]
    fn g10_the_step_runs_unprivileged_without_capabilities_or_new_privileges() {
        let spec = spec();
        let process = &spec["process"];
        assert_eq!(process["user"]["uid"], SANDBOX_UID);
        assert_eq!(process["user"]["gid"], SANDBOX_UID);
        for map in ["uidMappings", "gidMappings"] {
            // One line, to the sandbox's own non-zero host range, covering the step's uid.
            assert_eq!(
                spec["linux"][map],
                json!([{"containerID": 0, "hostID": 1_810_007_168_u32, "size": IDS_PER_SANDBOX}]),
                "{map}"
            );
        }
        assert_eq!(process["noNewPrivileges"], true);
        for set in [
            "bounding",
            "effective",
            "inheritable",
            "permitted",
            "ambient",
        ] {
            assert_eq!(process["capabilities"][set], json!([]), "{set}");
        }
        assert_eq!(process["env"], json!([]));
        assert_eq!(process["cwd"], "/work");
        assert_eq!(process["args"][0], "/usr/bin/python3.11");
        assert_eq!(process["args"][1], "-I");
        assert_eq!(process["args"][2], "-S");
        let types: Vec<&str> = spec["linux"]["namespaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|namespace| namespace["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["pid", "network", "ipc", "uts", "mount", "user"]);
    }

    #[test]
    fn g10_every_limit_becomes_an_rlimit() {
        let spec = spec();
        let limits = Limits::default();
        let rlimits = spec["process"]["rlimits"].as_array().unwrap();
        let find = |name: &str| {
            rlimits
                .iter()
                .find(|rlimit| rlimit["type"] == name)
                .unwrap_or_else(|| panic!("no {name}"))
        };
        assert_eq!(
            find("RLIMIT_DATA")["hard"],
            crate::address_space(limits.memory_bytes)
        );
        assert_eq!(find("RLIMIT_NPROC")["hard"], u64::from(limits.pids));
        assert_eq!(find("RLIMIT_CPU")["soft"], limits.cpu_seconds);
        assert_eq!(find("RLIMIT_FSIZE")["hard"], limits.file_size_bytes);
        assert_eq!(find("RLIMIT_NOFILE")["hard"], limits.open_files);
        assert_eq!(find("RLIMIT_CORE")["hard"], 0);
    }

    #[test]
    fn g7_the_root_and_runtime_are_read_only_and_writable_places_are_noexec() {
        let spec = spec();
        assert_eq!(spec["root"]["readonly"], true);
        for target in [
            "/usr/bin/python3.11",
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/usr/lib/python3.11",
            HARNESS_TARGET,
        ] {
            assert!(options(mount(&spec, target)).contains(&"ro"), "{target}");
        }
        let mask = mount(&spec, "/usr/lib/python3.11/site-packages");
        assert_eq!(mask["type"], "tmpfs");
        assert!(options(mask).contains(&"ro"));
        for target in ["/work", "/tmp", REPORT_TARGET] {
            let found = options(mount(&spec, target));
            for option in ["noexec", "nosuid", "nodev"] {
                assert!(found.contains(&option), "{target} lacks {option}");
            }
        }
        assert!(
            options(mount(&spec, "/tmp"))
                .contains(&format!("size={}", Limits::default().tmp_bytes).as_str())
        );
        assert_eq!(mount(&spec, "/work")["source"], "/state/scratch/sb-7/work");
        // Nothing of the host's /sys or /dev is mounted: /sys is an empty read-only tmpfs.
        assert_eq!(mount(&spec, "/sys")["type"], "tmpfs");
        assert!(options(mount(&spec, "/sys")).contains(&"ro"));
        assert!(
            spec["mounts"]
                .as_array()
                .unwrap()
                .iter()
                .all(|mount| mount["source"] != "/dev" && mount["source"] != "/sys")
        );
    }

    #[test]
    fn g7_mount_points_list_parents_before_children() {
        let points = mount_points(&runtime(), NetworkMode::None);
        let position =
            |wanted: MountPoint| points.iter().position(|point| *point == wanted).unwrap();
        assert!(
            position(MountPoint::Dir(PathBuf::from("/usr")))
                < position(MountPoint::Dir(PathBuf::from("/usr/bin")))
        );
        assert!(
            position(MountPoint::Dir(PathBuf::from("/usr/bin")))
                < position(MountPoint::File(PathBuf::from("/usr/bin/python3.11")))
        );
        assert!(points.contains(&MountPoint::File(PathBuf::from(REPORT_TARGET))));
        assert!(points.contains(&MountPoint::Dir(PathBuf::from("/work"))));
        assert!(
            !points
                .iter()
                .any(|point| point_path(point).ends_with("site-packages"))
        );
    }
}
