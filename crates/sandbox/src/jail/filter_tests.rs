//! The search-tree layout of the seccomp programs gives every input the answer of
//! seccompiler's linear chain, and reaches any syscall's rules in a few instructions.

use super::{LINEAR, PROGRAMS, decode};

const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
const AUDIT_ARCH_I386: u32 = 0x4000_0003;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// `struct seccomp_data` as 16 words: nr, arch, instruction pointer (2), six arguments (2
/// each, low word first on x86_64).
type Data = [u32; 16];

/// Runs a classic BPF program the way the kernel runs a seccomp filter, for the instructions
/// seccompiler emits; anything else fails the test. Returns the action and the number of
/// instructions executed.
fn run(program: &[libc::sock_filter], data: &Data) -> (u32, usize) {
    let mut accumulator = 0u32;
    let mut pc = 0usize;
    let mut executed = 0;
    loop {
        let insn = program[pc];
        executed += 1;
        pc += 1;
        let jump = |taken: bool| usize::from(if taken { insn.jt } else { insn.jf });
        match insn.code {
            0x20 => {
                assert!(
                    insn.k.is_multiple_of(4) && insn.k < 64,
                    "load at {}",
                    insn.k
                );
                accumulator = data[(insn.k / 4) as usize];
            }
            0x54 => accumulator &= insn.k,
            0x05 => pc += insn.k as usize,
            0x15 => pc += jump(accumulator == insn.k),
            0x25 => pc += jump(accumulator > insn.k),
            0x35 => pc += jump(accumulator >= insn.k),
            0x45 => pc += jump(accumulator & insn.k != 0),
            0x06 => return (insn.k, executed),
            other => panic!("instruction code {other:#x} at {}", pc - 1),
        }
    }
}

/// Every constant a program compares or masks with: the values its rules distinguish.
fn constants(program: &[libc::sock_filter]) -> Vec<u32> {
    let mut values: Vec<u32> = program
        .iter()
        .filter(|insn| insn.code != 0x20 && insn.code != 0x05 && insn.code != 0x06)
        .flat_map(|insn| [insn.k, insn.k.wrapping_sub(1), insn.k.wrapping_add(1)])
        .chain([0, u32::MAX])
        .collect();
    values.sort_unstable();
    values.dedup();
    values
}

/// The syscall numbers tried: every native one and beyond, x32's, and the extremes.
fn numbers() -> Vec<u32> {
    (0..1024)
        .chain((0..600).map(|number| X32_SYSCALL_BIT | number))
        .chain([0x7FFF_FFFF, 0x8000_0000, u32::MAX])
        .collect()
}

/// A small deterministic generator (xorshift), so a failure is reproducible.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick(&mut self, values: &[u32]) -> u32 {
        values[(self.next() % values.len() as u64) as usize]
    }
}

#[test]
fn g10_the_search_tree_answers_every_syscall_and_argument_as_the_linear_chain() {
    for ((name, tree), (linear_name, linear)) in PROGRAMS.iter().zip(LINEAR.iter()) {
        assert_eq!(name, linear_name);
        let tree = decode(tree);
        let linear = decode(linear);
        assert!(tree.len() <= 4096, "{name}: {} instructions", tree.len());
        let values = constants(&linear);
        let mut random = Xorshift(0x9E37_79B9_7F4A_7C15);
        let mut compared = 0usize;
        for arch in [AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, 0] {
            for number in numbers() {
                let mut inputs: Vec<Data> = Vec::new();
                let mut base: Data = [0; 16];
                base[0] = number;
                base[1] = arch;
                inputs.push(base);
                // Each argument word alone at each constant the rules use (and its
                // neighbours), then random combinations of those constants for the rules that
                // test two arguments together.
                for word in 4..16 {
                    for &value in &values {
                        let mut data = base;
                        data[word] = value;
                        inputs.push(data);
                    }
                }
                for _ in 0..64 {
                    let mut data = base;
                    for word in data.iter_mut().skip(4) {
                        *word = random.pick(&values);
                    }
                    inputs.push(data);
                }
                for data in &inputs {
                    assert_eq!(
                        run(&tree, data).0,
                        run(&linear, data).0,
                        "{name}: nr {number:#x}, arch {arch:#x}, data {data:x?}"
                    );
                    compared += 1;
                }
            }
        }
        assert!(compared > 10_000, "{name}: only {compared} inputs");
    }
}

#[test]
fn g10_the_search_tree_reaches_any_syscall_in_a_few_instructions() {
    let (_, allowlist) = PROGRAMS[0];
    let (_, allowlist_linear) = LINEAR[0];
    let tree = decode(allowlist);
    let linear = decode(allowlist_linear);
    let mut data: Data = [0; 16];
    data[1] = AUDIT_ARCH_X86_64;
    let mut worst_tree = 0;
    let mut worst_linear = 0;
    for number in 0..1024 {
        data[0] = number;
        worst_tree = worst_tree.max(run(&tree, &data).1);
        worst_linear = worst_linear.max(run(&linear, &data).1);
    }
    // 250 syscalls: the prologue, 8 levels of two instructions, a leaf, the block's own three;
    // the chain walks two instructions per block before it.
    assert!(
        worst_tree <= 30,
        "the tree takes up to {worst_tree} instructions (the chain {worst_linear})"
    );
    assert!(
        worst_linear > 400,
        "the chain took only {worst_linear}: is it still linear?"
    );
}
