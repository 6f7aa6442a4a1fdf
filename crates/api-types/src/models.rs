//! The wire types of an account's model providers: their settings (not secret), the key
//! going in (never out), and the result of a test turn.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
#[cfg(test)]
use serde_json::Value;
use zeroize::Zeroizing;

use crate::limits;

/// One provider as listings show it: never its key, only whether one is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelProviderView {
    pub name: String,
    /// `anthropic` or `openai`.
    #[schemars(extend("enum" = ["anthropic", "openai"]))]
    pub provider: String,
    /// The URL requests go to (the kind's default when none was given).
    pub base_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assistant_model: Option<String>,
    pub is_default: bool,
    /// The version of its vault key; `None` when the key is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_version: Option<u64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// The body of `PUT /api/models/{provider}`: add a provider or replace its settings and key.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveModelProviderRequest {
    /// `anthropic` or `openai`.
    #[schemars(extend("enum" = ["anthropic", "openai"]))]
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = limits::URL_CHARS))]
    pub base_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = limits::NAME_CHARS))]
    pub assistant_model: Option<String>,
    /// The model key: goes in, never comes back out; wiped when the request is dropped,
    /// whether or not it was stored.
    #[schemars(with = "String", length(max = limits::SECRET_VALUE_CHARS))]
    pub key: Zeroizing<String>,
}

impl std::fmt::Debug for SaveModelProviderRequest {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SaveModelProviderRequest")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("assistant_model", &self.assistant_model)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// The body of `POST /api/models/{provider}/test`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelTestRequest {
    /// The model to ask; by default the provider's assistant model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = limits::NAME_CHARS))]
    pub model: Option<String>,
}

/// What one short test turn gave: the answer, the model and the tokens, or why it failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelTestResult {
    pub ok: bool,
    /// The model asked.
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The model that answered, as the provider named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// The kind of failure (`auth`, `rate_limited`, `endpoint_refused`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How many times the request was sent again (rate limits, overload).
    pub retries: u32,
}

#[cfg(test)]
pub(crate) fn samples() -> Vec<(&'static str, Value)> {
    fn value<T: Serialize>(sample: &T) -> Value {
        serde_json::to_value(sample).unwrap()
    }
    vec![
        (
            "ModelProviderView",
            value(&ModelProviderView {
                name: "claude".into(),
                provider: "anthropic".into(),
                base_url: "https://api.anthropic.com/v1/messages".into(),
                assistant_model: Some("m".into()),
                is_default: true,
                key_version: Some(1),
                created_at: 1,
                updated_at: 2,
            }),
        ),
        (
            "SaveModelProviderRequest",
            value(&SaveModelProviderRequest {
                provider: "anthropic".into(),
                base_url: Some("https://x".into()),
                assistant_model: Some("m".into()),
                key: Zeroizing::new("k".into()),
            }),
        ),
        (
            "ModelTestRequest",
            value(&ModelTestRequest {
                model: Some("m".into()),
            }),
        ),
        (
            "ModelTestResult",
            value(&ModelTestResult {
                ok: false,
                model: "m".into(),
                answer: Some("a".into()),
                answered_by: Some("m".into()),
                input_tokens: Some(1),
                output_tokens: Some(2),
                error_kind: Some("auth".into()),
                error: Some("e".into()),
                retries: 0,
            }),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::SaveModelProviderRequest;

    #[test]
    fn g16_debug_of_a_save_request_never_shows_the_key() {
        let printed = format!(
            "{:?}",
            SaveModelProviderRequest {
                provider: "anthropic".into(),
                base_url: None,
                assistant_model: None,
                key: zeroize::Zeroizing::new("sk-ant-DebugMustNotShow".into()),
            }
        );
        assert!(!printed.contains("DebugMustNotShow"), "{printed}");
    }

    /// The key of a request is held in a type that wipes it when dropped, whichever way the
    /// request ends (a refused name, a refused URL, a stored key).
    #[test]
    fn g16_the_key_of_a_save_request_is_wiped_when_dropped() {
        let request: SaveModelProviderRequest =
            serde_json::from_str(r#"{"provider":"anthropic","key":"sk-ant-wiped"}"#).unwrap();
        let key_type = std::any::type_name_of_val(&request.key);
        assert!(key_type.contains("Zeroizing"), "the key is a {key_type}");
        assert_eq!(request.key.as_str(), "sk-ant-wiped");
    }
}
