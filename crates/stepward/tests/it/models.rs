//! `stepward models ...` and `stepward dev fake-model` end to end, against the fake model on
//! 127.0.0.1 (the operator's exemption lets the CLI reach it); nothing leaves loopback.

use std::io::BufRead;
use std::process::{Command, Stdio};

use fake_model::{BlockingFakeModel, Script, ScriptTurn};
use serde_json::Value;

use crate::support::{Home, repo_root, stderr, stdout};
use test_support::bytes::contains;

const KEY: &str = "sk-ant-cli-test-0123456789-zyxwvut";
const OTHER_KEY: &str = "sk-local-cli-test-9876543210-abc";

fn fake(turns: Vec<ScriptTurn>) -> BlockingFakeModel {
    BlockingFakeModel::start(Script::new(turns)).unwrap()
}

fn list(home: &Home, exempt: &str) -> Vec<Value> {
    let listed = home.stepward(&["models", "list", "--json", "--allow-model-endpoint", exempt]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    serde_json::from_str::<Value>(&stdout(&listed))
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn models_add_list_default_test_rm_end_to_end_against_the_fake() {
    let fake = fake(vec![
        ScriptTurn::text("Hello, I can be reached.").with_usage(17, 6),
        ScriptTurn::text("second provider here").with_usage(3, 4),
    ]);
    let home = Home::new();
    let exempt = fake.endpoint();
    let added = home.stepward_with_stdin(
        &[
            "models",
            "add",
            "claude",
            "--provider",
            "anthropic",
            "--base-url",
            &fake.url(),
            "--assistant-model",
            "fake-large",
            "--allow-model-endpoint",
            &exempt,
        ],
        &format!("{KEY}\n"),
    );
    assert!(added.status.success(), "{}", stderr(&added));
    assert!(
        stderr(&added).contains("it is the account's default"),
        "{}",
        stderr(&added)
    );
    let added = home.stepward_with_stdin(
        &[
            "models",
            "add",
            "local",
            "--provider",
            "openai",
            "--base-url",
            &fake.openai_base_url(),
            "--allow-model-endpoint",
            &exempt,
        ],
        OTHER_KEY,
    );
    assert!(added.status.success(), "{}", stderr(&added));
    assert!(!stderr(&added).contains("default"), "{}", stderr(&added));

    let providers = list(&home, &exempt);
    assert_eq!(providers.len(), 2);
    assert_eq!(providers[0]["name"], "claude");
    assert_eq!(providers[0]["is_default"], true);
    assert_eq!(
        providers[0]["base_url"],
        format!("{}/v1/messages", fake.url())
    );
    assert_eq!(providers[0]["key_version"], 1);
    assert_eq!(providers[1]["is_default"], false);

    // The test turn goes to the assistant model by default and prints what came back.
    let tested = home.stepward(&[
        "models",
        "test",
        "claude",
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert!(tested.status.success(), "{}", stderr(&tested));
    let printed = stdout(&tested);
    assert!(
        printed.contains("answer: Hello, I can be reached."),
        "{printed}"
    );
    assert!(printed.contains("model: fake-large"), "{printed}");
    assert!(printed.contains("tokens: 17 in, 6 out"), "{printed}");
    let tested = home.stepward(&[
        "models",
        "test",
        "local",
        "--model",
        "llama-small",
        "--json",
        "--allow-model-endpoint",
        &exempt,
    ]);
    assert!(tested.status.success(), "{}", stderr(&tested));
    let result: Value = serde_json::from_str(&stdout(&tested)).unwrap();
    assert_eq!(result["ok"], true);
    assert_eq!(result["answered_by"], "llama-small");
    assert_eq!(result["output_tokens"], 4);

    // Each key went to its own provider's auth header and nowhere else.
    let received = fake.requests();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].header("x-api-key"), Some(KEY));
    assert!(!received[0].as_text().contains(OTHER_KEY));
    assert_eq!(
        received[1].header("authorization"),
        Some(format!("Bearer {OTHER_KEY}").as_str())
    );
    assert!(!received[1].as_text().contains(KEY));

    let made_default = home.stepward(&["models", "default", "local"]);
    assert!(made_default.status.success(), "{}", stderr(&made_default));
    let providers = list(&home, &exempt);
    assert_eq!(providers[0]["is_default"], false);
    assert_eq!(providers[1]["is_default"], true);

    let removed = home.stepward(&["models", "rm", "claude"]);
    assert!(removed.status.success(), "{}", stderr(&removed));
    let providers = list(&home, &exempt);
    assert_eq!(providers.len(), 1);
    assert_eq!(providers[0]["name"], "local");
    let missing = home.stepward(&["models", "rm", "claude"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no model provider `claude`"));

    // Every change is in the audit log, by name; no key is stored in plaintext anywhere.
    let audit = String::from_utf8_lossy(&home.data_bytes()).into_owned();
    for action in ["model.add", "model.test", "model.default", "model.remove"] {
        assert!(audit.contains(action), "{action} is not in the audit log");
    }
    assert!(!contains(&home.data_bytes(), KEY));
    assert!(!contains(&home.data_bytes(), OTHER_KEY));
}

#[test]
fn g11_a_model_endpoint_on_loopback_without_the_operators_exemption_is_refused() {
    let fake = fake(vec![ScriptTurn::text("must not be reached")]);
    let home = Home::new();
    let port = fake.address().port();
    for (base_url, expected) in [
        (fake.url(), "plain `http`"),
        (
            format!("https://127.0.0.1:{port}"),
            "127.0.0.0/8 (loopback)",
        ),
        (format!("https://[::1]:{port}"), "loopback"),
    ] {
        let added = home.stepward_with_stdin(
            &[
                "models",
                "add",
                "claude",
                "--provider",
                "anthropic",
                "--base-url",
                &base_url,
            ],
            KEY,
        );
        assert_eq!(added.status.code(), Some(2), "{base_url}");
        assert!(
            stderr(&added).contains(expected),
            "{base_url}: {}",
            stderr(&added)
        );
        assert!(
            stderr(&added).contains("--allow-model-endpoint"),
            "the refusal says what the operator can do: {}",
            stderr(&added)
        );
    }
    // Added with the exemption, then tested without it: refused at the request too.
    let added = home.stepward_with_stdin(
        &[
            "models",
            "add",
            "claude",
            "--provider",
            "anthropic",
            "--base-url",
            &fake.url(),
            "--allow-model-endpoint",
            &fake.endpoint(),
        ],
        KEY,
    );
    assert!(added.status.success(), "{}", stderr(&added));
    let tested = home.stepward(&["models", "test", "claude", "--model", "m"]);
    assert_eq!(tested.status.code(), Some(1));
    assert!(
        stderr(&tested).contains("plain `http`"),
        "{}",
        stderr(&tested)
    );
    assert!(fake.requests().is_empty(), "the fake was reached");
}

#[test]
fn g19_check_and_run_refuse_a_definition_that_names_a_model_key() {
    let fake = fake(Vec::new());
    let home = Home::new();
    let added = home.stepward_with_stdin(
        &[
            "models",
            "add",
            "local-llama",
            "--provider",
            "openai",
            "--base-url",
            &fake.openai_base_url(),
            "--allow-model-endpoint",
            &fake.endpoint(),
        ],
        KEY,
    );
    assert!(added.status.success(), "{}", stderr(&added));
    let agent = home.dir.path().join("AGENT.md");
    std::fs::write(
        &agent,
        "---\nname: helper\ndescription: Helps.\nmodel: other/m\nsecrets: [LOCAL_LLAMA]\n---\nHelp.\n",
    )
    .unwrap();
    let workflow = home.dir.path().join("leak.yaml");
    std::fs::write(
        &workflow,
        "name: leak\npython: \"3.11\"\nsteps:\n  - id: send\n    explain: Sends it.\n    connections: [local_llama]\n    code: |\n      def main():\n          return 1\n",
    )
    .unwrap();
    let checked = home.stepward(&["check", agent.to_str().unwrap(), workflow.to_str().unwrap()]);
    assert_eq!(checked.status.code(), Some(1));
    let problems = stderr(&checked);
    assert!(
        problems.contains("names the model key of the provider `local-llama`"),
        "{problems}"
    );
    assert!(problems.contains("AGENT.md:5:"), "{problems}");
    assert!(problems.contains("leak.yaml:6:"), "{problems}");
    assert!(
        problems.contains("the model provider `other`"),
        "{problems}"
    );
    let ran = home.stepward(&["run", workflow.to_str().unwrap()]);
    assert_eq!(ran.status.code(), Some(1));
    assert!(
        stderr(&ran).contains("never reaches a script"),
        "{}",
        stderr(&ran)
    );
    // Without a data directory, the same files are only checked on their own.
    let elsewhere = Home::new();
    let checked = elsewhere.stepward(&["check", workflow.to_str().unwrap()]);
    assert!(checked.status.success(), "{}", stderr(&checked));
    assert!(
        !elsewhere.data_dir().exists(),
        "check created a data directory"
    );
}

#[test]
fn dev_fake_model_serves_a_script_file_that_models_test_reaches() {
    let home = Home::new();
    let script = home.dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{ "turns": [ { "text": "scripted by hand", "usage": { "input_tokens": 5, "output_tokens": 3 } } ] }"#,
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_stepward"))
        .args(["dev", "fake-model", "--listen", "127.0.0.1:0", "--script"])
        .arg(&script)
        .current_dir(repo_root())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first_line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first_line)
        .unwrap();
    let endpoint = first_line
        .split("--allow-model-endpoint ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .map(|endpoint| endpoint.trim_end_matches('.').to_owned())
        .unwrap_or_else(|| panic!("no endpoint in {first_line:?}"));
    let base_url = format!("http://{endpoint}");
    let added = home.stepward_with_stdin(
        &[
            "models",
            "add",
            "fake",
            "--provider",
            "anthropic",
            "--base-url",
            &base_url,
            "--allow-model-endpoint",
            &endpoint,
        ],
        KEY,
    );
    let tested = home.stepward(&[
        "models",
        "test",
        "fake",
        "--model",
        "m",
        "--allow-model-endpoint",
        &endpoint,
    ]);
    // Ended by its own pid, whatever the assertions below say.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(added.status.success(), "{}", stderr(&added));
    assert!(tested.status.success(), "{}", stderr(&tested));
    assert!(
        stdout(&tested).contains("answer: scripted by hand"),
        "{}",
        stdout(&tested)
    );
    assert!(stdout(&tested).contains("tokens: 5 in, 3 out"));
}

#[test]
fn dev_fake_model_refuses_a_broken_script_and_a_public_address() {
    let home = Home::new();
    let script = home.dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{ "turns": [ { "text": "x", "error": { "status": 429 } } ] }"#,
    )
    .unwrap();
    let refused = home.stepward(&[
        "dev",
        "fake-model",
        "--listen",
        "127.0.0.1:0",
        "--script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("turn 1 of the script"),
        "{}",
        stderr(&refused)
    );
    std::fs::write(&script, r#"{ "turns": [] }"#).unwrap();
    let refused = home.stepward(&[
        "dev",
        "fake-model",
        "--listen",
        "0.0.0.0:0",
        "--script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("loopback only"),
        "{}",
        stderr(&refused)
    );
}
