//! The console's static files: the stylesheet the pages link is served to anyone, with the
//! security headers; any other name under `/static/` (traversal included) is not found.

use server::SECURITY_HEADERS;

use crate::support::{Credentials, Harness};

#[tokio::test(flavor = "multi_thread")]
async fn g23_console_stylesheet_is_served_and_nothing_else_under_static() {
    let harness = Harness::new();
    let sheet = harness
        .call("GET", "/static/console.css", &Credentials::None, None)
        .await;
    assert_eq!(sheet.status, 200);
    assert_eq!(
        sheet.header("content-type").as_deref(),
        Some("text/css; charset=utf-8")
    );
    assert!(sheet.text().contains("font-family"), "{}", sheet.text());
    for (name, value) in SECURITY_HEADERS {
        assert_eq!(sheet.header(name).as_deref(), Some(value), "{name}");
    }
    let signin = harness
        .call("GET", "/signin", &Credentials::None, None)
        .await;
    assert!(
        signin
            .text()
            .contains("<link rel=\"stylesheet\" href=\"/static/console.css\">"),
        "{}",
        signin.text()
    );
    for missing in [
        "/static/other.css",
        "/static/",
        "/static/../Cargo.toml",
        "/static/%2e%2e/Cargo.toml",
        "/static/console.css/x",
    ] {
        let answer = harness.call("GET", missing, &Credentials::None, None).await;
        assert_eq!(answer.status, 404, "{missing}: {}", answer.text());
    }
}
