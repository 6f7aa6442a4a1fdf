//! A JSON Schema (draft 2020-12) of the workflow format, for editors' YAML language servers.
//!
//! It describes the shape only; the parser stays the judge (references to earlier steps,
//! credential keys, templating and the like are beyond what a schema can say).

use serde_json::json;

/// The JSON Schema of a workflow file, its limits held to the built-in maxima.
pub fn workflow_json_schema() -> serde_json::Value {
    workflow_json_schema_within(&crate::LimitMaxima::BUILT_IN)
}

/// The JSON Schema of a workflow file with the operator's `maxima` (`stepward schema` prints
/// it): every number in it has its maximum.
pub fn workflow_json_schema_within(maxima: &crate::LimitMaxima) -> serde_json::Value {
    let limit = |key: &str| json!({ "type": "integer", "minimum": 1, "maximum": maxima.of(key).0 });
    let snake_name = "^[a-z][a-z0-9_]*$";
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://stepward.dev/schema/workflow.json",
        "title": "stepward workflow",
        "description": "A workflow: steps that run Python code or hand a task to an agent, in file order.",
        "type": "object",
        "additionalProperties": false,
        "required": ["name", "python", "steps"],
        "properties": {
            "name": {
                "description": "The workflow's name.",
                "type": "string",
                "minLength": 1
            },
            "python": {
                "description": "The pinned Python version, \"MAJOR.MINOR\", in quotes (unquoted 3.10 is the number 3.1).",
                "type": "string",
                "pattern": "^[0-9]+\\.[0-9]+$"
            },
            "supervisor": {
                "description": "Who sees a failed step: `assistant` (the default: the account's default model provider, which receives the failed step's inputs and printed text) or `none` (every failure goes straight to a person).",
                "enum": ["assistant", "none"]
            },
            "notify": {
                "description": "Who is mailed an approve link when a run waits at a gate: a list of addresses of people of the account who may decide (default: all of them), or a mapping with `people` and `remind_after` (reminders at least 1h apart, at most 3).",
                "oneOf": [
                    { "$ref": "#/$defs/notify_people" },
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "properties": {
                            "people": { "$ref": "#/$defs/notify_people" },
                            "remind_after": {
                                "description": "How long a gate waits before its people are reminded: a whole number of minutes, hours or days (`24h`), from 1h to 30d.",
                                "type": "string",
                                "pattern": "^[0-9]{1,6}[mhd]$"
                            }
                        }
                    }
                ]
            },
            "inputs": {
                "description": "The workflow's inputs: name to type.",
                "type": "object",
                "propertyNames": { "pattern": snake_name },
                "additionalProperties": {
                    "enum": ["string", "integer", "number", "boolean", "object", "array"]
                }
            },
            "steps": {
                "description": "The steps, run in this order.",
                "type": "array",
                "minItems": 1,
                "maxItems": crate::workflow::MAX_STEPS,
                "items": { "$ref": "#/$defs/step" }
            }
        },
        "$defs": {
            "notify_people": {
                "description": "E-mail addresses of people of the account whose role decides gates.",
                "type": "array",
                "maxItems": crate::notify::MAX_NOTIFY_PEOPLE,
                "uniqueItems": true,
                "items": { "type": "string", "pattern": "^[^@\\s]+@[^@\\s]+$", "maxLength": 254 }
            },
            "step": {
                "type": "object",
                "additionalProperties": false,
                "required": ["id"],
                "properties": {
                    "id": {
                        "description": "The step id; a trailing `!` marks a gate (a person decides before it runs).",
                        "type": "string",
                        "pattern": "^[a-z][a-z0-9_]*!?$"
                    },
                    "explain": {
                        "description": "What the step does, in plain words. Required for code steps.",
                        "type": "string",
                        "minLength": 1
                    },
                    "code": {
                        "description": "Python source defining `def main(...)`; inputs arrive as keyword arguments, the return value is the output.",
                        "type": "string"
                    },
                    "agent": {
                        "description": "The agent that performs this step (agents/<agent>/AGENT.md).",
                        "type": "string",
                        "pattern": "^[a-z][a-z0-9_-]*$"
                    },
                    "task": {
                        "description": "What the agent should do, in plain words.",
                        "type": "string",
                        "minLength": 1
                    },
                    "output": {
                        "description": "An agent step's output: its answer as a JSON string (text, default), or the answer parsed as JSON (json; an answer that is not JSON fails the step).",
                        "enum": ["text", "json"]
                    },
                    "network": {
                        "description": "What the step's code may reach: nothing (default) or the public internet and nothing else.",
                        "enum": ["none", "public_egress"]
                    },
                    "connections": {
                        "description": "Connection aliases granted to the step, as CONN_<ALIAS>_<FIELD> environment variables.",
                        "type": "array",
                        "uniqueItems": true,
                        "items": { "type": "string", "pattern": snake_name }
                    },
                    "inputs": {
                        "description": "Keyword arguments of main: literals, or {from: input.NAME} / {from: STEP_ID}.",
                        "type": "object",
                        "propertyNames": { "pattern": snake_name },
                        "additionalProperties": { "$ref": "#/$defs/step_input" }
                    },
                    "limits": {
                        "description": "The step's limits (any subset), each at most the server's maximum: memory (MiB), wall-clock and CPU time (s), printed output (KiB), /work (MiB).",
                        "type": "object",
                        "additionalProperties": false,
                        "properties": {
                            "memory_mib": limit("memory_mib"),
                            "timeout_s": limit("timeout_s"),
                            "cpu_s": limit("cpu_s"),
                            "output_kib": limit("output_kib"),
                            "work_mib": limit("work_mib")
                        }
                    }
                },
                "oneOf": [
                    {
                        "required": ["code", "explain"],
                        "not": { "anyOf": [{ "required": ["agent"] }, { "required": ["task"] }, { "required": ["output"] }] }
                    },
                    {
                        "required": ["agent", "task"],
                        "not": { "anyOf": [
                            { "required": ["code"] },
                            { "required": ["network"] },
                            { "required": ["connections"] },
                            { "required": ["limits"] }
                        ] }
                    }
                ]
            },
            "step_input": {
                "description": "A literal value, or a reference to a workflow input or an earlier step.",
                "anyOf": [
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["from"],
                        "properties": {
                            "from": {
                                "type": "string",
                                "pattern": "^(input\\.[a-z][a-z0-9_]*|[a-z][a-z0-9_]*)$"
                            }
                        }
                    },
                    {
                        "not": { "type": "object", "required": ["from"] }
                    }
                ]
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use crate::schema::workflow_json_schema;
    use crate::workflow::{STEP_KEYS, WORKFLOW_KEYS};

    fn property_names(schema: &serde_json::Value) -> Vec<String> {
        let mut names: Vec<String> = schema["properties"]
            .as_object()
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    fn sorted(keys: &[&str]) -> Vec<String> {
        let mut keys: Vec<String> = keys.iter().map(|key| key.to_string()).collect();
        keys.sort();
        keys
    }

    #[test]
    fn schema_names_exactly_the_keys_the_parser_accepts() {
        let schema = workflow_json_schema();
        assert_eq!(property_names(&schema), sorted(WORKFLOW_KEYS));
        assert_eq!(property_names(&schema["$defs"]["step"]), sorted(STEP_KEYS));
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
    }
}
