//! Issue 11, finding 11: `docs/team-and-access.md` says what each route needs, and its table is
//! the route policy table itself (every route the server serves is in it, G26), so the page
//! cannot drift from what is enforced. `STEPWARD_WRITE_DOCS=1 cargo test -p auth` rewrites the
//! table after a route changes.

use std::path::PathBuf;

use auth::{Access, Caller, RoutePolicy, policy_table};

const BEGIN: &str = "<!-- route table: generated from auth::policy_table, checked by a test -->\n";
const END: &str = "<!-- end of route table -->\n";

fn repo_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn who(policy: &RoutePolicy) -> String {
    match (policy.least_role, policy.caller) {
        (Access::Public, _) => "anyone".to_owned(),
        (Access::Share, _) => "whoever holds the share link".to_owned(),
        (Access::Link, _) => "whoever holds the approve link (shows only)".to_owned(),
        (Access::Role(role), Caller::PersonOrKey) => format!("{role} or above, person or key"),
        (Access::Role(role), Caller::PersonOnly) => format!("{role} or above, a person only"),
    }
}

fn table() -> String {
    let mut text = String::from("| method | route | who may use it |\n|---|---|---|\n");
    for policy in policy_table() {
        text.push_str(&format!(
            "| `{}` | `{}` | {} |\n",
            policy.method,
            policy.path,
            who(policy)
        ));
    }
    text
}

#[test]
fn g26_team_and_access_lists_every_route_as_the_policy_table_enforces_it() {
    let path = repo_file("docs/team-and-access.md");
    let page = std::fs::read_to_string(&path).unwrap_or_default();
    let (Some(start), Some(end)) = (page.find(BEGIN), page.find(END)) else {
        panic!(
            "{} lacks the route table markers `{}` and `{}`",
            path.display(),
            BEGIN.trim(),
            END.trim()
        );
    };
    let generated = table();
    let written = &page[start + BEGIN.len()..end];
    if written != generated && std::env::var_os("STEPWARD_WRITE_DOCS").is_some() {
        let updated = format!("{}{BEGIN}{generated}{}", &page[..start], &page[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert_eq!(
        written, generated,
        "docs/team-and-access.md's route table differs from auth::policy_table; run \
         `STEPWARD_WRITE_DOCS=1 cargo test -p auth g26_team_and_access` to rewrite it"
    );
    for topic in [
        "`owner`",
        "`admin`",
        "`member`",
        "`viewer`",
        "## Sessions",
        "## API keys",
        "## Links",
        "in flight",
    ] {
        assert!(
            page.contains(topic),
            "docs/team-and-access.md lacks {topic}"
        );
    }
    let readme = std::fs::read_to_string(repo_file("README.md")).unwrap_or_default();
    assert!(
        readme.contains("docs/team-and-access.md"),
        "README.md does not link docs/team-and-access.md"
    );
}
