# What the sandbox's own process status says about its privileges and identity.
import os


def _status():
    fields = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError as error:
        return "unreadable: %d" % error.errno


def _attempt(action):
    try:
        action()
        return "succeeded"
    except OSError as error:
        return error.errno


def main():
    status = _status()
    return {
        "CapEff": status.get("CapEff"),
        "CapPrm": status.get("CapPrm"),
        "CapInh": status.get("CapInh"),
        "CapAmb": status.get("CapAmb"),
        "CapBnd": status.get("CapBnd"),
        "NoNewPrivs": status.get("NoNewPrivs"),
        "Seccomp": status.get("Seccomp"),
        "Seccomp_filters": status.get("Seccomp_filters"),
        "uid_map": _read("/proc/self/uid_map"),
        "gid_map": _read("/proc/self/gid_map"),
        "setgroups": _read("/proc/self/setgroups"),
        "uid": os.getuid(),
        "gid": os.getgid(),
        "groups": os.getgroups(),
        "setuid_root": _attempt(lambda: os.setuid(0)),
        "setgroups_call": _attempt(lambda: os.setgroups([0])),
    }
