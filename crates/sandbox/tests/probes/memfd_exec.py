# Executing code that never touched a filesystem: an anonymous memory file holding a copy of the
# interpreter. Denied in the sandbox (memfd_create fails); in the control run it works.
import os
import subprocess
import sys


def main():
    try:
        descriptor = os.memfd_create("probe", 0)
    except OSError as error:
        return {"memfd": False, "errno": error.errno, "ran": False}
    with open(sys.executable, "rb") as source:
        os.write(descriptor, source.read())
    try:
        completed = subprocess.run(["/proc/self/fd/%d" % descriptor, "-I", "-S", "-c",
                                    "print('from memfd')"], pass_fds=[descriptor],
                                   capture_output=True, timeout=20)
        ran = completed.stdout.decode().strip() == "from memfd"
        return {"memfd": True, "ran": ran, "code": completed.returncode}
    except OSError as error:
        return {"memfd": True, "ran": False, "errno": error.errno}
