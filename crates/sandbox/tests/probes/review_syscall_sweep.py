# A sweep over system calls that must never reach the kernel from a sandbox (x86_64 numbers),
# called raw with zero arguments, which are harmless even where a call did get through. The
# filter answers ENOSYS (not on the allowlist) or EPERM (explicitly denied); any other answer
# means the kernel itself looked at the call. Also the argument-level denials that the hostile
# suite does not cover yet: the remaining namespace flags of clone, TIOCLINUX, and prctl's
# PR_SET_MM (allowed syscall, refused by the kernel for lack of CAP_SYS_RESOURCE).
import ctypes
import os

NUMBERS = {
    "sysfs": 139, "syslog": 103, "uselib": 134, "ustat": 136, "personality": 135,
    "vhangup": 153, "modify_ldt": 154, "pivot_root": 155, "_sysctl": 156, "adjtimex": 159,
    "chroot": 161, "acct": 163, "settimeofday": 164, "swapon": 167, "swapoff": 168,
    "reboot": 169, "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173,
    "create_module": 174, "init_module": 175, "delete_module": 176, "quotactl": 179,
    "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197,
    "lookup_dcookie": 212, "remap_file_pages": 216, "clock_settime": 227, "mbind": 237,
    "set_mempolicy": 238, "kexec_load": 246, "add_key": 248, "request_key": 249,
    "keyctl": 250, "ioprio_set": 251, "migrate_pages": 256, "unshare": 272,
    "move_pages": 279, "perf_event_open": 298, "fanotify_init": 300,
    "name_to_handle_at": 303, "open_by_handle_at": 304, "clock_adjtime": 305,
    "setns": 308, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "finit_module": 313, "sched_setattr": 314, "seccomp": 317, "memfd_create": 319,
    "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "pkey_alloc": 330,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "clone3": 435, "pidfd_getfd": 438, "process_madvise": 440,
    "mount_setattr": 442, "quotactl_fd": 443, "memfd_secret": 447, "process_mrelease": 448,
    "set_mempolicy_home_node": 450, "statmount": 457, "listmount": 458,
    "lsm_set_self_attr": 460, "setxattrat": 463, "removexattrat": 466,
}

CLONE = 56
IOCTL = 16
PRCTL = 157
SIGCHLD = 17
CLONE_FLAGS = {
    "clone_newcgroup": 0x02000000, "clone_newuts": 0x04000000,
    "clone_newipc": 0x08000000, "clone_newpid": 0x20000000,
}


def _clone(flags):
    result, error = raw_syscall(CLONE, flags | SIGCHLD, 0, 0, 0, 0)
    if result == 0:
        os._exit(0)
    if result > 0:
        os.waitpid(result, 0)
    return result, error


def main(which):
    answers = {}
    if which == "sweep":
        for name, number in NUMBERS.items():
            result, error = raw_syscall(number, 0, 0, 0, 0, 0, 0)
            if result >= 0 and name in ("pkey_alloc",):
                raw_syscall(331, result)  # pkey_free
            answers[name] = [result, error]
        for name, flags in CLONE_FLAGS.items():
            answers[name] = list(_clone(flags))
        # PR_SET_MM (35), PR_SET_MM_START_CODE (1), address 0.
        answers["prctl_set_mm"] = list(raw_syscall(PRCTL, 35, 1, 0, 0, 0))
    elif which == "tioclinux":
        subcode = ctypes.c_char(b"\x06")  # TIOCL_GETSHIFTSTATE: harmless even on a console
        answers["tioclinux"] = list(raw_syscall(IOCTL, 0, 0x541C, ctypes.byref(subcode)))
    else:
        raise ValueError(which)
    return answers
