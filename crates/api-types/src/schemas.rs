//! The JSON Schemas of the wire types, as data next to the types they describe: the server's
//! OpenAPI document (`GET /api/openapi.json`) takes its `components.schemas` from
//! [`component_schemas`]. A unit test serializes a value of every type and checks that its
//! fields are exactly the schema's properties, so a field added to a type without its schema
//! fails the build's tests.
//!
//! Optional fields that are left out when empty (`skip_serializing_if`) are properties that are
//! not `required`; every other field is required.

use serde_json::{Map, Value, json};

/// Every schema by type name, in the JSON Schema 2020-12 dialect of OpenAPI 3.1.
pub fn component_schemas() -> Map<String, Value> {
    let mut schemas = Map::new();
    let mut add = |name: &str, schema: Value| {
        schemas.insert(name.to_owned(), schema);
    };
    add(
        "ErrorBody",
        object(
            &[
                (
                    "code",
                    json!({ "type": "string", "enum": crate::ERROR_CODES }),
                ),
                ("error", string()),
                ("request_id", string()),
            ],
            &[],
        ),
    );
    add(
        "Internet",
        json!({ "type": "string", "enum": ["yes", "no", "unknown"] }),
    );
    add(
        "ReachRow",
        object(
            &[
                ("step", string()),
                ("gate", boolean()),
                ("kind", string()),
                ("internet", reference("Internet")),
                ("connections", array(string())),
                ("secrets", array(string())),
            ],
            &[
                ("agent", string()),
                ("unknown_reason", string()),
                ("limits", array(string())),
            ],
        ),
    );
    add(
        "ReachReport",
        object(
            &[
                ("workflow", string()),
                ("caption", string()),
                ("rows", array(reference("ReachRow"))),
            ],
            &[],
        ),
    );
    add(
        "StepSummary",
        object(
            &[
                ("step", string()),
                ("attempt", integer()),
                ("status", string()),
            ],
            &[("output", any()), ("reason", string())],
        ),
    );
    let summary_fields = [
        ("run", string()),
        ("status", string()),
        ("steps", array(reference("StepSummary"))),
    ];
    let summary_optional = [("waiting_at", string()), ("reason", string())];
    add("RunSummary", object(&summary_fields, &summary_optional));
    let mut detail_fields = summary_fields.to_vec();
    detail_fields.extend([
        ("workflow", string()),
        ("created_at", integer()),
        ("updated_at", integer()),
        ("decisions", array(reference("DecisionView"))),
    ]);
    add("RunDetail", object(&detail_fields, &summary_optional));
    add(
        "DecisionView",
        object(
            &[
                ("decision", string()),
                ("actor_kind", string()),
                ("actor_id", string()),
                ("actor_name", string()),
                ("door", string()),
                ("note", string()),
                ("at", integer()),
            ],
            &[("step", string()), ("attempt", integer())],
        ),
    );
    add("DecisionRequest", object(&[], &[("note", string())]));
    add(
        "SignInRequest",
        object(
            &[
                ("account", string()),
                ("email", string()),
                ("password", string()),
            ],
            &[],
        ),
    );
    add(
        "SignInResponse",
        object(
            &[
                ("person_id", string()),
                ("role", string()),
                ("csrf_token", string()),
            ],
            &[],
        ),
    );
    add(
        "SessionView",
        object(
            &[
                ("id", string()),
                ("created_at", integer()),
                ("last_used_at", integer()),
                ("current", boolean()),
            ],
            &[],
        ),
    );
    add(
        "ShareLinkCreated",
        object(
            &[
                ("id", string()),
                ("path", string()),
                ("expires_at", integer()),
            ],
            &[],
        ),
    );
    add(
        "ShareLinkView",
        object(
            &[
                ("id", string()),
                ("run", string()),
                ("created_at", integer()),
                ("expires_at", integer()),
                ("revoked", boolean()),
            ],
            &[],
        ),
    );
    add(
        "PersonView",
        object(
            &[
                ("id", string()),
                ("display_name", string()),
                ("email", string()),
                ("role", role()),
                ("has_password", boolean()),
                ("created_at", integer()),
            ],
            &[],
        ),
    );
    add(
        "InvitePersonRequest",
        object(
            &[
                ("display_name", string()),
                ("email", string()),
                ("role", role()),
            ],
            &[],
        ),
    );
    add(
        "PersonInvited",
        object(
            &[
                ("person_id", string()),
                ("sign_in_path", string()),
                ("expires_at", integer()),
            ],
            &[],
        ),
    );
    add("RoleChangeRequest", object(&[("role", role())], &[]));
    add("OwnershipRequest", object(&[("new_owner", string())], &[]));
    add(
        "ApiKeyView",
        object(
            &[
                ("key_id", string()),
                ("name", string()),
                ("role", role()),
                ("created_at", integer()),
                ("revoked", boolean()),
            ],
            &[("last_used_at", integer())],
        ),
    );
    add(
        "CreateApiKeyRequest",
        object(&[("name", string()), ("role", role())], &[]),
    );
    add(
        "ApiKeyCreated",
        object(
            &[
                ("key_id", string()),
                ("key", string()),
                ("name", string()),
                ("role", role()),
            ],
            &[],
        ),
    );
    add(
        "AuditEntryView",
        object(
            &[
                ("seq", integer()),
                ("actor_kind", string()),
                ("actor_id", string()),
                ("actor_name", string()),
                ("action", string()),
                ("detail", any()),
                ("at", integer()),
                ("hash", string()),
            ],
            &[("run", string())],
        ),
    );
    add(
        "ApprovalView",
        object(
            &[
                ("run", string()),
                ("workflow", string()),
                ("step", string()),
                ("waiting_since", integer()),
            ],
            &[],
        ),
    );
    add(
        "VaultSecretView",
        object(
            &[
                ("name", string()),
                ("version", integer()),
                ("created_at", integer()),
                ("updated_at", integer()),
            ],
            &[],
        ),
    );
    add("SetSecretRequest", object(&[("value", string())], &[]));
    add(
        "VaultConnectionView",
        object(
            &[
                ("alias", string()),
                ("fields", array(string())),
                ("version", integer()),
                ("revoked", boolean()),
                ("created_at", integer()),
                ("updated_at", integer()),
            ],
            &[("revoked_at", integer())],
        ),
    );
    add(
        "SetConnectionRequest",
        object(
            &[(
                "fields",
                json!({ "type": "object", "minProperties": 1, "additionalProperties": string() }),
            )],
            &[],
        ),
    );
    add(
        "VaultModelKeyView",
        object(
            &[
                ("provider", string()),
                ("version", integer()),
                ("created_at", integer()),
                ("updated_at", integer()),
            ],
            &[],
        ),
    );
    add("SetModelKeyRequest", object(&[("value", string())], &[]));
    add(
        "WorkflowListItem",
        object(
            &[("name", string()), ("file", string()), ("valid", boolean())],
            &[],
        ),
    );
    add(
        "WorkflowStepView",
        object(
            &[("id", string()), ("gate", boolean()), ("explain", string())],
            &[],
        ),
    );
    add(
        "WorkflowVersionView",
        object(
            &[
                ("name", string()),
                ("number", integer()),
                ("author_kind", string()),
                ("author", string()),
                ("at", integer()),
                ("message", string()),
                ("revision", string()),
            ],
            &[],
        ),
    );
    add(
        "WorkflowVersionText",
        object(
            &[
                ("version", reference("WorkflowVersionView")),
                ("text", string()),
            ],
            &[],
        ),
    );
    add(
        "WorkflowDiff",
        object(
            &[
                ("name", string()),
                ("from", integer()),
                ("to", integer()),
                ("diff", string()),
            ],
            &[],
        ),
    );
    add(
        "SaveWorkflowRequest",
        object(&[("text", string()), ("message", string())], &[]),
    );
    add(
        "WorkflowView",
        object(
            &[
                ("name", string()),
                ("file", string()),
                ("valid", boolean()),
                ("steps", array(reference("WorkflowStepView"))),
                ("problems", array(string())),
            ],
            &[],
        ),
    );
    add(
        "StartRunRequest",
        object(
            &[("workflow", string())],
            &[("inputs", json!({ "type": "object" }))],
        ),
    );
    add(
        "RunListItem",
        object(
            &[
                ("run", string()),
                ("workflow", string()),
                ("status", string()),
                ("created_at", integer()),
                ("updated_at", integer()),
            ],
            &[],
        ),
    );
    add(
        "Event",
        object(
            &[
                ("seq", integer()),
                ("kind", string()),
                ("at", integer()),
                ("payload", any()),
            ],
            &[],
        ),
    );
    crate::workspace::add_schemas(&mut schemas);
    crate::models::add_schemas(&mut schemas);
    schemas
}

