//! `Consult` (issue 16 §4, G21): an agent that names colleagues may hand one of them a task.
//! The colleague works in a sub-loop with **its own** file, model, tools and secrets (opened by
//! the binary through [`Colleagues`], never from the caller's), in its own tree and sandboxes;
//! its turns, tokens and time count against the calling step's limits; its calls are
//! journalled under the step with call ids `CALL/colleague/ID`; one consult runs at a time
//! (calls run in order); a chain deeper than [`MAX_DEPTH`] or back to an agent already on it
//! (a cycle, which `stepward check` reports too) is refused and nothing runs.

use llm::Model;
use serde_json::{Map, Value, json};

use crate::catalogue::Catalogue;
use crate::looping::{End, Frame, HostStop, Limits, Setup, StepState, ToolHost, ToolReply};

/// How many consults deep a chain may go: the step's agent, then at most three colleagues.
pub const MAX_DEPTH: usize = spec::MAX_CONSULT_DEPTH;

/// Everything a colleague works with, all of it from its own agent file.
pub struct Colleague<'h> {
    pub agent: spec::Agent,
    pub model_id: String,
    pub model: Box<dyn Model + 'h>,
    /// Runs the colleague's calls: its file tools over its own tree, its scripts with its own
    /// secrets and network.
    pub host: Box<dyn ToolHost + 'h>,
    pub max_tokens_per_turn: u32,
    /// The operator's maxima its loop limits are held to.
    pub maxima: spec::LimitMaxima,
}

/// Opens colleagues for a step. Implemented by the binary.
pub trait Colleagues<'h> {
    /// The colleague `name`, consulted by `caller`; `Err` says why it cannot work: the caller
    /// is told, nothing runs.
    fn open(
        &mut self,
        caller: &spec::Agent,
        name: &str,
    ) -> Result<Colleague<'h>, ColleagueUnavailable>;
}

/// Why a colleague cannot work, told to the agent that consulted it (scrubbed like every
/// tool result).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ColleagueUnavailable {
    /// The caller's file does not name it, or the step has no colleagues at all.
    #[error("`{name}` is not a colleague of {caller}")]
    NotNamed { name: String, caller: String },
    /// Its agent file is missing, invalid, or past the platform's maxima.
    #[error("its agent file cannot be used: {reason}")]
    Definition { reason: String },
    /// Its model cannot be called (no such provider, no key, an endpoint refused).
    #[error("its model cannot be called: {reason}")]
    Model { reason: String },
    /// Its tools cannot be offered (a sandbox session that did not open, a script missing).
    #[error("its tools cannot be offered: {reason}")]
    Tools { reason: String },
}

/// For a step without colleagues: every consult is refused.
pub struct NoColleagues;

impl<'h> Colleagues<'h> for NoColleagues {
    fn open(
        &mut self,
        caller: &spec::Agent,
        name: &str,
    ) -> Result<Colleague<'h>, ColleagueUnavailable> {
        Err(ColleagueUnavailable::NotNamed {
            name: name.to_owned(),
            caller: caller.name().to_owned(),
        })
    }
}

/// Runs one `Consult` call; its answer is the call's result. The step's own limits, a journal
/// error, or a colleague's script that went to repair or ended unobserved end the whole step.
pub(crate) async fn consult(
    step: &mut StepState<'_, '_>,
    frame: &mut Frame<'_>,
    call_id: &str,
    arguments: &Map<String, Value>,
) -> Result<ToolReply, HostStop> {
    let name = arguments
        .get("colleague")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let task = arguments
        .get("task")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // The catalogue's enum already holds the colleague to the caller's file; checked again here,
    // where it decides what runs.
    if !frame.setup.agent.colleagues().iter().any(|c| c == name) {
        return Ok(refused(format!(
            "`{name}` is not a colleague of {}; nothing was run",
            frame.setup.agent.name()
        )));
    }
    if frame.path.iter().any(|on_path| on_path == name) {
        return Ok(refused(format!(
            "consulting `{name}` would be a cycle ({} → {name}); nothing was run",
            frame.path.join(" → ")
        )));
    }
    if frame.path.len() > MAX_DEPTH {
        return Ok(refused(format!(
            "consulting `{name}` would go deeper than {MAX_DEPTH} colleagues ({} → {name}); \
             nothing was run",
            frame.path.join(" → ")
        )));
    }
    let mut colleague = match step.colleagues.open(frame.setup.agent, name) {
        Ok(colleague) => colleague,
        Err(reason) => {
            return Ok(ToolReply::error(format!(
                "the colleague `{name}` cannot work: {reason}"
            )));
        }
    };
    let catalogue = Catalogue::for_agent(&colleague.agent);
    let setup = Setup {
        model_id: colleague.model_id.clone(),
        agent: &colleague.agent,
        catalogue: &catalogue,
        task: task.to_owned(),
        inputs: json!({ "consulted_by": frame.setup.agent.name() }),
        limits: Limits::within(colleague.agent.loop_limits(), &colleague.maxima),
        max_tokens_per_turn: colleague.max_tokens_per_turn,
    };
    let mut path = frame.path.clone();
    path.push(name.to_owned());
    let sub = Frame {
        model: colleague.model.as_ref(),
        setup: &setup,
        host: colleague.host.as_mut(),
        path,
        prefix: format!("{call_id}/{name}/"),
    };
    let end = Box::pin(crate::looping::agent_loop(step, sub)).await;
    match end {
        End::Answered { text } => Ok(ToolReply::ok(text)),
        End::Limit { .. } if step.step_limit => Err(HostStop::Ended(Box::new(end))),
        End::Limit { limit, detail } => Ok(ToolReply::error(format!(
            "the colleague `{name}` stopped without an answer: its limit `{limit}` tripped \
             ({detail})"
        ))),
        End::Model { error } => Ok(ToolReply::error(format!(
            "the colleague `{name}` could not be asked: {error}"
        ))),
        End::Journal { .. } | End::Host(_) => Err(HostStop::Ended(Box::new(end))),
    }
}

fn refused(content: String) -> ToolReply {
    ToolReply {
        content,
        outcome: crate::looping::ReplyOutcome::Refused,
        refusal: None,
    }
}
