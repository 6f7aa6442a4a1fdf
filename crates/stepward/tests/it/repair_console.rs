//! G9 through `stepward serve`'s JSON API, with the fake model as the account's assistant: a
//! run of `import requests` goes to `needs_repair`; a viewer may look at the step's proposal
//! but neither ask for one nor accept it (403); a member asks, and sees only the proposal that
//! passed the checks (the one still importing `requests` refused before it was shown), as a
//! diff of the step's code; the member accepts it, which saves the workflow's next version
//! (authored by the assistant, accepted by the member by name) and runs the step again, the
//! outputs before it standing.

use fake_model::{BlockingFakeModel, Script, ScriptTurn};
use serde_json::{Value, json};

use crate::http::{Answer, Server, person_session, send};
use crate::repair::WORKFLOW;
use crate::support::{Home, stderr};

/// The fake assistant: first a proposal that still imports `requests` (refused before it is
/// shown), then the `urllib` one.
pub(crate) fn assistant() -> BlockingFakeModel {
    BlockingFakeModel::start(Script::new(vec![
        ScriptTurn::call(
            "propose",
            json!({"code": "import requests\ndef main(word):\n    return requests.utils.quote(word)\n", "note": "same"}),
        ),
        ScriptTurn::call(
            "propose",
            json!({"code": "import urllib.parse\nimport urllib.request\n\ndef main(word):\n    return urllib.parse.quote(word)\n", "note": "urllib.parse instead of requests"}),
        ),
    ]))
    .unwrap()
}

/// A data directory whose local account has the fake assistant and `workflows/quote.yaml`.
pub(crate) fn home_with_assistant(fake: &BlockingFakeModel) -> Home {
    let home = Home::new();
    crate::support::add_fake_assistant(&home, fake, "sk-repair-console-model-key-7731");
    let file = home.dir.path().join("quote.yaml");
    std::fs::write(&file, WORKFLOW).unwrap();
    let saved = home.stepward(&[
        "files",
        "put",
        "workflows/quote.yaml",
        "--from",
        file.to_str().unwrap(),
    ]);
    assert!(saved.status.success(), "{}", stderr(&saved));
    home
}

fn json_of(answer: &Answer) -> Value {
    serde_json::from_str(&answer.body).unwrap_or(Value::Null)
}

