//! Every HTML page of the router, in a real browser, each in a state that fills it (issue 42,
//! point 11): the list of pages is the router's own (`server::registered_routes`), so a page
//! added later without a filled state here fails this test rather than going unchecked. The
//! account holds what makes pages long: a step that printed hundreds of lines and returned a
//! long JSON value, a gate waiting for a decision (on a code step and on an agent step), a
//! failed step with two attempts, more than a page of runs, a second person, a key, a
//! connection, a share link and an interview. Each page is looked at on a laptop and a phone
//! (`look_at`: no sideways scroll, no squeezed cell, axe's default rules with none disabled and
//! no element excluded: 0 serious, 0 critical). Two refused forms (a retry whose inputs are not
//! JSON, a file outside the workspace) are looked at the same way, what was typed kept.
//!
//! The approve page of the gated agent step is read as the code step's is in g23 (issue 42,
//! point 1): what the agent is asked, who started the run, the pinned version, what it can
//! reach, and what the earlier step produced that it receives.

use std::collections::BTreeMap;

use fake_model::{BlockingFakeModel, Script, ScriptTurn};
use serde_json::{Value, json};

use crate::browser::{Browser, http, look_at, start_server_with};
use crate::support::{Home, add_fake_assistant, stderr};

/// A step that prints hundreds of lines and returns a long JSON value, then a gate that
/// receives it. Saved twice, so it has versions to list and a diff to show.
const LEDGER: &str = r#"name: ledger
python: "3.11"
inputs: { month: string }
steps:
  - id: tally
    explain: Reads the month's ledger, prints each line it checked and returns the totals.
    inputs: { month: { from: input.month } }
    code: |
      def main(month):
          for n in range(1, 401):
              print(f"{month}: checked ledger line {n} of 400, customer c{n % 37}, amount {n * 7} cents")
          return {"month": month, "customers": [
              {"customer": f"customer-{n}", "cents": n * 7, "lines": list(range(n % 5)),
               "note": "paid on time" if n % 3 else "paid late, reminder sent twice"}
              for n in range(1, 61)]}
  - id: pay!
    explain: Pays each customer the refund the totals show.
    inputs: { totals: { from: tally } }
    code: |
      def main(totals):
          return len(totals["customers"])
"#;

/// A step that prints and then fails: retried once by a person, it has two attempts.
const FLAKY: &str = r#"name: flaky
python: "3.11"
steps:
  - id: fetch
    explain: Reads the export and fails on its first bad line.
    code: |
      def main():
          for n in range(1, 301):
              print(f"checked export line {n}")
          raise ValueError("line 301 of the export is not a number")
"#;

/// A step that succeeds at once: run often, it fills the runs list past its first page.
const TICK: &str = r#"name: tick
python: "3.11"
steps:
  - id: tock
    explain: Answers that the clock ticked.
    code: |
      def main():
          return "tick"
"#;

/// An agent with read-only tools, asked at a gate to file what the step before proposed.
const FILER: &str = r#"---
name: filer
description: Files the proposed tickets in the team's notes.
model: fake/fake-large
tools: [Read, Write]
---
You file each proposal you are given as a note.
"#;

const FILE_PROPOSALS: &str = r#"name: file_proposals
python: "3.11"
steps:
  - id: propose
    explain: Proposes two tickets from the week's support notes.
    code: |
      def main():
          return [{"title": "Refund stuck", "body": "Acme's refund waits since Monday."},
                  {"title": "Login loop", "body": "Globex cannot sign in on a phone."}]
  - id: file!
    agent: filer
    task: File one note for each approved proposal under notes/tickets/.
    inputs: { proposals: { from: propose } }
"#;

/// What the assistant proposes in the interview.
const PROPOSED: &str = "name: greet\npython: \"3.11\"\nsteps:\n  - id: hello\n    explain: Says hello.\n    code: |\n      def main():\n          return \"hello\"\n";

/// How many runs of `tick`: more than the runs list shows on one page.
const TICKS: usize = 52;

/// Routes that answer something else than a page, and what they answer.
const NOT_PAGES: [(&str, &str); 2] = [
    ("/static/{*path}", "the console's stylesheet and script"),
    (
        "/runs/{id}/stream",
        "a run's live output as server-sent events",
    ),
];

