//! Agent steps against a hostile model (issue 16): what `Run` can see and leave behind, a
//! script overwritten by the agent, applying without a gate, and a networked tool whose
//! outcome is not known. Needs root (the local sandbox, the helper's user change, egress).

use fake_model::{Format, Script, ScriptTurn};
use serde_json::json;

use crate::agents::{MODEL_KEY, TOKEN, put, run_workflow, run_workflow_with, with_model};

/// Networked agents run on the unisolated backend here: the test machine has no egress
/// network configured, and a refused sandbox would prove nothing about a script that ran.
const UNISOLATED: &[&str] = &["--backend", "unisolated"];
use crate::support::{run_id, stderr, stdout};

const RUNNER: &str = r#"---
name: runner
description: Runs code.
model: fake/fake-large
tools: [Run, release_notes]
secrets: [RELEASES_API_TOKEN]
custom_tools:
  release_notes:
    explain: Says which script ran.
    script: tools/release_notes.py
---
You run code.
"#;

const ORIGINAL: &str = "def main():\n    return 'the original script ran'\n";

const MARKER: &str = "stepward-leftover-7c41d9";

fn workflow(agent: &str, step: &str) -> String {
    format!(
        "name: hostile\npython: \"3.11\"\nsteps:\n  - id: {step}\n    agent: {agent}\n    task: \
         Do it.\n"
    )
}

fn host_processes_with(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .map(|cmdline| String::from_utf8_lossy(&cmdline).contains(marker))
                .unwrap_or(false)
        })
        .count()
}

#[test]
fn g19_g22_run_sees_no_secret_cannot_change_a_tool_and_leaves_no_process_needs_root() {
    let script = Script::new(vec![
        ScriptTurn::call(
            "Run",
            json!({"code": "import os\nprint('ENV', sorted(os.environ.items()))"}),
        ),
        ScriptTurn::call(
            "Run",
            json!({"code": "open('tools/release_notes.py', 'w').write(\"def main():\\n    return 'HIJACKED'\\n\")\nprint('overwrote')"}),
        ),
        ScriptTurn::call("release_notes", json!({})),
        ScriptTurn::call(
            "Run",
            json!({"code": format!(
                "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60) # {MARKER}'])\nprint('spawned')"
            )}),
        ),
        ScriptTurn::call("Run", json!({"code": "print('second call')"})),
        ScriptTurn::text("done"),
    ]);
    let (home, fake, exempt) = with_model(Format::Anthropic, script);
    put(&home, "agents/runner/AGENT.md", RUNNER);
    put(&home, "agents/runner/tools/release_notes.py", ORIGINAL);
    let ran = run_workflow(&home, &exempt, &workflow("runner", "go"));
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let requests = fake.requests();
    let seen: String = requests.iter().map(|r| r.as_text()).collect();
    // Run's environment holds no secret, no model key, not even the secret's name.
    assert!(seen.contains("ENV ["), "{seen}");
    // The body: the headers carry the model key to its provider, as they must.
    let environment = String::from_utf8_lossy(&requests[1].body).into_owned();
    for form in [TOKEN, MODEL_KEY, "RELEASES_API_TOKEN"] {
        assert!(!environment.contains(form), "Run saw {form}");
    }
    // The overwrite stayed in the call's sandbox: the tool ran the pinned original.
    assert!(
        requests[3].as_text().contains("the original script ran"),
        "{seen}"
    );
    assert!(!seen.contains("HIJACKED\\\""), "{seen}");
    assert!(seen.contains("[files not kept]"), "{seen}");
    let script = home
        .data_dir()
        .join("accounts/local/workspace/agents/runner/tools/release_notes.py");
    assert_eq!(std::fs::read_to_string(script).unwrap(), ORIGINAL);
    // The process a call left behind went with its sandbox.
    assert!(requests[4].as_text().contains("spawned"), "{seen}");
    assert!(requests[5].as_text().contains("second call"), "{seen}");
    assert_eq!(
        host_processes_with(MARKER),
        0,
        "a Run left a process behind"
    );
}

const PUBLISHER: &str = r#"---
name: publisher
description: Publishes the approved change.
model: fake/fake-large
tools: [publish]
network: public_egress
custom_tools:
  publish:
    explain: Publishes.
    script: tools/publish.py
    arguments: { text: string }
---
You publish.
"#;

#[test]
fn g21_an_applying_agent_outside_a_gate_is_refused_and_nothing_reaches_the_model_needs_root() {
    let (home, fake, exempt) = with_model(Format::OpenAi, Script::new(vec![ScriptTurn::text("x")]));
    put(&home, "agents/publisher/AGENT.md", PUBLISHER);
    put(
        &home,
        "agents/publisher/tools/publish.py",
        "def main(text):\n    return text\n",
    );
    let ran = run_workflow(&home, &exempt, &workflow("publisher", "publish"));
    assert_ne!(ran.status.code(), Some(0), "{}", stdout(&ran));
    let shown = format!("{}{}", stdout(&ran), stderr(&ran));
    assert!(shown.contains("apply-before-gate"), "{shown}");
    assert!(fake.requests().is_empty(), "the model was asked");
}

