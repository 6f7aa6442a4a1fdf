//! G15 end to end: the binary's supervisor is the account's assistant on its default provider
//! and assistant model (the fake model here), held to the engine's rules, with real
//! sandboxes (root, as CI has).

use fake_model::{BlockingFakeModel, Script, ScriptTurn};
use serde_json::{Value, json};

use crate::support::{Home, run_id, stderr, stdout};

const MODEL_KEY: &str = "sk-supervisor-test-model-key-77aa";

/// An offline step that refuses a negative number.
const OFFLINE: &str = r#"name: halve
python: "3.11"
inputs: { n: integer }
steps:
  - id: halve
    explain: Halves a positive number.
    inputs: { n: { from: input.n } }
    code: |
      def main(n):
          print("halving", n)
          if n < 0:
              raise ValueError("n must be positive")
          return n // 2
"#;

/// A networked step that fails after its code started: `unknown`.
const NETWORKED: &str = r#"name: send
python: "3.11"
inputs: { n: integer }
steps:
  - id: send
    explain: Pretends to send a request, then fails.
    network: public_egress
    inputs: { n: { from: input.n } }
    code: |
      def main(n):
          raise RuntimeError("connection reset after the request was sent")
"#;

/// A gated offline step.
const GATED: &str = r#"name: pay
python: "3.11"
inputs: { n: integer }
steps:
  - id: pay!
    explain: Records a payment of a positive amount.
    inputs: { n: { from: input.n } }
    code: |
      def main(n):
          if n < 0:
              raise ValueError("n must be positive")
          return n
"#;

/// A home whose account's default provider is the fake, with an assistant model.
fn home_with(fake: &BlockingFakeModel) -> Home {
    let home = Home::new();
    crate::support::add_fake_assistant(&home, fake, MODEL_KEY);
    home
}

fn run(home: &Home, exempt: &str, text: &str, n: i64, flags: &[&str]) -> std::process::Output {
    let workflow = home.dir.path().join("workflow.yaml");
    std::fs::write(&workflow, text).unwrap();
    let input = format!("n={n}");
    let mut args = vec![
        "run",
        workflow.to_str().unwrap(),
        "--input",
        &input,
        "--allow-model-endpoint",
        exempt,
    ];
    args.extend_from_slice(flags);
    home.stepward(&args)
}

fn events(home: &Home, run: &str) -> Vec<Value> {
    let events = home.stepward(&["runs", "events", run, "--json"]);
    let events: Value = serde_json::from_str(&stdout(&events)).unwrap();
    events.as_array().unwrap().clone()
}

fn of_kind(events: &[Value], kind: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|event| event["kind"] == kind)
        .map(|event| event["payload"].clone())
        .collect()
}

#[test]
fn g15_an_offline_failure_retried_with_new_inputs_succeeds_needs_root() {
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::call(
        "retry",
        json!({"inputs": {"n": 8}, "note": "A negative number cannot be halved; 8 was meant."}),
    )]))
    .unwrap();
    let home = home_with(&fake);
    let ran = run(&home, &fake.endpoint(), OFFLINE, -8, &[]);
    assert!(ran.status.success(), "{}{}", stdout(&ran), stderr(&ran));
    assert!(stdout(&ran).contains("succeeded"), "{}", stdout(&ran));
    // `run` and `runs show` say who stepped in and what it changed (newcomer 3, friction 4).
    let said = "the assistant (fake, model fake-assistant) retried step halve after attempt 1 \
                with inputs changed: n; its note: A negative number cannot be halved";
    assert!(stdout(&ran).contains(said), "{}", stdout(&ran));
    let shown = home.stepward(&["runs", "show", &run_id(&ran)]);
    assert!(stdout(&shown).contains(said), "{}", stdout(&shown));
    let events = events(&home, &run_id(&ran));
    let decided = of_kind(&events, "supervisor.decision");
    assert_eq!(decided.len(), 1);
    assert_eq!(decided[0]["decision"], "retry");
    assert_eq!(decided[0]["inputs"], json!({"n": 8}));
    assert_eq!(decided[0]["changed"], json!(["n"]));
    assert_eq!(
        decided[0]["by"],
        json!({"kind": "model", "provider": "fake", "model": "fake-assistant"})
    );
    assert_eq!(
        decided[0]["note"],
        "A negative number cannot be halved; 8 was meant."
    );
    // It saw the error and what the step printed, as data; never the model key.
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let text = requests[0].as_text();
    assert!(text.contains("n must be positive"), "{text}");
    assert!(text.contains("halving -8"), "{text}");
    assert!(text.contains("\"model\":\"fake-assistant\""), "{text}");
}

