//! The size limit of every text a request of the JSON API carries, in characters (Unicode
//! scalar values, as JSON Schema's `maxLength` counts them).
//!
//! The limits are written once, here; the wire types name them in their `maxLength`
//! attributes, so the OpenAPI document says them, and the server refuses a request body by
//! walking the same schemas ([`find_too_long`]): what the document says is what is enforced.

use serde_json::{Map, Value};

/// A decision's note (every door: console, link, API, CLI).
pub const NOTE_CHARS: usize = 2_000;
/// A person's display name.
pub const DISPLAY_NAME_CHARS: usize = 200;
/// An account's name or a person's email (sign-in truncates what it reads to the same).
pub const IDENTIFIER_CHARS: usize = 320;
/// A password (`auth::MAX_PASSWORD_CHARS`; a server test keeps the two equal).
pub const PASSWORD_CHARS: usize = 1_024;
/// The id of a person, a run or a key as a request names it.
pub const ID_CHARS: usize = 200;
/// An API key's name.
pub const KEY_NAME_CHARS: usize = 100;
/// A workflow's name, a model's name.
pub const NAME_CHARS: usize = 200;
/// A model provider's URL.
pub const URL_CHARS: usize = 2_048;
/// A secret's, a connection field's or a model key's value.
pub const SECRET_VALUE_CHARS: usize = 65_536;
/// A connection field's name.
pub const FIELD_NAME_CHARS: usize = 64;
/// The message of a workspace revision.
pub const REVISION_MESSAGE_CHARS: usize = 2_000;
/// A workspace path (`workspace::MAX_PATH_BYTES`; the workspace also counts its bytes).
pub const PATH_CHARS: usize = 4_096;
/// A file's content in one write through the API: what a request body carries with room for
/// its other fields. A larger file goes in with `stepward files put` (up to 64 MiB).
pub const CONTENT_CHARS: usize = BODY_BYTES - 64 * 1024;
/// A workflow's text in a save: the parser's limit of a workflow file
/// (`spec::limits::MAX_FILE_BYTES`; a server test keeps the two equal), so the document says
/// what a save will take.
pub const WORKFLOW_TEXT_CHARS: usize = 256 * 1024;
/// A request body of the API or a console form, in bytes (the server reads no more).
pub const BODY_BYTES: usize = 2 * 1024 * 1024;
/// A person's message in an interview with the assistant.
pub const INTERVIEW_MESSAGE_CHARS: usize = 8_000;
/// The highest proposal number an interview confirmation names.
pub const PROPOSAL_NUMBER_MAX: u32 = 10_000;

/// A text longer than its schema allows: where it is in the request, the limit and what was
/// given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLong {
    /// The field's place in the body: `note`, `changes[2].message`, `fields.api_key`, or
    /// `fields (a name)` for a map key.
    pub field: String,
    pub max_chars: u64,
    pub given_chars: u64,
}

impl std::fmt::Display for TooLong {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{}: at most {} characters, {} given",
            self.field, self.max_chars, self.given_chars
        )
    }
}

/// How deep `$ref`s are followed before the walk gives up on a schema (ours nest three deep).
const MAX_REFERENCE_HOPS: usize = 16;

/// The first text of `value` longer than the `maxLength` its place in `schema` says, with the
/// component schemas `schemas` to resolve `$ref`s in. Strings in places the schema leaves open
/// (a run's inputs) are not limited here.
pub fn find_too_long(
    schemas: &Map<String, Value>,
    schema: &Value,
    value: &Value,
) -> Option<TooLong> {
    let mut place = String::new();
    walk(schemas, schema, value, &mut place)
}

fn resolve<'a>(schemas: &'a Map<String, Value>, mut schema: &'a Value) -> &'a Value {
    for _ in 0..MAX_REFERENCE_HOPS {
        let Some(name) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix("#/components/schemas/"))
        else {
            return schema;
        };
        match schemas.get(name) {
            Some(target) => schema = target,
            None => return schema,
        }
    }
    schema
}

fn too_long(schema: &Value, text: &str, place: &str) -> Option<TooLong> {
    let max_chars = schema.get("maxLength").and_then(Value::as_u64)?;
    let given_chars = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
    (given_chars > max_chars).then(|| TooLong {
        field: if place.is_empty() {
            "body".to_owned()
        } else {
            place.to_owned()
        },
        max_chars,
        given_chars,
    })
}

