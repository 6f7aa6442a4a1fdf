//! Compiles the reviewed seccomp policy (`seccomp/x86_64.json`) to BPF at build time, so the
//! jail helper loads exactly the programs a reviewer read and nothing is assembled at run time.
//! Each compiled program gets a binary search on the syscall number in front of its chain
//! (see `with_search_tree`); the unchanged chain is written beside it for the equivalence
//! test and the syscall benchmark.

use std::fs;
use std::path::PathBuf;

/// The filters the policy file must define, in the order the helper installs them. The kernel
/// runs every installed filter and, between two errno answers, keeps the one installed last: so
/// the specific errnos (`deny`: EPERM, `socket_family`: EAFNOSUPPORT) win over the allowlist's
/// ENOSYS for unknown syscalls.
const FILTERS: [&str; 3] = ["allowlist", "deny", "socket_family"];

fn main() {
    println!("cargo:rerun-if-changed=seccomp/x86_64.json");
    println!("cargo:rerun-if-changed=build.rs");
    build_identity();
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    let policy_path = manifest_dir.join("seccomp").join("x86_64.json");
    let policy = match fs::read(&policy_path) {
        Ok(bytes) => bytes,
        Err(error) => panic!("cannot read {}: {error}", policy_path.display()),
    };
    let compiled =
        match seccompiler::compile_from_json(policy.as_slice(), seccompiler::TargetArch::x86_64) {
            Ok(map) => map,
            Err(error) => panic!(
                "the seccomp policy {} does not compile: {error}",
                policy_path.display()
            ),
        };
    for name in FILTERS {
        let Some(program) = compiled.get(name) else {
            panic!("the seccomp policy has no filter named {name}");
        };
        let linear: Vec<Insn> = program
            .iter()
            .map(|instruction| Insn {
                code: instruction.code,
                jt: instruction.jt,
                jf: instruction.jf,
                k: instruction.k,
            })
            .collect();
        let tree = match with_search_tree(&linear) {
            Ok(tree) => tree,
            Err(problem) => {
                panic!("the compiled {name} program cannot get a search tree: {problem}")
            }
        };
        // The installed program is the tree; seccompiler's linear chain is kept for the test
        // that proves both give the same answer and for the syscall benchmark.
        write_program(&out_dir.join(format!("seccomp_{name}.bpf")), &tree);
        write_program(&out_dir.join(format!("seccomp_{name}.linear.bpf")), &linear);
    }
    if compiled.len() != FILTERS.len() {
        panic!(
            "the seccomp policy defines {} filters, the helper installs {}",
            compiled.len(),
            FILTERS.len()
        );
    }
}

/// `STEPWARD_JAIL_BUILD`: a hash of everything in this crate that decides what the jail
/// helper does (its sources, the harness, the seccomp policy, this script and the manifest).
/// The platform puts it in every plan and the helper refuses a plan of another build, so a
/// `stepward-jail` left from an older install beside a newer `stepward` fails closed instead
/// of building sandboxes with an older jail.
fn build_identity() {
    use std::hash::{Hash, Hasher};
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut files = Vec::new();
    for root in ["src", "harness", "seccomp"] {
        println!("cargo:rerun-if-changed={root}");
        collect_files(&manifest_dir.join(root), &mut files);
    }
    files.push(manifest_dir.join("build.rs"));
    files.push(manifest_dir.join("Cargo.toml"));
    files.sort();
    let mut hasher = std::hash::DefaultHasher::new();
    env!("CARGO_PKG_VERSION").hash(&mut hasher);
    for file in &files {
        let relative = file.strip_prefix(&manifest_dir).unwrap_or(file);
        relative.hash(&mut hasher);
        match fs::read(file) {
            Ok(bytes) => bytes.hash(&mut hasher),
            Err(error) => panic!("cannot read {}: {error}", file.display()),
        }
    }
    println!(
        "cargo:rustc-env=STEPWARD_JAIL_BUILD={:016x}",
        hasher.finish()
    );
}

fn collect_files(dir: &std::path::Path, files: &mut Vec<PathBuf>) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => panic!("cannot list {}: {error}", dir.display()),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            collect_files(&path, files);
        } else {
            files.push(path);
        }
    }
}

/// One classic BPF instruction, as seccompiler emits it.
#[derive(Clone, Copy)]
struct Insn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

