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

/// Held: no write of the console or the API goes through with a session cookie and without
/// its CSRF token (or with another session's), whatever the route; the policy middleware
/// refuses before the handler runs. The routes that take no session (signing in, a welcome
/// link) guard their forms with a token of their own and are left out.
#[tokio::test(flavor = "multi_thread")]
async fn g26_every_write_with_a_session_needs_its_csrf_token() {
    let harness = Harness::new();
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let other = harness.credentials(Caller::Person(Role::Admin));
    let (
        crate::support::Credentials::Session { cookie, .. },
        crate::support::Credentials::Session {
            csrf: other_csrf, ..
        },
    ) = (&owner, &other)
    else {
        panic!("people have sessions");
    };
    let public = ["/signin", "/api/signin", "/welcome/{token}"];
    let mut checked = 0;
    for (method, pattern) in server::registered_routes() {
        if method == "GET" || public.contains(&pattern) {
            continue;
        }
        let path = pattern
            .split('/')
            .map(|part| if part.starts_with('{') { "x" } else { part })
            .collect::<Vec<_>>()
            .join("/");
        for token in [None, Some(other_csrf.as_str())] {
            let mut builder = axum::http::Request::builder()
                .method(method)
                .uri(&path)
                .header("cookie", cookie)
                .header("content-type", "application/x-www-form-urlencoded");
            let body = match token {
                Some(token) => format!("csrf={token}"),
                None => String::new(),
            };
            if let Some(token) = token {
                builder = builder.header("x-csrf-token", token);
            }
            let answer = harness
                .send(builder.body(axum::body::Body::from(body)).unwrap())
                .await;
            assert_eq!(
                answer.status,
                403,
                "{method} {pattern} with token {token:?}: {}",
                answer.text()
            );
            checked += 1;
        }
    }
    assert!(checked > 80, "only {checked} writes were checked");
}

/// Finding 2: the CSP forbade inline script and framing but said nothing of `<base>`, plugins
/// or where a form may post (`default-src` covers none of `base-uri` and `form-action`), so a
/// piece of markup that got onto a page could still point forms and relative addresses at
/// another host.
#[tokio::test(flavor = "multi_thread")]
async fn the_csp_allows_no_base_no_plugins_and_forms_to_this_origin_only() {
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    for path in ["/people", "/signin", "/s/nothing", "/api/runs"] {
        let answer = harness.call("GET", path, &admin, None).await;
        let csp = answer.header("content-security-policy").unwrap_or_default();
        for directive in [
            "default-src 'self'",
            "script-src 'self'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "object-src 'none'",
        ] {
            assert!(
                csp.contains(directive),
                "{path}: {directive} missing in {csp}"
            );
        }
        assert!(!csp.contains("unsafe"), "{path}: {csp}");
    }
}

/// Markup that would run if a page wrote it as it is.
const PAYLOAD: &str = "<img src=x onerror=alert(1)>";

/// Held: text a person, a key, a step's author or an attacker at the sign-in form controls
/// (a person's name, a key's name, a file's path, contents and message, a typed email in the
/// audit log, a step's explanation) is text on every page, never markup.
#[tokio::test(flavor = "multi_thread")]
async fn markup_in_every_field_people_and_authors_control_is_text_on_every_page() {
    let harness = Harness::new();
    let owner = harness.credentials(Caller::Person(Role::Owner));
    let json = |value: serde_json::Value| json_body(value);
    let writes = [
        (
            "POST",
            "/api/people".to_owned(),
            json(serde_json::json!({
                "display_name": PAYLOAD, "email": "markup@example.test", "role": "viewer"
            })),
        ),
        (
            "POST",
            "/api/keys".to_owned(),
            json(serde_json::json!({"name": PAYLOAD, "role": "viewer"})),
        ),
        (
            "POST",
            "/api/workspace/revisions".to_owned(),
            json(serde_json::json!({
                "message": PAYLOAD,
                "changes": [{
                    "path": format!("notes/{PAYLOAD}.txt"), "action": "write", "content": PAYLOAD
                }],
            })),
        ),
        (
            "PUT",
            "/api/workflows/hostile".to_owned(),
            json(serde_json::json!({
                "text": format!(
                    "name: hostile\npython: \"3.11\"\nsteps:\n  - id: only\n    explain: '{PAYLOAD}'\n    code: |\n      def main():\n          return 1\n"
                ),
                "message": PAYLOAD,
            })),
        ),
    ];
    for (method, path, body) in writes {
        let answer = harness.call(method, &path, &owner, body).await;
        assert!(answer.status < 300, "{method} {path}: {}", answer.text());
    }
    let refused = harness
        .call(
            "POST",
            "/api/signin",
            &crate::support::Credentials::None,
            json(serde_json::json!({
                "account": "acct", "email": PAYLOAD, "password": "not the password"
            })),
        )
        .await;
    assert_eq!(refused.status, 401, "{}", refused.text());
    let file = format!(
        "/files/view?path=notes/{}.txt",
        PAYLOAD
            .replace('<', "%3C")
            .replace('>', "%3E")
            .replace(' ', "%20")
            .replace('=', "%3D")
            .replace('(', "%28")
            .replace(')', "%29")
    );
    let mut shown = 0;
    for path in [
        "/",
        "/people",
        "/keys",
        "/files",
        file.as_str(),
        "/audit",
        "/workflows",
        "/workflows/hostile",
        "/runs",
        "/approvals",
        "/sessions",
        "/shares",
        "/vault",
        "/models",
    ] {
        let page = harness.call("GET", path, &owner, None).await;
        assert_eq!(page.status, 200, "{path}: {}", page.text());
        let text = page.text();
        assert!(!text.contains("<img"), "{path} writes markup: {text}");
        shown += text.matches("&#60;img src=x onerror=alert(1)&#62;").count();
    }
    assert!(
        shown >= 8,
        "the payload is shown as text only {shown} times"
    );
}

