//! Plain renderings of parsed values and diagnostics for snapshots.

use std::fmt::Write;

use spec::{Agent, Diagnostic, InputSource, StepBody, Workflow};

/// Every field a caller can observe, without the source text (which the fixture already is).
pub fn workflow(workflow: &Workflow) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "file: {}", workflow.file_name());
    let _ = writeln!(out, "name: {}", workflow.name());
    let _ = writeln!(out, "python: {}", workflow.python());
    for input in workflow.inputs() {
        let _ = writeln!(out, "input {}: {}", input.name(), input.kind().as_str());
    }
    for step in workflow.steps() {
        let _ = writeln!(
            out,
            "step {}{}",
            step.id(),
            if step.is_gate() { " (gate)" } else { "" }
        );
        let _ = writeln!(out, "  explain: {:?}", step.explain());
        let _ = writeln!(out, "  network: {}", step.network().as_str());
        let _ = writeln!(out, "  connections: {:?}", step.connections());
        if !step.limits().declared().is_empty() {
            let _ = writeln!(out, "  limits: {:?}", step.limits().declared());
        }
        for (name, source) in step.inputs() {
            let rendered = match source {
                InputSource::Literal(value) => format!("literal {value}"),
                InputSource::WorkflowInput(input) => format!("workflow input {input}"),
                InputSource::StepOutput(step) => format!("output of {step}"),
            };
            let _ = writeln!(out, "  input {name}: {rendered}");
        }
        match step.body() {
            StepBody::Code { source } => {
                let _ = writeln!(out, "  code: {source:?}");
            }
            StepBody::Agent { agent, task } => {
                let _ = writeln!(out, "  agent: {agent}");
                let _ = writeln!(out, "  task: {task:?}");
            }
        }
    }
    out
}

pub fn agent(agent: &Agent) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "file: {}", agent.file_name());
    let _ = writeln!(out, "name: {}", agent.name());
    let _ = writeln!(out, "description: {:?}", agent.description());
    let _ = writeln!(out, "model: {:?}", agent.model());
    let tools: Vec<&str> = agent.tools().iter().map(|tool| tool.name()).collect();
    let _ = writeln!(out, "tools: {tools:?}");
    if !agent.limits().declared().is_empty() {
        let _ = writeln!(out, "limits: {:?}", agent.limits().declared());
    }
    if *agent.loop_limits() != spec::LoopLimits::default() {
        let _ = writeln!(out, "loop: {:?}", agent.loop_limits());
    }
    for tool in agent.custom_tools() {
        let _ = writeln!(
            out,
            "custom tool {}: script {:?}, explain {:?}",
            tool.name(),
            tool.script(),
            tool.explain()
        );
    }
    let _ = writeln!(out, "secrets: {:?}", agent.secrets());
    let _ = writeln!(out, "colleagues: {:?}", agent.colleagues());
    let _ = writeln!(out, "network: {}", agent.network().as_str());
    let _ = writeln!(out, "prompt: {:?}", agent.prompt());
    out
}

pub fn diagnostics(diagnostics: &[Diagnostic], text: &str) -> String {
    diagnostics
        .iter()
        .map(|diagnostic| diagnostic.render_with_source(text))
        .collect::<Vec<_>>()
        .join("\n")
}
