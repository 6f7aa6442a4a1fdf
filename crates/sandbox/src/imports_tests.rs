//! Tests of the import reader: its forms, its failures, and its agreement with Python's own
//! syntax tree over the standard library and over hostile source.

use super::*;

fn modules(code: &str) -> Vec<(String, usize)> {
    imports(code)
        .unwrap_or_else(|error| panic!("{code:?} did not tokenize: {error:?}"))
        .into_iter()
        .map(|import| (import.module, import.line))
        .collect()
}

/// The foreign import `verdict` names, if it names one.
fn first_foreign_import(code: &str, stdlib: &[String]) -> Option<Import> {
    match verdict(code, stdlib) {
        Verdict::Foreign(import) => Some(import),
        Verdict::Clean => None,
        Verdict::Unread(unread) => panic!("{code:?} was not read: {unread:?}"),
    }
}

fn found(pairs: &[(&str, usize)]) -> Vec<(String, usize)> {
    pairs
        .iter()
        .map(|(module, line)| ((*module).to_owned(), *line))
        .collect()
}

#[test]
fn g9_every_form_of_import_is_found_with_its_line() {
    let code = "import os\n\
import a.b as c, d.e\n\
from x.y import z\n\
from . import sibling\n\
from ..parent.mod import thing\n\
from ... import far\n\
from __future__ import annotations\n\
if True: from inline import one; import two\n\
def f():\n\
    import nested\n\
    return __import__('dyn.sub')\n\
value = importlib.import_module(\"imp\" 'joined')\n\
other = (pkg\n\
    .import_module('wrapped'))\n\
from q import (\n\
    r,\n\
    s)\n\
import t\n";
    assert_eq!(
        modules(code),
        found(&[
            ("os", 1),
            ("a", 2),
            ("d", 2),
            ("x", 3),
            (".", 4),
            ("..parent.mod", 5),
            ("...", 6),
            ("__future__", 7),
            ("inline", 8),
            ("two", 8),
            ("nested", 10),
            ("dyn", 11),
            ("impjoined", 12),
            ("wrapped", 13),
            ("q", 15),
            ("t", 18),
        ])
    );
}

#[test]
fn g9_words_in_strings_comments_and_other_statements_are_not_imports() {
    let code = "# import commented\n\
text = 'import quoted'\n\
block = \"\"\"\n\
import inside_triple\n\
from inside import triple\n\
\"\"\"\n\
raw = r'\\' import'\n\
def gen():\n\
    yield from items\n\
    raise Error() from cause\n\
call = __import__(name)\n\
computed = __import__('a' + suffix)\n\
method = __import__('a'.upper())\n\
data = b'import bytes'\n\
fb = __import__(b'bytes_module')\n\
keyword = __import__(name='kw')\n\
def import_module(name='default'):\n\
    pass\n";
    assert_eq!(modules(code), Vec::new());
}

#[test]
fn g9_fields_of_f_strings_are_read_and_their_text_is_not() {
    let code = "a = f'import {x} from {y!r:>{width}}'\n\
b = f\"{__import__('inside_field').name}\"\n\
c = f'{{import braces}}'\n\
d = f'''\n\
{ {'k': __import__(\"multi\")}['k'] }\n\
'''\n\
e = rf'\\{__import__(\"raw_field\")}'\n\
g = f'\\N{DASH} {__import__(\"after_name\")}'\n\
h = f\"{f'{__import__(\"nested\")}'}\"\n\
import last\n";
    assert_eq!(
        modules(code),
        found(&[
            ("inside_field", 2),
            ("multi", 5),
            ("raw_field", 7),
            ("after_name", 8),
            ("nested", 9),
            ("last", 10),
        ])
    );
}

#[test]
fn g9_escapes_in_a_literal_module_name_are_decoded() {
    assert_eq!(
        modules("__import__('o\\x73')\n__import__(\"\\u0072e\")\n__import__('\\157s')\n"),
        found(&[("os", 1), ("re", 2), ("os", 3)])
    );
}

