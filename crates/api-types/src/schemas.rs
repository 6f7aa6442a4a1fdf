//! The JSON Schemas of the wire types, derived from the types themselves (`schemars`, which
//! reads their serde attributes): the server's OpenAPI document (`GET /api/openapi.json`)
//! takes its `components.schemas` from [`component_schemas`], in the JSON Schema 2020-12
//! dialect of OpenAPI 3.1. A type of the API is added by deriving `JsonSchema` and naming it
//! in [`REQUESTS`] or [`ANSWERS`].
//!
//! A request is described as it is read (a field with a default is not required), an answer as
//! it is written (a field left out when empty is not required). Every text a request reads
//! carries its `maxLength` from [`crate::limits`], and the server refuses a body by the same
//! schemas.

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use crate::interview::{
    ConfirmInterviewRequest, InterviewConfirmed, InterviewEntry, InterviewMessageRequest,
    InterviewProposal, InterviewView, ProposedFile, StartInterviewRequest,
};
use crate::models::{
    ModelProviderView, ModelTestRequest, ModelTestResult, SaveModelProviderRequest,
};
use crate::repairs::{
    AcceptRepairRequest, RepairAcceptedView, RepairProposalView, SupervisorSettingsRequest,
    SupervisorSettingsView,
};
use crate::runs::{Event, RunListItem, RunSummary, StepSummary};
use crate::tool_tests::{ToolTestConfirmationView, ToolTestRequest, ToolTestView};
use crate::workspace::{
    WorkspaceChange, WorkspaceChangedPath, WorkspaceFileItem, WorkspaceFileView,
    WorkspaceRevisionView, WorkspaceWriteRequest,
};
use crate::*;

/// Registers a type's schema (and the schemas it refers to) with a generator.
pub type Register = fn(&mut SchemaGenerator);

fn register<T: JsonSchema>(generator: &mut SchemaGenerator) {
    generator.subschema_for::<T>();
}

/// Every body a route reads.
pub const REQUESTS: &[Register] = &[
    register::<DecisionRequest>,
    register::<RetryRequest>,
    register::<AcceptRepairRequest>,
    register::<SignInRequest>,
    register::<InvitePersonRequest>,
    register::<RoleChangeRequest>,
    register::<OwnershipRequest>,
    register::<CreateApiKeyRequest>,
    register::<SetSecretRequest>,
    register::<SetConnectionRequest>,
    register::<SetModelKeyRequest>,
    register::<StartRunRequest>,
    register::<WorkspaceWriteRequest>,
    register::<WorkspaceChange>,
    register::<SaveModelProviderRequest>,
    register::<ModelTestRequest>,
    register::<ToolTestRequest>,
    register::<SaveWorkflowRequest>,
    register::<CreateShareRequest>,
    register::<SupervisorSettingsRequest>,
    register::<StartInterviewRequest>,
    register::<InterviewMessageRequest>,
    register::<ConfirmInterviewRequest>,
];

/// Every body a route answers (and the CLI's `--json` shares).
pub const ANSWERS: &[Register] = &[
    register::<ErrorBody>,
    register::<ReachReport>,
    register::<StepSummary>,
    register::<RunSummary>,
    register::<RunDetail>,
    register::<DecisionView>,
    register::<SignInResponse>,
    register::<SessionView>,
    register::<ShareLinkCreated>,
    register::<ShareLinkView>,
    register::<PersonView>,
    register::<PersonInvited>,
    register::<ApiKeyView>,
    register::<ApiKeyCreated>,
    register::<AuditEntryView>,
    register::<AuditPageView>,
    register::<AuditVerifyView>,
    register::<AuditBreakView>,
    register::<ApprovalView>,
    register::<ApproveLinkView>,
    register::<VaultSecretView>,
    register::<VaultConnectionView>,
    register::<VaultModelKeyView>,
    register::<WorkflowListItem>,
    register::<WorkflowStepView>,
    register::<WorkflowView>,
    register::<WorkflowVersionView>,
    register::<WorkflowVersionText>,
    register::<WorkflowDiff>,
    register::<RunListItem>,
    register::<Event>,
    register::<WorkspaceFileItem>,
    register::<WorkspaceFileView>,
    register::<WorkspaceChangedPath>,
    register::<WorkspaceRevisionView>,
    register::<ModelProviderView>,
    register::<ModelTestResult>,
    register::<ToolTestView>,
    register::<ToolTestConfirmationView>,
    register::<RepairProposalView>,
    register::<RepairAcceptedView>,
    register::<SupervisorSettingsView>,
    register::<InterviewView>,
    register::<InterviewEntry>,
    register::<InterviewProposal>,
    register::<ProposedFile>,
    register::<InterviewConfirmed>,
];

