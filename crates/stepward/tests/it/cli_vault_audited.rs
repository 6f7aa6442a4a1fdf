//! Issue 11, finding 4 through the CLI: `secrets set|rm`, `connections add|rm` and
//! `keys rotate-account` append their audit entry in the write's own transaction. With every
//! audit append failing (a trigger on the data directory's database, as the review did), each
//! command fails and the vault is as it was.

use crate::support::{Home, fail_every_audit_append, stderr, stdout};

const VALUE: &str = "first-value-of-the-token-0001";

fn listing(home: &Home) -> String {
    let secrets = home.stepward(&["secrets", "list", "--json"]);
    assert_eq!(secrets.status.code(), Some(0), "{}", stderr(&secrets));
    let connections = home.stepward(&["connections", "list", "--json"]);
    assert_eq!(
        connections.status.code(),
        Some(0),
        "{}",
        stderr(&connections)
    );
    format!("{}{}", stdout(&secrets), stdout(&connections))
}

fn key_version(home: &Home) -> i64 {
    let connection = rusqlite::Connection::open(home.data_dir().join("stepward.db")).unwrap();
    connection
        .query_row(
            "SELECT key_version FROM vault_account_keys WHERE account_id = 'local'",
            [],
            |row| row.get(0),
        )
        .unwrap()
}

#[test]
fn g25_cli_vault_writes_whose_audit_entry_cannot_be_written_do_not_happen() {
    let home = Home::new();
    let set = home.stepward_with_stdin(&["secrets", "set", "KEPT"], VALUE);
    assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));
    let add = home.stepward_with_stdin(
        &["connections", "add", "billing", "--field", "api_key"],
        "billing-value-of-the-key-02",
    );
    assert_eq!(add.status.code(), Some(0), "{}", stderr(&add));
    let before = listing(&home);
    let key_before = key_version(&home);

    fail_every_audit_append(&home);
    for (args, stdin) in [
        (&["secrets", "set", "NEW"][..], "unaudited-value-0000003"),
        (&["secrets", "set", "KEPT"][..], "unaudited-value-0000004"),
        (&["secrets", "rm", "KEPT"][..], ""),
        (
            &["connections", "add", "billing", "--field", "api_key"][..],
            "unaudited-value-0000005",
        ),
        (&["connections", "rm", "billing"][..], ""),
        (&["keys", "rotate-account", "local"][..], ""),
    ] {
        let output = home.stepward_with_stdin(args, stdin);
        assert_ne!(
            output.status.code(),
            Some(0),
            "{args:?} succeeded without its audit entry: {}",
            stderr(&output)
        );
    }
    assert_eq!(listing(&home), before);
    assert_eq!(key_version(&home), key_before);
}
