# Ordinary standard-library work a step is expected to do.
import json
import os
import re
import subprocess
import sys
import tempfile
import threading


def main(numbers):
    parsed = json.loads(json.dumps({"numbers": numbers}))
    words = re.findall(r"[a-z]+", "alpha, beta; gamma")
    totals = []
    lock = threading.Lock()

    def add(value):
        with lock:
            totals.append(value * value)

    threads = [threading.Thread(target=add, args=(number,)) for number in parsed["numbers"]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "scratch.txt")
        with open(path, "w") as handle:
            handle.write("kept")
        with open(path) as handle:
            temporary = handle.read()
    child = subprocess.run([sys.executable, "-I", "-S", "-c", "print(6 * 7)"],
                           capture_output=True, text=True, timeout=30)
    with open("/work/output.json", "w") as handle:
        json.dump({"words": words}, handle)
    print("legitimate work done")
    return {
        "words": words,
        "sum_of_squares": sum(totals),
        "temporary": temporary,
        "child": child.stdout.strip(),
        "child_code": child.returncode,
    }
