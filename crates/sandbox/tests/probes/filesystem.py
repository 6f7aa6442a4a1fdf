# The host's files and the sandbox's own runtime: what can be read, written or executed.
import json
import os
import shutil
import stat
import subprocess
import sys


def _try_read(path):
    try:
        with open(path, "rb") as handle:
            return {"ok": True, "data": handle.read(4096).decode("utf-8", "replace")}
    except OSError as error:
        return {"ok": False, "errno": error.errno}


def _try_open_for_write(path):
    # Opens only: a probe never writes a host setting. If the open succeeds, it is closed at
    # once and reported as a failure of the sandbox.
    try:
        descriptor = os.open(path, os.O_WRONLY)
    except OSError as error:
        return {"opened": False, "errno": error.errno}
    os.close(descriptor)
    return {"opened": True}


def _try_create(path):
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755)
    except OSError as error:
        return {"created": False, "errno": error.errno}
    os.close(descriptor)
    os.unlink(path)
    return {"created": True}


def _try_run(path):
    try:
        completed = subprocess.run([path], capture_output=True, timeout=10)
        return {"ran": True, "code": completed.returncode}
    except OSError as error:
        return {"ran": False, "errno": error.errno}


def _copy_executable(folder):
    # A copy of the interpreter itself, and a script with a shebang to it, in a writable folder.
    binary = os.path.join(folder, "python-copy")
    shutil.copyfile(sys.executable, binary)
    os.chmod(binary, 0o755)
    script = os.path.join(folder, "script.py")
    with open(script, "w") as handle:
        handle.write("#!%s\nprint('escaped')\n" % sys.executable)
    os.chmod(script, 0o755)
    return {"binary": _try_run(binary), "script": _try_run(script)}


def _try_load_library(folder):
    # A shared library copied to a writable folder must not load: noexec forbids PROT_EXEC.
    import ctypes
    import _ctypes
    source = getattr(_ctypes, "__file__", None)
    if source is None:
        return {"loaded": None, "detail": "_ctypes is built in"}
    target = os.path.join(folder, "copied.so")
    shutil.copyfile(source, target)
    try:
        ctypes.CDLL(target)
        return {"loaded": True}
    except OSError as error:
        return {"loaded": False, "detail": str(error)}


def _proc_exe():
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        path = "/proc/%s/exe" % name
        try:
            target = os.readlink(path)
        except OSError as error:
            target = "unreadable: %d" % error.errno
        found[name] = {"target": target, "write": _try_open_for_write(path)}
    return found


def main(host_paths, proc_sys_paths):
    stdlib = os.path.dirname(json.__file__)
    devices = sorted(os.listdir("/dev"))
    try:
        os.mknod("/tmp/null-copy", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        made_device = True
    except OSError as error:
        made_device = error.errno
    return {
        "host_reads": {path: _try_read(path) for path in host_paths},
        "runtime_writes": {
            "interpreter": _try_open_for_write(os.path.realpath(sys.executable)),
            "stdlib_module": _try_open_for_write(json.__file__),
            "stdlib_new_file": _try_create(os.path.join(stdlib, "planted.py")),
            "root_new_file": _try_create("/planted"),
            "etc_new_file": _try_create("/etc/planted"),
            "usr_new_file": _try_create("/usr/planted"),
        },
        "proc_sys": {path: _try_open_for_write(path) for path in proc_sys_paths},
        "proc_exe": _proc_exe(),
        "sys_listing": sorted(os.listdir("/sys")) if os.path.isdir("/sys") else None,
        "proc_listing": sorted(os.listdir("/proc")),
        "own_network_devices": _try_read("/proc/self/net/dev"),
        "release_agents": {
            path: _try_open_for_write(path)
            for path in ["/sys/fs/cgroup/release_agent", "/sys/fs/cgroup/memory/release_agent",
                         "/sys/fs/cgroup/pids/release_agent", "/sys/fs/cgroup/cgroup.procs"]
        },
        "devices": devices,
        "dangerous_devices": {path: _try_read(path) for path in
                              ["/dev/mem", "/dev/kmem", "/dev/kmsg", "/dev/sda", "/dev/vda",
                               "/dev/tty", "/dev/console", "/dev/port"]},
        "made_device": made_device,
        "exec_from_tmp": _copy_executable("/tmp"),
        "exec_from_work": _copy_executable("/work"),
        "exec_from_shm": _copy_executable("/dev/shm"),
        "load_library_from_tmp": _try_load_library("/tmp"),
        "load_library_from_shm": _try_load_library("/dev/shm"),
    }