#[test]
fn g9_the_api_shows_a_checked_proposal_and_a_member_accepts_it_needs_root() {
    let fake = assistant();
    let home = home_with_assistant(&fake);
    let mut server = Server::start(
        &home,
        &[
            "--owner-email",
            "ada@example.test",
            "--allow-model-endpoint",
            &fake.endpoint(),
        ],
    );
    let (address, owner, owner_csrf) = server.first_owner_session();
    let call = |session: &str, csrf: &str, method: &str, route: &str, body: Value| {
        send(
            address,
            method,
            route,
            &[
                ("Cookie", session),
                ("X-CSRF-Token", csrf),
                ("Content-Type", "application/json"),
            ],
            &if body.is_null() {
                String::new()
            } else {
                body.to_string()
            },
        )
    };
    let mut people = Vec::new();
    for (name, role) in [("Vic Viewer", "viewer"), ("Mia Member", "member")] {
        let email = format!("{role}@example.test");
        let invited = call(
            &owner,
            &owner_csrf,
            "POST",
            "/api/people",
            json!({"display_name": name, "email": email, "role": role}),
        );
        assert_eq!(invited.status, 201, "{}", invited.body);
        let welcome = json_of(&invited)["sign_in_path"]
            .as_str()
            .unwrap()
            .to_owned();
        let (session, csrf, signed_in_as) = person_session(address, &welcome, "local", &email);
        assert_eq!(signed_in_as, role);
        people.push((session, csrf));
    }
    let (viewer, viewer_csrf) = &people[0];
    let (member, member_csrf) = &people[1];

    let started = call(
        member,
        member_csrf,
        "POST",
        "/api/runs",
        json!({"workflow": "quote", "inputs": {"word": " a b "}}),
    );
    assert_eq!(started.status, 202, "{}", started.body);
    let run = json_of(&started);
    let run =
        crate::http::until_settled(address, &[("Cookie", member)], run["run"].as_str().unwrap());
    assert_eq!(run["status"], "needs_repair", "{run}");
    let run = run["run"].as_str().unwrap().to_owned();
    let repair = format!("/api/runs/{run}/steps/quote/repair");

    // A viewer may look (nothing proposed yet), not ask.
    let looked = call(viewer, viewer_csrf, "GET", &repair, Value::Null);
    assert_eq!(looked.status, 404, "{}", looked.body);
    let asked = call(viewer, viewer_csrf, "POST", &repair, Value::Null);
    assert_eq!(asked.status, 403, "{}", asked.body);
    assert!(
        fake.requests().is_empty(),
        "a refused request asks no model"
    );

    // The member asks: the proposal shown passed the checks; the one before was refused.
    let proposed = call(member, member_csrf, "POST", &repair, Value::Null);
    assert_eq!(proposed.status, 200, "{}", proposed.body);
    let proposal = json_of(&proposed);
    let diff = proposal["diff"].as_str().unwrap();
    assert!(diff.contains("-import requests"), "{diff}");
    assert!(diff.contains("+import urllib.parse"), "{diff}");
    assert!(!proposal["code"].as_str().unwrap().contains("requests."));
    assert_eq!(proposal["provider"], "fake");
    assert_eq!(proposal["model"], "fake-assistant");
    assert_eq!(proposal["current"], true);
    assert_eq!(proposal["checks"].as_array().unwrap().len(), 4);
    let refused = proposal["refused"].to_string();
    assert!(
        refused.contains("outside Python 3.11's standard library"),
        "{refused}"
    );
    // The viewer now sees the same proposal, and still cannot accept it.
    let looked = call(viewer, viewer_csrf, "GET", &repair, Value::Null);
    assert_eq!(looked.status, 200, "{}", looked.body);
    assert_eq!(json_of(&looked)["code"], proposal["code"]);
    let refused = call(
        viewer,
        viewer_csrf,
        "POST",
        &format!("{repair}/accept"),
        json!({"note": "looks fine"}),
    );
    assert_eq!(refused.status, 403, "{}", refused.body);

    // Review finding 2: an acceptance naming another proposal than the newest is refused, and
    // nothing is saved: only the proposal a person read is accepted.
    let other = call(
        member,
        member_csrf,
        "POST",
        &format!("{repair}/accept"),
        json!({"note": "urllib does it", "proposal": "0".repeat(64)}),
    );
    assert_eq!(other.status, 409, "{}", other.body);
    assert!(other.body.contains("a newer proposal"), "{}", other.body);

    // The member accepts: the next version, the assistant's, accepted by the member by name.
    let accepted = call(
        member,
        member_csrf,
        "POST",
        &format!("{repair}/accept"),
        json!({"note": "urllib does it", "proposal": proposal["proposal"]}),
    );
    assert_eq!(accepted.status, 202, "{}", accepted.body);
    let accepted = json_of(&accepted);
    assert_eq!(accepted["version"]["number"], 2, "{accepted}");
    assert_eq!(accepted["version"]["author_kind"], "assistant");
    assert!(
        accepted["version"]["message"]
            .as_str()
            .unwrap()
            .contains("accepted by Mia Member"),
        "{accepted}"
    );
    let settled = crate::http::until_settled(address, &[("Cookie", member)], &run);
    assert_eq!(settled["status"], "succeeded", "{settled}");
    let events = call(
        member,
        member_csrf,
        "GET",
        &format!("/api/runs/{run}/events"),
        Value::Null,
    );
    let events = json_of(&events);
    let events = events.as_array().unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| event["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"repair.proposed"), "{kinds:?}");
    let accepted_event = events
        .iter()
        .find(|event| event["kind"] == "repair.accepted")
        .unwrap();
    assert_eq!(accepted_event["payload"]["version"], 2);
    assert_eq!(accepted_event["payload"]["door"], "api");
    assert_eq!(
        accepted_event["payload"]["accepted_by"]["name"], "Mia Member",
        "{accepted_event}"
    );
    let firsts = events
        .iter()
        .filter(|event| event["kind"] == "attempt.started" && event["payload"]["step"] == "first")
        .count();
    assert_eq!(firsts, 1, "the outputs before the repaired step stand");
    // Accepting again is refused: the run no longer needs repair.
    let again = call(
        member,
        member_csrf,
        "POST",
        &format!("{repair}/accept"),
        json!({"note": "again"}),
    );
    assert_eq!(again.status, 409, "{}", again.body);
    assert_eq!(json_of(&again)["code"], "repair_refused");
    drop(server);
}
