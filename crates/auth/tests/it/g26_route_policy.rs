//! G26: every route declares the least access it needs in one table, and `authorize` answers
//! each role, no credentials, API keys and another account as the table says.

use std::collections::HashSet;
use std::fmt::Write as _;

use auth::{
    Access, Caller, Decision, Principal, Role, RoutePolicy, TokenRoute, authorize, find_policy,
    policy_table,
};

use crate::support::{ACCOUNT, OTHER_ACCOUNT, key, person, stranger, stranger_key};

fn policy(method: &str, path: &str) -> &'static RoutePolicy {
    find_policy(method, path).unwrap_or_else(|| panic!("{method} {path} is not in the table"))
}

#[test]
fn g26_every_route_is_in_the_table_once() {
    let mut seen = HashSet::new();
    for entry in policy_table() {
        assert!(
            seen.insert((entry.method, entry.path)),
            "{} {} is in the table twice",
            entry.method,
            entry.path
        );
    }
    assert_eq!(seen.len(), policy_table().len());
}

#[test]
fn g26_route_patterns_are_axum_patterns_with_known_methods() {
    for entry in policy_table() {
        assert!(
            ["GET", "POST", "PUT", "DELETE"].contains(&entry.method),
            "{} {} has an unexpected method",
            entry.method,
            entry.path
        );
        assert!(
            entry.path.starts_with('/'),
            "{} is not absolute",
            entry.path
        );
        for segment in entry.path.split('/').skip(1) {
            let is_parameter = segment.starts_with('{') && segment.ends_with('}');
            let is_literal = !segment.contains(['{', '}', ':']);
            assert!(
                is_parameter || is_literal,
                "{} has a malformed segment {segment:?}",
                entry.path
            );
        }
        // A console form must be a POST or a GET: browsers submit nothing else.
        if !entry.path.starts_with("/api/") {
            assert!(
                ["GET", "POST"].contains(&entry.method),
                "console route {} {} cannot be submitted by a form",
                entry.method,
                entry.path
            );
        }
    }
}

/// What issue 6 asks of the named routes, written out by hand rather than derived from the table.
#[test]
fn g26_named_routes_need_the_roles_the_issue_names() {
    use Access::{Link, Public, Share};
    use Role::{Admin, Member, Owner, Viewer};
    let expected = [
        ("POST", "/api/signin", Public),
        ("POST", "/signin", Public),
        ("POST", "/api/signout", Access::Role(Viewer)),
        ("GET", "/api/sessions", Access::Role(Viewer)),
        ("GET", "/api/workflows", Access::Role(Viewer)),
        ("GET", "/api/workflows/{name}", Access::Role(Viewer)),
        ("GET", "/api/workflows/{name}/reach", Access::Role(Viewer)),
        ("GET", "/api/runs", Access::Role(Viewer)),
        ("GET", "/api/runs/{id}", Access::Role(Viewer)),
        ("GET", "/api/runs/{id}/events", Access::Role(Viewer)),
        ("POST", "/api/runs", Access::Role(Member)),
        (
            "POST",
            "/api/runs/{id}/steps/{step}/approve",
            Access::Role(Member),
        ),
        (
            "POST",
            "/api/runs/{id}/steps/{step}/reject",
            Access::Role(Member),
        ),
        (
            "POST",
            "/runs/{id}/steps/{step}/decide",
            Access::Role(Member),
        ),
        ("GET", "/api/vault/secrets", Access::Role(Member)),
        ("PUT", "/api/vault/secrets/{name}", Access::Role(Admin)),
        ("DELETE", "/api/vault/secrets/{name}", Access::Role(Admin)),
        ("GET", "/api/people", Access::Role(Admin)),
        ("PUT", "/api/people/{id}/role", Access::Role(Admin)),
        ("POST", "/api/ownership", Access::Role(Owner)),
        ("POST", "/ownership", Access::Role(Owner)),
        ("GET", "/api/keys", Access::Role(Admin)),
        ("POST", "/api/keys", Access::Role(Admin)),
        ("DELETE", "/api/keys/{id}", Access::Role(Admin)),
        ("GET", "/api/audit", Access::Role(Admin)),
        ("GET", "/audit", Access::Role(Admin)),
        ("POST", "/api/runs/{id}/shares", Access::Role(Member)),
        ("GET", "/s/{token}", Share),
        ("GET", "/approve/{run}/{step}/{attempt}/{token}", Link),
        (
            "POST",
            "/approve/{run}/{step}/{attempt}/{token}",
            Access::Role(Member),
        ),
        ("GET", "/api/openapi.json", Public),
        ("GET", "/", Access::Role(Viewer)),
        ("GET", "/workflows/{name}", Access::Role(Viewer)),
        ("GET", "/runs/{id}", Access::Role(Viewer)),
    ];
    for (method, path, access) in expected {
        assert_eq!(policy(method, path).least_role, access, "{method} {path}");
    }
}

