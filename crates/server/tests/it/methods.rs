//! A method a route does not serve (found by schemathesis: `TRACE /api/runs` answered 500,
//! because the policy middleware took the unserved method for a route without a policy) is a
//! 405 with an `Allow` header, for every path of the real router, whoever asks.

use std::collections::BTreeMap;

use auth::Role;
use server::registered_routes;

use crate::support::{Caller, Harness};

/// A concrete path for a route pattern: every `{parameter}` becomes a plain placeholder.
fn concrete(pattern: &str) -> String {
    pattern
        .split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "placeholder"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test(flavor = "multi_thread")]
async fn g26_a_method_a_route_does_not_serve_is_a_405_with_allow_never_a_500() {
    let harness = Harness::new();
    let mut served: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (method, pattern) in registered_routes() {
        served.entry(pattern).or_default().push(method);
    }
    let callers = [
        Caller::Nobody,
        Caller::Person(Role::Owner),
        Caller::Key(Role::Admin),
        Caller::StrangerKey,
    ];
    for (pattern, methods) in &served {
        let path = concrete(pattern);
        let unserved = ["TRACE", "OPTIONS", "PATCH", "PUT", "DELETE", "POST"]
            .into_iter()
            .filter(|method| !methods.contains(method));
        for method in unserved {
            for caller in callers {
                let credentials = harness.credentials(caller);
                let answer = harness.call(method, &path, &credentials, None).await;
                assert_eq!(
                    answer.status,
                    405,
                    "{method} {path} as {caller:?}: {}",
                    answer.text()
                );
                let allow = answer.header("allow").unwrap_or_default();
                for served_method in methods {
                    assert!(
                        allow.split(", ").any(|listed| listed == *served_method),
                        "{method} {path}: Allow {allow:?} lacks {served_method}"
                    );
                }
            }
        }
    }
}