#[test]
fn g14_a_networked_tool_that_fails_after_it_started_leaves_the_step_unknown_needs_root() {
    let script = Script::new(vec![
        ScriptTurn::call("publish", json!({"text": "hello"})),
        ScriptTurn::text("never reached"),
    ]);
    let (home, fake, exempt) = with_model(Format::Anthropic, script);
    put(&home, "agents/publisher/AGENT.md", PUBLISHER);
    put(
        &home,
        "agents/publisher/tools/publish.py",
        "def main(text):\n    raise RuntimeError('the server hung up after the request')\n",
    );
    let parked = run_workflow_with(
        &home,
        &exempt,
        &workflow("publisher", "publish!"),
        UNISOLATED,
    );
    let run = run_id(&parked);
    let approved = home.stepward(&[
        "approve",
        &run,
        "publish",
        "--note",
        "go",
        "--allow-model-endpoint",
        &exempt,
        "--backend",
        "unisolated",
    ]);
    let shown = format!("{}{}", stdout(&approved), stderr(&approved));
    assert!(shown.contains("unknown"), "{shown}");
    assert_eq!(
        fake.requests().len(),
        1,
        "the loop stopped at the failed tool"
    );
    let events = stdout(&home.stepward(&["runs", "events", &run]));
    assert!(events.contains("\"network\":\"public_egress\""), "{events}");
    assert!(events.contains("\"status\":\"unknown\""), "{events}");
    // The tool did run (its end is in the record, not a refusal), and the step is unknown.
    assert!(
        events.contains("the tool publish ended unobserved"),
        "{events}"
    );
    // Nothing runs it again by itself: the run waits for a person (only a person's recorded
    // retry decision may run it again, G14/G15), also after the engine opened again.
    assert!(events.contains("needs_attention"), "{events}");
    let again = home.stepward(&[
        "approve",
        &run,
        "publish",
        "--note",
        "twice",
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert_ne!(again.status.code(), Some(0), "{}", stdout(&again));
    assert_eq!(fake.requests().len(), 1, "the step ran again");
}

/// The bundled propose/apply example, end to end: the proposing agent (read-only tools) runs,
/// the run parks at the gate, and only after a person's decision does the applying agent's
/// tool run. The tool's script is swapped for one that reaches no tracker (the example's
/// talks to a made-up host).
#[test]
fn g21_g23_the_triage_example_proposes_parks_then_applies_needs_root() {
    let script = Script::new(vec![
        ScriptTurn::call("Glob", json!({"pattern": "shared/inbox/*.md"})),
        ScriptTurn::call("Read", json!({"path": "shared/inbox/printer.md"})),
        ScriptTurn::text(
            r#"[{"note": "shared/inbox/printer.md", "title": "Printer jams", "why": "It recurs."}]"#,
        ),
        ScriptTurn::call(
            "file_ticket",
            json!({"title": "Printer jams", "body": "It recurs."}),
        ),
        ScriptTurn::text("filed ticket 42"),
    ]);
    let (home, fake, exempt) = with_model(Format::Anthropic, script);
    let examples = crate::support::repo_root().join("examples/agents");
    for path in ["triage/AGENT.md", "ticket_filer/AGENT.md"] {
        let text = std::fs::read_to_string(examples.join(path)).unwrap();
        put(
            &home,
            &format!("agents/{path}"),
            &text.replace("claude-sonnet-4-5", "fake/fake-large"),
        );
    }
    put(
        &home,
        "agents/ticket_filer/tools/file_ticket.py",
        "import os\n\ndef main(title, body):\n    assert os.environ['TRACKER_TOKEN']\n    return {'ticket': 42, 'title': title}\n",
    );
    put(
        &home,
        "shared/inbox/printer.md",
        "The printer jams every Monday.\n",
    );
    let set = home.stepward_with_stdin(
        &["secrets", "set", "TRACKER_TOKEN"],
        "trk-token-91b2c3d4e5f6",
    );
    assert!(set.status.success(), "{}", stderr(&set));
    let workflow =
        std::fs::read_to_string(crate::support::repo_root().join("examples/workflows/triage.yaml"))
            .unwrap();
    let parked = run_workflow_with(&home, &exempt, &workflow, UNISOLATED);
    assert!(
        stdout(&parked).contains("waiting_approval"),
        "{}{}",
        stdout(&parked),
        stderr(&parked)
    );
    assert_eq!(
        fake.requests().len(),
        3,
        "only the proposer ran before the gate"
    );
    let run = run_id(&parked);
    let approved = home.stepward(&[
        "approve",
        &run,
        "apply",
        "--note",
        "ticket is right",
        "--allow-model-endpoint",
        &exempt,
        "--backend",
        "unisolated",
    ]);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}{}",
        stdout(&approved),
        stderr(&approved)
    );
    assert!(
        stdout(&approved).contains("filed ticket 42"),
        "{}",
        stdout(&approved)
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 5);
    // The applier was given the proposal as data and offered only its own tool.
    let apply = requests[3].as_text();
    assert!(apply.contains("Printer jams"), "{apply}");
    assert!(
        apply.contains("\"file_ticket\"") && !apply.contains("\"Glob\""),
        "{apply}"
    );
    assert!(
        requests[4].as_text().contains("\\\"ticket\\\": 42"),
        "{}",
        requests[4].as_text()
    );
}

