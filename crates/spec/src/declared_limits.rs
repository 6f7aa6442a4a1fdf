//! Declared limits: a code step's (and an agent file's, for each of its script and tool calls)
//! `limits: { memory_mib, timeout_s, cpu_s, output_kib, work_mib }`, and an agent file's
//! `loop: { turns, tokens, step_timeout_s, tool_timeout_s }`.
//!
//! The operator's maxima are a parameter of the parse ([`LimitMaxima`]): a declaration above
//! one is refused with a diagnostic naming the limit and the maximum, never lowered.

use crate::diagnostic::Diagnostics;
use crate::lower::fields;
use crate::yaml::{Node, NodeValue, Resolved};

/// The keys of a `limits` block; the JSON Schema names exactly these.
pub(crate) const LIMIT_KEYS: &[&str] =
    &["memory_mib", "timeout_s", "cpu_s", "output_kib", "work_mib"];
/// The keys of an agent file's `loop` block.
pub(crate) const LOOP_KEYS: &[&str] = &["turns", "tokens", "step_timeout_s", "tool_timeout_s"];

/// What a step (or an agent's script and tool calls) declared; `None` is "the default".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StepLimits {
    pub memory_mib: Option<u64>,
    pub timeout_s: Option<u64>,
    pub cpu_s: Option<u64>,
    pub output_kib: Option<u64>,
    pub work_mib: Option<u64>,
}

impl StepLimits {
    /// The declared limits as `(key, value)` pairs, in the order of [`LIMIT_KEYS`]; empty when
    /// nothing was declared (the reach panel shows only these).
    pub fn declared(&self) -> Vec<(&'static str, u64)> {
        [
            ("memory_mib", self.memory_mib),
            ("timeout_s", self.timeout_s),
            ("cpu_s", self.cpu_s),
            ("output_kib", self.output_kib),
            ("work_mib", self.work_mib),
        ]
        .into_iter()
        .filter_map(|(key, value)| value.map(|value| (key, value)))
        .collect()
    }
}

/// An agent file's `loop` block (the agent loop runs in the platform, not in a sandbox).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LoopLimits {
    pub turns: Option<u64>,
    pub tokens: Option<u64>,
    pub step_timeout_s: Option<u64>,
    pub tool_timeout_s: Option<u64>,
}

impl LoopLimits {
    /// The model turns of an agent step that declares none.
    pub const DEFAULT_TURNS: u64 = 30;
    /// The tokens (in and out, all turns) of an agent step that declares none.
    pub const DEFAULT_TOKENS: u64 = 500_000;
    /// The wall-clock seconds of an agent step that declares none.
    pub const DEFAULT_STEP_TIMEOUT_S: u64 = 900;
    /// The wall-clock seconds of one tool call that declares none.
    pub const DEFAULT_TOOL_TIMEOUT_S: u64 = 120;

    /// The limits in force: what the file declares, else the default, never above `maxima`
    /// (an operator's maximum below a default lowers the default).
    pub fn in_force(&self, maxima: &LimitMaxima) -> LoopLimitsInForce {
        let step_timeout_s = self
            .step_timeout_s
            .unwrap_or(Self::DEFAULT_STEP_TIMEOUT_S)
            .min(maxima.agent_step_timeout_s);
        LoopLimitsInForce {
            turns: self
                .turns
                .unwrap_or(Self::DEFAULT_TURNS)
                .min(maxima.agent_turns),
            tokens: self
                .tokens
                .unwrap_or(Self::DEFAULT_TOKENS)
                .min(maxima.agent_tokens),
            step_timeout_s,
            tool_timeout_s: self
                .tool_timeout_s
                .unwrap_or(Self::DEFAULT_TOOL_TIMEOUT_S)
                .min(maxima.timeout_s)
                .min(step_timeout_s),
        }
    }
}

/// An agent step's loop limits as they hold: every one set and within the maxima.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LoopLimitsInForce {
    pub turns: u64,
    pub tokens: u64,
    pub step_timeout_s: u64,
    pub tool_timeout_s: u64,
}

/// The operator's maxima (`--max-step-memory-mib` and its siblings): the largest value a
/// `limits` block, and an agent file's `loop` block, may declare. A tool call's
/// `tool_timeout_s` is held to `timeout_s` (a tool's script runs as a step's code does) and
/// to the agent's own `step_timeout_s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LimitMaxima {
    pub memory_mib: u64,
    pub timeout_s: u64,
    pub cpu_s: u64,
    pub output_kib: u64,
    pub work_mib: u64,
    /// `loop: { turns }` (`--max-agent-turns`).
    pub agent_turns: u64,
    /// `loop: { tokens }` (`--max-agent-tokens`).
    pub agent_tokens: u64,
    /// `loop: { step_timeout_s }` (`--max-agent-step-timeout-s`).
    pub agent_step_timeout_s: u64,
}

impl LimitMaxima {
    /// The built-in maxima, used when no server says otherwise (`stepward check` without a
    /// server says so).
    pub const BUILT_IN: LimitMaxima = LimitMaxima {
        memory_mib: 2048,
        timeout_s: 3600,
        cpu_s: 3600,
        output_kib: 16384,
        work_mib: 1024,
        agent_turns: 200,
        agent_tokens: 5_000_000,
        agent_step_timeout_s: 3600,
    };

    /// No maximum at all: for reading what an agent file protects, never for running it.
    pub const UNBOUNDED: LimitMaxima = LimitMaxima {
        memory_mib: u64::MAX,
        timeout_s: u64::MAX,
        cpu_s: u64::MAX,
        output_kib: u64::MAX,
        work_mib: u64::MAX,
        agent_turns: u64::MAX,
        agent_tokens: u64::MAX,
        agent_step_timeout_s: u64::MAX,
    };

