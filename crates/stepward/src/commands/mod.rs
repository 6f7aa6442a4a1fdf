//! One module per subcommand; each returns an [`crate::Outcome`] or an IO/usage error.

pub mod check;
pub mod reach;
pub mod schema;

/// Converts the parser's diagnostics into their wire form.
pub fn diagnostics_json(diagnostics: &[spec::Diagnostic]) -> Vec<api_types::Diagnostic> {
    diagnostics
        .iter()
        .map(|diagnostic| api_types::Diagnostic {
            file: diagnostic.file.clone(),
            line: diagnostic.line,
            column: diagnostic.column,
            code: diagnostic.code.to_string(),
            message: diagnostic.message.clone(),
            help: diagnostic.help.clone(),
        })
        .collect()
}

/// Prints diagnostics for a person: each with the offending line and a caret.
pub fn print_diagnostics(diagnostics: &[spec::Diagnostic], source: &str) {
    for diagnostic in diagnostics {
        eprintln!("{}", diagnostic.render_with_source(source));
    }
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
