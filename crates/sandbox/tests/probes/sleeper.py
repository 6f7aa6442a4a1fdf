# A long step: starts a child marked by `token` on its command line (so the host can see the
# sandbox is alive, and later that it is gone), then sleeps far longer than any test waits.
import subprocess
import sys
import time


def main(token):
    subprocess.Popen([sys.executable, "-I", "-S", "-c", "import time\ntime.sleep(300)", token],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    time.sleep(300)
    return {"slept": True}
