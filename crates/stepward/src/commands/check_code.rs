//! The checks of `stepward check` beyond the format: what would make a valid file fail when
//! it runs. The Python of every code step is parsed (a syntax error is reported at the
//! workflow's own line and column), `def main(...)` is held to the step's declared inputs, an
//! agent a step names must exist, a custom tool's script must exist and parse, and a `python:`
//! version this machine lacks is a warning (the file may be meant for another server; `run`
//! refuses it here). The authoring lints (`worker::lints`) are warnings too.

use std::path::Path;

use crate::definitions::{AgentLookup, AgentNote, display_name, load_agent, read_text};
use worker::python_check::{Interpreter, signature_problems};

/// Errors (the file would fail) and warnings (it would fail on this machine).
#[derive(Default)]
pub struct Findings {
    pub errors: Vec<spec::Diagnostic>,
    pub warnings: Vec<spec::Diagnostic>,
}

fn diagnostic(
    file: &str,
    (line, column): (u32, u32),
    code: &'static str,
    message: String,
    help: String,
) -> spec::Diagnostic {
    spec::Diagnostic {
        file: file.to_owned(),
        line,
        column,
        code,
        message,
        help,
    }
}

/// The line and column of the workflow's `python:` key, for the version warning.
fn python_key_position(text: &str) -> (u32, u32) {
    text.lines()
        .position(|line| line.starts_with("python:"))
        .and_then(|index| u32::try_from(index + 1).ok())
        .map_or((1, 1), |line| (line, 1))
}

pub fn check_workflow(
    path: &Path,
    text: &str,
    workflow: &spec::Workflow,
    agents: &AgentLookup,
    maxima: &spec::LimitMaxima,
) -> Findings {
    let file = display_name(path);
    let mut findings = Findings::default();
    let version = workflow.python();
    let interpreter = Interpreter::for_version(version);
    match &interpreter {
        Some(interpreter) if interpreter.is_pinned => {}
        found => findings.warnings.push(diagnostic(
            &file,
            python_key_position(text),
            "python-version-missing",
            format!(
                "this machine has no Python {version} (python{version} in /usr/bin or \
                 /usr/local/bin): `stepward run` here refuses the workflow{}",
                match found {
                    Some(other) =>
                        format!("; its code was read with {} instead", other.path.display()),
                    None => "; its code was not read (no python3 there either)".to_owned(),
                } + &Interpreter::refusals(version)
                    .iter()
                    .map(|reason| format!("; not run: {reason}"))
                    .collect::<String>()
            ),
            format!(
                "install python{version} on the server that runs it, or pin a version it has; \
                 a file meant for another server may keep its pin"
            ),
        )),
    }
    let code_steps: Vec<(&spec::Step, &str)> = workflow
        .steps()
        .iter()
        .filter_map(|step| Some((step, step.code()?)))
        .collect();
    if let Some(interpreter) = &interpreter {
        let codes: Vec<&str> = code_steps.iter().map(|(_, code)| *code).collect();
        match interpreter.read(&codes) {
            Ok(answers) => {
                let stdlib = answers
                    .first()
                    .and_then(|answer| answer.stdlib.clone())
                    .unwrap_or_default();
                let pin = Some(sandbox::PythonPin {
                    major: version.major,
                    minor: version.minor,
                });
                for ((step, code), answer) in code_steps.iter().zip(answers) {
                    code_findings(&file, step, &answer, &mut findings);
                    // The import check the run makes before any sandbox (G9), with the
                    // pinned interpreter's standard library, where the code is (newcomer 3,
                    // friction 3). Only with the pinned interpreter: another's library differs.
                    let pinned = interpreter.is_pinned && !stdlib.is_empty();
                    if let (true, None, Some(pin)) = (pinned, &answer.syntax_error, pin)
                        && let Some(problem) = sandbox::import_problem(code, &stdlib, pin)
                    {
                        findings.errors.push(import_finding(&file, step, &problem));
                    }
                }
            }
            Err(error) => findings.warnings.push(diagnostic(
                &file,
                (1, 1),
                "python-not-read",
                format!("the steps' Python was not checked: {error:#}"),
                "run `stepward check` again; the format checks above still hold".to_owned(),
            )),
        }
    }
    for step in workflow.steps() {
        let spec::StepBody::Agent { agent, .. } = step.body() else {
            continue;
        };
        let at = step.body_origin().locate(1, 1);
        let Some(found) = agents.find(agent) else {
            findings.errors.push(diagnostic(
                &file,
                at,
                "unknown-agent",
                format!(
                    "step {} hands its task to the agent `{agent}`, and there is no \
                     {agent}/AGENT.md in {}",
                    step.id(),
                    agents.places()
                ),
                agents.create_help(agent),
            ));
            continue;
        };
        let agent_file = found.dir.join(agent).join("AGENT.md");
        if let Some(note) = &found.note {
            findings
                .warnings
                .push(agent_note(&file, at, step, agent, &agent_file, note));
        }
        match load_agent(&found.dir, agent, maxima) {
            Err(problem) => findings.errors.push(diagnostic(
                &file,
                at,
                "invalid-agent",
                format!(
                    "step {} hands its task to the agent `{agent}`: {problem}",
                    step.id()
                ),
                format!("fix {} first", agent_file.display()),
            )),
            Ok(loaded) => step_reach_findings(&file, at, step, &loaded, &found.dir, maxima)
                .into_iter()
                .for_each(|found| findings.errors.push(found)),
        }
    }
    findings
}

