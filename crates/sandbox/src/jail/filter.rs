//! Loads the seccomp programs compiled from `seccomp/x86_64.json` at build time.
//!
//! Three programs are installed in this order: `allowlist` (everything not listed answers
//! ENOSYS, so libc falls back cleanly; `clone3` is deliberately absent so `clone`'s flags stay
//! inspectable), `deny` (EPERM for the dangerous syscalls and arguments: ptrace, mounts,
//! namespaces, bpf, io_uring, userfaultfd, keyctl, perf_event_open, memfd_create, module
//! loading, TIOCSTI, raw sockets) and `socket_family` (EAFNOSUPPORT for every family but
//! AF_UNIX, AF_INET and AF_INET6). The kernel runs all of them and, between two errno answers,
//! keeps the one installed last. Each program starts with seccompiler's architecture check,
//! which kills the process for a foreign architecture; x32 syscall numbers match no rule and
//! answer ENOSYS.
//!
//! Each program is a binary search on the syscall number over seccompiler's rules (built in
//! `build.rs`): about 20 instructions to answer any syscall instead of up to 500 for the last
//! one of the allowlist's chain, and a much shorter allowlist program (its rules look at no
//! argument, so its chain goes entirely). That matters for the syscalls whose
//! answer depends on their arguments (`clone`, `ioctl`, `socket`, `socketpair`), which the
//! kernel's action cache cannot answer, and at load, when the kernel runs every program once
//! per syscall number to build that cache. The chains are kept as [`LINEAR`]; a test runs
//! both layouts on every syscall number and the arguments the rules compare, and requires
//! the same answer.

use std::io;

const ALLOWLIST: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/seccomp_allowlist.bpf"));
const DENY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/seccomp_deny.bpf"));
const SOCKET_FAMILY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/seccomp_socket_family.bpf"));

/// The programs in installation order, with their names.
pub(crate) const PROGRAMS: [(&str, &[u8]); 3] = [
    ("allowlist", ALLOWLIST),
    ("deny", DENY),
    ("socket_family", SOCKET_FAMILY),
];

/// seccompiler's linear chains of the same programs, never installed by the jail: the
/// equivalence test's reference and the syscall benchmark's "before".
#[cfg_attr(not(any(test, feature = "test-controls")), allow(dead_code))]
pub(crate) const LINEAR: [(&str, &[u8]); 3] = [
    (
        "allowlist",
        include_bytes!(concat!(env!("OUT_DIR"), "/seccomp_allowlist.linear.bpf")),
    ),
    (
        "deny",
        include_bytes!(concat!(env!("OUT_DIR"), "/seccomp_deny.linear.bpf")),
    ),
    (
        "socket_family",
        include_bytes!(concat!(
            env!("OUT_DIR"),
            "/seccomp_socket_family.linear.bpf"
        )),
    ),
];

/// Decodes one program from its build-time bytes (8 bytes per instruction, native order).
pub(crate) fn decode(bytes: &[u8]) -> Vec<libc::sock_filter> {
    bytes
        .chunks_exact(8)
        .map(|chunk| libc::sock_filter {
            code: u16::from_ne_bytes([chunk[0], chunk[1]]),
            jt: chunk[2],
            jf: chunk[3],
            k: u32::from_ne_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]),
        })
        .collect()
}

/// Installs every program. Requires no_new_privs (set just before).
pub(crate) fn load_all() -> io::Result<()> {
    load(&PROGRAMS)
}

/// Installs `programs` in order.
pub(crate) fn load(programs: &[(&str, &[u8])]) -> io::Result<()> {
    for &(name, bytes) in programs {
        let mut program = decode(bytes);
        if program.is_empty() || bytes.len() % 8 != 0 {
            return Err(io::Error::other(format!(
                "the {name} program is empty or truncated"
            )));
        }
        let fprog = libc::sock_fprog {
            len: program.len() as libc::c_ushort,
            filter: program.as_mut_ptr(),
        };
        // SAFETY: the kernel copies the program described by `fprog`, which points into
        // `program`, alive for the whole call.
        let result = unsafe {
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &fprog as *const libc::sock_fprog as libc::c_ulong,
                0,
                0,
            )
        };
        if result == -1 {
            let error = io::Error::last_os_error();
            return Err(io::Error::new(error.kind(), format!("{name}: {error}")));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod layout_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g10_every_compiled_program_starts_with_the_architecture_check() {
        for (name, bytes) in PROGRAMS {
            let program = decode(bytes);
            assert!(program.len() > 4, "{name} is too short");
            // seccompiler's prologue loads seccomp_data.arch (offset 4) and compares it with
            // AUDIT_ARCH_X86_64.
            assert_eq!(
                program[0].code,
                (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
                "{name}"
            );
            assert_eq!(program[0].k, 4, "{name}");
            assert_eq!(program[1].k, 0xC000_003E, "{name}");
        }
    }
}
