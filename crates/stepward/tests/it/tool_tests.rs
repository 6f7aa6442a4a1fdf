//! `stepward tools test` and the console's agent page (issue 40), over the real sandbox: a
//! custom tool runs once in a fresh sandbox with an allowlisted environment (nothing of the
//! platform's, its agent's secrets only when confirmed), and a script that prints its secret in
//! every form the redactor knows leaves no form of it in what is shown, kept or stored.

use crate::agents::put;
use crate::browser::{Browser, look_at, start_server};
use crate::support::{Home, stderr, stdout};

const TOKEN: &str = "tool-token-5bd1e07c93a24f1e8c6d";

const AGENT: &str = "---
name: digest
description: Writes a short digest of the week's notes.
model: fake/fake-large
tools: [leak]
secrets: [RELEASES_API_TOKEN]
custom_tools:
  leak:
    explain: Prints its secret in every form, to show that none of them gets out.
    script: tools/leak.py
    arguments: { query: string }
---
Write the digest.
";

/// Prints the secret in every form `redact` knows (and the platform's environment, which must
/// hold nothing of the platform's).
const SCRIPT: &str = r#"import base64
import json
import os
import urllib.parse


def main(query):
    value = os.environ.get("RELEASES_API_TOKEN", "")
    raw = value.encode()
    forms = [
        value,
        base64.b64encode(raw).decode(),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        base64.b64encode(b"x" + raw).decode(),
        base64.b64encode(b"xy" + raw).decode(),
        raw.hex(),
        raw.hex().upper(),
        urllib.parse.quote(value, safe=""),
        json.dumps(value)[1:-1],
    ]
    for form in forms:
        print(form)
    print("environment:", sorted(os.environ))
    return {"saw_secret": bool(value), "query": query, "forms": forms}
"#;

/// The forms of `value` a leak could take: what the script prints.
fn forms(value: &str) -> Vec<String> {
    test_support::bytes::secret_forms(value)
}

fn home_with_tool() -> Home {
    let home = Home::new();
    let set = home.stepward_with_stdin(&["secrets", "set", "RELEASES_API_TOKEN"], TOKEN);
    assert!(set.status.success(), "{}", stderr(&set));
    put(&home, "agents/digest/AGENT.md", AGENT);
    put(&home, "agents/digest/tools/leak.py", SCRIPT);
    home
}

/// Nothing the data directory holds (its database, its workspace) holds a form of the token.
fn assert_stored_nowhere(home: &Home) {
    for (path, bytes) in test_support::bytes::files_under(&home.data_dir()) {
        for form in forms(TOKEN) {
            assert!(
                !test_support::bytes::contains(&bytes, &form),
                "{} holds the token as {form}",
                path.display()
            );
        }
    }
}

