//! Issue 11, finding 9: every text a request carries has a size limit, said in the OpenAPI
//! document (`maxLength`) and enforced: a longer one is refused before anything is done, with
//! an answer that names the field, the limit and the length given.

use auth::Role;
use serde_json::{Value, json};
use storage::{DecisionStore, RunStatus, RunStore};

use crate::support::{Caller, Credentials, Harness};

fn json_body(value: &Value) -> Option<(&'static str, String)> {
    Some(("application/json", value.to_string()))
}

/// The answer refuses the text and says where, how much is allowed and how much came.
fn assert_too_long(answer: &crate::support::Answer, field: &str, max: usize, given: usize) {
    assert_eq!(answer.status, 400, "{field}: {}", answer.text());
    let body = answer.json();
    assert_eq!(body["code"], "too_long", "{field}: {body}");
    let expected = format!("{field}: at most {max} characters, {given} given");
    assert!(
        body["error"].as_str().unwrap().contains(&expected),
        "{expected} is not in {body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_document_says_the_limit_of_every_note() {
    let harness = Harness::new();
    let answer = harness
        .call("GET", "/api/openapi.json", &Credentials::None, None)
        .await;
    let document = answer.json();
    let schemas = &document["components"]["schemas"];
    assert_eq!(
        schemas["DecisionRequest"]["properties"]["note"]["maxLength"],
        api_types::limits::NOTE_CHARS
    );
    assert_eq!(
        schemas["WorkspaceWriteRequest"]["properties"]["message"]["maxLength"],
        api_types::limits::REVISION_MESSAGE_CHARS
    );
    assert_eq!(
        auth::MAX_PASSWORD_CHARS,
        api_types::limits::PASSWORD_CHARS,
        "the document's password limit is the one sign-in enforces"
    );
}

/// A note one character over the limit is refused on every door of the server (the API by a
/// person and by a key, the console's form, an approve link); one at the limit is taken.
#[tokio::test(flavor = "multi_thread")]
async fn g23_a_note_over_its_limit_is_refused_on_every_door() {
    let harness = Harness::new();
    let run = harness.parked_run("acct");
    let member = harness.credentials(Caller::Person(Role::Member));
    let key = harness.credentials(Caller::Key(Role::Member));
    let limit = api_types::limits::NOTE_CHARS;
    let long = "n".repeat(limit + 1);
    let approve = format!("/api/runs/{}/steps/ship/approve", run.as_str());
    for credentials in [&member, &key] {
        let answer = harness
            .call(
                "POST",
                &approve,
                credentials,
                json_body(&json!({ "note": long })),
            )
            .await;
        assert_too_long(&answer, "note", limit, limit + 1);
    }
    let console = harness
        .call(
            "POST",
            &format!("/runs/{}/steps/ship/decide", run.as_str()),
            &member,
            Some((
                "application/x-www-form-urlencoded",
                format!("decision=approve&note={long}"),
            )),
        )
        .await;
    assert_eq!(console.status, 400, "{}", console.text());
    assert!(console.text().contains("at most 2000 characters"));
    let gate = harness.engine.pending_gate(&run).unwrap().unwrap();
    let link = harness.state.approve_link_path(&gate).unwrap();
    let csrf = match &member {
        Credentials::Session { csrf, .. } => csrf.clone(),
        Credentials::None | Credentials::Key { .. } => String::new(),
    };
    let by_link = harness
        .call(
            "POST",
            &link,
            &member,
            Some((
                "application/x-www-form-urlencoded",
                format!("csrf={csrf}&decision=approve&note={long}"),
            )),
        )
        .await;
    assert_eq!(by_link.status, 400, "{}", by_link.text());
    assert!(harness.store.decisions(&run).unwrap().is_empty());
    assert_eq!(
        harness.store.run(&run).unwrap().unwrap().status,
        RunStatus::WaitingApproval
    );
    // At the limit, in letters of two bytes each: characters are counted, not bytes.
    let answer = harness
        .call(
            "POST",
            &approve,
            &member,
            json_body(&json!({ "note": "é".repeat(limit) })),
        )
        .await;
    assert_eq!(answer.status, 202, "{}", answer.text());
}

/// One over-long text on each kind of route: people, keys, the vault, the workspace, models,
/// runs, and sign-in (refused before any password work). Nothing is created.
#[tokio::test(flavor = "multi_thread")]
async fn a_text_over_its_limit_is_refused_naming_the_field_the_limit_and_the_length() {
    use api_types::limits;
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let member = harness.credentials(Caller::Person(Role::Member));
    let cases: Vec<(&str, &str, &Credentials, Value, &str, usize)> = vec![
        (
            "POST",
            "/api/people",
            &admin,
            json!({
                "display_name": "d".repeat(limits::DISPLAY_NAME_CHARS + 5),
                "email": "new@example.test",
                "role": "member",
            }),
            "display_name",
            limits::DISPLAY_NAME_CHARS,
        ),
        (
            "POST",
            "/api/keys",
            &admin,
            json!({ "name": "k".repeat(limits::KEY_NAME_CHARS + 5), "role": "viewer" }),
            "name",
            limits::KEY_NAME_CHARS,
        ),
        (
            "PUT",
            "/api/vault/secrets/LONG_ONE",
            &admin,
            json!({ "value": "v".repeat(limits::SECRET_VALUE_CHARS + 5) }),
            "value",
            limits::SECRET_VALUE_CHARS,
        ),
        (
            "PUT",
            "/api/vault/connections/crm",
            &admin,
            json!({ "fields": { "api_key": "v".repeat(limits::SECRET_VALUE_CHARS + 5) } }),
            "fields.api_key",
            limits::SECRET_VALUE_CHARS,
        ),
        (
            "POST",
            "/api/workspace/revisions",
            &member,
            json!({
                "message": "ok",
                "changes": [
                    { "path": "a.txt", "action": "write", "content": "a" },
                    { "path": "p".repeat(limits::PATH_CHARS + 5), "action": "delete" },
                ],
            }),
            "changes[1].path",
            limits::PATH_CHARS,
        ),
        (
            "POST",
            "/api/workspace/revisions",
            &member,
            json!({
                "message": "m".repeat(limits::REVISION_MESSAGE_CHARS + 5),
                "changes": [{ "path": "a.txt", "action": "write", "content": "a" }],
            }),
            "message",
            limits::REVISION_MESSAGE_CHARS,
        ),
        (
            "PUT",
            "/api/models/claude",
            &admin,
            json!({
                "provider": "anthropic",
                "key": "k",
                "base_url": format!("https://{}", "u".repeat(limits::URL_CHARS)),
            }),
            "base_url",
            limits::URL_CHARS,
        ),
        (
            "POST",
            "/api/runs",
            &member,
            json!({ "workflow": "w".repeat(limits::NAME_CHARS + 5) }),
            "workflow",
            limits::NAME_CHARS,
        ),
        (
            "POST",
            "/api/signin",
            &Credentials::None,
            json!({
                "account": "acct",
                "email": format!("{}@example.test", "e".repeat(limits::IDENTIFIER_CHARS)),
                "password": "p",
            }),
            "email",
            limits::IDENTIFIER_CHARS,
        ),
    ];
    for (method, path, credentials, body, field, max) in cases {
        let given = given_length(&body, field);
        let answer = harness
            .call(method, path, credentials, json_body(&body))
            .await;
        assert_too_long(&answer, field, max, given);
    }
    let keys = harness.call("GET", "/api/keys", &admin, None).await.json();
    assert!(
        !keys.to_string().contains("kkkkk"),
        "a key was created: {keys}"
    );
    let people = harness
        .call("GET", "/api/people", &admin, None)
        .await
        .json();
    assert!(!people.to_string().contains("new@example.test"), "{people}");
    let secrets = harness
        .call("GET", "/api/vault/secrets", &admin, None)
        .await
        .json();
    assert!(!secrets.to_string().contains("LONG_ONE"), "{secrets}");
}

/// The length of the text at `field` (`a.b`, `a[1].b`) of `body`, in characters.
fn given_length(body: &Value, field: &str) -> usize {
    let mut value = body;
    for part in field.split('.') {
        match part.split_once('[') {
            Some((name, index)) => {
                let index: usize = index.trim_end_matches(']').parse().unwrap();
                value = &value[name][index];
            }
            None => value = &value[part],
        }
    }
    value.as_str().unwrap().chars().count()
}

fn form(body: String) -> Option<(&'static str, String)> {
    Some(("application/x-www-form-urlencoded", body))
}

/// The console's forms are doors to the same fields: the same limits, by the same schemas.
/// Nothing is created.
#[tokio::test(flavor = "multi_thread")]
async fn the_consoles_forms_have_the_same_limits() {
    use api_types::limits;
    let harness = Harness::new();
    let admin = harness.credentials(Caller::Person(Role::Admin));
    let member = harness.credentials(Caller::Person(Role::Member));
    let cases: Vec<(&str, &Credentials, String, &str, usize)> = vec![
        (
            "/people",
            &admin,
            format!(
                "display_name={}&email=new%40example.test&role=member",
                "d".repeat(limits::DISPLAY_NAME_CHARS + 5)
            ),
            "display_name",
            limits::DISPLAY_NAME_CHARS,
        ),
        (
            "/keys",
            &admin,
            format!(
                "name={}&role=viewer",
                "k".repeat(limits::KEY_NAME_CHARS + 5)
            ),
            "name",
            limits::KEY_NAME_CHARS,
        ),
        (
            "/vault/secrets",
            &admin,
            format!(
                "name=LONG_ONE&value={}",
                "v".repeat(limits::SECRET_VALUE_CHARS + 5)
            ),
            "value",
            limits::SECRET_VALUE_CHARS,
        ),
        (
            "/files",
            &member,
            format!(
                "path=a.txt&content=a&message={}",
                "m".repeat(limits::REVISION_MESSAGE_CHARS + 5)
            ),
            "message",
            limits::REVISION_MESSAGE_CHARS,
        ),
        (
            "/files",
            &member,
            format!(
                "path={}&content=a&message=m",
                "p".repeat(limits::PATH_CHARS + 5)
            ),
            "path",
            limits::PATH_CHARS,
        ),
        (
            "/vault/connections",
            &admin,
            format!(
                "alias=crm&field_name_0=api_key&field_value_0={}",
                "v".repeat(limits::SECRET_VALUE_CHARS + 5)
            ),
            "fields.api_key",
            limits::SECRET_VALUE_CHARS,
        ),
        (
            "/vault/connections",
            &admin,
            format!(
                "alias=crm&field_name_0={}&field_value_0=v",
                "n".repeat(limits::FIELD_NAME_CHARS + 5)
            ),
            "connection field name",
            limits::FIELD_NAME_CHARS,
        ),
        (
            "/signin",
            &Credentials::None,
            format!(
                "account=acct&email={}&password=p",
                "e".repeat(limits::IDENTIFIER_CHARS + 5)
            ),
            "email",
            limits::IDENTIFIER_CHARS,
        ),
    ];
    for (path, credentials, body, field, max) in cases {
        let answer = harness.call("POST", path, credentials, form(body)).await;
        assert_eq!(answer.status, 400, "{path}: {}", answer.text());
        let expected = format!("{field}: at most {max} characters, {} given", max + 5);
        assert!(
            answer.text().contains(&expected),
            "{path}: {expected} is not in {}",
            answer.text()
        );
    }
    let people = harness
        .call("GET", "/api/people", &admin, None)
        .await
        .json();
    assert!(!people.to_string().contains("new@example.test"), "{people}");
    let keys = harness.call("GET", "/api/keys", &admin, None).await.json();
    assert!(!keys.to_string().contains("kkkkk"), "{keys}");
    let secrets = harness
        .call("GET", "/api/vault/secrets", &admin, None)
        .await
        .json();
    assert!(!secrets.to_string().contains("LONG_ONE"), "{secrets}");
}

/// Newcomer 3, item 13: the limits of one thing agree at every door. A workflow's text is held
/// to the parser's limit (`spec::limits::MAX_FILE_BYTES`) by the document, by `PUT
/// /api/workflows/{name}` (a text one over it is refused as too long, naming the field), and
/// the largest text a field of the document allows fits in a request body.
#[tokio::test(flavor = "multi_thread")]
async fn a_workflow_text_and_a_file_content_have_the_limits_the_parser_and_the_body_allow() {
    use api_types::limits;
    let harness = Harness::new();
    let answer = harness
        .call("GET", "/api/openapi.json", &Credentials::None, None)
        .await;
    let schemas = &answer.json()["components"]["schemas"];
    assert_eq!(
        schemas["SaveWorkflowRequest"]["properties"]["text"]["maxLength"],
        spec::limits::MAX_FILE_BYTES,
        "the document's limit of a workflow text is the parser's"
    );
    assert_eq!(limits::WORKFLOW_TEXT_CHARS, spec::limits::MAX_FILE_BYTES);
    // Every text the document allows, at its limit and in ASCII, fits in a body with room for
    // the request's other fields.
    for (schema, field, max) in [
        ("SaveWorkflowRequest", "text", limits::WORKFLOW_TEXT_CHARS),
        ("WorkspaceChange", "content", limits::CONTENT_CHARS),
    ] {
        assert_eq!(schemas[schema]["properties"][field]["maxLength"], max);
        assert!(
            max + 64 * 1024 <= limits::BODY_BYTES,
            "{schema}.{field} allows {max} characters, which a body of at most {} bytes \
             cannot carry",
            limits::BODY_BYTES
        );
    }
    let member = harness.credentials(Caller::Person(Role::Member));
    let over = limits::WORKFLOW_TEXT_CHARS + 1;
    let text = format!("name: big\n#{}", "x".repeat(over - "name: big\n#".len()));
    let answer = harness
        .call(
            "PUT",
            "/api/workflows/big",
            &member,
            json_body(&json!({ "text": text })),
        )
        .await;
    assert_too_long(&answer, "text", limits::WORKFLOW_TEXT_CHARS, over);
}
