//! G16 (review "credentials" A1): no value of the account reaches a run's record, whether or not
//! the run's steps were granted it. A run observes account values by accident: a person types
//! one into an input or a note, a workspace file holds one, an earlier step found one. Every
//! writer scrubs with the account's values, not only with the connections the steps hold; the
//! plaintext handed to a step stays exactly what it was granted.

use engine::{Decision, GateDecision, PersonDecision};
use serde_json::json;
use storage::{AuditLog, Door, EventLog, RunStatus, RunStore};

use crate::support::{
    ACCOUNT, Harness, SECRET, account, cli, contains, failed_after_code_started, succeeded,
    workflow,
};

/// An agent secret, a model key and a connection that no step of the workflow names.
const AGENT_SECRET: &str = "ghp_Zr8Lq2Wm4Tn6Yp1Xs9Vb3Kc7Hd5Jf0Ga2Ue";
const MODEL_KEY: &str = "sk-ant-api03-ModelKeyNeverGranted-77Qx";
const OTHER_CONNECTION: &str = "xoxb-3141592653-AbCdEfGhIjKlMnOpQrStUv";

/// A string input, an offline step that fails once, then a gate before a second step.
const ECHO: &str = r#"name: echo
python: "3.11"
inputs: { note: string }
steps:
  - id: reader
    explain: Reads a workspace file and echoes its input.
    connections: [payments]
    inputs: { note: { from: input.note } }
    code: |
      def main(note):
          return {"note": note}
  - id: after!
    explain: Runs after a person approved.
    inputs: { got: { from: reader } }
    code: |
      def main(got):
          return got
"#;

fn harness_with_account_values() -> Harness {
    let harness = Harness::new();
    harness.source.set_secret(ACCOUNT, "GH_TOKEN", AGENT_SECRET);
    harness
        .source
        .set_model_key(ACCOUNT, "anthropic", MODEL_KEY);
    harness
        .source
        .set_connection_field(ACCOUNT, "other", "key", OTHER_CONNECTION);
    harness
}

fn assert_nowhere(harness: &Harness, values: &[&str]) {
    let bytes = harness.database_bytes();
    for value in values {
        assert!(
            !contains(&bytes, value.as_bytes()),
            "an account value the run was never granted reached the database: {value}"
        );
    }
}

#[test]
fn g16_account_values_in_inputs_output_print_error_and_notes_are_never_stored() {
    let harness = harness_with_account_values();
    // The first attempt fails quoting the secret; a person retries; the second prints the
    // model key and returns the other connection's value.
    harness.executor.then("reader", |_| {
        failed_after_code_started(&format!("could not use {AGENT_SECRET}"))
    });
    harness.executor.then("reader", |_| {
        let mut report = succeeded(json!({"found": OTHER_CONNECTION, "k": MODEL_KEY}));
        report.stdout = format!("token for the legacy tool: {AGENT_SECRET}\n")
            .into_bytes()
            .into();
        report.stderr = format!("model key {MODEL_KEY}\n").into_bytes().into();
        report
    });
    let engine = harness.engine();
    let failed = engine
        .start_run(
            &account(),
            &workflow(ECHO),
            json!({"note": format!("the key is {OTHER_CONNECTION}")}),
            cli("alice"),
        )
        .unwrap();
    assert_eq!(failed.status, RunStatus::NeedsAttention);
    let parked = engine
        .retry(
            &failed.run,
            "reader",
            None,
            PersonDecision {
                who: cli("alice"),
                door: Door::Cli,
                note: format!("retrying; it was {AGENT_SECRET}"),
            },
        )
        .unwrap();
    assert_eq!(parked.status, RunStatus::WaitingApproval);
    let done = engine
        .decide(
            &parked.run,
            "after",
            Decision {
                kind: GateDecision::Approve,
                who: cli("alice"),
                door: Door::Cli,
                note: format!("go; it was {OTHER_CONNECTION} and also {MODEL_KEY}"),
            },
        )
        .unwrap();
    assert_eq!(done.status, RunStatus::Succeeded);

    // The steps were handed exactly what they were granted.
    let calls = harness.executor.calls_of("reader");
    assert_eq!(
        calls[0].env,
        vec![("CONN_PAYMENTS_API_KEY".to_owned(), SECRET.to_owned())]
    );

    assert_nowhere(&harness, &[AGENT_SECRET, MODEL_KEY, OTHER_CONNECTION]);
    let record = harness.store.run(&done.run).unwrap().unwrap();
    assert!(record.inputs.to_string().contains("[REDACTED]"));
    let audit = harness.store.audit_entries().unwrap();
    assert!(!audit.is_empty());
    let events = harness.store.events(&done.run).unwrap();
    assert!(
        events
            .iter()
            .any(|event| event.payload.to_string().contains("[REDACTED]")),
        "the values are masked, not dropped"
    );
}

/// G1, G16 (review "credentials" A3): a definition that holds a value of the account (in its
/// name, a step id, an explanation, a literal) is refused before a run, naming where, like a
/// workspace write; nothing of it is stored.
#[test]
fn g16_a_definition_holding_an_account_value_is_refused_before_a_run_with_its_line() {
    let harness = harness_with_account_values();
    let text = format!(
        "name: \"sync with {OTHER_CONNECTION}\"\npython: \"3.11\"\nsteps:\n  - id: s\n    \
         explain: Does it.\n    code: |\n      def main():\n          return 1\n"
    );
    let refused = harness
        .engine()
        .start_run(&account(), &workflow(&text), json!({}), cli("alice"));
    match refused {
        Err(error) => {
            let shown = error.to_string();
            assert!(shown.contains("workflow.yaml:1:"), "{shown}");
            assert!(!shown.contains(OTHER_CONNECTION), "{shown}");
        }
        Ok(summary) => panic!("a run was created: {summary:?}"),
    }
    assert!(harness.store.runs(&account()).unwrap().is_empty());
    assert_nowhere(&harness, &[OTHER_CONNECTION]);
}
