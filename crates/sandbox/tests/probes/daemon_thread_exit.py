# An interpreter that exits while daemon threads still run Python: at finalization those
# threads call pthread_exit, for which glibc loads libgcc_s.so.1 on demand. Without it the
# process aborts ("libgcc_s.so.1 must be installed for pthread_exit to work").
import subprocess
import sys

CHILD = """
import threading, time
def spin():
    while True:
        time.sleep(0.0005)
for _ in range(4):
    threading.Thread(target=spin, daemon=True).start()
time.sleep(0.05)
print("exiting with daemon threads")
"""


def main():
    runs = []
    for _ in range(5):
        child = subprocess.run([sys.executable, "-I", "-S", "-c", CHILD], capture_output=True,
                               text=True, timeout=30)
        runs.append({"code": child.returncode, "stderr": child.stderr[-400:]})
    return {"runs": runs}
