# Discovery probe (run once per runtime, outside any sandbox, by the platform): which shared
# objects and data files the interpreter really maps at run time, beyond the `ldd` closure.
# glibc and the extension modules `dlopen` some of them on demand (libgcc_s.so.1 for
# pthread_exit and pthread_cancel, NSS modules, libffi's helpers), which `ldd` cannot see.
# Prints one JSON list of paths as its last line.
import importlib
import json
import os
import sys

for folder in [entry for entry in sys.path if entry.endswith("lib-dynload")]:
    for name in sorted(os.listdir(folder)):
        if name.endswith(".so"):
            try:
                importlib.import_module(name.split(".")[0])
            except BaseException:  # noqa: B036 - a module the host cannot load is simply absent
                pass

import ctypes
import grp
import pwd

for lookup in (lambda: pwd.getpwuid(0), lambda: grp.getgrgid(0)):
    try:
        lookup()
    except KeyError:
        pass
# What glibc itself loads on demand, by the name it asks the loader for.
for name in ("libgcc_s.so.1",):
    try:
        ctypes.CDLL(name)
    except OSError:
        pass

mapped = set()
with open("/proc/self/maps") as maps:
    for line in maps:
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[5].startswith("/"):
            mapped.add(fields[5].rstrip("\n"))
print()
print(json.dumps(sorted(mapped)))