fn generated(settings: SchemaSettings, types: &[Register]) -> Map<String, Value> {
    let mut generator = SchemaGenerator::new(settings.with(|settings| {
        settings.definitions_path = "/components/schemas".into();
        settings.meta_schema = None;
    }));
    for register in types {
        register(&mut generator);
    }
    generator.take_definitions(true)
}

/// Every schema by type name, in the JSON Schema 2020-12 dialect of OpenAPI 3.1.
pub fn component_schemas() -> Map<String, Value> {
    let mut schemas = generated(SchemaSettings::draft2020_12().for_serialize(), ANSWERS);
    // A type both read and answered is described as it is read (a test checks that no
    // type is both with different schemas).
    schemas.extend(generated(
        SchemaSettings::draft2020_12().for_deserialize(),
        REQUESTS,
    ));
    schemas
}

/// `{"$ref": "#/components/schemas/<name>"}`.
pub fn reference(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeSet;

    use serde::Serialize;
    use serde_json::{Map, Value, json};

    use super::{ANSWERS, REQUESTS, component_schemas, generated};
    use crate::interview::{
        ConfirmInterviewRequest, InterviewConfirmed, InterviewEntry, InterviewMessageRequest,
        InterviewProposal, InterviewView, ProposedFile, StartInterviewRequest,
    };
    use crate::runs::{Event, RunListItem, RunSummary, StepSummary};
    use crate::*;

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

    pub(crate) fn run_detail() -> RunDetail {
        RunDetail {
            summary: summary(),
            workflow: "w".into(),
            number: 3,
            created_at: 1,
            updated_at: 2,
            decisions: vec![decision()],
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
            secret_holders: vec![SecretHolder {
                secret: "S".into(),
                agent: "a".into(),
            }],
            colleagues: vec!["b".into()],
            models: vec![ModelReach {
                agent: "a".into(),
                model: "m".into(),
                provider: Some("p".into()),
                host: Some("h".into()),
            }],
            limits: vec!["memory_mib: 512".into()],
        }
    }

    pub(crate) fn version_view() -> WorkflowVersionView {
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

    fn interview_proposal() -> InterviewProposal {
        InterviewProposal {
            number: 1,
            workflow: "w".into(),
            note: "n".into(),
            files: vec![ProposedFile {
                path: "p".into(),
                text: "t".into(),
            }],
            reach: ReachReport {
                workflow: "w".into(),
                caption: "c".into(),
                rows: vec![row()],
                isolation: None,
            },
            lints: vec![Diagnostic {
                file: "f".into(),
                line: 1,
                column: 1,
                code: "c".into(),
                message: "m".into(),
                help: "h".into(),
            }],
            lints_checked: true,
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
                "StartInterviewRequest",
                value(StartInterviewRequest {
                    workflow: "w".into(),
                    message: "m".into(),
                }),
            ),
            (
                "InterviewMessageRequest",
                value(InterviewMessageRequest {
                    message: "m".into(),
                }),
            ),
            (
                "ConfirmInterviewRequest",
                value(ConfirmInterviewRequest {
                    proposal: 1,
                    note: "n".into(),
                }),
            ),
            (
                "InterviewEntry",
                value(InterviewEntry {
                    who: "platform".into(),
                    text: "t".into(),
                    problems: vec!["p".into()],
                }),
            ),
            (
                "ProposedFile",
                value(ProposedFile {
                    path: "p".into(),
                    text: "t".into(),
                }),
            ),
            ("InterviewProposal", value(interview_proposal())),
            ("Diagnostic", value(interview_proposal().lints[0].clone())),
            (
                "InterviewView",
                value(InterviewView {
                    id: "i".into(),
                    workflow: "w".into(),
                    state: "open".into(),
                    assistant: "a".into(),
                    entries: vec![InterviewEntry {
                        who: "person".into(),
                        text: "t".into(),
                        problems: vec!["p".into()],
                    }],
                    proposal: Some(interview_proposal()),
                    saved_version: Some(1),
                }),
            ),
            (
                "InterviewConfirmed",
                value(InterviewConfirmed {
                    interview: "i".into(),
                    version: version_view(),
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
                "SecretHolder",
                value(SecretHolder {
                    secret: "S".into(),
                    agent: "a".into(),
                }),
            ),
            (
                "ModelReach",
                value(ModelReach {
                    agent: "a".into(),
                    model: "m".into(),
                    provider: Some("p".into()),
                    host: Some("h".into()),
                }),
            ),
            (
                "ReachReport",
                value(ReachReport {
                    workflow: "w".into(),
                    caption: "c".into(),
                    rows: vec![row()],
                    isolation: Some("i".into()),
                }),
            ),
            ("StepSummary", value(step())),
            ("RunSummary", value(summary())),
            (
                "RunDetail",
                value(RunDetail {
                    summary: summary(),
                    workflow: "w".into(),
                    number: 3,
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
                "RetryRequest",
                value(RetryRequest {
                    note: "n".into(),
                    inputs: Some(Map::from_iter([(
                        "to".to_owned(),
                        serde_json::json!("ops@example.com"),
                    )])),
                }),
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
                    browser: Some("Chrome 131 on Linux".into()),
                    address: Some("192.0.2.7".into()),
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
                    include_tool_results: false,
                    created_by: Some("Ada".into()),
                    workflow: Some("w".into()),
                    number: Some(3),
                }),
            ),
            (
                "CreateShareRequest",
                value(CreateShareRequest {
                    include_tool_results: true,
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
                    created_by: Some("p".into()),
                    created_by_name: Some("Pat".into()),
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
                    prev_hash: "g".into(),
                    hash: "h".into(),
                    count: 1,
                    last_at: 1,
                }),
            ),
            (
                "AuditPageView",
                value(AuditPageView {
                    entries: Vec::new(),
                    older: Some("1.2".into()),
                    newer: Some("3.4".into()),
                }),
            ),
            (
                "AuditBreakView",
                value(AuditBreakView {
                    seq: 1,
                    reason: "r".into(),
                    message: "m".into(),
                }),
            ),
            (
                "AuditVerifyView",
                value(AuditVerifyView {
                    intact: false,
                    entries: 1,
                    broken: Some(AuditBreakView {
                        seq: 1,
                        reason: "r".into(),
                        message: "m".into(),
                    }),
                }),
            ),
            (
                "ApproveLinkView",
                value(ApproveLinkView {
                    run: "r".into(),
                    step: "s".into(),
                    attempt: 1,
                    path: "/approve/r/s/1/t".into(),
                }),
            ),
            (
                "ApprovalView",
                value(ApprovalView {
                    run: "r".into(),
                    workflow: "w".into(),
                    number: 3,
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
                    number: 3,
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
                    version: 4,
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
        samples.extend(repairs::samples());
        samples.extend(tool_tests::samples());
        for (name, sample) in &samples {
            let schema = &schemas[*name];
            assert_eq!(
                keys(&schema["properties"]),
                keys(sample),
                "the schema {name} and its type disagree"
            );
            for required in schema["required"].as_array().into_iter().flatten() {
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
    fn no_type_is_both_read_and_answered_with_different_schemas() {
        use schemars::generate::SchemaSettings;
        let answers = generated(SchemaSettings::draft2020_12().for_serialize(), ANSWERS);
        let requests = generated(SchemaSettings::draft2020_12().for_deserialize(), REQUESTS);
        for (name, schema) in &requests {
            if let Some(answer) = answers.get(name) {
                assert_eq!(answer, schema, "{name} is read and answered differently");
            }
        }
    }

    /// Every place of a text in a request body, by its path in the schemas.
    fn texts(
        schemas: &Map<String, Value>,
        schema: &Value,
        place: String,
        found: &mut Vec<(String, Value)>,
    ) {
        places_of(schemas, schema, place, &["string"], found);
    }

    /// Every place of a value of one of `kinds` in a request body, by its path in the schemas.
    fn places_of(
        schemas: &Map<String, Value>,
        schema: &Value,
        place: String,
        kinds: &[&str],
        found: &mut Vec<(String, Value)>,
    ) {
        let texts = |schemas: &Map<String, Value>,
                     schema: &Value,
                     place: String,
                     found: &mut Vec<(String, Value)>| {
            places_of(schemas, schema, place, kinds, found)
        };
        if let Some(name) = schema["$ref"].as_str() {
            let name = name.trim_start_matches("#/components/schemas/");
            return texts(schemas, &schemas[name], place, found);
        }
        for each in ["anyOf", "oneOf", "allOf"] {
            for option in schema[each].as_array().into_iter().flatten() {
                texts(schemas, option, place.clone(), found);
            }
        }
        let is = |kind: &str| {
            schema["type"] == kind
                || schema["type"]
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().any(|each| each == kind))
        };
        if kinds.iter().any(|kind| is(kind)) {
            found.push((place.clone(), schema.clone()));
        }
        if is("object") {
            if let Some(properties) = schema["properties"].as_object() {
                for (name, property) in properties {
                    texts(schemas, property, format!("{place}.{name}"), found);
                }
            }
            if schema["additionalProperties"].is_object() {
                found.push((format!("{place} (a name)"), schema["propertyNames"].clone()));
                texts(
                    schemas,
                    &schema["additionalProperties"],
                    format!("{place}.*"),
                    found,
                );
            }
        }
        if is("array") {
            texts(schemas, &schema["items"], format!("{place}[]"), found);
        }
    }

    /// Issue 11, finding 9: every text a request reads has its limit in the document (or is
    /// one of a few words), so the server's check by the same schema bounds it.
    #[test]
    fn every_text_a_request_reads_has_a_max_length_in_the_document() {
        use schemars::generate::SchemaSettings;
        let schemas = component_schemas();
        let requests = generated(SchemaSettings::draft2020_12().for_deserialize(), REQUESTS);
        let mut found = Vec::new();
        for name in requests.keys() {
            texts(&schemas, &schemas[name], name.clone(), &mut found);
        }
        assert!(found.len() > 20, "{found:?}");
        for (place, schema) in &found {
            assert!(
                schema["maxLength"].as_u64().is_some_and(|max| max > 0)
                    || schema["enum"]
                        .as_array()
                        .is_some_and(|words| !words.is_empty()),
                "{place} has no limit: {schema}"
            );
        }
        assert_eq!(
            schemas["DecisionRequest"]["properties"]["note"]["maxLength"],
            2_000
        );
    }

    /// Issue 35 (agents review, finding 2, its class): every number a request reads has its
    /// maximum in the document, so no value a caller sends reaches the platform unbounded.
    #[test]
    fn every_number_a_request_reads_has_a_maximum_in_the_document() {
        use schemars::generate::SchemaSettings;
        let schemas = component_schemas();
        let requests = generated(SchemaSettings::draft2020_12().for_deserialize(), REQUESTS);
        let mut found = Vec::new();
        for name in requests.keys() {
            places_of(
                &schemas,
                &schemas[name],
                name.clone(),
                &["integer", "number"],
                &mut found,
            );
        }
        assert!(!found.is_empty(), "no number found in any request");
        let unbounded: Vec<String> = found
            .iter()
            .filter(|(place, schema)| {
                !place.ends_with("(a name)") && !schema["maximum"].is_number()
            })
            .map(|(place, schema)| format!("{place}: {schema}"))
            .collect();
        assert!(
            unbounded.is_empty(),
            "numbers without a maximum:\n{}",
            unbounded.join("\n")
        );
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