const WRITER: &str = r#"---
name: boss
description: Writes files.
model: fake/fake-large
tools: [Run, Write]
---
You write files.
"#;

/// agents review, finding 4, and sandbox review 3, F5, for an agent step: its copy-back is
/// held to the code step's caps and names, each file refused by name with its reason, and
/// none of it cut (a 70 MB file came back as exactly 64 MiB, unannounced).
#[test]
fn g12_an_agent_steps_copy_back_refuses_by_name_and_cuts_nothing_needs_root() {
    let script = Script::new(vec![
        ScriptTurn::call(
            "Run",
            json!({"code": "open('big.bin', 'wb').write(b'b' * (9 * 1024 * 1024))\nopen('nl\\nFAKE.txt', 'w').write('x')\nopen('rtl\\u202etxt.exe', 'w').write('x')\nprint('wrote')"}),
        ),
        ScriptTurn::call("Write", json!({"path": "notes/kept.md", "content": "kept"})),
        ScriptTurn::text("done"),
    ]);
    let (home, _fake, exempt) = with_model(Format::Anthropic, script);
    put(&home, "agents/boss/AGENT.md", WRITER);
    let ran = run_workflow(&home, &exempt, &workflow("boss", "write"));
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let run = run_id(&ran);
    let events = home.stepward(&["runs", "events", &run, "--json"]);
    let events: serde_json::Value = serde_json::from_slice(&events.stdout).unwrap();
    // A `Run`'s files reach the agent's tree through the code step's copy-back filter: each
    // one refused is named, with its reason, in the call's result in the record.
    let results: Vec<String> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["kind"] == "tool.finished")
        .map(|event| {
            event["payload"]["result"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let run_result = &results[0];
    for (name, why) in [
        ("big.bin", "8388608"),
        ("nl\\u{000a}FAKE.txt", "U+000A"),
        ("rtl\\u{202e}txt.exe", "U+202E"),
    ] {
        let line = run_result
            .lines()
            .find(|line| line.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("{name} is not named in {run_result}"));
        assert!(line.contains(why), "{line}");
    }
    assert!(
        !run_result.chars().any(|c| c != '\n' && c.is_control()),
        "{run_result:?}"
    );
    let workspace = home.data_dir().join("accounts/local/workspace/agents/boss");
    assert!(workspace.join("notes/kept.md").exists());
    assert!(
        !workspace.join("big.bin").exists(),
        "a file over the cap was kept"
    );
}

/// agents review, finding 1: the file-tool helper had no limit of its own; it sets its
/// resource limits before it reads its request (and the platform puts it in its view's cell,
/// `sandbox`'s `helper_cell` test).
#[test]
fn g10_the_file_tool_helper_limits_itself_before_it_reads_its_request() {
    use std::process::{Command, Stdio};
    let mut helper = Command::new(env!("CARGO_BIN_EXE_stepward"))
        .arg("__file-tool")
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = helper.id();
    let expected = [
        ("Max address space", "1073741824"),
        ("Max file size", "4194304"),
        ("Max open files", "64"),
        ("Max processes", "0"),
        ("Max core file size", "0"),
    ];
    let soft_and_hard = |limits: &str, name: &str| -> Option<(String, String)> {
        let line = limits.lines().find(|line| line.starts_with(name))?;
        let mut fields = line[name.len()..].split_whitespace();
        Some((fields.next()?.to_owned(), fields.next()?.to_owned()))
    };
    // It waits on its request: its limits are all set by then (it sets them one by one, so
    // the read waits for every one, not only the first seen).
    let mut limits = String::new();
    for _ in 0..200 {
        limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap_or_default();
        let all_set = expected.iter().all(|(name, value)| {
            soft_and_hard(&limits, name)
                .is_some_and(|(soft, hard)| soft == *value && hard == *value)
        });
        if all_set {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    drop(helper.stdin.take());
    let _ = helper.wait();
    for (name, value) in expected {
        let (soft, hard) =
            soft_and_hard(&limits, name).unwrap_or_else(|| panic!("{name} not in {limits}"));
        assert_eq!(
            [soft.as_str(), hard.as_str()],
            [value, value],
            "{name} in {limits}"
        );
    }
}