/// Held: a file write refused because it holds a value of the vault answers the files page
/// again with what was typed, and the value in it is masked there (the served scrub), so the
/// page that keeps what was typed never shows a credential back.
#[tokio::test(flavor = "multi_thread")]
async fn g19_a_refused_file_form_keeps_what_was_typed_but_never_a_vault_value() {
    let harness = Harness::new();
    let member = harness.credentials(Caller::Person(Role::Member));
    let refused = harness
        .call(
            "POST",
            "/files",
            &member,
            Some((
                "application/x-www-form-urlencoded",
                format!(
                    "path=notes%2Fleak.txt&content=key%3D{}%0Aline+two&message=my+notes",
                    crate::support::VAULT_VALUE
                ),
            )),
        )
        .await;
    assert!(
        (400..500).contains(&refused.status),
        "{}: {}",
        refused.status,
        refused.text()
    );
    let text = refused.text();
    assert!(text.contains("id=\"error-write\""), "{text}");
    assert!(text.contains("value=\"notes/leak.txt\""), "{text}");
    assert!(
        text.contains("line two") && text.contains("my notes"),
        "{text}"
    );
    assert!(!text.contains(crate::support::VAULT_VALUE), "{text}");
}

/// Finding 3: the server holds at most 256 live streams at once, for everyone; one session
/// could open them all (a script, or a page opened in many tabs) and every other person's run
/// page lost its live updates. A person now holds a few at most, over all their sessions.
#[tokio::test(flavor = "multi_thread")]
async fn one_session_cannot_take_every_live_stream() {
    use tower::ServiceExt;

    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let greedy = harness.credentials(Caller::Person(Role::Member));
    let other = harness.credentials(Caller::Person(Role::Admin));
    let path = format!("/runs/{}/stream", run.as_str());
    let open = |credentials: &crate::support::Credentials| {
        let app = harness.app.clone();
        let request = crate::support::request("GET", &path, credentials, None);
        async move { app.oneshot(request).await.unwrap().into_body() }
    };
    let first_word = |body: axum::body::Body| async move {
        use http_body_util::BodyExt;
        let mut body = body;
        match tokio::time::timeout(std::time::Duration::from_millis(1_500), body.frame()).await {
            Ok(Some(Ok(frame))) => frame
                .data_ref()
                .map(|data| String::from_utf8_lossy(data).into_owned())
                .unwrap_or_default(),
            _ => String::new(),
        }
    };
    let mut held = Vec::new();
    for _ in 0..300 {
        held.push(open(&greedy).await);
    }
    let theirs = first_word(open(&other).await).await;
    assert!(
        !theirs.contains("Too many live pages"),
        "another person's run page lost its live updates: {theirs:?}"
    );
    let greedy_more = first_word(open(&greedy).await).await;
    assert!(
        greedy_more.contains("event: closed"),
        "a session past its share is told to reload: {greedy_more:?}"
    );
    drop(held);
}
