//! `stepward audit verify` (issue 11, finding 7): the operator's check of every account's
//! audit chain on the data directory, which names the first broken link (account, sequence
//! number) in words.

use crate::support::{Home, stderr, stdout};

#[test]
fn g25_audit_verify_checks_every_accounts_chain_and_names_a_changed_entry() {
    let home = Home::new();
    let set = home.stepward_with_stdin(&["secrets", "set", "GITHUB_TOKEN"], "ghp-value-1");
    assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));
    let created = home.stepward(&[
        "accounts",
        "create",
        "acme",
        "--owner-email",
        "bo@acme.test",
        "--base-url",
        "http://127.0.0.1:9",
    ]);
    assert_eq!(created.status.code(), Some(0), "{}", stderr(&created));

    let intact = home.stepward(&["audit", "verify"]);
    assert_eq!(intact.status.code(), Some(0), "{}", stderr(&intact));
    let printed = stdout(&intact);
    assert!(printed.contains("account acme: intact"), "{printed}");
    assert!(printed.contains("account local: intact"), "{printed}");

    // Someone with the file changes acme's first entry (the triggers dropped first).
    let connection = rusqlite::Connection::open(home.data_dir().join("stepward.db")).unwrap();
    connection
        .execute_batch(
            "DROP TRIGGER audit_is_append_only_update;
             UPDATE audit_log SET detail = '{\"changed\":true}'
                 WHERE account_id = 'acme' AND seq = 1;",
        )
        .unwrap();
    drop(connection);
    let broken = home.stepward(&["audit", "verify"]);
    assert_eq!(broken.status.code(), Some(1), "{}", stdout(&broken));
    let said = stderr(&broken);
    assert!(
        said.contains("entry 1 of account acme is broken: its content does not match its hash"),
        "{said}"
    );
    assert!(stdout(&broken).contains("account local: intact"));
}