#[test]
fn g15_a_retry_of_an_unknown_networked_step_is_refused_and_waits_for_a_person_needs_root() {
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::call(
        "retry",
        json!({"inputs": {"n": 1}, "note": "Try again."}),
    )]))
    .unwrap();
    let home = home_with(&fake);
    let ran = run(
        &home,
        &fake.endpoint(),
        NETWORKED,
        1,
        &["--backend", "unisolated"],
    );
    assert!(
        stdout(&ran).contains("needs_attention"),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let events = events(&home, &run_id(&ran));
    let finished = of_kind(&events, "attempt.finished");
    assert_eq!(finished.len(), 1, "never run a second time");
    assert_eq!(finished[0]["status"], "unknown");
    let refused = of_kind(&events, "supervisor.retry_refused");
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0]["reason"]
            .as_str()
            .unwrap()
            .contains("only a person can"),
        "{}",
        refused[0]
    );
    // The prompt said it plainly.
    assert!(fake.requests()[0].as_text().contains("unknown means stop"));
}

#[test]
fn g15_a_retry_of_a_gated_step_parks_again_for_a_new_decision_needs_root() {
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::call(
        "retry",
        json!({"inputs": {"n": 40}, "note": "The amount was negative; 40 was meant."}),
    )]))
    .unwrap();
    let home = home_with(&fake);
    let exempt = fake.endpoint();
    let ran = run(&home, &exempt, GATED, -40, &[]);
    assert!(
        stdout(&ran).contains("waiting_approval"),
        "{}",
        stdout(&ran)
    );
    let run = run_id(&ran);
    let approve = |note: &str| {
        home.stepward(&[
            "approve",
            &run,
            "pay",
            "--note",
            note,
            "--allow-model-endpoint",
            &exempt,
        ])
    };
    let first = approve("looks right");
    assert!(
        stdout(&first).contains("waiting_approval"),
        "the supervisor's new inputs wait for a person: {}{}",
        stdout(&first),
        stderr(&first)
    );
    assert_eq!(of_kind(&events(&home, &run), "attempt.finished").len(), 1);
    let second = approve("40 it is");
    assert!(
        stdout(&second).contains("succeeded"),
        "{}{}",
        stdout(&second),
        stderr(&second)
    );
    let finished = of_kind(&events(&home, &run), "attempt.finished");
    assert_eq!(finished.len(), 2);
    assert_eq!(finished[1]["output"], 40);
    assert_eq!(of_kind(&events(&home, &run), "gate.parked").len(), 2);
}

#[test]
fn g15_the_supervisor_stops_the_run_needs_root() {
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::call(
        "stop",
        json!({"note": "Nothing in the inputs can make this work."}),
    )]))
    .unwrap();
    let home = home_with(&fake);
    let ran = run(&home, &fake.endpoint(), OFFLINE, -1, &[]);
    assert!(
        stdout(&ran).contains("stopped"),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let decided = of_kind(&events(&home, &run_id(&ran)), "supervisor.decision");
    assert_eq!(decided[0]["decision"], "stop");
    assert_eq!(
        decided[0]["reason"],
        "Nothing in the inputs can make this work."
    );
}

#[test]
fn g15_an_unreachable_provider_falls_back_to_a_person_and_says_so_needs_root() {
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::text("unused")])).unwrap();
    let home = home_with(&fake);
    let exempt = fake.endpoint();
    // Nothing listens there any more: the provider cannot be reached.
    drop(fake);
    let ran = run(&home, &exempt, OFFLINE, -1, &[]);
    assert!(
        stdout(&ran).contains("needs_attention"),
        "{}{}",
        stdout(&ran),
        stderr(&ran)
    );
    let decided = of_kind(&events(&home, &run_id(&ran)), "supervisor.decision");
    assert_eq!(decided[0]["decision"], "ask_person");
    assert_eq!(decided[0]["by"]["kind"], "no_model");
    let why = decided[0]["by"]["why"].as_str().unwrap();
    assert!(
        why.contains("could not be reached") && why.contains("a person decides"),
        "{why}"
    );
    assert!(!why.contains(MODEL_KEY));

    // With no provider at all, a person decides, and the record says so.
    let home = Home::new();
    let ran = run(&home, &exempt, OFFLINE, -1, &[]);
    assert!(stdout(&ran).contains("needs_attention"), "{}", stdout(&ran));
    let decided = of_kind(&events(&home, &run_id(&ran)), "supervisor.decision");
    assert!(
        decided[0]["by"]["why"]
            .as_str()
            .unwrap()
            .contains("no model provider is configured"),
        "{}",
        decided[0]
    );
    let told = home.stepward(&["models", "supervisor"]);
    assert!(
        stdout(&told).contains("failures go to a person"),
        "{}",
        stdout(&told)
    );
    let set = home.stepward(&["models", "supervisor", "--retries", "6"]);
    assert!(!set.status.success());
    assert!(stderr(&set).contains("from 0 to 5"), "{}", stderr(&set));
    let set = home.stepward(&["models", "supervisor", "--retries", "4"]);
    assert!(
        stdout(&set).contains("per step per run: 4"),
        "{}",
        stdout(&set)
    );
}
