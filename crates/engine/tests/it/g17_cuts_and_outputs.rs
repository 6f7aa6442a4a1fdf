//! G17 and G4 (review "credentials" A4, A8): a cut never leaves part of a value, also of a
//! value with non-ASCII characters cut inside one of them; and a value under a forbidden key
//! stays out of the record of the step that produced it, not only of the step it was refused to.

use serde_json::json;
use storage::{EventLog, RunStatus, RunStore};

use crate::support::{ACCOUNT, Harness, OFFLINE, account, cli, contains, succeeded, workflow};

/// A password with Cyrillic letters: two bytes each in UTF-8.
const NON_ASCII: &str = "correct-horse-battery-staple-ключ-77";

fn run_printing(harness: &Harness, stdout: Vec<u8>, stderr: Vec<u8>) -> storage::RunId {
    harness.executor.then("compute", move |_| {
        let mut report = succeeded(json!(1));
        report.stdout = stdout.clone().into();
        report.stderr = stderr.clone().into();
        report.isolation_notes = vec!["printed output went over the limit and was cut".into()];
        report
    });
    let summary = harness
        .engine()
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("alice"),
        )
        .unwrap();
    assert_eq!(summary.status, RunStatus::Succeeded);
    summary.run
}

fn printed(harness: &Harness, run: &storage::RunId) -> Vec<String> {
    harness
        .store
        .events(run)
        .unwrap()
        .into_iter()
        .filter(|event| event.kind == "step.printed")
        .map(|event| event.payload["text"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn g17_a_value_cut_inside_a_multibyte_character_leaves_nothing_of_it() {
    let harness = Harness::new();
    harness
        .source
        .set_connection_field(ACCOUNT, "intl", "password", NON_ASCII);
    // 29 ASCII bytes and the first byte of the first Cyrillic letter, as the sandbox's shared
    // budget cut it.
    let mut stderr = NON_ASCII.as_bytes()[..30].to_vec();
    let visible = &NON_ASCII[..29];
    assert!(std::str::from_utf8(&stderr).is_err());
    let run = run_printing(&harness, b"A".repeat(100), std::mem::take(&mut stderr));
    for text in printed(&harness, &run) {
        assert!(
            !text.contains(visible),
            "part of the value was recorded: {text}"
        );
    }
    assert!(!contains(&harness.database_bytes(), visible.as_bytes()));
}

#[test]
fn g17_a_cut_is_marked_so_it_never_joins_the_next_chunk_into_a_value() {
    let harness = Harness::new();
    let mut options = harness.options.clone();
    options.max_printed_bytes = 64;
    // The engine's own cut falls just before a value: what is kept must end in a mark, so
    // that a reader joining it with what follows cannot rebuild the value.
    let secret = crate::support::SECRET;
    let text = format!("{}{secret}", "B".repeat(60));
    harness.executor.then("compute", move |_| {
        let mut report = succeeded(json!(1));
        report.stdout = text.clone().into_bytes().into();
        report
    });
    let engine = engine::Engine::new(
        options,
        harness.store.clone(),
        harness.executor.clone(),
        redact::ScrubSets::new(harness.source.clone()),
        std::sync::Arc::new(engine::PersonSupervisor),
        harness.clock.clone(),
        harness.ids.clone(),
    );
    let summary = engine
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("alice"),
        )
        .unwrap();
    let kept = printed(&harness, &summary.run).remove(0);
    assert!(kept.len() <= 64 + 64, "{kept}");
    assert!(
        kept.ends_with("[cut]"),
        "a cut text ends with the cut mark: {kept}"
    );
}

#[test]
fn g4_a_value_under_a_forbidden_key_stays_out_of_the_producing_steps_record() {
    let harness = Harness::new();
    let minted = "typed-by-hand-ABCDEFGH";
    harness.executor.then("compute", move |_| {
        succeeded(json!({"wrapper": [{"Api_Key": minted}], "kept": "plain"}))
    });
    let summary = harness
        .engine()
        .start_run(
            &account(),
            &workflow(OFFLINE),
            json!({"count": 1}),
            cli("alice"),
        )
        .unwrap();
    // The next step is refused (it would receive a credential as an input)...
    assert_eq!(summary.status, RunStatus::NeedsAttention);
    assert!(harness.executor.calls_of("report").is_empty());
    // ...and the producing step's own output, event and the database never hold the value.
    let attempts = harness.store.attempts(&summary.run).unwrap();
    let output = attempts[0].output.as_ref().unwrap().to_string();
    assert!(!output.contains(minted), "{output}");
    assert!(output.contains("Api_Key"), "the key is kept: {output}");
    assert!(output.contains("plain"), "{output}");
    assert!(!contains(&harness.database_bytes(), minted.as_bytes()));
}
