//! The agent file's keys as data: each key of `AGENT.md`'s front matter, the kind of value it
//! takes, what it means and, for a number, the operator's maximum that holds it. The parser's
//! own key lists are checked against this table (a test), `docs/agents.md`'s reference is
//! checked against it, and the test that every number has a maximum walks it, so a new key is
//! covered everywhere at once.

/// The kind of value a key takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyValue {
    /// Free text on one line.
    Text,
    /// A name (`[a-z][a-z0-9_-]*`).
    Name,
    /// A list of names.
    Names,
    /// `NAME/MODEL_ID`, or a bare model id of the account's default provider.
    Model,
    /// A list of tools: built-in names and the file's custom tools.
    Tools,
    /// `none` or `public_egress`.
    Network,
    /// A path relative to the agent's folder.
    Path,
    /// `true` or `false`.
    Boolean,
    /// A map of argument name (`NAME` or `NAME?`) to type.
    Arguments,
    /// A map: its keys are the rows below it.
    Map,
    /// A whole number above 0, at most the maximum the operator sets (the key of
    /// [`crate::LimitMaxima::of`]).
    Number,
}

/// One key of the agent file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDoc {
    /// The key's path: `name`, `loop.turns`, `custom_tools.NAME.script`.
    pub key: &'static str,
    pub value: KeyValue,
    /// Whether the file must have it.
    pub required: bool,
    /// What it means, in a sentence.
    pub meaning: &'static str,
}

const fn key(key: &'static str, value: KeyValue, required: bool, meaning: &'static str) -> KeyDoc {
    KeyDoc {
        key,
        value,
        required,
        meaning,
    }
}

/// Every key of an agent file's front matter, in the order the reference lists them.
pub const AGENT_FILE_KEYS: &[KeyDoc] = &[
    key(
        "name",
        KeyValue::Name,
        true,
        "The agent's name; its folder is `agents/NAME/`.",
    ),
    key(
        "description",
        KeyValue::Text,
        true,
        "What the agent does, for the people who read the reach panel.",
    ),
    key(
        "model",
        KeyValue::Model,
        true,
        "`PROVIDER/MODEL_ID` (a provider the account configured), or a bare id of the account's default provider.",
    ),
    key(
        "tools",
        KeyValue::Tools,
        false,
        "The tools it may call: `Read`, `Write`, `Edit`, `Glob`, `Grep`, `Run` and its custom tools; a tool not named does not exist for it.",
    ),
    key(
        "secrets",
        KeyValue::Names,
        false,
        "The account's secrets its custom tools get as environment variables (never `Run`, never the model).",
    ),
    key(
        "colleagues",
        KeyValue::Names,
        false,
        "The agents it may consult with `Consult`, each with its own file, tools and secrets.",
    ),
    key(
        "network",
        KeyValue::Network,
        false,
        "What its scripts and custom tools may reach: `none` (the default) or `public_egress`.",
    ),
    key(
        "custom_tools",
        KeyValue::Map,
        false,
        "Its custom tools by name, each a script of its folder.",
    ),
    key(
        "custom_tools.NAME.explain",
        KeyValue::Text,
        true,
        "What the tool does, as the model and the reach panel read it.",
    ),
    key(
        "custom_tools.NAME.script",
        KeyValue::Path,
        true,
        "The script in the agent's folder that defines `def main(**arguments)`.",
    ),
    key(
        "custom_tools.NAME.arguments",
        KeyValue::Arguments,
        false,
        "The arguments and their types (`NAME: string`, `NAME?: integer` for an optional one).",
    ),
    key(
        "custom_tools.NAME.applies",
        KeyValue::Boolean,
        false,
        "Whether calling it changes something outside the workspace (a networked agent's tool does unless `false`); only a step after a gate may hold one that applies.",
    ),
    key(
        "custom_tools.NAME.writes",
        KeyValue::Boolean,
        false,
        "Whether its files come back into the agent's folder.",
    ),
    key(
        "limits",
        KeyValue::Map,
        false,
        "The limits of each script or tool call, as a code step's `limits`.",
    ),
    key(
        "limits.memory_mib",
        KeyValue::Number,
        false,
        "Memory of each call, in MiB.",
    ),
    key(
        "limits.timeout_s",
        KeyValue::Number,
        false,
        "Wall-clock seconds of each call.",
    ),
    key(
        "limits.cpu_s",
        KeyValue::Number,
        false,
        "CPU seconds of each call.",
    ),
    key(
        "limits.output_kib",
        KeyValue::Number,
        false,
        "Printed output and result of each call, in KiB.",
    ),
    key(
        "limits.work_mib",
        KeyValue::Number,
        false,
        "Size of the call's `/work`, in MiB.",
    ),
    key(
        "loop",
        KeyValue::Map,
        false,
        "The limits of the agent loop, which runs in the platform.",
    ),
    key(
        "loop.turns",
        KeyValue::Number,
        false,
        "Model turns of one step (default 30).",
    ),
    key(
        "loop.tokens",
        KeyValue::Number,
        false,
        "Tokens in and out of one step, all turns together (default 500,000).",
    ),
    key(
        "loop.step_timeout_s",
        KeyValue::Number,
        false,
        "Wall-clock seconds of one step (default 900).",
    ),
    key(
        "loop.tool_timeout_s",
        KeyValue::Number,
        false,
        "Wall-clock seconds of one tool call (default 120); at most `step_timeout_s`.",
    ),
];

impl KeyValue {
    /// The kind in words, as the reference shows it.
    pub fn words(self) -> &'static str {
        match self {
            KeyValue::Text => "text",
            KeyValue::Name => "a name",
            KeyValue::Names => "a list of names",
            KeyValue::Model => "`PROVIDER/MODEL_ID`",
            KeyValue::Tools => "a list of tools",
            KeyValue::Network => "`none` or `public_egress`",
            KeyValue::Path => "a path in the agent's folder",
            KeyValue::Boolean => "`true` or `false`",
            KeyValue::Arguments => "a map of argument to type",
            KeyValue::Map => "a map",
            KeyValue::Number => "a whole number above 0",
        }
    }
}

/// The agent file's reference as a Markdown table, every key of [`AGENT_FILE_KEYS`] with its
/// kind, whether it is required, its meaning and, for a number, its maximum under `maxima`
/// and the operator option that sets it. `docs/agents.md` holds it as rendered with the
/// built-in maxima (a test compares them).
pub fn agent_file_reference(maxima: &crate::LimitMaxima) -> String {
    let mut table = String::from("| key | value | required | meaning |\n|---|---|---|---|\n");
    for doc in AGENT_FILE_KEYS {
        let mut meaning = doc.meaning.to_owned();
        if doc.value == KeyValue::Number {
            let last = doc.key.rsplit('.').next().unwrap_or(doc.key);
            let (maximum, option) = maxima.of(last);
            meaning.push_str(&format!(" At most {maximum} (`{option}`)."));
        }
        table.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            doc.key,
            doc.value.words(),
            if doc.required { "yes" } else { "no" },
            meaning.replace('|', "\\|")
        ));
    }
    table
}
