//! What `stepward check` learns from the Python of a definition without running any of it:
//! syntax errors and the parameters of `def main(...)`, read by the machine's own CPython with
//! its `ast` module (`python3 -I -S`, an empty environment, a deadline), then compiled (the
//! compiler finds errors the parser accepts, such as `return` outside a function). Neither
//! is executing: nothing of the code runs and nothing is imported.
//!
//! CPython's own parser was chosen over a Rust one (rustpython-parser, ruff's parser): it is
//! exactly the grammar of the version that will run the step, where a Rust parser is one
//! grammar for every version and lags new syntax.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Deserialize;

/// Reads each code with `ast` and answers one JSON object per code, in order; the authoring
/// lints (`lints.py`, see `lints.rs`) come first.
const CHECKER: &str = concat!(
    include_str!("lints.py"),
    r#"
import ast, json, sys
codes = json.load(sys.stdin)
answers = []
for code in codes:
    try:
        tree = ast.parse(code, filename="<step>")
        # What only the compiler refuses (`return` outside a function, a `nonlocal` with no
        # binding) is a syntax error too; compiling runs nothing.
        compile(tree, "<step>", "exec", dont_inherit=True)
    except SyntaxError as error:
        answers.append({"syntax_error": {
            "line": error.lineno or 1, "column": error.offset or 1, "message": error.msg}})
        continue
    except (ValueError, RecursionError, MemoryError) as error:
        answers.append({"syntax_error": {"line": 1, "column": 1, "message":
            "the code cannot be compiled (%s%s)" % (type(error).__name__,
                                                    ": %s" % error if str(error) else "")}})
        continue
    main = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "main":
            main = node
    if main is None:
        answers.append({})
        continue
    arguments = main.args
    positional = arguments.posonlyargs + arguments.args
    first_default = len(positional) - len(arguments.defaults)
    parameters = []
    for index, argument in enumerate(positional):
        parameters.append({"name": argument.arg,
                           "positional_only": index < len(arguments.posonlyargs),
                           "required": index < first_default})
    for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
        parameters.append({"name": argument.arg, "positional_only": False,
                           "required": default is None})
    answers.append({"main": {"line": main.lineno, "column": main.col_offset + 1,
                             "is_async": isinstance(main, ast.AsyncFunctionDef),
                             "parameters": parameters,
                             "takes_any_keyword": arguments.kwarg is not None},
                    "lints": lint(tree, main)})
# The standard library of this interpreter, for the import check, once.
if answers:
    answers[0]["stdlib"] = sorted(sys.stdlib_module_names)
print(json.dumps(answers))
"#
);

/// How long the checker may take for one file's code.
const DEADLINE: Duration = Duration::from_secs(20);

/// Run before every script: the code is only read, never run, but reading it can be made
/// costly (the compiler folds constants, and a chain of `'x' * 4096 + ...` keeps every
/// intermediate string: 1.3 GB for 4 KB of code). The checker's address space and CPU time
/// are capped, so such code is a MemoryError (reported as code that cannot be compiled) or a
/// killed checker, never a host short of memory. The CPU cap is below [`DEADLINE`].
const LIMITS: &str = "import resource\n\
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n\
resource.setrlimit(resource.RLIMIT_CPU, (15, 15))\n";

/// What the parser said about one piece of code.
#[derive(Debug, Deserialize)]
pub struct Answer {
    pub syntax_error: Option<SyntaxError>,
    pub main: Option<MainSignature>,
    /// What the authoring lints found (only when there is a `main`).
    #[serde(default)]
    pub lints: Option<crate::lints::Found>,
    /// `sys.stdlib_module_names` of the interpreter (in the first answer only).
    #[serde(default)]
    pub stdlib: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
pub struct SyntaxError {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

#[derive(Debug, Deserialize)]
pub struct MainSignature {
    pub line: u32,
    pub column: u32,
    pub is_async: bool,
    pub parameters: Vec<Parameter>,
    pub takes_any_keyword: bool,
}

#[derive(Debug, Deserialize)]
pub struct Parameter {
    pub name: String,
    pub positional_only: bool,
    pub required: bool,
}

/// The interpreter that reads the code, and whether it is the pinned version.
pub struct Interpreter {
    pub path: PathBuf,
    /// The pinned version is on this machine (else the code is read by another one).
    pub is_pinned: bool,
}

/// The canonical path of a regular file that passes the trust check runtime discovery
/// makes.
fn trusted(path: &Path) -> Option<PathBuf> {
    if !path.is_file() {
        return None;
    }
    sandbox::runtime::trusted_interpreter(path).ok()
}

/// Where the runtime discovery of `run` looks for interpreters (`python3*`), in its order.
const DISCOVERY_DIRS: [&str; 2] = ["/usr/bin", "/usr/local/bin"];

impl Interpreter {
    /// `pythonMAJOR.MINOR` in the first folder of runtime discovery that has the pinned
    /// version, else the first `python3` there; `None` without either.
    pub fn for_version(version: spec::PythonVersion) -> Option<Interpreter> {
        Self::for_version_in(&DISCOVERY_DIRS.map(Path::new), version)
    }