const LD_W_ABS: u16 = 0x20;
const JMP_JA: u16 = 0x05;
const JMP_JEQ_K: u16 = 0x15;
const JMP_JGE_K: u16 = 0x35;
const RET_K: u16 = 0x06;
/// The kernel's limit on one program (BPF_MAXINSNS).
const MAX_INSTRUCTIONS: usize = 4096;

/// Each sock_filter is written as its 8 bytes in native order: code (u16), jt (u8), jf (u8),
/// k (u32); the helper reads them back the same way.
fn write_program(target: &std::path::Path, program: &[Insn]) {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for instruction in program {
        bytes.extend_from_slice(&instruction.code.to_ne_bytes());
        bytes.push(instruction.jt);
        bytes.push(instruction.jf);
        bytes.extend_from_slice(&instruction.k.to_ne_bytes());
    }
    if let Err(error) = fs::write(target, bytes) {
        panic!("cannot write {}: {error}", target.display());
    }
}

/// Puts a binary search on the syscall number in front of seccompiler's linear chain.
///
/// seccompiler compiles a filter to: the architecture check (load `arch`, jump over the kill
/// if it is x86_64, kill), load `nr`, then one block per syscall, in a chain: `jeq NR` whose
/// false branch leads, through `ja`s only, to the next block's `jeq`; its true branch runs
/// the block's rules, which always end in a `ret`. The chain ends in a `ret` of the filter's
/// mismatch action. So a syscall far down the chain walks every block before it (about 500
/// instructions for the last of the allowlist's 250), on every call the kernel's action
/// cache does not answer and for every syscall number when the kernel builds that cache at
/// load.
///
/// The result keeps the prologue and replaces the walk by a balanced binary search over the
/// syscall numbers, as intervals of one answer: a syscall whose block has no argument rule
/// answers with its `ret` right at the leaf (neighbours with the same answer share one leaf,
/// so the allowlist's 250 syscalls are a few dozen intervals), a syscall with argument rules
/// jumps to its block in the unchanged chain (appended byte for byte; its jumps are relative
/// and stay inside it, so moving it does not change them), and the numbers no block names get
/// the mismatch action, which is what the end of the chain gives them. Anything that does not
/// have the shape above is an error, so a seccompiler that compiled differently fails the
/// build instead of being guessed at; the equivalence test in `jail/filter_tests.rs` runs both
/// layouts on every syscall number.
fn with_search_tree(linear: &[Insn]) -> Result<Vec<Insn>, String> {
    const PROLOGUE: usize = 4;
    let shape = |at: usize, code: u16, jt: u8, jf: u8, k: Option<u32>| {
        linear.get(at).is_some_and(|insn| {
            insn.code == code && insn.jt == jt && insn.jf == jf && k.is_none_or(|k| insn.k == k)
        })
    };
    if !(shape(0, LD_W_ABS, 0, 0, Some(4))
        && shape(1, JMP_JEQ_K, 1, 0, None)
        && linear.get(2).is_some_and(|insn| insn.code == RET_K)
        && shape(3, LD_W_ABS, 0, 0, Some(0)))
    {
        return Err(String::from(
            "the prologue is not: load arch, check it, kill, load nr",
        ));
    }
    let chain = &linear[PROLOGUE..];
    // The path a syscall number no block names takes down the chain: from each block's `jeq`
    // its false branch, then only `ja`s (so the accumulator still holds `nr`) to the next
    // block's `jeq` or to the final `ret`, whose action is the mismatch action.
    // (syscall number, offset of its block's jeq in the chain)
    let mut blocks: Vec<(u32, usize)> = Vec::new();
    let mut at = 0;
    let mismatch = loop {
        let insn = *chain
            .get(at)
            .ok_or_else(|| format!("the chain's mismatch path leaves the program at {at}"))?;
        match insn.code {
            JMP_JA => at += 1 + insn.k as usize,
            JMP_JEQ_K => {
                blocks.push((insn.k, at));
                at += 1 + usize::from(insn.jf);
            }
            RET_K => break insn.k,
            other => {
                return Err(format!(
                    "instruction {} ({other:#x}) is on the mismatch path but neither a jump nor a block",
                    at + PROLOGUE
                ));
            }
        }
    };
    blocks.sort_unstable();
    if blocks.windows(2).any(|pair| pair[0].0 == pair[1].0) {
        return Err(String::from("a syscall has two blocks"));
    }

    // Every syscall number, as intervals of one answer: a block whose rules look at no
    // argument (its true branch reaches a `ret` through `ja`s only) is that `ret`'s action,
    // and neighbours with the same action merge; a block with argument rules is an interval of
    // its own that jumps to the block; the numbers no block names get the mismatch action.
    let mut intervals: Vec<(u32, Leaf)> = Vec::new();
    let mut add = |start: u32, leaf: Leaf| match (intervals.last(), leaf) {
        (Some((_, Leaf::Action(last))), Leaf::Action(action)) if *last == action => {}
        _ => intervals.push((start, leaf)),
    };
    let mut next: u64 = 0;
    for &(number, offset) in &blocks {
        if u64::from(number) > next {
            add(next as u32, Leaf::Action(mismatch));
        }
        let head = chain[offset];
        let mut at = offset + 1 + usize::from(head.jt);
        while let Some(insn) = chain.get(at).filter(|insn| insn.code == JMP_JA) {
            at += 1 + insn.k as usize;
        }
        match chain.get(at) {
            Some(insn) if insn.code == RET_K => add(number, Leaf::Action(insn.k)),
            Some(_) => add(number, Leaf::Block(offset)),
            None => return Err(format!("the block of syscall {number} leaves the program")),
        }
        next = u64::from(number) + 1;
    }
    if next <= u64::from(u32::MAX) {
        add(next as u32, Leaf::Action(mismatch));
    }

    let tree = search(&intervals);
    let needs_chain = intervals
        .iter()
        .any(|(_, leaf)| matches!(leaf, Leaf::Block(_)));
    let chain_start = PROLOGUE + tree.len();
    let mut program: Vec<Insn> = linear[..PROLOGUE].to_vec();
    for (position, step) in tree.into_iter().enumerate() {
        let here = PROLOGUE + position;
        program.push(match step {
            Step::Plain(insn) => insn,
            Step::ToBlock(offset) => Insn {
                code: JMP_JA,
                jt: 0,
                jf: 0,
                k: u32::try_from(chain_start + offset - (here + 1)).map_err(|_| "jump too far")?,
            },
        });
    }
    // Only blocks with argument rules are ever jumped to; a program without one needs none
    // of the chain.
    if needs_chain {
        program.extend_from_slice(chain);
    }
    if program.len() > MAX_INSTRUCTIONS {
        return Err(format!(
            "{} instructions, over the kernel's {MAX_INSTRUCTIONS}",
            program.len()
        ));
    }
    Ok(program)
}

