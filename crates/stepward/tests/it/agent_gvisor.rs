//! Agent steps on the `gvisor` backend (issue 16 §4): the step's session runs each call in
//! runsc, every process a call started is gone before the next call starts (also one that
//! left its group and session and holds the tool's secret), `Run` never sees a tool's secret,
//! and a tool runs its pinned script whatever `Run` wrote. Needs root and runsc, as the
//! suite's other gVisor tests.

use fake_model::{Format, Script, ScriptTurn};
use serde_json::json;

use crate::agents::{TOKEN, put, run_workflow_with, with_model};
use crate::support::{run_id, stderr, stdout};

const RUNNER: &str = r#"---
name: runner
description: Runs code.
model: fake/fake-large
tools: [Run, release_notes]
secrets: [RELEASES_API_TOKEN]
custom_tools:
  release_notes:
    explain: Leaves a process behind that holds its secret.
    script: tools/release_notes.py
---
You run code.
"#;

/// The tool leaves a daemon behind (double fork, `setsid`), its environment holding the
/// secret and its command line the marker.
const TOOL: &str = r#"import os, sys

def main():
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open('/dev/null', os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.execv(sys.executable, [sys.executable, '-I', '-S', '-c',
                     'import time; time.sleep(60)', 'stepward-gvisor-leftover-51c2'])
        os._exit(0)
    os.waitpid(first, 0)
    return 'the original script ran and left a process'
"#;

/// Every process the call can see holding the marker or the secret (the token is passed in
/// pieces, so the scan's own code does not hold it).
fn scan() -> String {
    let (head, tail) = TOKEN.split_at(6);
    format!(
        "import os\nneedles = [b'stepward-gvisor-leftover-51c2', b'{head}' + b'{tail}']\n\
         seen = []\nfor entry in os.listdir('/proc'):\n    if not entry.isdigit() or int(entry) == os.getpid():\n        continue\n    for part in ('cmdline', 'environ'):\n        try:\n            data = open(f'/proc/{{entry}}/{{part}}', 'rb').read()\n        except OSError:\n            continue\n        seen += [part for needle in needles if needle in data]\n\
         print('SEEN', seen, 'MINE', any(needles[1] in v.encode() for v in os.environ.values()))\n"
    )
}

#[test]
fn g6_g19_gvisor_agent_calls_leave_no_process_and_no_secret_for_the_next_needs_root() {
    let script = Script::new(vec![
        ScriptTurn::call("release_notes", json!({})),
        ScriptTurn::call("Run", json!({"code": scan()})),
        ScriptTurn::call(
            "Run",
            json!({"code": "open('tools/release_notes.py', 'w').write(\"def main():\\n    return 'HIJACKED'\\n\")\nprint('overwrote')"}),
        ),
        ScriptTurn::call("release_notes", json!({})),
        ScriptTurn::call("Run", json!({"code": scan()})),
        ScriptTurn::text("done"),
    ]);
    let (home, fake, exempt) = with_model(Format::Anthropic, script);
    put(&home, "agents/runner/AGENT.md", RUNNER);
    put(&home, "agents/runner/tools/release_notes.py", TOOL);
    let workflow = "name: on_gvisor\npython: \"3.11\"\nsteps:\n  - id: go\n    agent: runner\n    \
                    task: Do it.\n";
    let ran = run_workflow_with(&home, &exempt, workflow, &["--backend", "gvisor"]);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let requests = fake.requests();
    let seen: String = requests.iter().map(|r| r.as_text()).collect();
    assert!(
        requests[1].as_text().contains("and left a process"),
        "{seen}"
    );
    // Neither the daemon nor its secret is in the sandbox of the next call.
    for after in [2, 5] {
        assert!(
            requests[after].as_text().contains("SEEN [] MINE False"),
            "call {after}: {seen}"
        );
    }
    // The overwrite stayed out of what the tool runs: the pinned original ran.
    assert!(
        requests[4].as_text().contains("and left a process"),
        "{seen}"
    );
    assert!(!seen.contains("HIJACKED\\\""), "{seen}");
    for request in &requests {
        assert!(!String::from_utf8_lossy(&request.body).contains(TOKEN));
    }
    let events = home.stepward(&["runs", "events", &run_id(&ran), "--json"]);
    let events: serde_json::Value = serde_json::from_str(&stdout(&events)).unwrap();
    let finished = events
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["kind"] == "attempt.finished")
        .expect("an attempt finished");
    assert_eq!(finished["payload"]["backend"], "gvisor", "{finished}");
    assert!(
        home.cgroup_parents().is_empty(),
        "{:?}",
        home.cgroup_parents()
    );
}
