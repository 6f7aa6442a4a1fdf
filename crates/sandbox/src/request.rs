//! The request the runner harness reads from its stdin: the same document for every backend.

use serde::Serialize;
use zeroize::Zeroizing;

use crate::{Error, Invocation};

#[derive(Serialize)]
struct Request<'a> {
    code: &'a str,
    inputs_json: &'a str,
    env: Vec<(&'a str, &'a str)>,
    stdlib_module_names: &'a [String],
    result_limit: usize,
}

/// Serialises the invocation's request. It holds the environment's values, so the buffer is
/// zeroed on drop.
pub(crate) fn harness_request(
    invocation: &Invocation,
    stdlib_module_names: &[String],
) -> Result<Zeroizing<Vec<u8>>, Error> {
    let mut request = Zeroizing::new(Vec::with_capacity(
        invocation.code.len() + invocation.inputs_json.len() + 64 * 1024,
    ));
    serde_json::to_writer(
        &mut *request,
        &Request {
            code: &invocation.code,
            inputs_json: &invocation.inputs_json,
            env: invocation
                .env
                .iter()
                .map(|variable| (variable.name.as_str(), variable.value.as_str()))
                .collect(),
            stdlib_module_names,
            result_limit: invocation.limits.output_bytes,
        },
    )
    .map_err(|source| Error::Plan {
        action: "encoded",
        source,
    })?;
    Ok(request)
}
