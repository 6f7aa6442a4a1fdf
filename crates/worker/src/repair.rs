//! Repair of a step that went to `needs_repair` (G9): the assistant's proposal is checked here
//! before anyone sees it, and an accepted one becomes a new workflow version the run goes on
//! with (`engine::Engine::retry_repaired`, which checks it again).
//!
//! A proposal is checked by putting its code in place of the step's code in the run's
//! workflow text (the step's `code: |` block, line for line at its indentation), then:
//! the new text must parse (G1); nothing but that step's code may differ from the run's
//! workflow (`engine::changes_besides_code`: so code that tries to leave its block and add
//! `network:` is refused); every import must be in the **pinned** Python's standard library,
//! read by that interpreter itself (`sys.stdlib_module_names`; a machine without the pinned
//! version cannot check, and refuses); and `def main(...)` must take the same parameters as
//! before (or, when the old code did not parse, exactly the step's inputs).

use engine::{NoProposal, RefusedProposal};
use serde::Deserialize;
use spec::{StepBody, Workflow};

use crate::python_check::Interpreter;

/// Reads each code: its imports outside the standard library, and `main`'s parameters.
const IMPORTS: &str = r#"
import ast, json, sys
stdlib = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
answers = []
for code in json.load(sys.stdin):
    try:
        tree = ast.parse(code, filename="<step>")
        # What only the compiler refuses (`return` outside a function) is invalid too.
        compile(tree, "<step>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        answers.append({"syntax_error": "%s (line %s)" % (
            getattr(error, "msg", None) or "cannot be compiled: %s %s" % (type(error).__name__, error),
            getattr(error, "lineno", None) or 1)})
        continue
    outside, main = [], None
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = ["." * node.level + (node.module or "")] if node.level else [
                (node.module or "").split(".")[0]]
        elif isinstance(node, ast.Call):
            function = node.func
            called = getattr(function, "id", None) or getattr(function, "attr", None)
            if called in ("__import__", "import_module") and node.args and \
                    isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names = [node.args[0].value.split(".")[0]]
        for name in names:
            if name.startswith(".") or name not in stdlib:
                outside.append([name, node.lineno])
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "main":
            arguments = node.args
            main = [argument.arg for argument in
                    arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
            if arguments.kwarg is not None:
                main.append("**" + arguments.kwarg.arg)
    answers.append({"outside": outside, "main": main})
print(json.dumps(answers))
"#;

#[derive(Debug, Deserialize)]
struct Read {
    syntax_error: Option<String>,
    #[serde(default)]
    outside: Vec<(String, u32)>,
    main: Option<Vec<String>>,
}

/// The run's workflow text with the code of `step` replaced by `code`.
pub fn splice_code(workflow: &Workflow, step: &str, code: &str) -> Result<String, String> {
    let found = workflow
        .step(step)
        .ok_or_else(|| format!("the workflow has no step `{step}`"))?;
    let StepBody::Code { source } = found.body() else {
        return Err(format!(
            "step `{step}` hands its task to an agent; only a code step's code is repaired"
        ));
    };
    let origin = found.body_origin();
    if !origin.line_for_line {
        return Err(format!(
            "the code of step `{step}` is not a `code: |` block, so it cannot be rewritten in \
             place; write it as a `|` block first"
        ));
    }
    let lines: Vec<&str> = workflow.source().split('\n').collect();
    let start = usize::try_from(origin.line.saturating_sub(1)).map_err(|e| e.to_string())?;
    let count = source.lines().count();
    if start + count > lines.len() {
        return Err("the step's code does not match its place in the file".to_owned());
    }
    let indent = " ".repeat(usize::try_from(origin.column.saturating_sub(1)).unwrap_or(0));
    let mut text: Vec<String> = lines[..start]
        .iter()
        .map(|line| (*line).to_owned())
        .collect();
    for line in code.trim_end_matches('\n').split('\n') {
        if line.trim().is_empty() {
            text.push(String::new());
        } else {
            text.push(format!("{indent}{line}"));
        }
    }
    text.extend(lines[start + count..].iter().map(|line| (*line).to_owned()));
    Ok(text.join("\n"))
}

/// The new workflow version a proposal makes, or why it is refused (see the module docs).
pub fn check_proposal(
    workflow: &Workflow,
    step: &str,
    code: &str,
    maxima: &spec::LimitMaxima,
) -> Result<Workflow, String> {
    let text = splice_code(workflow, step, code)?;
    let repaired = spec::parse_workflow_within(workflow.file_name(), &text, maxima).map_err(
        |diagnostics| {
            format!(
                "the workflow with the new code does not parse: {}",
                diagnostics
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        },
    )?;
    let changes = engine::changes_besides_code(workflow, &repaired, step);
    if !changes.is_empty() {
        return Err(format!(
            "a repair changes only the step's code, and this one changes {}",
            changes.join("; ")
        ));
    }
    let python = workflow.python();
    let interpreter = Interpreter::for_version(python)
        .filter(|interpreter| interpreter.is_pinned)
        .ok_or_else(|| {
            format!(
                "this machine has no Python {python}, so the proposal's imports cannot be checked \
                 against its standard library; nothing is shown"
            )
        })?;
    let StepBody::Code { source: old } = workflow
        .step(step)
        .map(spec::Step::body)
        .ok_or_else(|| format!("the workflow has no step `{step}`"))?
    else {
        return Err(format!("step `{step}` is not a code step"));
    };
    let read: Vec<Read> = interpreter
        .answer(IMPORTS, &[code, old.as_str()])
        .map_err(|error| format!("the proposal could not be read: {error:#}"))?;
    let (Some(new), Some(before)) = (read.first(), read.get(1)) else {
        return Err("the proposal could not be read".to_owned());
    };
    if let Some(error) = &new.syntax_error {
        return Err(format!("the proposed code is not valid Python: {error}"));
    }
    if !new.outside.is_empty() {
        return Err(format!(
            "the proposed code imports {} outside Python {python}'s standard library",
            new.outside
                .iter()
                .map(|(module, line)| format!("`{module}` (line {line})"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let Some(parameters) = &new.main else {
        return Err("the proposed code defines no top-level `def main(...)`".to_owned());
    };
    let expected: Vec<String> = match &before.main {
        Some(parameters) if before.syntax_error.is_none() => parameters.clone(),
        _ => repaired
            .step(step)
            .map(|found| {
                found
                    .inputs()
                    .iter()
                    .map(|(name, _)| name.clone())
                    .collect()
            })
            .unwrap_or_default(),
    };
    if parameters != &expected {
        return Err(format!(
            "`def main(...)` must keep its parameters ({}), and the proposal has ({})",
            expected.join(", "),
            parameters.join(", ")
        ));
    }
    Ok(repaired)
}

/// The binary's [`engine::RepairAssistant`]: the account's assistant (its default provider
/// and that provider's assistant model) proposes through `agent::repair::propose`, and every
/// proposal passes [`check_proposal`] before it is returned; the engine calls the same check
/// again when a person accepts, whichever door they accept through.
pub struct ModelRepairs {
    pub store: std::sync::Arc<dyn crate::Stores>,
    pub secrets: std::sync::Arc<dyn redact::SecretSource>,
    pub scrub_sets: redact::ScrubSets,
    /// Built when a repair is first proposed: a run that never asks for one never loads the
    /// host's root certificates.
    pub client: crate::model_client::LazyModelClient,
    pub maxima: spec::LimitMaxima,
}

impl engine::RepairAssistant for ModelRepairs {
    fn propose(
        &self,
        request: &engine::RepairRequest<'_>,
    ) -> Result<engine::ProposedRepair, NoProposal> {
        use crate::supervisor::{Assistant, assistant_of};
        let (provider_name, model_id) = match assistant_of(self.store.as_ref(), request.account) {
            Assistant::On { provider, model } => (provider, model),
            Assistant::Nobody { why } => return Err(NoProposal::NoAssistant { why }),
        };
        let client = self.client.get().map_err(unreachable(
            "the assistant's model client could not be built".to_owned(),
        ))?;
        let (_, provider) = platform::providers::provider(
            self.store.as_ref(),
            self.secrets.as_ref(),
            request.account,
            &provider_name,
            client,
        )
        .map_err(unreachable(format!(
            "the assistant's provider `{provider_name}` cannot be used"
        )))?;
        let redactor = self
            .scrub_sets
            .for_account(request.account)
            .map_err(|error| NoProposal::Unreachable {
                what: "the account's values could not be read".to_owned(),
                source: Box::new(error),
            })?;
        let workflow = request.workflow;
        let step = workflow
            .step(request.step)
            .ok_or_else(|| NoProposal::NotRepairable {
                what: format!("the run's workflow has no step `{}`", request.step),
            })?;
        let StepBody::Code { source } = step.body() else {
            return Err(NoProposal::NotRepairable {
                what: format!(
                    "step {} hands its task to an agent; only a code step is repaired",
                    request.step
                ),
            });
        };
        let broken = agent::repair::Broken {
            workflow: workflow.name().to_owned(),
            python: workflow.python().to_string(),
            step: request.step.to_owned(),
            code: source.clone(),
            problem: request.problem.to_owned(),
            declaration: serde_json::json!({
                "id": request.step,
                "network": step.network().as_str(),
                "connections": step.connections(),
                "inputs": step.inputs().iter().map(|(name, _)| name.clone()).collect::<Vec<_>>(),
            }),
        };
        let maxima = self.maxima;
        let mut check = |code: &str| {
            if redactor.scrub(code).get() != code {
                return Err(
                    "the proposed code holds a value of the account; a step reads \
                            credentials from its environment variables"
                        .to_owned(),
                );
            }
            check_proposal(workflow, request.step, code, &maxima).map(drop)
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| NoProposal::Unreachable {
                what: "the assistant could not start".to_owned(),
                source: Box::new(error),
            })?;
        let proposal = runtime
            .block_on(agent::repair::propose(
                &provider, &model_id, &redactor, &broken, &mut check,
            ))
            .map_err(|error| NoProposal::NoneAcceptable {
                source: Box::new(error),
            })?;
        Ok(engine::ProposedRepair {
            code: proposal.code,
            note: proposal.note,
            provider: provider_name,
            model: model_id,
            refused: proposal.refused,
        })
    }

    fn check(
        &self,
        workflow: &Workflow,
        step: &str,
        code: &str,
    ) -> Result<Workflow, RefusedProposal> {
        check_proposal(workflow, step, code, &self.maxima).map_err(RefusedProposal::from)
    }
}

/// Turns the error of a part the assistant needs into why it could not be asked, `what`
/// naming the part.
fn unreachable<E>(what: String) -> impl FnOnce(E) -> NoProposal
where
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    move |error| NoProposal::Unreachable {
        what,
        source: error.into(),
    }
}

#[cfg(test)]
mod tests {
    use crate::repair::{check_proposal, splice_code};

    const WORKFLOW: &str = "name: quote\npython: \"3.11\"\ninputs: { word: string }\nsteps:\n  - id: quote\n    explain: Quotes a word for a URL.\n    inputs: { word: { from: input.word } }\n    code: |\n      import requests\n      def main(word):\n          return requests.utils.quote(word)\n  - id: show\n    explain: Shows it.\n    inputs: { quoted: { from: quote } }\n    code: |\n      def main(quoted):\n          return quoted\n";

    fn workflow() -> spec::Workflow {
        spec::parse_workflow("quote.yaml", WORKFLOW).unwrap()
    }

    fn check(code: &str) -> Result<spec::Workflow, String> {
        check_proposal(&workflow(), "quote", code, &spec::LimitMaxima::BUILT_IN)
    }

    /// G9: stdlib code with the same `main` becomes the new version, only that code changed.
    #[test]
    fn g9_a_stdlib_proposal_replaces_only_the_steps_code() {
        let code = "import urllib.parse\n\ndef main(word):\n    return urllib.parse.quote(word)\n";
        let repaired = check(code).unwrap();
        let spec::StepBody::Code { source } = repaired.step("quote").unwrap().body() else {
            panic!("a code step");
        };
        assert_eq!(source, code);
        assert!(engine::changes_besides_code(&workflow(), &repaired, "quote").is_empty());
        assert_eq!(
            repaired.step("show").unwrap().body(),
            workflow().step("show").unwrap().body()
        );
        assert!(
            splice_code(&workflow(), "quote", code)
                .unwrap()
                .contains("\n      import urllib.parse\n\n      def main(word):\n")
        );
    }

    /// G9: a proposal that still imports a third-party module, even through `__import__`, is
    /// refused before it is shown.
    #[test]
    fn g9_a_proposal_importing_outside_the_pinned_stdlib_is_refused() {
        for code in [
            "import requests\ndef main(word):\n    return word\n",
            "from numpy import array\ndef main(word):\n    return word\n",
            "def main(word):\n    return __import__(\"yaml\").dump(word)\n",
            "from . import helpers\ndef main(word):\n    return word\n",
        ] {
            let refused = check(code).unwrap_err();
            assert!(
                refused.contains("outside Python 3.11's standard library"),
                "{code}: {refused}"
            );
        }
    }

    /// G9: a proposal with an error only the compiler finds (`ast.parse` accepts a `return`
    /// outside a function) is not valid Python either: refused, never offered to a person.
    #[test]
    fn g9_a_proposal_with_an_error_only_the_compiler_finds_is_refused() {
        for code in [
            "def main(word):\n    return word\nreturn None\n",
            "def main(word):\n    nonlocal word\n    return word\n",
        ] {
            let refused = check(code).unwrap_err();
            assert!(refused.contains("is not valid Python"), "{code}: {refused}");
        }
    }

    /// G9: code that leaves its block to add `network:` (or anything else) is refused: only
    /// the step's code may change.
    #[test]
    fn g9_a_proposal_that_escapes_its_block_to_add_network_is_refused() {
        // Spliced at the block's indentation, every line stays inside the block: it is code
        // (here a valid annotation), and the step's network stays `none`.
        let escape = "def main(word):\n    return word\nnetwork: public_egress\n";
        let repaired = check(escape).unwrap();
        assert_eq!(
            repaired.step("quote").unwrap().network(),
            spec::Network::None
        );
        // A new step written into the code stays code too, and is not valid Python.
        let step = "def main(word):\n    return word\n  - id: evil\n    network: public_egress\n";
        let refused = check(step).unwrap_err();
        assert!(
            refused.contains("does not parse") || refused.contains("not valid Python"),
            "{refused}"
        );
        // Whatever the text, the structure is compared: another network is a change.
        let changed = engine::changes_besides_code(
            &workflow(),
            &spec::parse_workflow(
                "quote.yaml",
                &WORKFLOW.replace(
                    "    explain: Quotes a word for a URL.\n",
                    "    explain: Quotes a word for a URL.\n    network: public_egress\n",
                ),
            )
            .unwrap(),
            "quote",
        );
        assert_eq!(changed, vec!["step `quote`: `network`".to_owned()]);
    }

    /// G9: `def main(...)` keeps its parameters.
    #[test]
    fn g9_a_proposal_that_changes_main_is_refused() {
        let refused = check("def main(word, extra=1):\n    return word\n").unwrap_err();
        assert!(
            refused.contains("must keep its parameters (word)"),
            "{refused}"
        );
        assert!(check("x = 1\n").unwrap_err().contains("def main"));
    }
}