/// What one interval of syscall numbers gets.
#[derive(Clone, Copy)]
enum Leaf {
    /// This action, whatever the arguments.
    Action(u32),
    /// The rules of the block at this offset of the chain.
    Block(usize),
}

/// One instruction of the search, before the chain's position is known.
enum Step {
    Plain(Insn),
    /// `ja` to the block at this offset of the chain.
    ToBlock(usize),
}

/// The search over `intervals` (sorted by start, the first at 0, together covering every
/// number): a node is `jge MIDDLE_START, 0, 1` then `ja` over the lower half (every jump of
/// the search goes through a 32-bit `ja`, so no 8-bit offset can overflow); a leaf is a `ret`
/// of its action or a `ja` to its block (with `nr` still in the accumulator, so the block's
/// `jeq` matches and its rules run as at the end of the chain walk).
fn search(intervals: &[(u32, Leaf)]) -> Vec<Step> {
    match intervals {
        [] => Vec::new(),
        [(_, Leaf::Action(action))] => vec![Step::Plain(Insn {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: *action,
        })],
        [(_, Leaf::Block(offset))] => vec![Step::ToBlock(*offset)],
        _ => {
            let middle = intervals.len() / 2;
            let lower = search(&intervals[..middle]);
            let upper = search(&intervals[middle..]);
            let mut steps = vec![
                Step::Plain(Insn {
                    code: JMP_JGE_K,
                    jt: 0,
                    jf: 1,
                    k: intervals[middle].0,
                }),
                Step::Plain(Insn {
                    code: JMP_JA,
                    jt: 0,
                    jf: 0,
                    k: lower.len() as u32,
                }),
            ];
            steps.extend(lower);
            steps.extend(upper);
            steps
        }
    }
}
