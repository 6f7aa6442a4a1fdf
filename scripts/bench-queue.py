"""scripts/bench's section 10, the run queue (issue 38), run by scripts/bench as root.

Each server is a release `stepward serve` on a data directory of its own under WORK, on
loopback, stopped by its pid (SIGTERM, then SIGKILL after 60 s) whatever happens.

1. Doors answer at once: on a server with its default workers, 200 `POST /api/runs` of a
   workflow whose step sleeps 30 s, 200 approvals of runs parked at a gate, and 200 retries
   of runs that need attention, each timed as a whole request, beside 200 `GET /api/runs`
   in the same run (p50, p99). Target: each door <= 50 ms p99.
2. Throughput: 200 runs of a trivial two-step workflow started at once through the API on a
   server with 2, then 8 worker slots: steps per second, and the p99 time from a run's start
   to its end (the store's timestamps).
"""
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse

STEPWARD, WORK = sys.argv[1], sys.argv[2]
REQUESTS = int(os.environ.get("STEPWARD_BENCH_QUEUE_REQUESTS", "200"))
PASSWORD = "benchmark the run queue"

SLEEPY = """name: sleepy
python: "3.11"
steps:
  - id: nap
    explain: Sleeps thirty seconds.
    code: |
      def main():
          import time
          time.sleep(30)
          return {"slept": 30}
"""
GATED = """name: gated
python: "3.11"
steps:
  - id: ship!
    explain: Sleeps thirty seconds once approved.
    code: |
      def main():
          import time
          time.sleep(30)
          return {"shipped": True}
"""
FAILING = """name: failing
python: "3.11"
steps:
  - id: broken
    explain: Fails at once.
    code: |
      def main():
          raise ValueError("benchmark failure")
"""
TWO_STEPS = """name: two
python: "3.11"
steps:
  - id: first
    explain: Returns a number.
    code: |
      def main():
          return 1
  - id: second
    explain: Adds one.
    inputs: { value: { from: first } }
    code: |
      def main(value):
          return value + 1
"""


def say(text):
    print("scripts/bench: " + text, file=sys.stderr, flush=True)


class Server:
    def __init__(self, name, workflows, workers=None):
        self.dir = os.path.join(WORK, name)
        os.makedirs(self.dir, mode=0o711, exist_ok=True)
        self.env = {"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": os.path.join(self.dir, "config")}
        self.flags = ["--data-dir", os.path.join(self.dir, "data"),
                      "--sandbox-state-dir", os.path.join(self.dir, "sandbox")]
        for file_name, text in workflows.items():
            source = os.path.join(self.dir, file_name)
            with open(source, "w") as handle:
                handle.write(text)
            subprocess.run([STEPWARD, "files", "put", "workflows/" + file_name, "--from", source]
                           + self.flags, env=self.env, check=True, stdout=subprocess.DEVNULL)
        extra = [] if workers is None else ["--workers", str(workers)]
        self.out = open(os.path.join(self.dir, "serve.out"), "w+")
        self.process = subprocess.Popen(
            [STEPWARD, "serve", "--listen", "127.0.0.1:0", "--owner-email", "owner@example.test"]
            + extra + self.flags, env=self.env, stdout=self.out, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        link = None
        while time.time() < deadline:
            self.out.seek(0)
            printed = self.out.read()
            found = re.search(r"http://127\.0\.0\.1:(\d+)(/welcome/[A-Za-z0-9_-]+)", printed)
            if found:
                self.port, link = int(found.group(1)), found.group(2)
                break
            if self.process.poll() is not None:
                sys.exit("scripts/bench: the server exited early")
            time.sleep(0.1)
        if link is None:
            self.stop()
            sys.exit("scripts/bench: the server printed no sign-in link")
        self.sign_in(link)

    def request(self, method, path, body=None, headers=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        connection.request(method, path, body=body, headers=headers or {})
        answer = connection.getresponse()
        data = answer.read()
        connection.close()
        return answer, data

    def sign_in(self, link):
        answer, form = self.request("GET", link)
        cookie = answer.getheader("Set-Cookie").split(";")[0]
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.decode()).group(1)
        body = urllib.parse.urlencode({"csrf": csrf, "password": PASSWORD,
                                       "password_again": PASSWORD})
        self.request("POST", link, body, {"Cookie": cookie,
                                          "Content-Type": "application/x-www-form-urlencoded"})
        answer, data = self.request("POST", "/api/signin", json.dumps(
            {"account": "local", "email": "owner@example.test", "password": PASSWORD}),
            {"Content-Type": "application/json"})
        session = [value for name, value in answer.getheaders() if name.lower() == "set-cookie"
                   and value.startswith("stepward_session=")][0].split(";")[0]
        self.headers = {"Cookie": session, "X-CSRF-Token": json.loads(data)["csrf_token"],
                        "Content-Type": "application/json"}

    def timed(self, method, path, body=None, expect=202):
        started = time.perf_counter()
        answer, data = self.request(method, path, None if body is None else json.dumps(body),
                                    self.headers)
        elapsed = (time.perf_counter() - started) * 1000
        if answer.status != expect:
            self.stop()
            sys.exit("scripts/bench: %s %s answered %d: %s" % (method, path, answer.status, data))
        return elapsed, (json.loads(data) if data else None)

    def run(self, run_id):
        return self.timed("GET", "/api/runs/" + run_id, expect=200)[1]

    def until(self, run_ids, statuses, limit):
        deadline = time.time() + limit
        details = {}
        pending = list(run_ids)
        while pending:
            if time.time() > deadline:
                self.stop()
                sys.exit("scripts/bench: %d runs never reached %s" % (len(pending), statuses))
            still = []
            for run_id in pending:
                detail = self.run(run_id)
                if detail["status"] in statuses:
                    details[run_id] = detail
                else:
                    still.append(run_id)
            pending = still
            if pending:
                time.sleep(0.2)
        return details

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def line(label, times, note=""):
    ordered = sorted(times)
    p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)]
    print("  %-44s p50 %7.2f ms   p99 %7.2f ms%s" % (label, statistics.median(ordered), p99, note))
    return p99


