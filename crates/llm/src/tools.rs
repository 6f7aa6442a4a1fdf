//! Tool calls as they arrive: a request that offered no tools gets none, and arguments are
//! measured as text before they are parsed (parsed JSON takes up to 16 times the memory of its
//! text: `[0,0,...]` is 2 bytes an element on the wire and a 32-byte `serde_json::Value` in
//! memory), one call's and the whole turn's, against [`crate::ClientOptions`]' caps.

use serde_json::{Map, Value};

use crate::error::Error;
use crate::http::ClientOptions;
use crate::types::TurnRequest;

/// The most characters of a tool's name an error repeats (the name is the model's text).
const MAX_NAME_CHARS: usize = 64;

/// The most tool calls one turn may have: each costs memory however small its arguments.
pub(crate) const MAX_CALLS_PER_TURN: usize = 128;

/// What the tool calls of one turn may still bring.
#[derive(Debug)]
pub(crate) struct ToolBudget {
    offered: bool,
    per_call: usize,
    per_turn: usize,
    used: usize,
    calls: usize,
}

impl ToolBudget {
    pub(crate) fn new(request: &TurnRequest, options: &ClientOptions) -> ToolBudget {
        ToolBudget {
            offered: !request.tools.is_empty(),
            per_call: options.max_tool_argument_bytes,
            per_turn: options.max_turn_tool_argument_bytes,
            used: 0,
            calls: 0,
        }
    }

    /// A new call to `name` begins: refused when the request offered no tools or the turn
    /// has as many calls as it may.
    pub(crate) fn start(&mut self, name: &str) -> Result<(), Error> {
        self.call(name)?;
        self.calls += 1;
        if self.calls > MAX_CALLS_PER_TURN {
            return Err(Error::InvalidResponse {
                detail: format!(
                    "the model made more than {MAX_CALLS_PER_TURN} tool calls in one turn; the \
                     turn is not used"
                ),
            });
        }
        Ok(())
    }

    /// The model calls `name`: refused when the request offered no tools.
    pub(crate) fn call(&self, name: &str) -> Result<(), Error> {
        if self.offered {
            Ok(())
        } else {
            Err(Error::InvalidResponse {
                detail: format!(
                    "the model called `{}`, but the request offered no tools; the turn is not used",
                    shown(name)
                ),
            })
        }
    }

    /// `added` more bytes of arguments arrived for the call to `name`, which now has
    /// `call_bytes`: refused when the call or the turn goes over its cap.
    pub(crate) fn charge(
        &mut self,
        name: &str,
        call_bytes: usize,
        added: usize,
    ) -> Result<(), Error> {
        self.call(name)?;
        self.used = self.used.saturating_add(added);
        if call_bytes > self.per_call {
            return Err(Error::ToolArgumentsTooLarge {
                tool: shown(name),
                limit: self.per_call,
                whole_turn: false,
            });
        }
        if self.used > self.per_turn {
            return Err(Error::ToolArgumentsTooLarge {
                tool: shown(name),
                limit: self.per_turn,
                whole_turn: true,
            });
        }
        Ok(())
    }

    /// A whole call's arguments as text: started, charged, then parsed.
    pub(crate) fn whole_call(
        &mut self,
        name: &str,
        json: &str,
    ) -> Result<Map<String, Value>, Error> {
        self.start(name)?;
        self.charge(name, json.len(), json.len())?;
        json_arguments(name, json)
    }
}

/// A tool's name as an error shows it: at most 64 characters, no control characters, and
/// `a tool` when the model gave none yet.
fn shown(name: &str) -> String {
    if name.is_empty() {
        return "a tool".to_owned();
    }
    name.chars()
        .filter(|character| !character.is_control())
        .take(MAX_NAME_CHARS)
        .collect()
}

/// A tool call's arguments, which arrived as JSON text (already charged): a complete JSON
/// object or an error (never part of one).
pub(crate) fn json_arguments(name: &str, json: &str) -> Result<Map<String, Value>, Error> {
    if json.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(arguments)) => Ok(arguments),
        Ok(_) => Err(Error::InvalidResponse {
            detail: format!(
                "the arguments of the call to `{}` are not a JSON object",
                shown(name)
            ),
        }),
        Err(error) => Err(Error::InvalidResponse {
            detail: format!(
                "the arguments of the call to `{}` are not complete JSON: {error}",
                shown(name)
            ),
        }),
    }
}
