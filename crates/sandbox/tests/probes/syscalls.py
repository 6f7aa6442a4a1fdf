# Each denied syscall, called raw with arguments chosen so that, without the seccomp filter, the
# kernel itself answers with something other than the filter's errno (success, EFAULT, EBADF,
# EINVAL, ENOTTY): the control run then proves the call really reaches the kernel.
import ctypes
import os
import socket

NR = {
    "ptrace": 101, "mount": 165, "umount2": 166, "unshare": 272, "setns": 308,
    "bpf": 321, "io_uring_setup": 425, "userfaultfd": 323, "keyctl": 250,
    "perf_event_open": 298, "clone": 56, "clone3": 435, "memfd_create": 319,
    "ioctl": 16, "socket": 41, "getpid": 39, "open_tree": 428, "chroot": 161,
    "add_key": 248, "process_vm_readv": 310, "inotify_init": 253, "inotify_init1": 294,
    "inotify_add_watch": 254, "fcntl": 72, "fanotify_init": 300, "sysinfo": 99,
}
F_SETLEASE = 1024
F_NOTIFY = 1026
DN_ACCESS = 0x1
DN_MULTISHOT = 0x80000000
F_RDLCK = 0
X32_SYSCALL_BIT = 0x40000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
SIGCHLD = 17
BAD_POINTER = 1


def _clone_child_exits(flags):
    # A raw clone without a new stack behaves like fork: the child returns 0 here and must leave
    # at once, before it runs any more of the probe.
    result, error = raw_syscall(NR["clone"], flags, 0, 0, 0, 0)
    if result == 0:
        os._exit(0)
    if result > 0:
        os.waitpid(result, 0)
    return result, error


def _perf_attr():
    attr = ctypes.create_string_buffer(64)
    ctypes.c_uint32.from_buffer(attr, 0).value = 1      # PERF_TYPE_SOFTWARE
    ctypes.c_uint32.from_buffer(attr, 4).value = 64     # PERF_ATTR_SIZE_VER0
    ctypes.c_uint64.from_buffer(attr, 8).value = 1      # PERF_COUNT_SW_TASK_CLOCK
    ctypes.c_uint64.from_buffer(attr, 40).value = 1 | 32 | 64  # disabled, exclude_kernel, _hv
    return attr