print("  -- doors answer at once: %d requests each, the default workers --" % REQUESTS)
server = Server("doors", {"sleepy.yaml": SLEEPY, "gated.yaml": GATED, "failing.yaml": FAILING})
try:
    failing = [server.timed("POST", "/api/runs", {"workflow": "failing"})[1]["run"]
               for _ in range(REQUESTS)]
    server.until(failing, {"needs_attention"}, 600)
    retries = []
    for run_id in failing:
        step = server.run(run_id)["steps"][0]
        path = "/api/runs/%s/steps/broken/attempts/%d/retry" % (run_id, step["attempt"])
        retries.append(server.timed("POST", path, {"note": "benchmark"})[0])
    gated = [server.timed("POST", "/api/runs", {"workflow": "gated"})[1]["run"]
             for _ in range(REQUESTS)]
    server.until(gated, {"waiting_approval"}, 600)
    approvals = [server.timed("POST", "/api/runs/%s/steps/ship/approve" % run_id,
                              {"note": "benchmark"})[0] for run_id in gated]
    starts = [server.timed("POST", "/api/runs", {"workflow": "sleepy"})[0]
              for _ in range(REQUESTS)]
    reads = [server.timed("GET", "/api/runs", expect=200)[0] for _ in range(REQUESTS)]
    baseline = line("GET /api/runs (the baseline)", reads)
    for label, times in (("POST /api/runs (a 30 s step)", starts),
                         ("POST .../approve (a 30 s step)", approvals),
                         ("POST .../retry", retries)):
        ordered = sorted(times)
        p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)]
        line(label, times, "   %.2fx the baseline's p99" % (p99 / baseline))
        print("  target: %-36s <= 50 ms p99   %s" % (label, "met" if p99 <= 50 else "MISSED"))
finally:
    server.stop()

print("  -- throughput: %d runs of a two-step workflow started at once --" % REQUESTS)
for workers in (2, 8):
    server = Server("slots-%d" % workers, {"two.yaml": TWO_STEPS}, workers)
    try:
        began = time.time()
        runs = [server.timed("POST", "/api/runs", {"workflow": "two"})[1]["run"]
                for _ in range(REQUESTS)]
        details = server.until(runs, {"succeeded", "failed", "needs_attention"}, 1800)
        failed = [run for run, detail in details.items() if detail["status"] != "succeeded"]
        if failed:
            sys.exit("scripts/bench: %d runs did not succeed" % len(failed))
        spans = [detail["updated_at"] - detail["created_at"] for detail in details.values()]
        first = min(detail["created_at"] for detail in details.values())
        last = max(detail["updated_at"] for detail in details.values())
        steps_per_second = 2 * len(runs) / max((last - first) / 1000.0, 0.001)
        ordered = sorted(spans)
        print("  %d worker slots: %6.1f steps/s   start to end p50 %8.0f ms   p99 %8.0f ms"
              "   (wall %.1f s)" % (workers, steps_per_second, statistics.median(ordered),
                                    ordered[max(0, int(len(ordered) * 0.99) - 1)],
                                    time.time() - began))
    finally:
        server.stop()
