//! `notify:` (issue 41): who is mailed an approve link when a run waits at a gate. The parser
//! holds it to its shape and bounds; the account's check refuses an address of no one in the
//! account, and of a person whose role cannot decide, at the address's file:line:col.

use std::time::Duration;

use spec::{AccountNames, AccountPerson, parse_workflow, parse_workflow_for_account};

fn workflow(notify: &str) -> String {
    format!(
        "name: refunds\npython: \"3.11\"\n{notify}steps:\n  - id: pay!\n    explain: Pays.\n    \
         code: |\n      def main():\n          return 1\n"
    )
}

fn account() -> AccountNames {
    let person = |email: &str, may_decide| AccountPerson {
        email: email.to_owned(),
        may_decide,
    };
    AccountNames {
        people: Some(vec![
            person("ada@example.com", true),
            person("vic@example.com", false),
        ]),
        ..AccountNames::default()
    }
}

#[test]
fn without_notify_everyone_who_may_decide_is_mailed_once() {
    let parsed = parse_workflow("w.yaml", &workflow("")).unwrap();
    assert!(parsed.notify().people().is_empty());
    assert_eq!(parsed.notify().remind_after(), None);
}

#[test]
fn a_list_names_people_and_a_mapping_adds_reminders() {
    let listed = parse_workflow("w.yaml", &workflow("notify: [Ada@Example.com]\n")).unwrap();
    assert_eq!(listed.notify().people(), ["ada@example.com"]);
    let mapped = parse_workflow(
        "w.yaml",
        &workflow("notify:\n  people: [ada@example.com]\n  remind_after: 24h\n"),
    )
    .unwrap();
    assert_eq!(mapped.notify().people(), ["ada@example.com"]);
    assert_eq!(
        mapped.notify().remind_after(),
        Some(Duration::from_secs(24 * 3600))
    );
    let reminders_only =
        parse_workflow("w.yaml", &workflow("notify:\n  remind_after: 90m\n")).unwrap();
    assert!(reminders_only.notify().people().is_empty());
}

#[test]
fn bad_notify_is_refused_where_it_is_written() {
    let cases = [
        ("notify: ada\n", "invalid-notify", 3, 9),
        ("notify: [ada]\n", "invalid-notify-address", 3, 10),
        ("notify: []\n", "empty-notify", 3, 9),
        (
            "notify: [a@b.c, A@B.C]\n",
            "duplicate-notify-address",
            3,
            17,
        ),
        (
            "notify:\n  remind_after: 30m\n",
            "remind-after-out-of-range",
            4,
            17,
        ),
        (
            "notify:\n  remind_after: 31d\n",
            "remind-after-out-of-range",
            4,
            17,
        ),
        (
            "notify:\n  remind_after: soon\n",
            "invalid-remind-after",
            4,
            17,
        ),
        ("notify:\n  remind_after: 24\n", "expected-string", 4, 17),
        ("notify:\n  remind: 24h\n", "unknown-key", 4, 3),
    ];
    for (notify, code, line, column) in cases {
        let diagnostics = parse_workflow("w.yaml", &workflow(notify)).unwrap_err();
        let first = &diagnostics[0];
        assert_eq!(
            (first.code, first.line, first.column),
            (code, line, column),
            "{notify}: {diagnostics:?}"
        );
    }
}

#[test]
fn notify_names_at_most_fifty_people() {
    let many: Vec<String> = (0..=spec::MAX_NOTIFY_PEOPLE)
        .map(|index| format!("p{index}@example.com"))
        .collect();
    let diagnostics = parse_workflow(
        "w.yaml",
        &workflow(&format!("notify: [{}]\n", many.join(", "))),
    )
    .unwrap_err();
    assert_eq!(diagnostics[0].code, "too-many-notify-people");
}

#[test]
fn the_account_refuses_a_stranger_and_a_viewer_at_their_address() {
    let text = workflow(
        "notify:\n  people:\n    - ada@example.com\n    - eve@example.com\n    - VIC@example.com\n",
    );
    let diagnostics =
        parse_workflow_for_account("w.yaml", &text, &spec::LimitMaxima::BUILT_IN, &account())
            .unwrap_err();
    let found: Vec<_> = diagnostics
        .iter()
        .map(|diagnostic| (diagnostic.code, diagnostic.line, diagnostic.column))
        .collect();
    assert_eq!(
        found,
        [
            ("notify-unknown-person", 6, 7),
            ("notify-cannot-decide", 7, 7)
        ]
    );
    assert!(
        diagnostics[0].help.contains("People page"),
        "{}",
        diagnostics[0].help
    );
    assert!(
        !diagnostics[0].help.contains("ada@"),
        "a reader of the workflow's problems is not shown the account's people"
    );
    // The list form is checked alike.
    let listed = workflow("notify: [eve@example.com]\n");
    let diagnostics =
        parse_workflow_for_account("w.yaml", &listed, &spec::LimitMaxima::BUILT_IN, &account())
            .unwrap_err();
    assert_eq!(
        (
            diagnostics[0].code,
            diagnostics[0].line,
            diagnostics[0].column
        ),
        ("notify-unknown-person", 3, 10)
    );
    // A person who may decide passes; a door that does not know the people checks the shape.
    let fine = workflow("notify: [ada@example.com]\n");
    parse_workflow_for_account("w.yaml", &fine, &spec::LimitMaxima::BUILT_IN, &account()).unwrap();
    parse_workflow_for_account(
        "w.yaml",
        &listed,
        &spec::LimitMaxima::BUILT_IN,
        &AccountNames::default(),
    )
    .unwrap();
}
