//! The bundled examples under `examples/` at the repository root all parse, every agent they
//! name exists, and every code step is Python the pinned interpreter can compile.

use std::path::{Path, PathBuf};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn files_under(directory: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, found);
        } else {
            found.push(path);
        }
    }
}

fn load_agent(name: &str) -> Option<spec::Agent> {
    let path = examples_dir().join("agents").join(name).join("AGENT.md");
    let text = std::fs::read_to_string(&path).ok()?;
    spec::parse_agent(&path.to_string_lossy(), &text).ok()
}

#[test]
fn g1_every_bundled_example_parses_and_reaches_only_known_agents() {
    let mut files = Vec::new();
    files_under(&examples_dir(), &mut files);
    files.sort();
    let mut workflows = 0;
    let mut agents = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let name = path.to_string_lossy().to_string();
        if name.ends_with(".yaml") {
            let workflow = spec::parse_workflow(&name, &text).unwrap_or_else(|diagnostics| {
                panic!(
                    "{name}:\n{}",
                    crate::render::diagnostics(&diagnostics, &text)
                )
            });
            let rows = spec::reach(&workflow, &load_agent);
            assert_eq!(rows.len(), workflow.steps().len());
            for row in rows {
                assert!(
                    !matches!(row.internet, spec::ReachInternet::Unknown { .. }),
                    "{name}: {row:?}"
                );
            }
            check_python_compiles(&workflow);
            workflows += 1;
        } else if name.ends_with("AGENT.md") {
            spec::parse_agent(&name, &text).unwrap_or_else(|diagnostics| {
                panic!(
                    "{name}:\n{}",
                    crate::render::diagnostics(&diagnostics, &text)
                )
            });
            agents += 1;
        }
    }
    assert!(workflows >= 3, "only {workflows} example workflows");
    assert!(agents >= 1, "no example agent");
}

/// Compiles (never runs) each code step with the machine's Python, so an example cannot rot
/// into code that does not even parse. Nothing here touches the network.
fn check_python_compiles(workflow: &spec::Workflow) {
    for step in workflow.steps() {
        if let spec::StepBody::Code { source } = step.body() {
            let output = std::process::Command::new("python3")
                .args([
                    "-I",
                    "-S",
                    "-c",
                    "import sys; compile(sys.stdin.read(), 'step', 'exec')",
                ])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut child| {
                    use std::io::Write;
                    child.stdin.take().unwrap().write_all(source.as_bytes())?;
                    child.wait_with_output()
                })
                .unwrap();
            assert!(
                output.status.success(),
                "{} step {}: {}",
                workflow.file_name(),
                step.id(),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
}

/// Runs one code step's `main` with `inputs` under the machine's Python (isolated mode, no
/// site-packages) and returns its JSON output. Only for the bundled examples' offline steps:
/// our own code, with `network: none`.
fn run_offline_step(source: &str, inputs: &serde_json::Value) -> serde_json::Value {
    use std::io::Write;
    const RUNNER: &str = "import asyncio, json, sys\n\
        payload = json.load(sys.stdin)\n\
        namespace = {'__name__': 'step'}\n\
        exec(compile(payload['code'], 'step', 'exec'), namespace)\n\
        result = namespace['main'](**payload['inputs'])\n\
        if asyncio.iscoroutine(result):\n    result = asyncio.run(result)\n\
        json.dump(result, sys.stdout)\n";
    let payload = serde_json::json!({"code": source, "inputs": inputs});
    let mut child = std::process::Command::new("python3")
        .args(["-I", "-S", "-c", RUNNER])
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Runs every offline code step of an example in order, feeding outputs forward; steps that
/// need the network, an agent, or the output of a step that was not run are left out.
fn run_offline_steps(
    file: &str,
    workflow_inputs: serde_json::Value,
) -> std::collections::HashMap<String, serde_json::Value> {
    let path = examples_dir().join("workflows").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let workflow = spec::parse_workflow(file, &text).unwrap();
    let mut outputs = std::collections::HashMap::new();
    'steps: for step in workflow.steps() {
        let spec::StepBody::Code { source } = step.body() else {
            continue;
        };
        if step.network() != spec::Network::None || !step.connections().is_empty() {
            continue;
        }
        let mut inputs = serde_json::Map::new();
        for (name, input) in step.inputs() {
            let value = match input {
                spec::InputSource::Literal(value) => value.clone(),
                spec::InputSource::WorkflowInput(input) => workflow_inputs[input].clone(),
                spec::InputSource::StepOutput(earlier) => match outputs.get(earlier) {
                    Some(value) => serde_json::Value::clone(value),
                    None => continue 'steps,
                },
            };
            inputs.insert(name.clone(), value);
        }
        let output = run_offline_step(source, &serde_json::Value::Object(inputs));
        outputs.insert(step.id().to_string(), output);
    }
    outputs
}

#[test]
fn the_offline_example_runs_end_to_end() {
    let outputs = run_offline_steps(
        "word_count.yaml",
        serde_json::json!({"text": "The cat and the hat. A cat sat; the cat's hat sat too!", "top": 2}),
    );
    assert_eq!(
        outputs["report"]["report"],
        "Most frequent words\n===================\ncat: 2\nhat: 2\n13 words, 5 distinct"
    );
}

#[test]
fn the_offline_steps_of_the_networked_examples_run() {
    let refund = run_offline_steps(
        "refund.yaml",
        serde_json::json!({"ticket_id": " T-1042 ", "amount_cents": 1250}),
    );
    assert_eq!(refund["build_request"]["ticket"], "T-1042");
    assert!(!refund.contains_key("send_refund"));
    let digest = run_offline_steps(
        "weekly_digest.yaml",
        serde_json::json!({"week_of": "2026-11-26"}),
    );
    assert_eq!(
        digest["pick_period"],
        serde_json::json!({"start": "2026-11-23", "end": "2026-11-29", "label": "2026-W48"})
    );
}
