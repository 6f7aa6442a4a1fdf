# What /proc and the mount table tell a step about the host, and which host knobs it can open.
import os


def _read(path, limit=65536):
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit)
        return {"ok": True, "bytes": len(data), "data": data.decode("utf-8", "replace")}
    except OSError as error:
        return {"ok": False, "errno": error.errno}


def _open_for_writing(path):
    try:
        descriptor = os.open(path, os.O_WRONLY)
    except OSError as error:
        return {"ok": False, "errno": error.errno}
    # Never write: opening is the proof.
    os.close(descriptor)
    return {"ok": True}


READ = [
    "/proc/kmsg", "/proc/slabinfo", "/proc/vmallocinfo", "/proc/kallsyms", "/proc/kcore",
    "/proc/sched_debug", "/proc/timer_list", "/proc/keys", "/proc/pagetypeinfo",
    "/proc/self/mountinfo", "/proc/self/mounts", "/proc/self/cgroup", "/proc/1/mountinfo",
]
WRITE = [
    "/proc/sysrq-trigger", "/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches",
    "/proc/sys/net/ipv4/ip_forward", "/proc/sys/kernel/core_pattern", "/proc/kmsg",
]


def main():
    return {
        "read": {path: _read(path) for path in READ},
        "write": {path: _open_for_writing(path) for path in WRITE},
        "listing_has_sys": "sys" in os.listdir("/proc"),
    }
