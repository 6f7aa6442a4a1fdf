//! The jail plan: everything the helper needs to build one sandbox, computed by the platform
//! and handed to the freshly exec'd helper over a pipe as one JSON line. The helper decides
//! nothing itself; it only carries the plan out in a fixed order and fails closed.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// This build of the jail (a hash of the sandbox crate's sources, see `build.rs`).
pub const BUILD: &str = env!("STEPWARD_JAIL_BUILD");

/// The file descriptors of the helper, as the platform arranges them before exec.
pub mod fds {
    /// The request pipe; becomes Python's stdin (the harness reads the request from it).
    pub const REQUEST: i32 = 0;
    /// The step's stdout.
    pub const STDOUT: i32 = 1;
    /// The step's stderr.
    pub const STDERR: i32 = 2;
    /// The report channel of the harness (untrusted: the step shares its interpreter).
    pub const REPORT: i32 = 3;
    /// The plan (one JSON line), then held open by the platform as a lifeline: end of file
    /// means the platform is gone and the helper kills the sandbox.
    pub const CONTROL: i32 = 4;
    /// Status lines from the helper to the platform (see [`super::Status`]).
    pub const STATUS: i32 = 5;
    /// The lowest descriptor the helper closes at start: nothing else is inherited.
    pub const FIRST_UNEXPECTED: u32 = 6;
}

/// The platform-made network namespace of a public_egress sandbox: the file to open (the
/// platform's descriptor on it, `/proc/<platform>/fd/<n>`) and the namespace's device and
/// inode, which the opened file must have, so a descriptor number reused by anything else can
/// never put the sandbox into another namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetnsPlan {
    pub path: PathBuf,
    pub device: u64,
    pub inode: u64,
}

/// The plan for one sandbox.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The build of the platform that made the plan ([`BUILD`]): a helper of another build
    /// refuses it.
    pub build: String,
    /// The unprivileged host uid/gid the sandbox user maps to (never 0).
    pub host_uid: u32,
    pub host_gid: u32,
    /// The sandbox user's uid/gid inside its user namespace.
    pub sandbox_uid: u32,
    pub sandbox_gid: u32,
    /// The UTS namespace's hostname.
    pub hostname: String,
    /// An empty host directory over which the child mounts its tmpfs root (in its own mount
    /// namespace, so the host never sees it).
    pub root_dir: PathBuf,
    /// Size cap of the root tmpfs (it holds only mount points and /etc).
    pub root_size_bytes: u64,
    /// What goes into the root, in order.
    pub mounts: Vec<MountStep>,
    /// Small files written into the root before it turns read-only (/etc/passwd, ...).
    pub files: Vec<FileStep>,
    /// The v2 group the child is cloned into (`CLONE_INTO_CGROUP`).
    pub cgroup_v2_dir: Option<PathBuf>,
    /// v1 `tasks` files of the sandbox's groups: the helper moves its own (only) thread into
    /// each right before the clone, so the child is a member from its first instruction.
    pub cgroup_v1_tasks: Vec<PathBuf>,
    /// v1 `tasks` files of the platform's own groups: the helper moves back right after the
    /// clone, so it neither counts against the sandbox's limits nor dies with its members.
    pub cgroup_v1_home_tasks: Vec<PathBuf>,
    /// When the cgroup namespace is created (see [`CgroupNamespaceTiming`]).
    pub cgroup_namespace: CgroupNamespaceTiming,
    /// A network namespace to join before the clone (public_egress); `None` gives the sandbox
    /// a new, empty network namespace (loopback only).
    pub netns: Option<NetnsPlan>,
    /// Resource limits set right before the identity change.
    pub rlimits: Vec<Rlimit>,
    /// Landlock rules (applied where the kernel has Landlock).
    pub landlock: LandlockPlan,
    /// The working directory of the program (inside the new root).
    pub cwd: PathBuf,
    /// The program run at the end; the environment is always empty.
    pub exec_path: PathBuf,
    pub exec_argv: Vec<String>,
    /// TEST ONLY: run the same jail with the seccomp filter off, for control probes. The field
    /// does not exist in normal builds, and `deny_unknown_fields` makes a normal helper reject
    /// a plan that carries it.
    #[cfg(feature = "test-controls")]
    #[serde(default)]
    pub test_seccomp: SeccompSwitch,
    /// TEST ONLY: mount the whole procfs, as on a kernel without `subset=pid`, so that tests
    /// check the masks on this kernel too. Absent from normal builds, like `test_seccomp`.
    #[cfg(feature = "test-controls")]
    #[serde(default)]
    pub test_whole_proc: bool,
}

