# The workspace's ports (issue 39), measured as a user gets them: a default `stepward run` of a
# cold code step that is staged a workspace of 1,000 files (10 MB) and changes 10 of them,
# timed as a whole process, alternating with the same step run by the binary of `main` before
# the ports (the baseline, built by scripts/bench at STEPWARD_BENCH_BASELINE_REV), each in a
# data directory of its own, in the same loop; medians and their ratio. Target: no more than
# 5% slower.
#
# Usage: python3 -I -S scripts/bench-workspace.py NEW_STEPWARD BASELINE_STEPWARD WORK [RUNS]
import os
import statistics
import subprocess
import sys
import time

new, baseline, work = sys.argv[1], sys.argv[2], sys.argv[3]
runs = int(sys.argv[4]) if len(sys.argv) > 4 else 20
FILES, BYTES = 1000, 10 * 1024 * 1024
CHANGED = 10

WORKFLOW = """name: ten_changes
python: "3.11"
steps:
  - id: change
    explain: Reads the workspace's inputs and rewrites ten of its reports.
    code: |
      import os
      def main():
          total = 0
          for folder, _, names in os.walk("/work/inputs"):
              total += len(names)
          stamp = os.urandom(16).hex()
          os.makedirs("/work/reports", exist_ok=True)
          for number in range(%d):
              with open("/work/reports/%%d.txt" %% number, "w") as report:
                  report.write(stamp * 64)
          return {"inputs": total}
""" % CHANGED


def prepare(name):
    """A data directory whose working folder holds the 1,000 files, written by hand (as an
    operator would copy them in): staging copies them whoever wrote them."""
    home = os.path.join(work, name)
    os.makedirs(home, exist_ok=True)
    os.chmod(home, 0o711)
    with open(os.path.join(home, "ten.yaml"), "w") as text:
        text.write(WORKFLOW)
    return home


def command(binary, home):
    return [binary, "--data-dir", os.path.join(home, "data"), "run",
            os.path.join(home, "ten.yaml")]


def environment(home):
    return {"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": os.path.join(home, "config")}


def timed(binary, home):
    started = time.perf_counter()
    finished = subprocess.run(command(binary, home), env=environment(home),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = (time.perf_counter() - started) * 1000
    if finished.returncode != 0:
        sys.exit("scripts/bench-workspace: %s failed: %s" % (binary, finished.stderr))
    return elapsed


def fill(home):
    folder = os.path.join(home, "data", "accounts", "local", "workspace", "inputs")
    size = BYTES // FILES
    for number in range(FILES):
        sub = os.path.join(folder, "batch-%02d" % (number // 100))
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, "input-%04d.csv" % number), "wb") as out:
            out.write(os.urandom(size // 2).hex().encode()[:size])


homes = {"new": prepare("new"), "baseline": prepare("baseline")}
binaries = {"new": new, "baseline": baseline}
for name, home in homes.items():
    # The first run makes the data directory, its root key and the runtime cache.
    timed(binaries[name], home)
    fill(home)
    timed(binaries[name], home)
times = {"new": [], "baseline": []}
for index in range(runs):
    for name in ("baseline", "new") if index % 2 == 0 else ("new", "baseline"):
        times[name].append(timed(binaries[name], homes[name]))
    if (index + 1) % 5 == 0:
        print("scripts/bench-workspace: runs %d/%d" % (index + 1, runs), file=sys.stderr)
base_median = statistics.median(times["baseline"])
new_median = statistics.median(times["new"])
ratio = new_median / base_median
print("  a cold step staging %d files (%d MB) and changing %d, whole stepward run process:"
      % (FILES, BYTES // (1024 * 1024), CHANGED))
print("    main before the ports (baseline)   median %7.2f ms" % base_median)
print("    this tree                          median %7.2f ms  %.3fx the baseline" % (new_median, ratio))
print("  target: no more than 5%% slower than the baseline      %.3fx  %s"
      % (ratio, "met" if ratio <= 1.05 else "MISSED"))
