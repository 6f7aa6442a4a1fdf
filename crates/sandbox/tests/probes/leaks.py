# What the sandbox can learn about the host: its environment, pid 1's environment, inherited
# descriptors, where its cwd and root really are, and whether host processes are visible.
import os


def _read(path):
    try:
        with open(path, "rb") as handle:
            return {"ok": True, "data": handle.read(65536).decode("utf-8", "replace")}
    except OSError as error:
        return {"ok": False, "error": type(error).__name__, "errno": error.errno}


def _descriptors():
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[name] = os.readlink("/proc/self/fd/" + name)
        except FileNotFoundError:
            # The descriptor that listed the folder, closed again by now.
            continue
        except OSError as error:
            found[name] = "unreadable: %s" % error
    return found


def _climb():
    os.chdir("/")
    for _ in range(10):
        os.chdir("..")
    return os.getcwd(), sorted(os.listdir("."))


def _signal(pid):
    try:
        os.kill(pid, 0)
        return "delivered"
    except ProcessLookupError:
        return "no such process"
    except PermissionError:
        return "permission denied"


def main(host_pid):
    cwd_at_start = os.getcwd()
    climbed_to, root_listing = _climb()
    return {
        "environ": dict(os.environ),
        "pid1_environ": _read("/proc/1/environ"),
        "pid1_cmdline": _read("/proc/1/cmdline"),
        "descriptors": _descriptors(),
        "cwd_at_start": cwd_at_start,
        "proc_self_cwd": os.readlink("/proc/self/cwd"),
        "proc_self_root": os.readlink("/proc/self/root"),
        "climbed_to": climbed_to,
        "root_listing": root_listing,
        "pids": sorted(int(name) for name in os.listdir("/proc") if name.isdigit()),
        "host_pid_visible": os.path.exists("/proc/%d" % host_pid),
        "signal_host_pid": _signal(host_pid),
        "mountinfo": _read("/proc/self/mountinfo"),
        "hostname": os.uname().nodename,
    }