/// Review finding: a name written with a `\N{...}` escape was not decoded and so not found,
/// and the step ran. The reader carries no Unicode name table: such a name counts as a module
/// outside the standard library, as written (fail closed), and the detail says why.
#[test]
fn g9_a_module_name_written_with_a_unicode_name_escape_fails_closed() {
    let stdlib: Vec<String> = ["os"].iter().map(|s| s.to_string()).collect();
    let code = "x = 1\n__import__('\\N{LATIN SMALL LETTER N}umpy')\n";
    let foreign = first_foreign_import(code, &stdlib).expect("an escaped name must not pass");
    assert_eq!(foreign.line, 2);
    assert_eq!(foreign.module, "\\N{LATIN SMALL LETTER N}umpy");
    let detail = needs_repair_detail(
        &foreign,
        crate::PythonPin {
            major: 3,
            minor: 11,
        },
    );
    assert!(
        detail.starts_with("step.py:2 imports a module named with a \\N{...} escape"),
        "{detail}"
    );
    // Even a standard module, written so, is not let through on a guess.
    assert!(first_foreign_import("__import__('\\N{LATIN SMALL LETTER O}s')\n", &stdlib).is_some());
}

/// Review finding: a parenthesised callee, `(__import__)('numpy')`, is a call of
/// `__import__` in the syntax tree and was missed.
#[test]
fn g9_a_parenthesised_callee_is_still_a_call() {
    assert_eq!(
        modules(
            "(__import__)('numpy')\n((__import__))(('yaml'))\n(importlib.import_module)('lxml')\n\
(importlib).import_module('toml')\n"
        ),
        found(&[("numpy", 1), ("yaml", 2), ("lxml", 3), ("toml", 4)])
    );
    // Not a call of the name: an argument.
    assert_eq!(modules("f(__import__)('numpy')\n"), Vec::new());
    // Whatever a group ends with is read as its value (fail closed): a tuple is never
    // callable, and `(a if c else __import__)` may well be the name.
    assert_eq!(
        modules("(x, __import__)('numpy')\n(a if c else __import__)('yaml')\n"),
        found(&[("numpy", 1), ("yaml", 2)])
    );
}

/// Review finding: Python reads a non-ASCII identifier in its NFKC form, so `__ｉmport__` is
/// `__import__` and `import ｏs` imports `os`; keywords are not normalised (`ｉmport os` does
/// not parse).
#[test]
fn g9_identifiers_are_read_in_the_normal_form_python_reads_them_in() {
    assert_eq!(
        modules(
            "__\u{ff49}mport__('numpy')\nimportlib.\u{ff49}mport_module('yaml')\nimport \u{ff4f}s\n\
from \u{ff4f}s import path\nimport os.\u{ff50}ath as \u{ff58}, \u{ff4e}umpy\n"
        ),
        found(&[
            ("numpy", 1),
            ("yaml", 2),
            ("os", 3),
            ("os", 4),
            ("os", 5),
            ("numpy", 5)
        ])
    );
    assert_eq!(modules("\u{ff49}mport os\n"), Vec::new());
}

/// Review finding: f-strings nested in f-strings (PEP 701) and fields nested in format specs
/// were read by recursion without a bound, so deep enough nesting overflowed the platform's
/// stack and aborted it. Python rejects such source; the reader now does too, and still reads
/// the deepest nesting Python accepts, on a stack of half the 2 MiB its threads have.
#[test]
fn g9_deeply_nested_f_strings_do_not_overflow_the_platform() {
    let deep_specs = format!(
        "x = f'{{x:{}{}'\n",
        "{x:".repeat(200_000),
        "}".repeat(200_001)
    );
    let deep_strings = format!("{}1{}\n", "f'{".repeat(100_000), "}'".repeat(100_000));
    let accepted_specs = "x = f'{x:{y}}'\nimport json\n".to_owned();
    let mut accepted_strings = "x = ".to_owned();
    for level in 0..140 {
        accepted_strings.push_str(if level % 2 == 0 { "f'{" } else { "f\"{" });
    }
    accepted_strings.push_str("__import__('numpy')");
    for level in (0..140).rev() {
        accepted_strings.push_str(if level % 2 == 0 { "}'" } else { "}\"" });
    }
    accepted_strings.push('\n');
    // The deepest the reader follows at all: every f-string level with the most spec fields.
    let mut worst = "__import__('numpy')".to_owned();
    for _ in 0..MAX_FSTRING_NESTING {
        let opening = "{x:".repeat(MAX_SPEC_NESTING);
        let closing = "}".repeat(MAX_SPEC_NESTING + 1);
        worst = format!("f'{opening}{{{worst}{closing}'");
    }
    let worst = format!("x = {worst}\n");
    let reader = std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(move || {
            (
                imports(&deep_specs).is_err(),
                imports(&deep_strings).is_err(),
                imports(&accepted_specs).map(|found| found.len()),
                imports(&accepted_strings).map(|found| found.len()),
                imports(&worst).map(|found| found.len()),
            )
        })
        .unwrap();
    let (specs_refused, strings_refused, specs_read, strings_read, worst_read) =
        reader.join().unwrap();
    assert!(specs_refused, "nested format specs must be refused");
    assert!(strings_refused, "nested f-strings must be refused");
    assert_eq!(specs_read, Ok(1));
    assert_eq!(strings_read, Ok(1));
    assert_eq!(worst_read, Ok(1));
}

