# Starts a detached process that tries to outlive the step, marked by `token` on its command
# line so the host can look for it afterwards; then returns at once.
import subprocess
import sys


def main(token):
    child = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", "import time\ntime.sleep(300)", token],
        start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    return {"daemon_pid": child.pid}