#[test]
fn g26_members_decide_and_viewers_do_not() {
    for (method, path) in [
        ("POST", "/api/runs/{id}/steps/{step}/approve"),
        ("POST", "/api/runs/{id}/steps/{step}/reject"),
        ("POST", "/runs/{id}/steps/{step}/decide"),
        ("POST", "/approve/{run}/{step}/{attempt}/{token}"),
    ] {
        let route = policy(method, path);
        assert_eq!(
            authorize(
                route,
                Some(&person(Role::Viewer)),
                Some(&ids::AccountId::parse(ACCOUNT).unwrap())
            ),
            Decision::Forbidden,
            "{method} {path}"
        );
        for role in [Role::Member, Role::Admin, Role::Owner] {
            assert_eq!(
                authorize(
                    route,
                    Some(&person(role)),
                    Some(&ids::AccountId::parse(ACCOUNT).unwrap())
                ),
                Decision::Allow,
                "{method} {path} as {role}"
            );
        }
    }
}

#[test]
fn g26_opening_an_approve_link_only_verifies_its_token() {
    let open = policy("GET", "/approve/{run}/{step}/{attempt}/{token}");
    for principal in [
        None,
        Some(person(Role::Viewer)),
        Some(stranger(Role::Owner)),
    ] {
        assert_eq!(
            authorize(
                open,
                principal.as_ref(),
                Some(&ids::AccountId::parse(ACCOUNT).unwrap())
            ),
            Decision::VerifyToken(TokenRoute::ApproveLink)
        );
    }
    // Deciding through the link is a POST by a signed-in person, never a key.
    let decide = policy("POST", "/approve/{run}/{step}/{attempt}/{token}");
    assert_eq!(decide.caller, Caller::PersonOnly);
    assert_eq!(
        authorize(decide, None, Some(&ids::AccountId::parse(ACCOUNT).unwrap())),
        Decision::Unauthenticated
    );
    assert_eq!(
        authorize(
            decide,
            Some(&key(Role::Admin)),
            Some(&ids::AccountId::parse(ACCOUNT).unwrap())
        ),
        Decision::Forbidden
    );
}

#[test]
fn g26_share_fetch_needs_only_the_token() {
    let share = policy("GET", "/s/{token}");
    for principal in [
        None,
        Some(person(Role::Owner)),
        Some(stranger_key(Role::Admin)),
    ] {
        assert_eq!(
            authorize(share, principal.as_ref(), None),
            Decision::VerifyToken(TokenRoute::Share)
        );
    }
}

#[test]
fn g26_no_credentials_is_unauthenticated_on_every_guarded_route() {
    for entry in policy_table() {
        let expected = match entry.least_role {
            Access::Public => Decision::Allow,
            Access::Share => Decision::VerifyToken(TokenRoute::Share),
            Access::Link => Decision::VerifyToken(TokenRoute::ApproveLink),
            Access::Role(_) => Decision::Unauthenticated,
        };
        for resource_account in [None, Some(&ids::AccountId::parse(ACCOUNT).unwrap())] {
            assert_eq!(
                authorize(entry, None, resource_account),
                expected,
                "{} {}",
                entry.method,
                entry.path
            );
        }
    }
}