/// Source the reader cannot read needs repair (it fails closed): the harness used to get it
/// and report Python's syntax error, and would have run it had Python accepted it (a second
/// review: 3.12's `f"{3!s  }"`).
#[test]
fn g9_source_the_reader_cannot_read_needs_repair() {
    for (code, line, what) in [
        (
            "import json\nx = 'unterminated\n",
            2,
            "unterminated string literal",
        ),
        (
            "import json\nx = \"\"\"never closed\n",
            2,
            "unterminated string literal",
        ),
        // The field's quote opens a string that never ends (Python says "expecting '}'").
        (
            "import json\nx = f'{unclosed'\n",
            2,
            "unterminated string literal",
        ),
        ("import json\nx = f'{a!r'\n", 2, "f-string: expecting '}'"),
    ] {
        let Verdict::Unread(unread) = verdict(code, &["json".to_owned()]) else {
            panic!("{code:?} was read");
        };
        assert_eq!((unread.line, unread.what), (line, what), "{code:?}");
        assert_eq!(
            unread_detail(&unread),
            format!(
                "step.py:{line}: {what} (stepward reads a step's imports before any of it runs \
                 and could not read this code; nothing of it ran)"
            )
        );
    }
}

#[test]
fn g9_the_first_foreign_import_is_named_in_the_harness_wording() {
    let stdlib: Vec<String> = ["json", "os", "re"].iter().map(|s| s.to_string()).collect();
    let code = "import json\nimport os.path\nimport requests\nimport yaml\n";
    let foreign = first_foreign_import(code, &stdlib).unwrap();
    assert_eq!(
        foreign,
        Import {
            module: "requests".to_owned(),
            line: 3
        }
    );
    assert_eq!(
        needs_repair_detail(
            &foreign,
            crate::PythonPin {
                major: 3,
                minor: 11
            }
        ),
        "step.py:3 imports 'requests', which is not in Python 3.11's standard library"
    );
    assert_eq!(first_foreign_import("import json, re\n", &stdlib), None);
    assert_eq!(
        first_foreign_import("from .local import x\n", &stdlib).map(|import| import.module),
        Some(".local".to_owned())
    );
    assert_eq!(python_repr("it's"), "\"it's\"");
    assert_eq!(python_repr("a\nb"), "'a\\nb'");
}

/// The harness's old check, on Python's own syntax tree: the reference the token reader must
/// match. It prints, per file that parses, every (module, line) the tree's walk yields.
const AST_REFERENCE: &str = r#"
import ast, json, sys

def literal_name(call):
    function = call.func
    name = None
    if isinstance(function, ast.Name) and function.id in ("__import__", "import_module"):
        name = function.id
    elif isinstance(function, ast.Attribute) and function.attr in ("__import__", "import_module"):
        name = function.attr
    if name is None or not call.args:
        return None
    first = call.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None

