# The step of the stdlib-suite test: runs each requested module of CPython's test suite in a
# child interpreter (cwd a fresh folder in /tmp) and returns every case's outcome, with the
# tail of each child's stderr for the failures.
import json
import subprocess
import sys
import tempfile

MARKER = "\n@@RESULTS@@"


def main(modules, runner):
    results = {}
    for module in modules:
        folder = tempfile.mkdtemp()
        child = subprocess.run([sys.executable, "-I", "-S", "-c", runner, module],
                               capture_output=True, text=True, cwd=folder, timeout=900)
        outcomes = {}
        if MARKER in child.stdout:
            outcomes = json.loads(child.stdout.split(MARKER)[-1])
        results[module] = {"code": child.returncode, "outcomes": outcomes,
                           "stderr": child.stderr[-20000:] + "\n(exit status %d)" % child.returncode}
    return results
