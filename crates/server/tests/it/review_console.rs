//! The security review of the console (issue 14): each finding's test, written before its fix.

use auth::Role;

use crate::support::{Caller, Harness};

fn json_body(value: serde_json::Value) -> Option<(&'static str, String)> {
    Some(("application/json", value.to_string()))
}

/// A value with every character HTML escapes, so each escaper writes it differently.
const MARKUP_VALUE: &str = "pw<Z9&q>\"7'x_MarkupValue4Kd";

/// Every form of `value` a page may carry it in: as typed, as `html.escape` and MarkupSafe
/// write it, and as askama (the console's templates) writes it, with decimal references only.
fn markup_forms(value: &str) -> Vec<String> {
    let named = value
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;");
    let decimal = value
        .replace('&', "&#38;")
        .replace('<', "&#60;")
        .replace('>', "&#62;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;");
    vec![value.to_owned(), named, decimal]
}

/// Finding 1: the served scrub, which masks a value that entered the vault after a record was
/// written (G16), knew the named references (`&lt;`) but not the decimal ones askama writes
/// (`&#60;`), so on a templated page such a value went out unmasked.
#[tokio::test(flavor = "multi_thread")]
async fn g16_a_value_on_a_templated_page_is_masked_in_the_form_askama_writes_it() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let invited = harness
        .call(
            "POST",
            "/api/people",
            &admin,
            json_body(serde_json::json!({
                "display_name": format!("Ops {MARKUP_VALUE}"),
                "email": "ops@example.test",
                "role": "viewer",
            })),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.text());
    let set = harness
        .call(
            "PUT",
            "/api/vault/secrets/LATE_PASSWORD",
            &admin,
            json_body(serde_json::json!({ "value": MARKUP_VALUE })),
        )
        .await;
    assert_eq!(set.status, 200, "{}", set.text());
    let page = harness.call("GET", "/people", &admin, None).await;
    assert_eq!(page.status, 200);
    let text = page.text();
    assert!(text.contains("Ops "), "{text}");
    for form in markup_forms(MARKUP_VALUE) {
        assert!(!text.contains(&form), "{form} is on the page: {text}");
    }
}
