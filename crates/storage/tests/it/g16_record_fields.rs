//! G16 (review "credentials" A3): every free-text field a writer hands the store for a run's
//! record or the audit log is `Redacted<_>`, so a writer that forgets to scrub one does not
//! compile. The types are read from the source with `syn`: a new field of plain text (a
//! `String`, or a newtype around one that is not on the list below) fails this test.

use std::path::Path;

/// The types a record field may have besides `Redacted<_>`: identifiers with a validated
/// grammar, closed vocabularies, numbers, times, hashes, and compile-time constants. Each one
/// can hold no text a person, a step or a model chose.
const NOT_TEXT: &[&str] = &[
    "RunId",
    "AccountId",
    "StepId",
    "Sha256Hex",
    "Timestamp",
    "RunStatus",
    "AttemptStatus",
    "NetworkMode",
    "DecisionKind",
    "Door",
    "AuditAction",
    "u32",
    "u64",
    "i64",
    "bool",
];

/// The structs of the record modules that writers hand to the store.
fn written_records(file: &syn::File) -> Vec<&syn::ItemStruct> {
    file.items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Struct(record) => Some(record),
            _ => None,
        })
        .filter(|record| {
            let name = record.ident.to_string();
            name.starts_with("New") || name == "AttemptFinish"
        })
        .collect()
}

/// Why `ty` may not be a record field, if it may not.
fn refused(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Reference(reference) => {
            let is_static = reference
                .lifetime
                .as_ref()
                .is_some_and(|lifetime| lifetime.ident == "static");
            let is_str =
                matches!(&*reference.elem, syn::Type::Path(path) if path.path.is_ident("str"));
            (!(is_static && is_str)).then(|| "a reference other than &'static str".to_owned())
        }
        syn::Type::Path(path) => {
            let last = path.path.segments.last()?;
            let name = last.ident.to_string();
            if name == "Redacted" {
                return None;
            }
            if name == "Option" || name == "Vec" {
                let syn::PathArguments::AngleBracketed(arguments) = &last.arguments else {
                    return Some(format!("{name} without a type"));
                };
                return arguments.args.iter().find_map(|argument| match argument {
                    syn::GenericArgument::Type(inner) => refused(inner),
                    _ => None,
                });
            }
            (!NOT_TEXT.contains(&name.as_str())).then(|| format!("`{name}` is not Redacted"))
        }
        _ => Some("a type this test does not know".to_owned()),
    }
}

#[test]
fn g16_every_free_text_field_of_a_written_record_is_redacted() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut problems = Vec::new();
    let mut checked = 0;
    for module in ["records.rs", "audit.rs"] {
        let text = std::fs::read_to_string(source.join(module)).unwrap();
        let file = syn::parse_file(&text).unwrap();
        for record in written_records(&file) {
            for field in &record.fields {
                checked += 1;
                if let Some(why) = refused(&field.ty) {
                    let name = field
                        .ident
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    problems.push(format!("{module}: {}.{name}: {why}", record.ident));
                }
            }
        }
    }
    assert!(
        checked > 20,
        "the record types were not found ({checked} fields)"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The checker itself refuses what it must: plain text and a newtype around it.
#[test]
fn g16_the_field_check_refuses_plain_text_and_newtypes() {
    let file: syn::File = syn::parse_quote! {
        pub struct NewThing {
            pub a: String,
            pub b: Option<String>,
            pub c: WorkflowName,
            pub d: &'static str,
            pub e: Redacted<String>,
            pub f: Option<Redacted<serde_json::Value>>,
            pub g: &'a str,
        }
    };
    let record = written_records(&file)[0];
    let verdicts: Vec<bool> = record
        .fields
        .iter()
        .map(|field| refused(&field.ty).is_some())
        .collect();
    assert_eq!(verdicts, [true, true, true, false, false, false, true]);
}
