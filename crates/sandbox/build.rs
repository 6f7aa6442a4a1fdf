//! Compiles the reviewed seccomp policy (`seccomp/x86_64.json`) to BPF at build time, so the
//! jail helper loads exactly the programs a reviewer read and nothing is assembled at run time.

use std::fs;
use std::path::PathBuf;

/// The filters the policy file must define, in the order the helper installs them. The kernel
/// runs every installed filter and, between two errno answers, keeps the one installed last: so
/// the specific errnos (`deny`: EPERM, `socket_family`: EAFNOSUPPORT) win over the allowlist's
/// ENOSYS for unknown syscalls.
const FILTERS: [&str; 3] = ["allowlist", "deny", "socket_family"];

fn main() {
    println!("cargo:rerun-if-changed=seccomp/x86_64.json");
    println!("cargo:rerun-if-changed=build.rs");
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    let policy_path = manifest_dir.join("seccomp").join("x86_64.json");
    let policy = match fs::read(&policy_path) {
        Ok(bytes) => bytes,
        Err(error) => panic!("cannot read {}: {error}", policy_path.display()),
    };
    let compiled =
        match seccompiler::compile_from_json(policy.as_slice(), seccompiler::TargetArch::x86_64) {
            Ok(map) => map,
            Err(error) => panic!(
                "the seccomp policy {} does not compile: {error}",
                policy_path.display()
            ),
        };
    for name in FILTERS {
        let Some(program) = compiled.get(name) else {
            panic!("the seccomp policy has no filter named {name}");
        };
        // Each sock_filter is written as its 8 bytes in native order: code (u16), jt (u8),
        // jf (u8), k (u32); the helper reads them back the same way.
        let mut bytes = Vec::with_capacity(program.len() * 8);
        for instruction in program {
            bytes.extend_from_slice(&instruction.code.to_ne_bytes());
            bytes.push(instruction.jt);
            bytes.push(instruction.jf);
            bytes.extend_from_slice(&instruction.k.to_ne_bytes());
        }
        let target = out_dir.join(format!("seccomp_{name}.bpf"));
        if let Err(error) = fs::write(&target, bytes) {
            panic!("cannot write {}: {error}", target.display());
        }
    }
    if compiled.len() != FILTERS.len() {
        panic!(
            "the seccomp policy defines {} filters, the helper installs {}",
            compiled.len(),
            FILTERS.len()
        );
    }
}
