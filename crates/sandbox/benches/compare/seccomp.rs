//! Section 0: the seccomp layout, by a syscall microbenchmark beside a filter-off control.
//!
//! Each sample is a forked child (the filters cannot be taken off a process) that loads the
//! jail's three programs in one layout and times system calls in a loop; see
//! `sandbox::jail::syscall_costs` for the calls and why each. The layouts take turns, so a
//! burst of load elsewhere hits all of them alike; the median of the samples is printed.

use std::time::Duration;

use sandbox::jail::{FilterLayout, SyscallCosts, syscall_costs};

use crate::{BenchError, Settings, median, ratio, verdict};

const SAMPLES: usize = 31;
const ITERATIONS: u32 = 200_000;

fn nanoseconds(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e9
}

pub(crate) fn seccomp_section(_settings: &Settings) -> Result<(), BenchError> {
    println!();
    println!(
        "== 0. seccomp layout: ns per syscall and load time (median of {SAMPLES} children, {ITERATIONS} calls each) =="
    );
    let layouts = [
        ("filter off (control)", FilterLayout::Off),
        ("linear chains (seccompiler)", FilterLayout::Linear),
        ("search trees (installed)", FilterLayout::Tree),
    ];
    let mut samples: Vec<Vec<SyscallCosts>> = vec![Vec::new(); layouts.len()];
    for _ in 0..SAMPLES {
        for (index, (_, layout)) in layouts.iter().enumerate() {
            let costs =
                syscall_costs(*layout, ITERATIONS).map_err(|error| BenchError::StepFailed {
                    outcome: format!("the seccomp microbenchmark failed: {error}"),
                    stderr: String::new(),
                })?;
            samples[index].push(costs);
        }
    }
    let pick = |index: usize, field: fn(&SyscallCosts) -> Duration| -> Duration {
        median(&samples[index].iter().map(field).collect::<Vec<_>>())
    };
    println!("  layout                        load (us)  getppid  ioctl  unlisted (ns per call)");
    for (index, (name, _)) in layouts.iter().enumerate() {
        println!(
            "  {name:<28}  {:>9.1}  {:>7.0}  {:>5.0}  {:>8.0}",
            pick(index, |costs| costs.load).as_secs_f64() * 1e6,
            nanoseconds(pick(index, |costs| costs.getppid)),
            nanoseconds(pick(index, |costs| costs.ioctl)),
            nanoseconds(pick(index, |costs| costs.unlisted)),
        );
    }
    // The filter's own cost is what a layout adds over the control.
    let cost = |index: usize, field: fn(&SyscallCosts) -> Duration| -> Duration {
        pick(index, field).saturating_sub(pick(0, field))
    };
    for (what, field) in [
        (
            "ioctl",
            (|costs: &SyscallCosts| costs.ioctl) as fn(&SyscallCosts) -> Duration,
        ),
        ("unlisted", |costs: &SyscallCosts| costs.unlisted),
    ] {
        let linear = cost(1, field);
        let tree = cost(2, field);
        println!(
            "  filter cost of {what:<9} linear {:.0} ns, tree {:.0} ns: {:.2}x",
            nanoseconds(linear),
            nanoseconds(tree),
            ratio(tree, linear)
        );
    }
    let linear_load = pick(1, |costs| costs.load);
    let tree_load = pick(2, |costs| costs.load);
    let worst = ratio(
        cost(2, |costs| costs.unlisted),
        cost(1, |costs| costs.unlisted),
    );
    println!(
        "  target: the tree at most half the linear filter cost (unlisted)  {worst:.2}x  {}",
        verdict(worst <= 0.5)
    );
    println!(
        "  load: tree {:.1} us vs linear {:.1} us ({:.2}x)",
        tree_load.as_secs_f64() * 1e6,
        linear_load.as_secs_f64() * 1e6,
        ratio(tree_load, linear_load)
    );
    Ok(())
}