#[test]
fn g19_a_tool_runs_without_its_secrets_unless_they_are_confirmed_and_none_gets_out_needs_root() {
    let home = home_with_tool();
    // Without secrets: it ran, saw none, and its environment holds nothing of the platform's.
    let plain = home.stepward(&[
        "tools",
        "test",
        "digest",
        "leak",
        "--input",
        "query=week",
        "--json",
    ]);
    assert!(
        plain.status.success(),
        "{}{}",
        stdout(&plain),
        stderr(&plain)
    );
    let record: serde_json::Value = serde_json::from_str(&stdout(&plain)).unwrap();
    assert_eq!(record["outcome"], "succeeded", "{record}");
    assert_eq!(record["with_secrets"], false);
    assert_eq!(record["result"]["saw_secret"], false, "{record}");
    let printed = record["printed"].as_str().unwrap();
    assert!(printed.contains("environment: []"), "{printed}");

    // With secrets, unconfirmed: what to confirm, and nothing run.
    let asked = home.stepward(&[
        "tools",
        "test",
        "digest",
        "leak",
        "--input",
        "query=week",
        "--with-secrets",
    ]);
    assert!(!asked.status.success());
    let said = stdout(&asked);
    assert!(
        said.contains("runs with the agent's secrets only once you confirm"),
        "{said}"
    );
    assert!(said.contains("+def main(query):"), "{said}");
    let confirm = said
        .split("--confirm ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_owned();

    // Confirmed: it saw the secret, and printed it in every form; none is shown or kept.
    let ran = home.stepward(&[
        "tools",
        "test",
        "digest",
        "leak",
        "--input",
        "query=week",
        "--with-secrets",
        "--confirm",
        &confirm,
        "--json",
    ]);
    assert!(ran.status.success(), "{}{}", stdout(&ran), stderr(&ran));
    let shown = format!("{}{}", stdout(&ran), stderr(&ran));
    for form in forms(TOKEN) {
        assert!(!shown.contains(&form), "{form} shown in {shown}");
    }
    let record: serde_json::Value = serde_json::from_str(&stdout(&ran)).unwrap();
    assert_eq!(record["with_secrets"], true);
    assert_eq!(record["result"]["saw_secret"], true, "{record}");
    assert_stored_nowhere(&home);
    let database = rusqlite::Connection::open(home.data_dir().join("stepward.db")).unwrap();
    let audited: i64 = database
        .query_row(
            "SELECT count(*) FROM audit_log WHERE action = 'tool.test'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(
        audited, 4,
        "each test is in the audit log before it runs and with its outcome"
    );
}

#[test]
fn g26_the_console_runs_a_tool_and_confirms_its_secrets_in_a_real_browser_needs_root() {
    let home = home_with_tool();
    let (_server, address, sign_in_path) = start_server(&home);
    let base = format!("http://{address}");
    let browser = Browser::start();
    browser.sign_in_with_link(&format!("{base}{sign_in_path}"), "ada (owner)");
    browser.open(&format!("{base}/agents"));
    browser.wait_for("the agents page", |_, source| source.contains("Agents"));
    look_at(&browser, "agents");
    browser.click(&browser.find("a[href='/agents/digest']"));
    browser.wait_for("the agent's page", |_, source| {
        source.contains("Agent digest")
    });
    look_at(&browser, "agent");
    // Without secrets.
    browser.type_into(&browser.find("#arg-leak-query"), "week");
    browser
        .click(&browser.find("form[action='/agents/digest/tools/leak/test'] button[type=submit]"));
    browser.wait_for("the tool's result", |_, source| {
        source.contains("result-title")
    });
    let page = browser.page_source();
    assert!(page.contains("succeeded"), "{page}");
    assert!(
        page.contains("&quot;saw_secret&quot;: false") || page.contains("\"saw_secret\": false"),
        "{page}"
    );
    look_at(&browser, "tool-test");
    // With secrets: the confirmation first, then the run.
    browser.open(&format!("{base}/agents/digest"));
    browser.wait_for("the agent's page", |_, source| {
        source.contains("Agent digest")
    });
    browser.type_into(&browser.find("#arg-leak-query"), "week");
    browser.click(&browser.find("input[name=with_secrets]"));
    browser
        .click(&browser.find("form[action='/agents/digest/tools/leak/test'] button[type=submit]"));
    browser.wait_for("the confirmation", |_, source| {
        source.contains("confirm-title")
    });
    let page = browser.page_source();
    assert!(page.contains("Last changed"), "{page}");
    assert!(page.contains("def main(query)"), "{page}");
    look_at(&browser, "tool-test-confirm");
    browser.click(&browser.find("#confirm-title ~ form button[type=submit]"));
    browser.wait_for("the result with secrets", |_, source| {
        source.contains("with the agent")
    });
    let page = browser.page_source();
    for form in forms(TOKEN) {
        assert!(!page.contains(&form), "{form} on the page");
    }
    assert!(page.contains("saw_secret"), "{page}");
    assert_stored_nowhere(&home);
}
