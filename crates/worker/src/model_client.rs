//! The process's model client, built on first use (issue 13, part 2): building one loads and
//! parses every root certificate of the host (a few milliseconds), which a `stepward run` of
//! steps that call no model never needs. Every holder shares the one client, so the
//! certificates are loaded at most once per process.

use std::sync::{Arc, OnceLock};

/// A model client made when a model is first called.
#[derive(Clone)]
pub struct LazyModelClient {
    options: llm::ClientOptions,
    client: Arc<OnceLock<Result<llm::Client, String>>>,
}

impl LazyModelClient {
    pub fn new(options: llm::ClientOptions) -> LazyModelClient {
        LazyModelClient {
            options,
            client: Arc::new(OnceLock::new()),
        }
    }

    /// Which endpoints this process may reach (the operator's exemptions).
    pub fn endpoints(&self) -> &llm::EndpointPolicy {
        &self.options.endpoints
    }

    /// The client, built now if no holder built it yet. A client that cannot be built (the
    /// host's root certificates are unreadable) fails every call the same way.
    pub fn get(&self) -> anyhow::Result<llm::Client> {
        self.client
            .get_or_init(|| {
                llm::Client::new(self.options.clone()).map_err(|error| {
                    format!("the model client cannot be set up: {}", with_causes(&error))
                })
            })
            .clone()
            .map_err(anyhow::Error::msg)
    }

    /// Whether the client was built (tests: a run without model calls never builds it).
    #[cfg(test)]
    pub fn is_built(&self) -> bool {
        self.client.get().is_some()
    }
}

/// `error` and every cause below it, in words, joined by `: `.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::LazyModelClient;

    /// One client for every holder, built on the first call and not before.
    #[test]
    fn the_model_client_is_built_once_on_first_use() {
        let lazy = LazyModelClient::new(llm::ClientOptions::default());
        let holder = lazy.clone();
        assert!(!lazy.is_built());
        holder.get().unwrap();
        assert!(lazy.is_built());
        lazy.get().unwrap();
    }
}