    /// Only an interpreter runtime discovery would also run is used: one that nobody but
    /// root can have put there or changed (`sandbox::runtime::trusted_interpreter`).
    /// The path kept is the checked canonical one, so a link cannot change between the
    /// check and the run.
    fn for_version_in(dirs: &[&Path], version: spec::PythonVersion) -> Option<Interpreter> {
        if let Some(pinned) = dirs
            .iter()
            .find_map(|dir| trusted(&dir.join(format!("python{version}"))))
        {
            return Some(Interpreter {
                path: pinned,
                is_pinned: true,
            });
        }
        dirs.iter()
            .find_map(|dir| trusted(&dir.join("python3")))
            .map(|path| Interpreter {
                path,
                is_pinned: false,
            })
    }

    /// Why each `pythonMAJOR.MINOR` of the discovery folders that exists is not run (see
    /// [`Self::for_version`]); empty when none was refused.
    pub fn refusals(version: spec::PythonVersion) -> Vec<String> {
        Self::refusals_in(&DISCOVERY_DIRS.map(Path::new), version)
    }

    fn refusals_in(dirs: &[&Path], version: spec::PythonVersion) -> Vec<String> {
        dirs.iter()
            .map(|dir| dir.join(format!("python{version}")))
            .filter(|path| path.is_file())
            .filter_map(|path| sandbox::runtime::trusted_interpreter(&path).err())
            .collect()
    }

    /// `/usr/bin/python3`, for code that pins no version (an agent's scripts).
    pub fn system() -> Option<Interpreter> {
        trusted(Path::new("/usr/bin/python3")).map(|path| Interpreter {
            path,
            is_pinned: false,
        })
    }

    /// Reads every code in `codes` and answers for each, in order.
    pub fn read(&self, codes: &[&str]) -> anyhow::Result<Vec<Answer>> {
        if codes.is_empty() {
            return Ok(Vec::new());
        }
        let answers: Vec<Answer> = self.answer(CHECKER, codes)?;
        if answers.len() != codes.len() {
            bail!(
                "{} answered for a different number of codes",
                self.path.display()
            );
        }
        Ok(answers)
    }