def imported_modules(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                yield "." * node.level + (node.module or ""), node.lineno
            elif node.module:
                yield node.module.split(".")[0], node.lineno
        elif isinstance(node, ast.Call):
            name = literal_name(node)
            if name is not None:
                yield name.split(".")[0], node.lineno

found = {}
for path in sys.argv[1:]:
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        tree = ast.parse(source)
    except (SyntaxError, ValueError, UnicodeDecodeError):
        continue
    found[path] = sorted(imported_modules(tree))
print(json.dumps(found))
"#;

/// What [`AST_REFERENCE`] finds in each of `files` that `python` parses, by path.
fn ast_reference(
    python: &str,
    files: &[std::path::PathBuf],
) -> std::collections::BTreeMap<String, Vec<(String, usize)>> {
    let output = std::process::Command::new(python)
        .args(["-I", "-S", "-c", AST_REFERENCE])
        .args(files)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The files the differential test reads: the standard library's modules and packages, and
/// the test suite's files with the strangest syntax where the test suite is installed.
fn corpus(python: &str) -> Vec<std::path::PathBuf> {
    let output = std::process::Command::new(python)
        .args([
            "-I",
            "-S",
            "-c",
            "import os; print(os.path.dirname(os.__file__))",
        ])
        .output()
        .unwrap();
    let library = std::path::PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
    let mut files = Vec::new();
    let mut folders = vec![library.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                // The test suite is read only where named below (it alone doubles the time);
                // site-packages and caches are not the standard library.
                if !["test", "site-packages", "dist-packages", "__pycache__"]
                    .contains(&name.as_str())
                {
                    folders.push(path);
                }
            } else if name.ends_with(".py") {
                files.push(path);
            }
        }
    }
    for name in [
        "test/test_grammar.py",
        "test/test_fstring.py",
        "test/test_string_literals.py",
        "test/test_tokenize.py",
        "test/test_unparse.py",
        "test/test_syntax.py",
        "test/test_patma.py",
        "test/test_import/__init__.py",
        "test/test_ast.py",
        "test/test_compile.py",
        "test/test_importlib/test_api.py",
    ] {
        let path = library.join(name);
        if path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// G9: the token reader finds exactly what the syntax tree's walk finds (the harness's old
/// check), module and line, over real Python source: the standard library's own.
#[test]
fn g9_the_token_reader_agrees_with_the_syntax_tree_over_the_standard_library() {
    let python = "/usr/bin/python3";
    let files = corpus(python);
    assert!(
        files.len() > 500,
        "too few files to compare: {}",
        files.len()
    );
    let reference = ast_reference(python, &files);
    assert!(
        reference.len() > 500,
        "too few files parsed: {}",
        reference.len()
    );
    let mut disagreements = Vec::new();
    let mut imports_compared = 0;
    for (path, expected) in &reference {
        let source = std::fs::read_to_string(path).unwrap();
        let mut read = match imports(&source) {
            Ok(read) => read
                .into_iter()
                .map(|import| (import.module, import.line))
                .collect::<Vec<_>>(),
            Err(error) => {
                disagreements.push(format!("{path}: did not tokenize: {error:?}"));
                continue;
            }
        };
        read.sort();
        imports_compared += expected.len();
        if &read != expected {
            let missing: Vec<_> = expected
                .iter()
                .filter(|item| !read.contains(item))
                .collect();
            let extra: Vec<_> = read
                .iter()
                .filter(|item| !expected.contains(item))
                .collect();
            disagreements.push(format!("{path}: missing {missing:?}, extra {extra:?}"));
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} files disagree:\n{}",
        disagreements.len(),
        reference.len(),
        disagreements.join("\n")
    );
    assert!(imports_compared > 4000, "{imports_compared}");
}

/// G9 over hostile source: for every snippet Python parses, the token reader finds at least
/// every import the syntax tree's walk finds (it may find more only where it fails closed).
#[test]
fn g9_the_token_reader_finds_what_the_syntax_tree_finds_in_hostile_source() {
    let snippets = [
        "(__import__)('numpy')\n",
        "( ( __import__ ) )( 'numpy' )\n",
        "(importlib\n  .import_module)('numpy')\n",
        "__\u{ff49}mport__('numpy')\n",
        "importlib.\u{ff49}mport_module('numpy')\n",
        "import \u{ff4e}umpy\n",
        "from \u{ff4e}umpy.linalg import norm\n",
        "import os, \u{1d427}umpy\n",
        "__import__('\\N{LATIN SMALL LETTER N}umpy')\n",
        "__import__('nu' '\\N{LATIN SMALL LETTER M}py')\n",
        "x = f'{__import__(\"numpy\")}'\n",
        "x = f'{1:{__import__(\"numpy\")}}'\n",
        "x = f'{1!r:>{__import__(\"numpy\")}}'\n",
        "x = f'''{\n__import__(\"numpy\")\n}'''\n",
        "if 1: import numpy\n",
        "try: import numpy\nexcept ImportError: pass\n",
        "x = [__import__('numpy') for _ in ()]\n",
        "lambda: __import__('numpy')\n",
        "import json\\\n, numpy\n",
        "x = 1;import numpy\n",
        "class C: import numpy\n",
        "async def f():\n    import numpy\n",
        "match x:\n    case 1: import numpy\n",
        "import_module = __import__\nimport_module('numpy')\n",
        "x.__import__('numpy', None)\n",
        "__import__(r'numpy')\n",
        "__import__(u'numpy')\n",
        "__import__('num\\\npy')\n",
        "__import__('''numpy''')\n",
        // A second review: callees whose group holds more than a dotted name, the soft keyword
        // `match`, keywords glued to a number, fields after fields or literals.
        "([__builtins__][0].__import__)('numpy')\n",
        "(x().__import__)('numpy')\n",
        "((importlib).import_module)('numpy')\n",
        "match (__import__)('numpy'):\n    case _: pass\n",
        "match(__import__)('numpy'):\n    case _: pass\n",
        "x = 1if(__import__)('numpy')else 0\n",
        "x = 1and(__import__)('numpy')\n",
        "x = 0 if 0else(__import__)('numpy')\n",
        "x = 1in(__import__)('numpy')\n",
        "x = 0x1for(__import__)('numpy')\n",
        "x = 1jif(__import__)('numpy')else 0\n",
        "x = 1.5e3if(__import__)('numpy')else 0\n",
        "x = 1_0if(__import__)('numpy')else 0\n",
        "x = 0o7or(__import__)('numpy')\n",
        "x = 0b1or(__import__)('numpy')\n",
        "x = 1.if(__import__)('numpy')else 0\n",
        "x = f'{a}{(__import__)(\"numpy\")}'\n",
        "x = 'a' f'{(__import__)(\"numpy\")}'\n",
    ];
    let folder = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (index, snippet) in snippets.iter().enumerate() {
        let path = folder.path().join(format!("snippet{index}.py"));
        std::fs::write(&path, snippet).unwrap();
        paths.push(path);
    }
    let reference = ast_reference("/usr/bin/python3", &paths);
    let mut missed = Vec::new();
    for (index, snippet) in snippets.iter().enumerate() {
        let path = paths[index].to_string_lossy().into_owned();
        let Some(expected) = reference.get(&path) else {
            missed.push(format!("{snippet:?}: Python does not parse it"));
            continue;
        };
        assert!(!expected.is_empty(), "{snippet:?}: the tree finds nothing");
        let read = match imports(snippet) {
            Ok(read) => read,
            Err(error) => {
                missed.push(format!("{snippet:?}: did not tokenize: {error:?}"));
                continue;
            }
        };
        for (module, line) in expected {
            let escaped = snippet.contains("\\N{");
            let seen = read.iter().any(|import| {
                import.line == *line
                    && (import.module == *module || escaped && import.module.contains("\\N{"))
            });
            if !seen {
                missed.push(format!(
                    "{snippet:?}: missed {module:?} at line {line}, read {read:?}"
                ));
            }
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n"));
}

/// A second review: Python 3.12 allows spaces after an f-string field's conversion
/// (`f"{3!s  }"`, in its own test_fstring.py); the reader gave up on such source.
#[test]
fn g9_spaces_after_a_conversion_are_read() {
    assert_eq!(
        modules("x = f\"{3!s  }\"\ny = f'{1.25!s  :10.10}'\nz = f\"{v = !r }\"\nimport numpy\n"),
        found(&[("numpy", 4)])
    );
}

/// A second review: every `import_module` of a long dotted chain walked back over the whole
/// chain, so a megabyte of `a.import_module.import_module...` took seconds of the platform's
/// CPU. Python rejects such source; the reader must still be quick about it.
#[test]
fn g9_a_long_dotted_chain_is_read_in_linear_time() {
    for name in ["import_module", "__import__"] {
        let code = format!("x = {}\n", vec![name; 75_000].join("."));
        let started = std::time::Instant::now();
        assert_eq!(modules(&code), Vec::new());
        let took = started.elapsed();
        // Generous for a loaded debug build: linear is milliseconds, quadratic was 4-6 s in a
        // release build.
        assert!(took < std::time::Duration::from_secs(2), "{name}: {took:?}");
    }
}
