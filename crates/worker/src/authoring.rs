//! The authoring lints of a proposed workflow, read with the machine's Python exactly as
//! `stepward check` reads them (nothing is executed), for the server's interview page and
//! `stepward interview`.

use crate::python_check::Interpreter;

/// The lints of `stepward check` over a workflow's code steps.
pub struct PythonLints;

/// The authoring lints of `workflow`'s code steps at the workflow's own line and column;
/// `None` when this machine has no Python to read the code with.
pub fn lint_workflow(workflow: &spec::Workflow) -> Option<Vec<spec::Diagnostic>> {
    let interpreter = Interpreter::for_version(workflow.python()).or_else(Interpreter::system)?;
    let steps: Vec<(&spec::Step, &str)> = workflow
        .steps()
        .iter()
        .filter_map(|step| match step.body() {
            spec::StepBody::Code { source } => Some((step, source.as_str())),
            spec::StepBody::Agent { .. } => None,
        })
        .collect();
    let codes: Vec<&str> = steps.iter().map(|(_, code)| *code).collect();
    let answers = interpreter.read(&codes).ok()?;
    let mut found = Vec::new();
    for ((step, _), answer) in steps.iter().zip(answers) {
        let Some(lints) = &answer.lints else {
            continue;
        };
        for (line, column, code, message, help) in crate::lints::lint_step(step, lints) {
            let (line, column) = step.body_origin().locate(line, column);
            found.push(spec::Diagnostic {
                file: workflow.file_name().to_owned(),
                line,
                column,
                code,
                message,
                help,
            });
        }
    }
    Some(found)
}

impl platform::workflows::AuthoringLints for PythonLints {
    fn lint(&self, workflow: &spec::Workflow) -> Option<Vec<spec::Diagnostic>> {
        lint_workflow(workflow)
    }
}

#[cfg(test)]
mod tests {
    /// The assistant's prompt carries the lints' guidance, with the same N.
    #[test]
    fn the_interview_prompt_states_the_lints_and_their_n() {
        let prompt = agent::interview::INTERVIEW_PROMPT;
        for lint in [
            "networked-write-ungated",
            "offline-work-in-networked-step",
            "apply-before-gate",
        ] {
            assert!(prompt.contains(lint), "{lint}");
        }
        assert!(prompt.contains(&format!(
            "at most {} statements",
            crate::lints::OFFLINE_WORK_STATEMENTS
        )));
    }
}