    /// The maximum of `key` (a key of a `limits` or a `loop` block) and the operator's flag
    /// that sets it.
    pub fn of(&self, key: &str) -> (u64, &'static str) {
        match key {
            "memory_mib" => (self.memory_mib, "--max-step-memory-mib"),
            "timeout_s" | "tool_timeout_s" => (self.timeout_s, "--max-step-timeout-s"),
            "cpu_s" => (self.cpu_s, "--max-step-cpu-s"),
            "output_kib" => (self.output_kib, "--max-step-output-kib"),
            "turns" => (self.agent_turns, "--max-agent-turns"),
            "tokens" => (self.agent_tokens, "--max-agent-tokens"),
            "step_timeout_s" => (self.agent_step_timeout_s, "--max-agent-step-timeout-s"),
            _ => (self.work_mib, "--max-step-work-mib"),
        }
    }
}

impl Default for LimitMaxima {
    fn default() -> Self {
        Self::BUILT_IN
    }
}

/// A positive whole number, or a diagnostic.
fn positive_integer(node: &Node, key: &str, diagnostics: &mut Diagnostics) -> Option<u64> {
    if let NodeValue::Scalar(scalar) = &node.value
        && let Resolved::Integer(number) = scalar.resolve()
        && let Some(value) = number.as_u64()
        && value > 0
    {
        return Some(value);
    }
    diagnostics.report(
        node.position,
        "invalid-limit",
        format!(
            "`{key}` must be a whole number above 0, found {}",
            node.describe()
        ),
        format!("write a number, such as `{key}: {}`", example(key)),
    );
    None
}

fn example(key: &str) -> u64 {
    match key {
        "memory_mib" => 512,
        "timeout_s" | "cpu_s" | "step_timeout_s" | "tool_timeout_s" => 60,
        "output_kib" => 1024,
        "work_mib" => 128,
        "turns" => 20,
        _ => 100_000,
    }
}

/// Lowers a `limits` block, holding each value to `maxima`.
pub(crate) fn lower_limits(
    node: &Node,
    maxima: &LimitMaxima,
    diagnostics: &mut Diagnostics,
) -> Option<StepLimits> {
    let fields = fields(node, "`limits`", LIMIT_KEYS, diagnostics)?;
    let mut limits = StepLimits::default();
    let mut all_ok = true;
    for key in LIMIT_KEYS {
        let Some(value_node) = fields.get(key) else {
            continue;
        };
        let Some(value) = positive_integer(value_node, key, diagnostics) else {
            all_ok = false;
            continue;
        };
        if !within_maximum(value_node, key, value, maxima, diagnostics) {
            all_ok = false;
            continue;
        }
        let slot = match *key {
            "memory_mib" => &mut limits.memory_mib,
            "timeout_s" => &mut limits.timeout_s,
            "cpu_s" => &mut limits.cpu_s,
            "output_kib" => &mut limits.output_kib,
            _ => &mut limits.work_mib,
        };
        *slot = Some(value);
    }
    all_ok.then_some(limits)
}

/// Whether `value` of `key` is within its maximum; if not, a diagnostic at its place naming the
/// maximum and the operator's flag.
fn within_maximum(
    value_node: &Node,
    key: &str,
    value: u64,
    maxima: &LimitMaxima,
    diagnostics: &mut Diagnostics,
) -> bool {
    let (maximum, flag) = maxima.of(key);
    if value <= maximum {
        return true;
    }
    diagnostics.report(
        value_node.position,
        "limit-above-maximum",
        format!("`{key}: {value}` is above this server's maximum of {maximum}"),
        format!("declare at most `{key}: {maximum}`; the operator sets the maximum with `{flag}`"),
    );
    false
}

/// Lowers an agent file's `loop` block, holding each value to `maxima`, and a tool call's
/// time to the step's: `tool_timeout_s ≤ step_timeout_s ≤ its maximum`.
pub(crate) fn lower_loop(
    node: &Node,
    maxima: &LimitMaxima,
    diagnostics: &mut Diagnostics,
) -> Option<LoopLimits> {
    let fields = fields(node, "`loop`", LOOP_KEYS, diagnostics)?;
    let mut limits = LoopLimits::default();
    let mut all_ok = true;
    for key in LOOP_KEYS {
        let Some(value_node) = fields.get(key) else {
            continue;
        };
        let Some(value) = positive_integer(value_node, key, diagnostics) else {
            all_ok = false;
            continue;
        };
        if !within_maximum(value_node, key, value, maxima, diagnostics) {
            all_ok = false;
            continue;
        }
        let slot = match *key {
            "turns" => &mut limits.turns,
            "tokens" => &mut limits.tokens,
            "step_timeout_s" => &mut limits.step_timeout_s,
            _ => &mut limits.tool_timeout_s,
        };
        *slot = Some(value);
    }
    if let (Some(tool), Some(tool_node)) = (limits.tool_timeout_s, fields.get("tool_timeout_s")) {
        let step = limits
            .step_timeout_s
            .unwrap_or(LoopLimits::DEFAULT_STEP_TIMEOUT_S);
        if tool > step {
            let said = if limits.step_timeout_s.is_some() {
                "its `step_timeout_s`"
            } else {
                "the default `step_timeout_s`"
            };
            diagnostics.report(
                tool_node.position,
                "limit-above-maximum",
                format!("`tool_timeout_s: {tool}` is longer than {said} of {step}"),
                format!(
                    "a tool call runs inside its step: declare `tool_timeout_s` at most {step}, \
                     or a longer `step_timeout_s`"
                ),
            );
            all_ok = false;
        }
    }
    all_ok.then_some(limits)
}
