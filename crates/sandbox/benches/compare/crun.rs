//! crun, the OCI runtime the sandbox is compared against: a generated bundle (read-only binds
//! of /usr, /lib and /lib64, every namespace, root mapped to one unprivileged host id) and a
//! driver that runs it inside a private mount namespace, where this host's hybrid cgroup
//! layout can be presented to crun as plain v1.

use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::{
    BASELINE_SCRIPT, BenchError, CRUN_DRIVER, MOUNT, OutputCheck, PYTHON, Settings, UNSHARE,
    make_dir, timed_command, unique_nanos,
};

/// A generated OCI bundle: a read-only root of bind mounts of /usr, /lib, /lib64, every
/// namespace, the container's root mapped to one unprivileged host id.
pub(crate) struct CrunBundle {
    dir: PathBuf,
}

impl CrunBundle {
    pub(crate) fn write(scratch: &Path, host_id: u32) -> Result<CrunBundle, BenchError> {
        let dir = make_dir(scratch, "crun-bundle", 0o755)?;
        for mount_point in ["usr", "lib", "lib64", "proc", "dev", "tmp"] {
            make_dir(&dir.join("rootfs"), mount_point, 0o755)?;
        }
        let bind = |path: &str| {
            serde_json::json!({"destination": path, "type": "bind", "source": path,
                "options": ["rbind", "ro", "nosuid", "nodev"]})
        };
        let config = serde_json::json!({
            "ociVersion": "1.0.2",
            "process": {
                "terminal": false,
                "user": {"uid": 0, "gid": 0},
                "args": [PYTHON, "-I", "-S", "-c", BASELINE_SCRIPT],
                "env": [],
                "cwd": "/",
                "noNewPrivileges": true,
                "capabilities": {"bounding": [], "effective": [], "permitted": [], "inheritable": [], "ambient": []}
            },
            "root": {"path": "rootfs", "readonly": true},
            "hostname": "bench",
            "mounts": [
                bind("/usr"), bind("/lib"), bind("/lib64"),
                {"destination": "/proc", "type": "proc", "source": "proc"},
                {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755", "size=64k"]},
                {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777", "size=64m"]}
            ],
            "linux": {
                "uidMappings": [{"containerID": 0, "hostID": host_id, "size": 1}],
                "gidMappings": [{"containerID": 0, "hostID": host_id, "size": 1}],
                "namespaces": [
                    {"type": "user"}, {"type": "pid"}, {"type": "mount"}, {"type": "ipc"},
                    {"type": "uts"}, {"type": "network"}, {"type": "cgroup"}
                ]
            }
        });
        let path = dir.join("config.json");
        std::fs::write(&path, config.to_string()).map_err(|source| BenchError::Io {
            action: "cannot write",
            path: path.clone(),
            source,
        })?;
        Ok(CrunBundle { dir })
    }

    /// Runs the bundle `count` times through the driver; returns the time of each `crun run`.
    pub(crate) fn run(
        &self,
        settings: &Settings,
        crun: &Path,
        count: usize,
    ) -> Result<Vec<Duration>, BenchError> {
        let own_namespace = namespace_inode("/proc/self/ns/mnt")?;
        let exe = std::env::current_exe().map_err(|source| BenchError::Io {
            action: "cannot find",
            path: PathBuf::from("/proc/self/exe"),
            source,
        })?;
        let mut command = Command::new(UNSHARE);
        command
            .args(["--mount", "--propagation", "private", "--"])
            .arg(exe)
            .arg(CRUN_DRIVER)
            .arg(crun)
            .arg(&self.dir)
            .arg(settings.name("crun"))
            .arg(count.to_string())
            .arg(own_namespace.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let output = command.output().map_err(|source| BenchError::Spawn {
            command: format!("{command:?}"),
            source,
        })?;
        if !output.status.success() {
            return Err(BenchError::CommandFailed {
                command: format!("{command:?}"),
                status: output.status.to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        let samples: Vec<Duration> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| line.trim().parse::<u64>().ok())
            .map(Duration::from_nanos)
            .collect();
        if samples.len() != count {
            return Err(BenchError::CommandFailed {
                command: format!("{command:?}"),
                status: format!("{} timings for {count} runs", samples.len()),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        Ok(samples)
    }
}

fn namespace_inode(path: &str) -> Result<u64, BenchError> {
    std::fs::metadata(path)
        .map(|metadata| metadata.ino())
        .map_err(|source| BenchError::Io {
            action: "cannot stat",
            path: PathBuf::from(path),
            source,
        })
}

/// The crun driver, run by `unshare --mount --propagation private`. crun 1.8 refuses a hybrid
/// cgroup layout whose v2 hierarchy holds a controller (this host's has hugetlb); in this
/// private mount namespace the v2 mount is covered with an empty tmpfs, so crun sees plain v1
/// and creates its real v1 cgroups, like the local backend does. Prints one duration (in
/// nanoseconds) per `crun run`.
pub(crate) fn crun_driver(arguments: &[String]) -> Result<(), BenchError> {
    let [crun, bundle, id_prefix, count, parent_namespace] = arguments else {
        return Err(BenchError::Setting {
            name: "crun driver arguments",
            value: arguments.join(" "),
            reason: "expected CRUN BUNDLE ID_PREFIX COUNT PARENT_MOUNT_NAMESPACE",
        });
    };
    let count: usize = count.parse().map_err(|_| BenchError::Setting {
        name: "crun driver count",
        value: count.clone(),
        reason: "must be a whole number",
    })?;
    // The mount below must never land in the host's namespace.
    if namespace_inode("/proc/self/ns/mnt")?.to_string() == *parent_namespace {
        return Err(BenchError::Unsafe {
            detail: String::from("the crun driver is not in a mount namespace of its own"),
        });
    }
    let unified = Path::new("/sys/fs/cgroup/unified");
    let hybrid_with_controllers = std::fs::read_to_string(unified.join("cgroup.controllers"))
        .is_ok_and(|controllers| !controllers.trim().is_empty());
    if hybrid_with_controllers {
        timed_command(
            Command::new(MOUNT)
                .args(["-t", "tmpfs", "-o", "size=1m,mode=755", "stepward-bench"])
                .arg(unified),
            OutputCheck::Nothing,
        )?;
    }
    let mut stdout = std::io::stdout().lock();
    for run in 0..count {
        let id = format!("{id_prefix}-{run}-{}", unique_nanos());
        let result = timed_command(
            Command::new(crun)
                .args(["run", "--bundle"])
                .arg(bundle)
                .arg(&id),
            OutputCheck::StepResult,
        );
        // `crun run` deletes the container when it exits; this only makes sure nothing is
        // left after a failure, so it is outside the timing.
        let _ = Command::new(crun)
            .args(["delete", "-f"])
            .arg(&id)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let elapsed = result?;
        let _ = writeln!(stdout, "{}", elapsed.as_nanos());
    }
    Ok(())
}