fn walk(
    schemas: &Map<String, Value>,
    schema: &Value,
    value: &Value,
    place: &mut String,
) -> Option<TooLong> {
    let schema = resolve(schemas, schema);
    // The branches of a combination: each one's limits hold where they apply.
    for combination in ["allOf", "anyOf", "oneOf"] {
        for branch in schema
            .get(combination)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(found) = walk(schemas, branch, value, place) {
                return Some(found);
            }
        }
    }
    match value {
        Value::String(text) => too_long(schema, text, place),
        Value::Array(items) => {
            let item_schema = schema.get("items")?;
            for (index, item) in items.iter().enumerate() {
                let length = place.len();
                place.push_str(&format!("[{index}]"));
                let found = walk(schemas, item_schema, item, place);
                place.truncate(length);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        Value::Object(fields) => {
            for (name, field) in fields {
                if let Some(names) = schema.get("propertyNames") {
                    let owner = if place.is_empty() {
                        "body"
                    } else {
                        place.as_str()
                    };
                    if let Some(found) = too_long(names, name, &format!("{owner} (a name)")) {
                        return Some(found);
                    }
                }
                let field_schema = schema
                    .get("properties")
                    .and_then(|properties| properties.get(name))
                    .or_else(|| schema.get("additionalProperties"));
                let Some(field_schema) = field_schema else {
                    continue;
                };
                let length = place.len();
                if !place.is_empty() {
                    place.push('.');
                }
                place.push_str(name);
                let found = walk(schemas, field_schema, field, place);
                place.truncate(length);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{TooLong, find_too_long};
    use crate::schemas::{component_schemas, reference};

    fn check(schema: &str, body: Value) -> Option<TooLong> {
        find_too_long(&component_schemas(), &reference(schema), &body)
    }

    #[test]
    fn a_note_over_its_limit_names_the_field_the_limit_and_the_length() {
        let found = check("DecisionRequest", json!({ "note": "n".repeat(2_001) }));
        assert_eq!(
            found.map(|found| found.to_string()).as_deref(),
            Some("note: at most 2000 characters, 2001 given")
        );
        assert_eq!(
            check("DecisionRequest", json!({ "note": "n".repeat(2_000) })),
            None
        );
    }

    /// JSON Schema counts characters, not bytes: 2,000 two-byte letters are within the limit.
    #[test]
    fn limits_count_characters_not_bytes() {
        assert_eq!(
            check("DecisionRequest", json!({ "note": "é".repeat(2_000) })),
            None
        );
        assert!(check("DecisionRequest", json!({ "note": "é".repeat(2_001) })).is_some());
    }

    #[test]
    fn a_text_deep_in_a_body_is_found_by_its_place() {
        let body = json!({
            "message": "m",
            "changes": [
                { "path": "a.txt", "action": "delete" },
                { "path": "p".repeat(4_097), "action": "delete" },
            ],
        });
        let found = check("WorkspaceWriteRequest", body).map(|found| found.field);
        assert_eq!(found.as_deref(), Some("changes[1].path"));
    }

    #[test]
    fn a_map_bounds_its_names_and_its_values() {
        let long_value = json!({ "fields": { "api_key": "v".repeat(65_537) } });
        let found = check("SetConnectionRequest", long_value).map(|found| found.field);
        assert_eq!(found.as_deref(), Some("fields.api_key"));
        let long_name = json!({ "fields": { "n".repeat(65): "v" } });
        let found = check("SetConnectionRequest", long_name).map(|found| found.field);
        assert_eq!(found.as_deref(), Some("fields (a name)"));
    }

    #[test]
    fn an_optional_text_is_bounded_and_null_passes() {
        let body = json!({ "provider": "openai", "key": "k", "base_url": "u".repeat(2_049) });
        let found = check("SaveModelProviderRequest", body).map(|found| found.field);
        assert_eq!(found.as_deref(), Some("base_url"));
        let body = json!({ "provider": "openai", "key": "k", "base_url": null });
        assert_eq!(check("SaveModelProviderRequest", body), None);
    }
}