/// When the child gets its cgroup namespace. A cgroup namespace is rooted at the groups its
/// creator is in at that moment: with every controller in v2 the clone itself lands in the
/// sandbox's group (`CLONE_INTO_CGROUP`), so the namespace is part of the one clone; with v1
/// controllers the child joins its groups only after the clone, so it unshares the namespace
/// right after the helper attached and released it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CgroupNamespaceTiming {
    AtClone,
    AfterAttach,
}

/// Whether the seccomp filter is loaded (test builds only).
#[cfg(feature = "test-controls")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SeccompSwitch {
    #[default]
    Enforced,
    DisabledForControlProbe,
}

/// How a node appears under the new root. Targets are absolute paths as seen in the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MountStep {
    /// A directory in the root tmpfs.
    Dir { target: PathBuf, mode: u32 },
    /// A read-only bind (nosuid, nodev) of a host file or directory tree.
    BindReadOnly { source: PathBuf, target: PathBuf },
    /// A writable bind that is nosuid, nodev and noexec (the `/work` copy).
    BindWritableNoExec { source: PathBuf, target: PathBuf },
    /// A device node bound from the host (nosuid, noexec; device access kept).
    BindDevice { source: PathBuf, target: PathBuf },
    /// A writable tmpfs with a size and inode cap, nosuid, nodev, noexec.
    Tmpfs {
        target: PathBuf,
        size_bytes: u64,
        inodes: u64,
        mode: u32,
    },
    /// An empty read-only tmpfs laid over a directory (hides its contents).
    MaskDir { target: PathBuf },
    /// `/dev/null` bound read-only over a file (hides it); skipped when the file is absent.
    MaskFile { target: PathBuf },
    /// A fresh proc for the sandbox's pid namespace. Failure is fatal: without it the
    /// sandbox would need the host's.
    Proc { target: PathBuf },
    /// An existing path (under the new root) re-bound read-only, recursively; skipped when
    /// absent.
    ReadOnly { target: PathBuf },
    /// A symbolic link in the root tmpfs.
    Symlink { target: PathBuf, points_to: PathBuf },
}

/// A file written into the root tmpfs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStep {
    pub target: PathBuf,
    pub contents: String,
    pub mode: u32,
}

/// One resource limit: the soft limit `value` and the hard limit `ceiling` (at least `value`).
/// A sandbox built for a known invocation has both equal; one prepared ahead of its invocation
/// (warm, or built ahead) has the hard limit at the operator's maximum, so that the claim can
/// set the invocation's limit by lowering it (raising a hard limit needs CAP_SYS_RESOURCE,
/// which the platform's root may lack), and the claim always lowers it to the soft limit
/// before anything of the invocation goes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rlimit {
    pub resource: RlimitResource,
    pub value: u64,
    pub ceiling: u64,
}

/// The limited resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RlimitResource {
    AddressSpace,
    Data,
    Processes,
    CpuSeconds,
    FileSize,
    OpenFiles,
    CoreSize,
}

/// Landlock: read (and execute) everywhere under the (already minimal) root, write only where
/// the plan says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockPlan {
    pub read_execute: Vec<PathBuf>,
    pub read_write: Vec<PathBuf>,
    /// Device files that may be written (`/dev/null`).
    pub write_files: Vec<PathBuf>,
}