/// `stepward ARGS` in `home`, which must succeed; gives what it printed.
fn stepward_ok(home: &Home, args: &[&str]) -> String {
    let output = home.stepward(args);
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The `run_…` id a `stepward run` printed.
fn printed_run_id(printed: &str) -> String {
    printed
        .split_whitespace()
        .find(|word| word.starts_with("run_"))
        .unwrap_or_else(|| panic!("no run id in {printed}"))
        .trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .to_owned()
}

/// Starts a run of `workflow` with the console's form on its page (so the owner started it)
/// and gives the run's address once its page shows the gate waiting for a decision.
fn start_to_gate(browser: &Browser, base: &str, workflow: &str, inputs: &[(&str, &str)]) -> String {
    browser.open(&format!("{base}/workflows/{workflow}"));
    browser.wait_for("the workflow page", |_, source| {
        source.contains("form method=\"post\" action=\"/runs\"")
    });
    for (name, value) in inputs {
        browser.type_into(
            &browser.find(&format!("form[action='/runs'] [name='input.{name}']")),
            value,
        );
    }
    browser.click(&browser.find("form[action='/runs'] button[type=submit]"));
    browser.wait_for("the new run's page", |url, _| {
        url.starts_with(&format!("{base}/runs/run_"))
    });
    let run_url = browser.current_url();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while !browser.page_source().contains("id=\"gate-started\"") {
        assert!(
            std::time::Instant::now() < deadline,
            "the run of {workflow} never reached its gate: {}",
            browser.page_source()
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
        browser.open(&run_url);
    }
    run_url
}

/// Types each `(id, text)` of `typed` into the current page's form, submits it with the button
/// `submit` selects, and checks the page answers with the refusal (the element `refusal`) and
/// every field as typed; then looks at it as `name`.
fn refused_keeps(
    browser: &Browser,
    typed: &[(&str, &str)],
    submit: &str,
    refusal: &str,
    name: &str,
) {
    for (id, text) in typed {
        browser.type_into(&browser.find(&format!("#{id}")), text);
    }
    browser.click(&browser.find(submit));
    browser.wait_for(&format!("the refusal {refusal}"), |_, source| {
        source.contains(&format!("id=\"{refusal}\""))
    });
    for (id, text) in typed {
        assert_eq!(
            browser.execute(&format!("return document.getElementById('{id}').value;")),
            json!(text),
            "{name}: {id} keeps what was typed"
        );
    }
    look_at(browser, name);
}

#[test]
fn console_every_page_of_the_router_in_a_filled_state_passes_axe_needs_root() {
    let home = Home::new();
    // Before the server starts, from the command line: the workflows, a connection, a failed
    // step with two attempts (one run stopped after, one still waiting for a person) and more
    // than a page of runs. No model is configured yet, so a person decides on each failure.
    home.put("workflows/ledger.yaml", &LEDGER.replace("400", "300"));
    home.put("workflows/ledger.yaml", LEDGER);
    home.put("workflows/flaky.yaml", FLAKY);
    home.put("workflows/tick.yaml", TICK);
    home.put("agents/filer/AGENT.md", FILER);
    home.put("workflows/file_proposals.yaml", FILE_PROPOSALS);
    let added = home.stepward_with_stdin(
        &["connections", "add", "signing", "--field", "key"],
        "sk-routes-signing-0f3a9c\n",
    );
    assert!(added.status.success(), "{}", stderr(&added));
    let mut flaky_runs = Vec::new();
    for stop_after in [true, false] {
        let failed = home.stepward(&["run", "--quiet", "flaky"]);
        let run = printed_run_id(&String::from_utf8_lossy(&failed.stdout));
        flaky_runs.push(format!("/runs/{run}"));
        // The second attempt fails too (the command says so with its exit code).
        let retried = home.stepward(&[
            "runs",
            "retry",
            &run,
            "fetch",
            "--note",
            "the export was fixed",
        ]);
        let printed = String::from_utf8_lossy(&retried.stdout);
        assert!(
            printed.contains("attempt 2"),
            "{printed}{}",
            stderr(&retried)
        );
        if stop_after {
            stepward_ok(
                &home,
                &["runs", "stop", &run, "--note", "the export is still broken"],
            );
        }
    }
    for _ in 0..TICKS {
        stepward_ok(&home, &["run", "--quiet", "tick"]);
    }
    let fake = BlockingFakeModel::start(Script::new(vec![ScriptTurn::call(
        "propose",
        json!({"workflow": PROPOSED, "note": "Says hello."}),
    )]))
    .unwrap();
    add_fake_assistant(&home, &fake, "sk-routes-model-key-5521");
    let exempt = fake.endpoint();
    let (server, address, sign_in_path) =
        start_server_with(&home, &["--allow-model-endpoint", &exempt]);
    let base = format!("http://{address}");
    let browser = Browser::start();

    // The pages of a person who is not signed in: the sign-in form and the one-time link's.
    let mut looked: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    browser.open(&format!("{base}/signin"));
    browser.wait_for("the sign-in page", |_, source| {
        source.contains("name=\"password\"")
    });
    look_at(&browser, "route-signin");
    looked
        .entry("/signin")
        .or_default()
        .push("/signin".to_owned());
    browser.open(&format!("{base}{sign_in_path}"));
    browser.wait_for("the welcome page", |_, source| {
        source.contains("Welcome, ada")
    });
    look_at(&browser, "route-welcome");
    looked
        .entry("/welcome/{token}")
        .or_default()
        .push(sign_in_path.clone());
    browser.sign_in_with_link(&format!("{base}{sign_in_path}"), "ada (owner)");

    // A second person, whose remove page is one of the router's.
    browser.open(&format!("{base}/people"));
    browser.type_into(&browser.find("#invite-name"), "Ola Nordmann");
    browser.type_into(&browser.find("#invite-email"), "ola@example.test");
    browser.click(&browser.find("form[action='/people'] button[type=submit]"));
    browser.wait_for("the invitation's link", |_, source| {
        source.contains("<h1>Invited</h1>")
    });
    browser.open(&format!("{base}/people"));
    let remove = browser.execute(
        "return document.querySelector(\"a[href^='/people/'][href$='/remove']\").getAttribute('href');",
    );
    let remove = remove.as_str().unwrap().to_owned();
    // A key, so the keys page lists one.
    browser.open(&format!("{base}/keys"));
    browser.type_into(&browser.find("#key-name"), "nightly export");
    browser.click(&browser.find("form[action='/keys'] button[type=submit]"));
    browser.wait_for("the new key", |_, source| {
        source.contains("<h1>New API key</h1>")
    });

    // Two runs waiting at a gate: the ledger's (long output, long JSON) and the agent's.
    let ledger_run = start_to_gate(&browser, &base, "ledger", &[("month", "2026-11")]);
    let agent_run = start_to_gate(&browser, &base, "file_proposals", &[]);
    let session = format!("stepward_session={}", browser.cookie("stepward_session"));
    let approve_link = |run_url: &str| {
        let run = run_url.rsplit('/').next().unwrap();
        let answer = http(
            address,
            "GET",
            &format!("/api/runs/{run}/approve-link"),
            &[("Cookie", &session)],
            "",
        )
        .unwrap();
        assert_eq!(answer.status, 200, "{}", answer.body);
        let link: Value = serde_json::from_str(&answer.body).unwrap();
        link["path"].as_str().unwrap().to_owned()
    };
    let ledger_approve = approve_link(&ledger_run);
    let agent_approve = approve_link(&agent_run);

    // The approve page of the gated agent step says what is approved (issue 42, point 1).
    browser.open(&format!("{base}{agent_approve}"));
    browser.wait_for("the agent step's approve page", |_, source| {
        source.contains("id=\"gate-started\"")
    });
    for (element, seen) in [
        ("#gate-explain", "The agent “filer”"),
        (
            "#gate-explain",
            "Files the proposed tickets in the team's notes.",
        ),
        (
            "#gate-explain",
            "File one note for each approved proposal under notes/tickets/.",
        ),
        ("#gate-started", "ada started the run"),
        ("#gate-pinned", "version 1 of workflows/file_proposals.yaml"),
        ("#gate-reach", "Internet\nno"),
        ("#gate-inputs", "proposals (what the step propose produced)"),
        ("#gate-inputs", "Refund stuck"),
    ] {
        let text = browser.text(&browser.find(element));
        assert!(text.contains(seen), "{element} shows {seen:?}: {text}");
    }
    assert_eq!(
        browser
            .find_all("button[name=decision][value=approve]")
            .len(),
        1
    );

    // A share link of the ledger's run, and an interview with a proposal.
    browser.open(&ledger_run);
    browser.click(&browser.find("form[action$='/shares'] button[type=submit]"));
    browser.wait_for("the share link", |_, source| source.contains("/s/"));
    let share = browser.text(&browser.find("#shown-once"));
    let share = share.strip_prefix(&base).unwrap_or(&share).to_owned();
    browser.open(&format!("{base}/interview"));
    browser.type_into(
        &browser.find("textarea[name=message]"),
        "Say hello to the team every morning.",
    );
    browser.click(&browser.find("form[action='/interview'] button[type=submit]"));
    browser.wait_for("the interview with a proposal", |url, source| {
        url.starts_with(&format!("{base}/interview/iv_")) && source.contains("id=\"proposal\"")
    });
    let interview = browser.current_url();
    let interview = interview.strip_prefix(&base).unwrap().to_owned();

    // The runs list's second page, through its own link.
    browser.open(&format!("{base}/runs"));
    // Each run's times read as how long ago, the exact time on hover in the viewer's own time
    // zone (the browser's is Tokyo's), which the served page writes in UTC.
    browser.wait_for("the runs list's times in the viewer's zone", |_, source| {
        source.contains("<time") && !source.contains("data-local")
    });
    let (shown, exact) = (
        browser.text(&browser.find("tbody time")),
        browser.execute("return document.querySelector('tbody time').title;"),
    );
    assert!(shown.ends_with(" ago") || shown == "just now", "{shown}");
    assert!(
        exact.as_str().is_some_and(|exact| exact.contains("GMT+9")),
        "{exact}"
    );
    let older = browser.execute(
        "return [...document.querySelectorAll('a')].find(a => a.textContent === 'Older runs')?.getAttribute('href');",
    );
    let older = older
        .as_str()
        .unwrap_or_else(|| panic!("more than a page of runs links to older ones"))
        .to_owned();

    // Each page of the router, in the state above.
    let pages = |route: &str| -> Option<Vec<String>> {
        let paths = match route {
            "/" => vec!["/".to_owned()],
            "/sessions" | "/people" | "/keys" | "/workflows" | "/interview" | "/approvals"
            | "/vault" | "/models" | "/agents" | "/files" | "/audit" | "/audit/verify"
            | "/shares" => vec![route.to_owned()],
            "/runs" => vec!["/runs".to_owned(), older.clone()],
            "/people/{id}/remove" => vec![remove.clone()],
            "/workflows/{name}" => vec!["/workflows/ledger".to_owned()],
            "/workflows/{name}/versions" => vec!["/workflows/ledger/versions".to_owned()],
            "/workflows/{name}/versions/{number}" => {
                vec!["/workflows/ledger/versions/2".to_owned()]
            }
            "/workflows/{name}/diff" => vec!["/workflows/ledger/diff".to_owned()],
            "/interview/{id}" => vec![interview.clone()],
            "/runs/{id}" => {
                let mut runs = vec![
                    ledger_run.strip_prefix(&base).unwrap().to_owned(),
                    agent_run.strip_prefix(&base).unwrap().to_owned(),
                ];
                runs.extend(flaky_runs.iter().cloned());
                runs
            }
            "/approve/{run}/{step}/{attempt}/{token}" => {
                vec![ledger_approve.clone(), agent_approve.clone()]
            }
            "/agents/{name}" => vec!["/agents/filer".to_owned()],
            "/files/view" => vec!["/files/view?path=workflows/ledger.yaml".to_owned()],
            "/s/{token}" => vec![share.clone()],
            _ => return None,
        };
        Some(paths)
    };
    let mut unfilled = Vec::new();
    for (method, route) in server::registered_routes() {
        if method != "GET" || route.starts_with("/api/") || looked.contains_key(route) {
            continue;
        }
        if NOT_PAGES.iter().any(|(path, _)| *path == route) {
            continue;
        }
        let Some(paths) = pages(route) else {
            unfilled.push(route);
            continue;
        };
        for (n, path) in paths.into_iter().enumerate() {
            let answer = http(address, "GET", &path, &[("Cookie", &session)], "").unwrap();
            assert_eq!(answer.status, 200, "GET {path}: {}", answer.body);
            assert!(
                answer
                    .content_type
                    .as_deref()
                    .is_some_and(|kind| kind.starts_with("text/html")),
                "GET {path} answers a page: {:?}",
                answer.content_type
            );
            browser.open(&format!("{base}{path}"));
            // Named after the route, so each run of the test writes the same files.
            let name = format!(
                "route{}-{}",
                route
                    .replace(['/', '{', '}', '*'], "-")
                    .trim_end_matches('-'),
                n + 1
            );
            look_at(&browser, &name);
            looked.entry(route).or_default().push(path);
        }
    }
    assert_eq!(
        unfilled,
        Vec::<&str>::new(),
        "these pages of the router have no filled state in this test: add one"
    );
    // A failed step explains itself once (issue 42, point 4): its error once as the card reads
    // (the traceback and the earlier attempt's folded away), its printed output opened at its
    // last lines, the earlier attempt reachable from the card.
    browser.open(&format!("{base}{}", flaky_runs[0]));
    let card = browser.execute(
        "const card = document.getElementById('step-fetch');
         const error = 'line 301 of the export is not a number';
         const tail = document.querySelector('#step-fetch pre.tail');
         return {
           errors: card.innerText.split(error).length - 1,
           earlier: document.querySelector('#step-fetch details.earlier-attempts > summary').textContent,
           bottom_shown: tail.scrollHeight <= tail.clientHeight
             || Math.abs(tail.scrollTop) < 2 && getComputedStyle(tail).flexDirection === 'column-reverse',
           last_line: tail.textContent.trim().split('\\n').pop(),
         };",
    );
    assert_eq!(card["errors"], json!(1), "{card}");
    assert_eq!(card["earlier"], json!("Earlier attempts (1)"), "{card}");
    assert_eq!(card["bottom_shown"], json!(true), "{card}");
    assert!(
        card["last_line"]
            .as_str()
            .is_some_and(|line| line.contains("checked export line 300")),
        "{card}"
    );
    // The share page shows the run by its workflow and number, with its times (point 10).
    browser.open(&format!("{base}{share}"));
    let shared = browser.text(&browser.find("main"));
    assert!(
        shared.contains("ledger #1") && shared.contains("Started") && shared.contains("Took"),
        "{shared}"
    );

    // Refused forms come back in the browser too (issue 42, point 8): the run page's retry with
    // inputs that are not JSON, and a file written outside the workspace, each answer their
    // page with the refusal beside the form and what was typed kept; looked at as any page.
    browser.open(&format!("{base}{}", flaky_runs[1]));
    refused_keeps(
        &browser,
        &[
            ("attention-note", "the export was fixed again"),
            ("attention-inputs", "{not json"),
        ],
        "#attention button[value=retry]",
        "attention-error",
        "refused-retry",
    );
    browser.open(&format!("{base}/files"));
    refused_keeps(
        &browser,
        &[
            ("write-path", "../outside.txt"),
            ("write-content", "typed in the browser"),
        ],
        "form[action='/files'] button[type=submit]",
        "error-write",
        "refused-write",
    );

    // A session reads as the browser and the address it signed in from (issue 42, point 6).
    browser.open(&format!("{base}/sessions"));
    let sessions = browser.text(&browser.find("tbody"));
    assert!(
        sessions.contains("from 127.0.0.1") && !sessions.contains("ses-"),
        "{sessions}"
    );
    println!("pages looked at: {looked:#?}");
    assert!(looked.len() >= 28, "{looked:#?}");
    drop(browser);
    drop(server);
    drop(fake);
}