/// `{"$ref": "#/components/schemas/<name>"}`.
pub fn reference(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

pub(crate) fn string() -> Value {
    json!({ "type": "string" })
}

pub(crate) fn integer() -> Value {
    json!({ "type": "integer" })
}

pub(crate) fn boolean() -> Value {
    json!({ "type": "boolean" })
}

fn role() -> Value {
    json!({ "type": "string", "enum": ["viewer", "member", "admin", "owner"] })
}

/// Any JSON value (step outputs, event payloads, audit details).
fn any() -> Value {
    json!({})
}

pub(crate) fn array(items: Value) -> Value {
    json!({ "type": "array", "items": items })
}

pub(crate) fn object(required: &[(&str, Value)], optional: &[(&str, Value)]) -> Value {
    let mut properties = Map::new();
    for (name, schema) in required.iter().chain(optional) {
        properties.insert((*name).to_owned(), schema.clone());
    }
    let required: Vec<&str> = required.iter().map(|(name, _)| *name).collect();
    json!({ "type": "object", "properties": properties, "required": required })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde::Serialize;
    use serde_json::{Value, json};

    use super::component_schemas;
    use crate::runs::{Event, RunListItem, RunSummary, StepSummary};
    use crate::*;

    fn version_view() -> WorkflowVersionView {
        WorkflowVersionView {
            name: "w".into(),
            number: 1,
            author_kind: "person".into(),
            author: "p".into(),
            at: 1,
            message: "m".into(),
            revision: "r".into(),
        }
    }

    fn step() -> StepSummary {
        StepSummary {
            step: "s".into(),
            attempt: 1,
            status: "succeeded".into(),
            output: Some(json!(1)),
            reason: Some("r".into()),
        }
    }

    fn summary() -> RunSummary {
        RunSummary {
            run: "r".into(),
            status: "running".into(),
            waiting_at: Some("g".into()),
            reason: Some("why".into()),
            steps: vec![step()],
        }
    }

    fn decision() -> DecisionView {
        DecisionView {
            step: Some("s".into()),
            attempt: Some(1),
            decision: "approve".into(),
            actor_kind: "person".into(),
            actor_id: "p".into(),
            actor_name: "P".into(),
            door: "api".into(),
            note: "n".into(),
            at: 1,
        }
    }

    fn row() -> ReachRow {
        ReachRow {
            step: "s".into(),
            gate: false,
            kind: "code".into(),
            agent: Some("a".into()),
            internet: Internet::Unknown,
            unknown_reason: Some("u".into()),
            connections: vec![],
            secrets: vec![],
            limits: vec!["memory_mib: 512".into()],
        }
    }

    /// A value of every type with every optional field set, by schema name.
    fn samples() -> Vec<(&'static str, Value)> {
        fn value<T: Serialize>(sample: T) -> Value {
            serde_json::to_value(sample).unwrap()
        }
        vec![
            (
                "ErrorBody",
                value(ErrorBody {
                    code: "not_found".into(),
                    error: "e".into(),
                    request_id: "r".into(),
                }),
            ),
            ("ReachRow", value(row())),
            (
                "ReachReport",
                value(ReachReport {
                    workflow: "w".into(),
                    caption: "c".into(),
                    rows: vec![row()],
                }),
            ),
            ("StepSummary", value(step())),
            ("RunSummary", value(summary())),
            (
                "RunDetail",
                value(RunDetail {
                    summary: summary(),
                    workflow: "w".into(),
                    created_at: 1,
                    updated_at: 2,
                    decisions: vec![decision()],
                }),
            ),
            ("DecisionView", value(decision())),
            (
                "DecisionRequest",
                value(DecisionRequest { note: "n".into() }),
            ),
            (
                "SignInRequest",
                value(SignInRequest {
                    account: "a".into(),
                    email: "e".into(),
                    password: "p".into(),
                }),
            ),
            (
                "SignInResponse",
                value(SignInResponse {
                    person_id: "p".into(),
                    role: "owner".into(),
                    csrf_token: "c".into(),
                }),
            ),
            (
                "SessionView",
                value(SessionView {
                    id: "s".into(),
                    created_at: 1,
                    last_used_at: 2,
                    current: true,
                }),
            ),
            (
                "ShareLinkCreated",
                value(ShareLinkCreated {
                    id: "s".into(),
                    path: "/s/x".into(),
                    expires_at: 1,
                }),
            ),
            (
                "ShareLinkView",
                value(ShareLinkView {
                    id: "s".into(),
                    run: "r".into(),
                    created_at: 1,
                    expires_at: 2,
                    revoked: false,
                }),
            ),
            (
                "PersonView",
                value(PersonView {
                    id: "p".into(),
                    display_name: "P".into(),
                    email: "e".into(),
                    role: "viewer".into(),
                    has_password: true,
                    created_at: 1,
                }),
            ),
            (
                "InvitePersonRequest",
                value(InvitePersonRequest {
                    display_name: "P".into(),
                    email: "e".into(),
                    role: "viewer".into(),
                }),
            ),
            (
                "PersonInvited",
                value(PersonInvited {
                    person_id: "p".into(),
                    sign_in_path: "/welcome/x".into(),
                    expires_at: 1,
                }),
            ),
            (
                "RoleChangeRequest",
                value(RoleChangeRequest {
                    role: "admin".into(),
                }),
            ),
            (
                "OwnershipRequest",
                value(OwnershipRequest {
                    new_owner: "p".into(),
                }),
            ),
            (
                "ApiKeyView",
                value(ApiKeyView {
                    key_id: "k".into(),
                    name: "n".into(),
                    role: "viewer".into(),
                    created_at: 1,
                    last_used_at: Some(2),
                    revoked: false,
                }),
            ),
            (
                "CreateApiKeyRequest",
                value(CreateApiKeyRequest {
                    name: "n".into(),
                    role: "viewer".into(),
                }),
            ),
            (
                "ApiKeyCreated",
                value(ApiKeyCreated {
                    key_id: "k".into(),
                    key: "sw_k_s".into(),
                    name: "n".into(),
                    role: "viewer".into(),
                }),
            ),
            (
                "AuditEntryView",
                value(AuditEntryView {
                    seq: 1,
                    run: Some("r".into()),
                    actor_kind: "person".into(),
                    actor_id: "p".into(),
                    actor_name: "P".into(),
                    action: "a".into(),
                    detail: json!({}),
                    at: 1,
                    hash: "h".into(),
                }),
            ),
            (
                "ApprovalView",
                value(ApprovalView {
                    run: "r".into(),
                    workflow: "w".into(),
                    step: "s".into(),
                    waiting_since: 1,
                }),
            ),
            (
                "VaultSecretView",
                value(VaultSecretView {
                    name: "n".into(),
                    version: 1,
                    created_at: 1,
                    updated_at: 2,
                }),
            ),
            (
                "SetSecretRequest",
                value(SetSecretRequest { value: "v".into() }),
            ),
            (
                "VaultConnectionView",
                value(VaultConnectionView {
                    alias: "a".into(),
                    fields: vec!["api_key".into()],
                    version: 1,
                    revoked: true,
                    revoked_at: Some(3),
                    created_at: 1,
                    updated_at: 2,
                }),
            ),
            (
                "SetConnectionRequest",
                value(SetConnectionRequest {
                    fields: [("api_key".to_owned(), "v".to_owned())].into(),
                }),
            ),
            (
                "VaultModelKeyView",
                value(VaultModelKeyView {
                    provider: "p".into(),
                    version: 1,
                    created_at: 1,
                    updated_at: 2,
                }),
            ),
            (
                "SetModelKeyRequest",
                value(SetModelKeyRequest { value: "v".into() }),
            ),
            (
                "WorkflowListItem",
                value(WorkflowListItem {
                    name: "w".into(),
                    file: "w.yaml".into(),
                    valid: true,
                }),
            ),
            (
                "WorkflowStepView",
                value(WorkflowStepView {
                    id: "s".into(),
                    gate: true,
                    explain: "e".into(),
                }),
            ),
            ("WorkflowVersionView", value(version_view())),
            (
                "WorkflowVersionText",
                value(WorkflowVersionText {
                    version: version_view(),
                    text: "t".into(),
                }),
            ),
            (
                "WorkflowDiff",
                value(WorkflowDiff {
                    name: "w".into(),
                    from: 1,
                    to: 2,
                    diff: "d".into(),
                }),
            ),
            (
                "SaveWorkflowRequest",
                value(SaveWorkflowRequest {
                    text: "t".into(),
                    message: "m".into(),
                }),
            ),
            (
                "WorkflowView",
                value(WorkflowView {
                    name: "w".into(),
                    file: "w.yaml".into(),
                    valid: true,
                    steps: vec![],
                    problems: vec![],
                }),
            ),
            (
                "StartRunRequest",
                value(StartRunRequest {
                    workflow: "w".into(),
                    inputs: json!({}),
                }),
            ),
            (
                "RunListItem",
                value(RunListItem {
                    run: "r".into(),
                    workflow: "w".into(),
                    status: "running".into(),
                    created_at: 1,
                    updated_at: 2,
                }),
            ),
            (
                "Event",
                value(Event {
                    seq: 1,
                    kind: "k".into(),
                    at: 1,
                    payload: json!({}),
                }),
            ),
        ]
    }

    fn keys(value: &Value) -> BTreeSet<String> {
        value.as_object().unwrap().keys().cloned().collect()
    }

    #[test]
    fn every_schema_names_exactly_the_fields_of_its_type() {
        let schemas = component_schemas();
        let mut samples = samples();
        samples.extend(workspace::samples());
        samples.extend(models::samples());
        for (name, sample) in &samples {
            let schema = &schemas[*name];
            assert_eq!(
                keys(&schema["properties"]),
                keys(sample),
                "the schema {name} and its type disagree"
            );
            for required in schema["required"].as_array().unwrap() {
                assert!(sample.get(required.as_str().unwrap()).is_some());
            }
        }
        // Every object schema has a sample (Internet is an enum of strings).
        let objects = schemas
            .iter()
            .filter(|(_, schema)| schema["type"] == "object")
            .count();
        assert_eq!(objects, samples.len());
    }

    #[test]
    fn every_reference_names_a_schema() {
        let schemas = component_schemas();
        let text = Value::Object(schemas.clone()).to_string();
        for (index, _) in text.match_indices("#/components/schemas/") {
            let name: String = text[index + "#/components/schemas/".len()..]
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            assert!(
                schemas.contains_key(&name),
                "{name} is referenced but missing"
            );
        }
    }
}
