//! The reach panel as the wire type (G27), for the server's pages and API and for the CLI's
//! `stepward reach --json`: one conversion, and the model hosts read from the account's
//! providers (a model's provider receives the step's data, so the panel names its host).

pub use platform::views::{
    NOT_ISOLATED, models_words, reach_row_json, secrets_words, with_model_hosts,
};

/// The notice a reach panel of this server shows, if any.
pub(crate) fn isolation_notice(options: &crate::AppOptions) -> Option<&'static str> {
    (!options.steps_isolated).then_some(NOT_ISOLATED)
}