/// The warning for an agent `check` read where `run` here would not, or whose copy beside the
/// file differs from the one `run` takes.
fn agent_note(
    file: &str,
    at: (u32, u32),
    step: &spec::Step,
    agent: &str,
    read: &Path,
    note: &AgentNote,
) -> spec::Diagnostic {
    match note {
        AgentNote::NotInWorkspace { beside } => diagnostic(
            file,
            at,
            "agent-not-in-workspace",
            format!(
                "step {} hands its task to the agent `{agent}`: {} was checked, but `stepward \
                 run` here takes agents from the account's workspace, which has no \
                 agents/{agent}/AGENT.md",
                step.id(),
                beside.display()
            ),
            format!(
                "put it there with `stepward files put agents/{agent}/AGENT.md --from {}` (and \
                 each script it names); a file meant for another server may leave it",
                beside.display()
            ),
        ),
        AgentNote::DiffersFromBeside { beside } => diagnostic(
            file,
            at,
            "agent-differs-from-workspace",
            format!(
                "step {} hands its task to the agent `{agent}`: {} was checked, the copy \
                 `stepward run` here takes, and it differs from {}",
                step.id(),
                read.display(),
                beside.display()
            ),
            format!(
                "to run the copy beside the file, put it in the workspace with `stepward files \
                 put agents/{agent}/AGENT.md --from {}`",
                beside.display()
            ),
        ),
    }
}

/// What the agent of a step can reach through its colleagues (G21): a problem of the
/// closure, then `apply-before-gate` for a step that is not a gate and whose agent (or any
/// colleague it can consult) holds a tool that applies.
fn step_reach_findings(
    file: &str,
    at: (u32, u32),
    step: &spec::Step,
    agent: &spec::Agent,
    agents: &Path,
    maxima: &spec::LimitMaxima,
) -> Vec<spec::Diagnostic> {
    let closure = spec::colleague_closure(agent, &|name| load_agent(agents, name, maxima));
    if let Some(problem) = closure.problems.first() {
        return vec![diagnostic(
            file,
            at,
            problem_code(problem),
            format!(
                "step {} hands its task to the agent `{}`: {problem}",
                step.id(),
                agent.name()
            ),
            problem_help(problem),
        )];
    }
    let applying = closure.applying_tools();
    if applying.is_empty() || step.is_gate() {
        return Vec::new();
    }
    vec![diagnostic(
        file,
        at,
        "apply-before-gate",
        format!(
            "step {} is not a gate, and its agent `{}` holds tools that apply changes ({}): a \
             networked `Run`, or a custom tool of a public_egress agent that does not declare \
             `applies: false`; an agent holds what every colleague it can consult holds",
            step.id(),
            agent.name(),
            applying.join(", ")
        ),
        format!(
            "make the step a gate (`id: {}!`) so a person decides before it runs, or give it an \
             agent that only proposes (read-only tools, or `applies: false` where the tool \
             only reads) and apply in a later gate step",
            step.id()
        ),
    )]
}

