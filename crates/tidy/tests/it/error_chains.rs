//! Errors state their context once (issue 18; ripgrep's `globset::Error` is the model): no
//! error message prints the cause that its `source()` also returns, so a printed chain
//! (`{:#}` in the CLI, the server's log detail) never repeats a cause. Read from the source
//! with `syn`: every `#[error(...)]` of a variant or struct with a `#[source]`, a `#[from]`
//! or a field named `source` is checked.

use std::fs;
use std::path::Path;

use tidy::{repo_root, rust_files};

/// Variants that still print their cause: none since the sandbox crate's were fixed (issue 18
/// §2). Each entry must still be found, so the list can only shrink; keep it empty.
const LEFT_IN_SANDBOX: &[&str] = &[];

/// The names a message would print its cause by: the source field's name (or index).
fn source_field(fields: &syn::Fields) -> Option<String> {
    let marked = |field: &syn::Field| {
        field
            .attrs
            .iter()
            .any(|attr| attr.path().is_ident("source") || attr.path().is_ident("from"))
    };
    match fields {
        syn::Fields::Named(named) => named
            .named
            .iter()
            .find(|field| marked(field))
            .or_else(|| {
                named
                    .named
                    .iter()
                    .find(|field| field.ident.as_ref().is_some_and(|ident| ident == "source"))
            })
            .and_then(|field| field.ident.as_ref().map(ToString::to_string)),
        syn::Fields::Unnamed(unnamed) => unnamed
            .unnamed
            .iter()
            .position(marked)
            .map(|index| index.to_string()),
        syn::Fields::Unit => None,
    }
}

/// Whether an `#[error(...)]` attribute prints `field`: `{field}`, `{field:?}`, or `.field` in
/// its arguments.
fn prints(attr: &syn::Attribute, field: &str) -> bool {
    // `#[error("message", arguments...)]`; `#[error(transparent)]` has no message and is its
    // source, printed once.
    let parsed = attr.parse_args_with(|input: syn::parse::ParseStream<'_>| {
        let message: syn::LitStr = input.parse()?;
        let arguments = input.to_string();
        input.step(|cursor| {
            let mut rest = *cursor;
            while let Some((_, next)) = rest.token_tree() {
                rest = next;
            }
            Ok(((), rest))
        })?;
        Ok((message.value(), arguments))
    });
    let Ok((message, arguments)) = parsed else {
        return false;
    };
    message.contains(&format!("{{{field}}}"))
        || message.contains(&format!("{{{field}:"))
        || arguments.replace(' ', "").contains(&format!(".{field}"))
}

fn error_attr(attrs: &[syn::Attribute]) -> Option<&syn::Attribute> {
    attrs.iter().find(|attr| attr.path().is_ident("error"))
}

fn check_items(items: &[syn::Item], file: &str, found: &mut Vec<String>) {
    for item in items {
        match item {
            syn::Item::Enum(enumeration) => {
                for variant in &enumeration.variants {
                    if let (Some(attr), Some(field)) =
                        (error_attr(&variant.attrs), source_field(&variant.fields))
                        && prints(attr, &field)
                    {
                        found.push(format!("{file}: {}", variant.ident));
                    }
                }
            }
            syn::Item::Struct(structure) => {
                if let (Some(attr), Some(field)) = (
                    error_attr(&structure.attrs),
                    source_field(&structure.fields),
                ) && prints(attr, &field)
                {
                    found.push(format!("{file}: {}", structure.ident));
                }
            }
            syn::Item::Mod(module) => {
                if let Some((_, inner)) = &module.content {
                    check_items(inner, file, found);
                }
            }
            _ => {}
        }
    }
}

fn repeated_causes(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for path in rust_files(root) {
        let text = fs::read_to_string(&path).unwrap_or_default();
        if !text.contains("#[error(") {
            continue;
        }
        let relative = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let parsed = syn::parse_file(&text)
            .unwrap_or_else(|error| panic!("{relative} does not parse: {error}"));
        check_items(&parsed.items, &relative, &mut found);
    }
    found.sort();
    found
}

#[test]
fn no_error_prints_the_cause_its_source_returns() {
    let found = repeated_causes(&repo_root());
    let new: Vec<&String> = found
        .iter()
        .filter(|entry| !LEFT_IN_SANDBOX.contains(&entry.as_str()))
        .collect();
    assert!(
        new.is_empty(),
        "these errors print their cause and also return it from source(), so every printed \
         chain repeats it; state the context only and leave the cause to source(): {new:#?}"
    );
    let fixed: Vec<&&str> = LEFT_IN_SANDBOX
        .iter()
        .filter(|entry| !found.iter().any(|found| found == *entry))
        .collect();
    assert!(
        fixed.is_empty(),
        "these no longer repeat their cause: take them off LEFT_IN_SANDBOX: {fixed:#?}"
    );
}

/// The check itself finds what it is for, and only that.
#[test]
fn the_error_chain_check_tells_a_repeated_cause_from_a_stated_context() {
    let file = syn::parse_str::<syn::File>(
        r#"
        enum Error {
            #[error("reading {path} failed: {source}")]
            Repeats { path: String, #[source] source: std::io::Error },
            #[error("reading {path} failed: {}", .source)]
            RepeatsByArgument { path: String, source: std::io::Error },
            #[error("the script is not JSON: {0}")]
            RepeatsFrom(#[from] serde_json::Error),
            #[error("reading {path} failed")]
            StatesContext { path: String, #[source] source: std::io::Error },
            #[error(transparent)]
            Transparent(#[from] std::io::Error),
            #[error("{0} is not a number")]
            NoSource(String),
        }
        mod inner {
            #[derive(Debug, thiserror::Error)]
            #[error("the block failed: {cause:?}")]
            struct Nested { #[source] cause: std::io::Error }
        }
        "#,
    )
    .unwrap();
    let mut found = Vec::new();
    check_items(&file.items, "f.rs", &mut found);
    assert_eq!(
        found,
        vec![
            "f.rs: Repeats",
            "f.rs: RepeatsByArgument",
            "f.rs: RepeatsFrom",
            "f.rs: Nested"
        ]
    );
}
