//! Helpers of the egress tests: commands, test-made namespaces with drop guards, and the sweep
//! of namespaces left by an earlier test process that died.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const IP: &str = "/usr/sbin/ip";
pub const NFT: &str = "/usr/sbin/nft";
pub const NSENTER: &str = "/usr/bin/nsenter";
pub const SYSCTL: &str = "/usr/sbin/sysctl";
pub const PYTHON: &str = "/usr/bin/python3";

/// Test namespace names start with this; sandbox namespaces of the tests with `SANDBOX_PREFIX`.
pub const TEST_NETNS_PREFIX: &str = "swx";
pub const SANDBOX_PREFIX: &str = "swt";

/// Runs a command and returns its output, whatever the exit status.
pub fn output(program: &str, arguments: &[&str]) -> Output {
    Command::new(program)
        .args(arguments)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|error| panic!("could not start {program}: {error}"))
}

/// Runs a command that must succeed; returns its stdout.
pub fn run(program: &str, arguments: &[&str]) -> String {
    let result = output(program, arguments);
    assert!(
        result.status.success(),
        "{program} {arguments:?} failed: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    String::from_utf8_lossy(&result.stdout).into_owned()
}

/// Runs `program arguments` inside the network namespace at `netns`; must succeed.
pub fn run_in(netns: &Path, program: &str, arguments: &[&str]) -> String {
    let enter = format!("--net={}", netns.display());
    let mut full = vec![enter.as_str(), "--", program];
    full.extend_from_slice(arguments);
    run(NSENTER, &full)
}

/// Like `run_in`, but returns the output whatever the status.
pub fn output_in(netns: &Path, program: &str, arguments: &[&str]) -> Output {
    let enter = format!("--net={}", netns.display());
    let mut full = vec![enter.as_str(), "--", program];
    full.extend_from_slice(arguments);
    output(NSENTER, &full)
}

/// A tag unique to this test: the pid (so a later sweep can tell a dead owner) and randomness
/// (several tests may share a process under `cargo test`).
pub fn unique_tag() -> String {
    let mut bytes = [0u8; 2];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut bytes)
        .unwrap();
    format!("{}n{:02x}{:02x}", std::process::id(), bytes[0], bytes[1])
}

/// A network namespace made by a test; deleted on drop (processes inside must be gone first).
pub struct TestNetns {
    pub name: String,
    pub path: PathBuf,
}

impl TestNetns {
    pub fn create(name: String) -> TestNetns {
        run(IP, &["netns", "add", &name]);
        let path = Path::new("/run/netns").join(&name);
        let namespace = TestNetns { name, path };
        // Refuse to go on if the "namespace" were the test's own: every sysctl the tests write
        // goes through one of these, and must never reach the real host.
        assert_ne!(
            inode(&namespace.path),
            inode(Path::new("/proc/self/ns/net")),
            "a test namespace must not be the host's"
        );
        namespace
    }

    /// Writes a sysctl inside this test namespace (never the host's).
    pub fn set_sysctl(&self, assignment: &str) {
        assert_ne!(inode(&self.path), inode(Path::new("/proc/self/ns/net")));
        run_in(&self.path, SYSCTL, &["-q", "-w", assignment]);
    }

    /// `ip -batch` inside this namespace.
    pub fn ip_batch(&self, commands: &str) {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), commands).unwrap();
        run(
            IP,
            &[
                "-netns",
                &self.name,
                "-batch",
                &file.path().display().to_string(),
            ],
        );
    }

    /// The interface names in this namespace.
    pub fn links(&self) -> Vec<String> {
        run(IP, &["-netns", &self.name, "-o", "link", "show"])
            .lines()
            .filter_map(|line| line.split(": ").nth(1))
            .map(|name| name.split('@').next().unwrap_or(name).to_owned())
            .collect()
    }
}

impl Drop for TestNetns {
    fn drop(&mut self) {
        let _ = output(IP, &["netns", "delete", &self.name]);
    }
}

fn inode(path: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt as _;
    let metadata = std::fs::metadata(path).unwrap();
    (metadata.dev(), metadata.ino())
}

/// Deletes the test and sandbox namespaces of earlier test processes that are no longer alive
/// (a test killed before its drop guards ran). Names carry the owner's pid: `swx<pid>n<hex>-…`.
pub fn sweep_dead_test_namespaces() {
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name
            .strip_prefix(TEST_NETNS_PREFIX)
            .or_else(|| name.strip_prefix(SANDBOX_PREFIX))
        else {
            continue;
        };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() || !rest[digits.len()..].starts_with('n') {
            continue;
        }
        if !Path::new("/proc").join(&digits).exists() {
            let _ = output(IP, &["netns", "delete", &name]);
        }
    }
}

/// The real host's IPv4 forwarding setting, read (never written) to prove the tests leave it
/// alone.
pub fn real_host_ip_forward() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward")
        .unwrap()
        .trim()
        .to_owned()
}