    /// Runs `script` (`-I -S`, an empty environment, the deadline) with `codes` as JSON on its
    /// stdin and reads its JSON answer.
    pub fn answer<T: serde::de::DeserializeOwned>(
        &self,
        script: &str,
        codes: &[&str],
    ) -> anyhow::Result<T> {
        let mut child = Command::new(&self.path)
            // Warnings the compiler prints (`is` with a literal, say) are not read: ignored.
            .args([
                "-I",
                "-S",
                "-W",
                "ignore",
                "-c",
                &format!("{LIMITS}{script}"),
            ])
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Nothing reads it: a pipe would stall a checker that printed more than it holds.
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", self.path.display()))?;
        let request = serde_json::to_vec(codes)?;
        let mut stdin = child.stdin.take().context("the checker's stdin is piped")?;
        let writer = std::thread::spawn(move || stdin.write_all(&request));
        let mut stdout = child
            .stdout
            .take()
            .context("the checker's stdout is piped")?;
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            stdout.read_to_string(&mut text).map(|_| text)
        });
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if started.elapsed() > DEADLINE {
                // Our own child, by its handle.
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "{} took more than {} seconds to read the code",
                    self.path.display(),
                    DEADLINE.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let _ = writer.join();
        let text = reader
            .join()
            .map_err(|_| anyhow::anyhow!("the checker's output could not be read"))??;
        if !status.success() {
            bail!(
                "{} could not read the code (exit status {status})",
                self.path.display()
            );
        }
        serde_json::from_str(&text)
            .with_context(|| format!("{} answered something other than JSON", self.path.display()))
    }
}

/// What is wrong between a step's declared inputs and its `def main(...)`: the runner calls
/// `main(**inputs)`, so every input must be a keyword it accepts and every parameter without
/// a default must be an input. Each problem is `(line, column, code, message, help)` in the
/// code's own lines.
pub fn signature_problems(
    step: &str,
    inputs: &[&str],
    main: &MainSignature,
) -> Vec<(u32, u32, &'static str, String, String)> {
    let mut problems = Vec::new();
    let at = (main.line, main.column);
    if main.is_async {
        problems.push((
            at.0,
            at.1,
            "main-is-async",
            format!("`main` of step {step} is `async def`; the runner calls it as a function"),
            "write `def main(...)`: the step runs to completion on its own".to_owned(),
        ));
    }
    for input in inputs {
        let named = main
            .parameters
            .iter()
            .find(|parameter| parameter.name == *input);
        match named {
            Some(parameter) if parameter.positional_only => problems.push((
                at.0,
                at.1,
                "main-parameter-positional-only",
                format!(
                    "`def main(...)` of step {step} takes `{input}` positional-only (before `/`), \
                     and inputs are passed by keyword"
                ),
                format!("move `{input}` after the `/` in `def main(...)`"),
            )),
            Some(_) => {}
            None if main.takes_any_keyword => {}
            None => problems.push((
                at.0,
                at.1,
                "main-rejects-input",
                format!("`def main(...)` of step {step} does not accept the input `{input}`"),
                format!(
                    "add the parameter `{input}` to `def main(...)` (or `**inputs` to take every \
                     input), or remove `{input}` from the step's `inputs`"
                ),
            )),
        }
    }
    for parameter in &main.parameters {
        if parameter.required && !inputs.contains(&parameter.name.as_str()) {
            problems.push((
                at.0,
                at.1,
                "main-parameter-not-an-input",
                format!(
                    "`def main(...)` of step {step} needs `{}`, which the step's `inputs` do not \
                     give",
                    parameter.name
                ),
                format!(
                    "add `{}` to the step's `inputs` (`{}: {{ from: input.NAME }}`), or give the \
                     parameter a default",
                    parameter.name, parameter.name
                ),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::python_check::Interpreter;

    /// `check` looks where `run`'s discovery looks: a pinned version found only in the second
    /// folder (`/usr/local/bin`) is the pinned one, not a missing one.
    #[test]
    fn g8_check_finds_the_pinned_python_in_every_folder_discovery_reads_needs_root() {
        let usr_bin = tempfile::tempdir().unwrap();
        let local_bin = tempfile::tempdir().unwrap();
        std::fs::write(usr_bin.path().join("python3"), "").unwrap();
        std::fs::write(local_bin.path().join("python3.13"), "").unwrap();
        let dirs: [&Path; 2] = [usr_bin.path(), local_bin.path()];
        let version = |minor| spec::PythonVersion { major: 3, minor };
        let found = Interpreter::for_version_in(&dirs, version(13)).unwrap();
        assert!(found.is_pinned);
        assert_eq!(found.path, local_bin.path().join("python3.13"));
        // A version no folder has: the first python3, not pinned.
        let other = Interpreter::for_version_in(&dirs, version(12)).unwrap();
        assert!(!other.is_pinned);
        assert_eq!(other.path, usr_bin.path().join("python3"));
        assert!(Interpreter::for_version_in(&[local_bin.path()], version(12)).is_none());
    }

    /// `check` runs the interpreter it finds on the host; one that someone other than root
    /// could have planted (here: a folder its group may write, as Debian's `root:staff 2775`
    /// `/usr/local/bin` was) is not run, and the warning says why.
    #[test]
    fn g8_check_does_not_run_a_python_that_others_could_have_planted_needs_root() {
        use std::os::unix::fs::PermissionsExt;
        let usr_bin = tempfile::tempdir().unwrap();
        let local_bin = tempfile::tempdir().unwrap();
        std::fs::write(usr_bin.path().join("python3"), "").unwrap();
        std::fs::write(local_bin.path().join("python3.13"), "").unwrap();
        let dirs: [&Path; 2] = [usr_bin.path(), local_bin.path()];
        let version = spec::PythonVersion {
            major: 3,
            minor: 13,
        };
        assert!(
            Interpreter::for_version_in(&dirs, version)
                .unwrap()
                .is_pinned
        );
        assert!(Interpreter::refusals_in(&dirs, version).is_empty());
        std::fs::set_permissions(local_bin.path(), std::fs::Permissions::from_mode(0o2775))
            .unwrap();
        let found = Interpreter::for_version_in(&dirs, version).unwrap();
        assert!(!found.is_pinned, "the planted python3.13 was chosen");
        assert_eq!(found.path, usr_bin.path().join("python3"));
        // A link in a closed folder to it: the folder it points into is open, so it is
        // refused as well; a link to root's closed file is kept as its canonical target.
        let linked = spec::PythonVersion {
            major: 3,
            minor: 14,
        };
        std::os::unix::fs::symlink(
            local_bin.path().join("python3.13"),
            usr_bin.path().join("python3.14"),
        )
        .unwrap();
        assert!(
            !Interpreter::for_version_in(&dirs, linked)
                .unwrap()
                .is_pinned
        );
        std::fs::set_permissions(local_bin.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let through_link = Interpreter::for_version_in(&dirs, linked).unwrap();
        assert_eq!(through_link.path, local_bin.path().join("python3.13"));
        std::fs::set_permissions(local_bin.path(), std::fs::Permissions::from_mode(0o2775))
            .unwrap();
        let refusals = Interpreter::refusals_in(&dirs, version);
        assert_eq!(refusals.len(), 1, "{refusals:?}");
        assert!(
            refusals[0].contains(&local_bin.path().display().to_string())
                && refusals[0].contains("may be written by group"),
            "{refusals:?}"
        );
    }
}