fn problem_code(problem: &spec::ColleagueProblem) -> &'static str {
    match problem {
        spec::ColleagueProblem::Cycle { .. } => "colleague-cycle",
        spec::ColleagueProblem::TooDeep { .. } => "colleagues-too-deep",
        spec::ColleagueProblem::Unavailable { .. } => "unknown-colleague",
    }
}

fn problem_help(problem: &spec::ColleagueProblem) -> String {
    match problem {
        spec::ColleagueProblem::Cycle { .. } => {
            "remove one of the `colleagues:` entries on the cycle: an agent may not consult an \
             agent that consults it back"
                .to_owned()
        }
        spec::ColleagueProblem::TooDeep { .. } => format!(
            "keep chains of colleagues at most {} deep: an agent, a colleague, its colleague \
             and one more",
            spec::MAX_CONSULT_DEPTH
        ),
        spec::ColleagueProblem::Unavailable { name, .. } => format!(
            "create agents/{name}/AGENT.md (and make it pass `stepward check`), or remove \
             `{name}` from `colleagues:`"
        ),
    }
}

/// The line and column of `name` in the agent file's `colleagues:` (a flow list on the key's
/// line, or a block list under it); the key itself when the name is not found there.
fn colleague_position(source: &str, name: &str) -> (u32, u32) {
    let lines: Vec<&str> = source.lines().collect();
    let Some(key) = lines
        .iter()
        .position(|line| line.starts_with("colleagues:"))
    else {
        return (1, 1);
    };
    let key_position = (u32::try_from(key + 1).unwrap_or(u32::MAX), 1);
    if name.is_empty() {
        return key_position;
    }
    let is_name_at = |line: &str, index: usize| {
        let before = line[..index].chars().next_back();
        let after = line[index + name.len()..].chars().next();
        let edge = |c: Option<char>| {
            c.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        };
        edge(before) && edge(after)
    };
    let found = |line: &str, from: usize| {
        line.match_indices(name)
            .map(|(index, _)| index)
            .find(|index| *index >= from && is_name_at(line, *index))
    };
    let at = |line: usize, index: usize| {
        (
            u32::try_from(line + 1).unwrap_or(u32::MAX),
            u32::try_from(index + 1).unwrap_or(u32::MAX),
        )
    };
    if let Some(index) = found(lines[key], "colleagues:".len()) {
        return at(key, index);
    }
    for (offset, line) in lines.iter().enumerate().skip(key + 1) {
        if !line.starts_with([' ', '-']) {
            break;
        }
        if let Some(index) = found(line, 0) {
            return at(offset, index);
        }
    }
    key_position
}

fn code_findings(
    file: &str,
    step: &spec::Step,
    answer: &worker::python_check::Answer,
    findings: &mut Findings,
) {
    let origin = step.body_origin();
    if let Some(error) = &answer.syntax_error {
        findings.errors.push(diagnostic(
            file,
            origin.locate(error.line, error.column),
            "python-syntax-error",
            format!(
                "the code of step {} is not valid Python: {} (line {} of the code)",
                step.id(),
                error.message,
                error.line
            ),
            "fix the code: nothing of a step whose code does not parse can run".to_owned(),
        ));
        return;
    }
    let Some(main) = &answer.main else {
        // The format check found a `def main(` at the start of a line; Python sees none at the
        // top level (it is inside a string or a class).
        findings.errors.push(diagnostic(
            file,
            origin.locate(1, 1),
            "missing-main",
            format!(
                "the code of step {} defines no top-level function `main`",
                step.id()
            ),
            "define `def main(...)` at the top level of the code".to_owned(),
        ));
        return;
    };
    let inputs: Vec<&str> = step
        .inputs()
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    for (line, column, code, message, help) in signature_problems(step.id(), &inputs, main) {
        findings.errors.push(diagnostic(
            file,
            origin.locate(line, column),
            code,
            message,
            help,
        ));
    }
    if let Some(found) = &answer.lints {
        for (line, column, code, message, help) in worker::lints::lint_step(step, found) {
            findings.warnings.push(diagnostic(
                file,
                origin.locate(line, column),
                code,
                message,
                help,
            ));
        }
    }
}