def run_case(case):
    if case == "ptrace_traceme":
        return raw_syscall(NR["ptrace"], 0, 0, 0, 0)
    if case == "mount":
        # A bad target pointer: the kernel answers EFAULT before any permission check.
        return raw_syscall(NR["mount"], ctypes.c_char_p(b"none"), BAD_POINTER,
                           ctypes.c_char_p(b"tmpfs"), 0, 0)
    if case == "umount2":
        return raw_syscall(NR["umount2"], BAD_POINTER, 0)
    if case == "open_tree":
        return raw_syscall(NR["open_tree"], -100, ctypes.c_char_p(b"/"), 0)
    if case == "chroot":
        return raw_syscall(NR["chroot"], BAD_POINTER)
    if case == "unshare_user":
        return raw_syscall(NR["unshare"], CLONE_NEWUSER)
    if case == "setns":
        return raw_syscall(NR["setns"], -1, 0)
    if case == "bpf":
        return raw_syscall(NR["bpf"], 0, BAD_POINTER, 8)
    if case == "io_uring_setup":
        params = ctypes.create_string_buffer(120)
        result, error = raw_syscall(NR["io_uring_setup"], 1, params)
        if result >= 0:
            os.close(result)
        return result, error
    if case == "userfaultfd":
        result, error = raw_syscall(NR["userfaultfd"], 1)  # UFFD_USER_MODE_ONLY
        if result >= 0:
            os.close(result)
        return result, error
    if case == "keyctl":
        # KEYCTL_GET_KEYRING_ID of the session keyring, creating it if needed.
        return raw_syscall(NR["keyctl"], 0, -3, 1)
    if case == "add_key":
        return raw_syscall(NR["add_key"], ctypes.c_char_p(b"user"), ctypes.c_char_p(b"x"),
                           ctypes.c_char_p(b"v"), 1, -3)
    if case == "perf_event_open":
        result, error = raw_syscall(NR["perf_event_open"], _perf_attr(), 0, -1, -1, 0)
        if result >= 0:
            os.close(result)
        return result, error
    if case == "clone_newuser":
        return _clone_child_exits(CLONE_NEWUSER | SIGCHLD)
    if case == "clone_newns":
        # With a new user namespace, the kernel grants the mount namespace without privilege.
        return _clone_child_exits(CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD)
    if case == "clone_newnet":
        return _clone_child_exits(CLONE_NEWUSER | CLONE_NEWNET | SIGCHLD)
    if case == "clone3":
        # Size 0 is invalid: the kernel says EINVAL; the filter says ENOSYS before looking.
        return raw_syscall(NR["clone3"], 0, 0)
    if case == "memfd_create":
        result, error = raw_syscall(NR["memfd_create"], ctypes.c_char_p(b"probe"), 0)
        if result >= 0:
            os.close(result)
        return result, error
    if case == "tiocsti":
        character = ctypes.c_char(b"x")
        return raw_syscall(NR["ioctl"], 0, 0x5412, ctypes.byref(character))
    if case == "process_vm_readv":
        return raw_syscall(NR["process_vm_readv"], os.getpid(), 0, 0, 0, 0, 0)
    if case.startswith("socket_"):
        family, kind, protocol = {
            "socket_netlink": (socket.AF_NETLINK, socket.SOCK_RAW, 0),
            "socket_packet": (17, socket.SOCK_RAW, 0),
            "socket_vsock": (40, socket.SOCK_STREAM, 0),
            # Protocol 300 is out of range: the kernel says EINVAL after the filter's check
            # on the type would have said EPERM.
            "socket_inet_raw": (socket.AF_INET, socket.SOCK_RAW, 300),
            "socket_inet6_raw": (socket.AF_INET6, socket.SOCK_RAW, 300),
        }[case]
        result, error = raw_syscall(NR["socket"], family, kind, protocol)
        if result >= 0:
            os.close(result)
        return result, error
    if case in ("inotify_init", "inotify_init1"):
        result, error = raw_syscall(NR[case], 0)
        if result >= 0:
            os.close(result)
        return result, error
    if case == "inotify_add_watch":
        # Descriptor -1: the kernel answers EBADF; the filter answers before it looks.
        return raw_syscall(NR["inotify_add_watch"], -1, ctypes.c_char_p(b"/"), 0x20)
    if case == "dnotify":
        folder = os.open("/tmp", os.O_RDONLY | os.O_DIRECTORY)
        try:
            return raw_syscall(NR["fcntl"], folder, F_NOTIFY, DN_ACCESS | DN_MULTISHOT)
        finally:
            os.close(folder)
    if case == "setlease":
        with open("/tmp/lease", "w") as handle:
            handle.write("x")
        file = os.open("/tmp/lease", os.O_RDONLY)
        try:
            return raw_syscall(NR["fcntl"], file, F_SETLEASE, F_RDLCK)
        finally:
            os.close(file)
    if case == "fanotify_init":
        # FAN_CLASS_NOTIF | FAN_REPORT_FID: what an unprivileged process may ask for.
        result, error = raw_syscall(NR["fanotify_init"], 0x200, os.O_RDONLY)
        if result >= 0:
            os.close(result)
        return result, error
    if case == "sysinfo":
        buffer = ctypes.create_string_buffer(128)
        return raw_syscall(NR["sysinfo"], buffer)
    if case == "x32_getpid":
        return raw_syscall(X32_SYSCALL_BIT | NR["getpid"])
    raise ValueError("unknown case " + case)


def main(case):
    result, error = run_case(case)
    return {"case": case, "result": result, "errno": error}
