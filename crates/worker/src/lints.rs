//! The authoring lints `stepward check` reports as warnings (issue 17, section 4), from what
//! `lints.py` read in a code step's `ast` (nothing is executed). Both push a networked step
//! toward doing one thing, the request, so that everything that can safely run again runs in
//! an offline step, where a failure can be retried (G14, G15):
//!
//! - `networked-write-ungated`: a `public_egress` step that holds a connection, or whose code
//!   makes a request with a body or a method other than GET/HEAD (`Request(..., data=...)`,
//!   `urlopen(url, data)`, `method="POST"|"PUT"|"PATCH"|"DELETE"`, `http.client`'s
//!   `request("POST", ...)`, a method that is not a constant), and is not itself a gate. A
//!   write with credentials should wait for a person (`id: send!`).
//! - `offline-work-in-networked-step`: a `public_egress` step whose `main`, before its first
//!   request, validates (`raise`, `assert`), parses (`json.loads`, `int(...)`, `strptime`,
//!   `csv.reader`, `re.match`, ...), or runs more than [`OFFLINE_WORK_STATEMENTS`] other
//!   statements. Imports, the docstring and reading credentials from `os.environ` are not
//!   counted: the networked step needs them anyway. A `main` with no request of its own (or
//!   through a function of the module that makes one) is left alone: the lint is silent
//!   rather than wrong.
//!
//! Why N = 3: the send of a request needs at most a body (`body = {...}`), its encoding
//! (`data = json.dumps(body).encode()`) and its headers (`headers = {...}`) before the
//! `Request(...)` itself, which counts as the request. A fourth statement is preparation: it
//! belongs in the offline step before, where a mistake in it fails without touching the
//! network and the supervisor may retry it; in a networked step the same mistake found after
//! a request makes the attempt `unknown`, which only a person can run again.
//!
//! Flagged, for example: `if amount <= 0: raise ValueError(...)` before the request; `ticket
//! = json.loads(raw)` before it; five assignments building the body. Left alone: `key =
//! os.environ[...]`, `body = {...}`, `data = json.dumps(body).encode()`, `request =
//! Request(url, data=data)`, and `json.loads(response.read())` after the request.

use serde::Deserialize;

/// More than this many counted statements of `main` before its first request are flagged.
/// Kept equal to `OFFLINE_WORK_STATEMENTS` in `lints.py` (a test checks it).
pub const OFFLINE_WORK_STATEMENTS: usize = 3;

/// What `lints.py` found in one code.
#[derive(Debug, Default, Deserialize)]
pub struct Found {
    #[serde(default)]
    pub writes: Vec<Place>,
    pub offline_work: Option<Place>,
}

/// A place in the code (its own lines, 1-based) and what is there, in words.
#[derive(Debug, Deserialize)]
pub struct Place {
    pub line: u32,
    pub column: u32,
    pub what: String,
}

/// A lint's finding: `(line, column, code, message, help)` in the code's own lines.
pub type Finding = (u32, u32, &'static str, String, String);

/// The lints of one code step.
pub fn lint_step(step: &spec::Step, found: &Found) -> Vec<Finding> {
    let mut findings = Vec::new();
    if step.network() != spec::Network::PublicEgress {
        return findings;
    }
    let id = step.id();
    if !step.is_gate() {
        let mut why = Vec::new();
        if !step.connections().is_empty() {
            why.push(format!(
                "holds the connection(s) {}",
                step.connections().join(", ")
            ));
        }
        if let Some(write) = found.writes.first() {
            why.push(format!("makes a write request: {}", write.what));
        }
        if !why.is_empty() {
            let (line, column) = found
                .writes
                .first()
                .map_or((1, 1), |write| (write.line, write.column));
            findings.push((
                line,
                column,
                "networked-write-ungated",
                format!(
                    "step {id} has internet access and {}, and no person decides before it runs",
                    why.join(" and ")
                ),
                format!(
                    "make it a gate (`id: {id}!`) so a person approves what it sends, or, if it \
                     only reads, drop the body and the method and the connection it does not need"
                ),
            ));
        }
    }
    if let Some(work) = &found.offline_work {
        findings.push((
            work.line,
            work.column,
            "offline-work-in-networked-step",
            format!(
                "step {id} has internet access and its `main` {}; if that fails after a request \
                 was sent, the attempt is `unknown` and only a person can run it again",
                work.what
            ),
            format!(
                "move the work that needs no network into an offline step before it (no \
                 `network`) and pass its result in with `{{ from: STEP }}`, so the networked \
                 step only sends: before its first request it may build the body, encode it and \
                 set headers ({OFFLINE_WORK_STATEMENTS} statements at most), besides imports and \
                 reading credentials from `os.environ`"
            ),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    /// The Python and the Rust state the same N.
    #[test]
    fn n_is_the_same_in_the_python_and_the_docs() {
        let python = include_str!("lints.py");
        assert!(python.contains(&format!(
            "OFFLINE_WORK_STATEMENTS = {}",
            crate::lints::OFFLINE_WORK_STATEMENTS
        )));
    }
}
