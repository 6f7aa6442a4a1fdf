//! The request the runner harness reads from its stdin: the same document for every backend.

use serde::Serialize;
use zeroize::Zeroizing;

use crate::{Error, Invocation};

#[derive(Serialize)]
struct Request<'a> {
    code: &'a str,
    inputs_json: &'a str,
    env: Vec<(&'a str, &'a str)>,
    result_limit: usize,
}

/// Counts what is written to it, and keeps nothing.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Serialises the invocation's request. It holds the environment's values, so the buffer is
/// zeroed on drop; its exact length is counted first, so it is allocated once and never grows
/// (growing would free an unzeroed copy of the values).
pub(crate) fn harness_request(invocation: &Invocation) -> Result<Zeroizing<Vec<u8>>, Error> {
    let document = Request {
        code: &invocation.code,
        inputs_json: &invocation.inputs_json,
        env: invocation
            .env
            .iter()
            .map(|variable| (variable.name.as_str(), variable.value.as_str()))
            .collect(),
        result_limit: invocation.limits.output_bytes,
    };
    let encoding_failed = |source| Error::Plan {
        action: "encoded",
        source,
    };
    let mut length = Counter(0);
    serde_json::to_writer(&mut length, &document).map_err(encoding_failed)?;
    let mut request = Zeroizing::new(Vec::with_capacity(length.0));
    serde_json::to_writer(&mut *request, &document).map_err(encoding_failed)?;
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoSecrets;

    impl crate::copyback::SecretScreen for NoSecrets {
        fn holds_secret(&self, _content: &[u8]) -> bool {
            false
        }
    }

    /// G19 (review "credentials" A12): the request holds the environment's values; a buffer
    /// that grew while it was written would have freed an unzeroed copy of them.
    #[test]
    fn g19_the_request_buffer_is_allocated_once_to_its_exact_length() {
        let invocation = Invocation {
            live: None,
            python: crate::PythonPin {
                major: 3,
                minor: 11,
            },
            code: "def main(**k):\n    return 1\n".repeat(500),
            inputs_json: format!("{{\"text\": \"{}\"}}", "\\u00e9".repeat(5000)),
            env: vec![crate::EnvVar {
                name: "CONN_A_KEY".to_owned(),
                value: Zeroizing::new("a-value-that-needs-escaping-\"\\\n".repeat(200)),
            }],
            network: crate::NetworkMode::None,
            limits: crate::Limits::default(),
            files: workspace::StepFiles::empty(),
            screen: std::sync::Arc::new(NoSecrets),
        };
        let request = harness_request(&invocation).unwrap();
        assert_eq!(request.len(), request.capacity());
        let parsed: serde_json::Value = serde_json::from_slice(&request).unwrap();
        assert_eq!(parsed["env"][0][0], "CONN_A_KEY");
    }
}