#[test]
fn g26_another_account_is_always_not_found() {
    for entry in policy_table() {
        let Access::Role(_) = entry.least_role else {
            continue;
        };
        for role in Role::ALL {
            for principal in [stranger(role), stranger_key(role)] {
                assert_eq!(
                    authorize(
                        entry,
                        Some(&principal),
                        Some(&ids::AccountId::parse(ACCOUNT).unwrap())
                    ),
                    Decision::NotFound,
                    "{} {} as {principal:?}",
                    entry.method,
                    entry.path
                );
            }
            // And the other way round: our people reach nothing of the other account.
            for principal in [person(role), key(role)] {
                assert_eq!(
                    authorize(
                        entry,
                        Some(&principal),
                        Some(&ids::AccountId::parse(OTHER_ACCOUNT).unwrap())
                    ),
                    Decision::NotFound,
                    "{} {} as {principal:?}",
                    entry.method,
                    entry.path
                );
            }
        }
    }
}

/// The answer for one principal, written from the rules rather than through `authorize`.
fn expected_answer(entry: &RoutePolicy, principal: &Principal) -> Decision {
    match entry.least_role {
        Access::Public => Decision::Allow,
        Access::Share => Decision::VerifyToken(TokenRoute::Share),
        Access::Link => Decision::VerifyToken(TokenRoute::ApproveLink),
        Access::Role(least) => {
            let is_key = matches!(principal, Principal::ApiKey { .. });
            if is_key && entry.caller == Caller::PersonOnly || principal.role() < least {
                Decision::Forbidden
            } else {
                Decision::Allow
            }
        }
    }
}

#[test]
fn g26_every_role_gets_the_expected_answer_on_every_route() {
    for entry in policy_table() {
        for role in Role::ALL {
            for principal in [person(role), key(role)] {
                for resource_account in [None, Some(&ids::AccountId::parse(ACCOUNT).unwrap())] {
                    assert_eq!(
                        authorize(entry, Some(&principal), resource_account),
                        expected_answer(entry, &principal),
                        "{} {} as {principal:?}",
                        entry.method,
                        entry.path
                    );
                }
            }
        }
    }
}

fn short(decision: Decision) -> &'static str {
    match decision {
        Decision::Allow => "allow",
        Decision::VerifyToken(TokenRoute::Share) => "share",
        Decision::VerifyToken(TokenRoute::ApproveLink) => "link",
        Decision::Unauthenticated => "401",
        Decision::Forbidden => "403",
        Decision::NotFound => "404",
    }
}

/// The whole matrix as one reviewed table: a change of any route's policy shows in review.
#[test]
fn g26_route_role_matrix_snapshot() {
    let columns: Vec<(String, Option<Principal>)> = std::iter::once(("none".to_owned(), None))
        .chain(Role::ALL.map(|role| (role.to_string(), Some(person(role)))))
        .chain(
            Role::ALL[..3]
                .iter()
                .map(|role| (format!("key:{role}"), Some(key(*role)))),
        )
        .chain(std::iter::once((
            "other:owner".to_owned(),
            Some(stranger(Role::Owner)),
        )))
        .collect();
    let mut table = String::new();
    write!(table, "{:<52}", "route").unwrap();
    for (name, _) in &columns {
        write!(table, " {name:>11}").unwrap();
    }
    table.push('\n');
    for entry in policy_table() {
        write!(table, "{:<52}", format!("{} {}", entry.method, entry.path)).unwrap();
        for (_, principal) in &columns {
            let decision = authorize(
                entry,
                principal.as_ref(),
                Some(&ids::AccountId::parse(ACCOUNT).unwrap()),
            );
            write!(table, " {:>11}", short(decision)).unwrap();
        }
        table.push('\n');
    }
    insta::assert_snapshot!(table);
}

#[test]
fn g26_a_route_outside_the_table_has_no_policy() {
    assert_eq!(find_policy("GET", "/api/secret-values"), None);
    assert_eq!(find_policy("POST", "/api/openapi.json"), None);
    assert_eq!(find_policy("get", "/api/runs"), None);
}