/// An agent file's folder and colleagues, and its custom tools: the folder may not hold
/// `shared` or `library` (its tree keeps those names for the workspace's), every colleague
/// must exist, with no cycle and no chain deeper than three (G21); each script must exist in
/// the agent's folder and parse.
pub fn check_agent(path: &Path, agent: &spec::Agent, maxima: &spec::LimitMaxima) -> Findings {
    let file = display_name(path);
    let folder = path.parent().unwrap_or(Path::new("."));
    let mut findings = Findings::default();
    for reserved in ["shared", "library"] {
        if std::fs::symlink_metadata(folder.join(reserved)).is_ok() {
            findings.errors.push(diagnostic(
                &file,
                (1, 1),
                "reserved-folder-name",
                format!(
                    "the agent's folder {} holds `{reserved}`, a name the agent's tree keeps \
                     for the workspace's `{reserved}/`",
                    folder.display()
                ),
                format!(
                    "rename {}: in the agent's tree, `{reserved}/` is the workspace's own",
                    folder.join(reserved).display()
                ),
            ));
        }
    }
    if !agent.colleagues().is_empty() {
        let agents = folder.parent().unwrap_or(Path::new("."));
        let closure = spec::colleague_closure(agent, &|name| load_agent(agents, name, maxima));
        for problem in &closure.problems {
            let entry = match problem {
                spec::ColleagueProblem::Cycle { path }
                | spec::ColleagueProblem::TooDeep { path } => {
                    path.get(1).cloned().unwrap_or_default()
                }
                spec::ColleagueProblem::Unavailable { by, name, .. } if by == agent.name() => {
                    name.clone()
                }
                spec::ColleagueProblem::Unavailable { .. } => String::new(),
            };
            findings.errors.push(diagnostic(
                &file,
                colleague_position(agent.source(), &entry),
                problem_code(problem),
                problem.to_string(),
                problem_help(problem),
            ));
        }
    }
    let interpreter = Interpreter::system();
    for tool in agent.custom_tools() {
        let script = folder.join(tool.script());
        let at = tool.script_origin().locate(1, 1);
        if !script.is_file() {
            findings.errors.push(diagnostic(
                &file,
                at,
                "missing-script",
                format!(
                    "the custom tool `{}` runs {}, which does not exist",
                    tool.name(),
                    script.display()
                ),
                format!(
                    "create the script at {} (paths are relative to the agent's folder {}), or \
                     fix `script:`",
                    script.display(),
                    folder.display()
                ),
            ));
            continue;
        }
        let (Some(interpreter), Ok(code)) = (&interpreter, read_text(&script)) else {
            continue;
        };
        if let Ok(answers) = interpreter.read(&[code.as_str()])
            && let Some(error) = answers
                .first()
                .and_then(|answer| answer.syntax_error.as_ref())
        {
            findings.errors.push(diagnostic(
                &display_name(&script),
                (error.line, error.column),
                "python-syntax-error",
                format!(
                    "the script of the custom tool `{}` is not valid Python: {}",
                    tool.name(),
                    error.message
                ),
                "fix the script: a tool whose script does not parse cannot run".to_owned(),
            ));
        }
    }
    findings
}

/// An import the run would refuse before any sandbox, at its line in the workflow file.
fn import_finding(
    file: &str,
    step: &spec::Step,
    problem: &sandbox::ImportProblem,
) -> spec::Diagnostic {
    let line = u32::try_from(problem.line).unwrap_or(u32::MAX);
    let (message, help) = if problem.module.is_empty() {
        (
            format!(
                "the imports of step {} cannot be read: {}",
                step.id(),
                problem.detail
            ),
            "write the imports as plain `import` and `from ... import` statements".to_owned(),
        )
    } else {
        (
            format!(
                "step {} {}: `run` sends it to repair before any of it runs",
                step.id(),
                problem.detail.replacen("step.py:", "line ", 1)
            ),
            "use the standard library instead (a step's sandbox has nothing else), or ask \
             the assistant for a repair"
                .to_owned(),
        )
    };
    diagnostic(
        file,
        step.body_origin().locate(line, 1),
        "import-outside-stdlib",
        message,
        help,
    )
}
