//! `stepward-jail`: the jail helper as a program of its own, installed beside `stepward`, which
//! execs it once for every sandbox with an empty environment and its plan on a pipe (see
//! `sandbox::jail`). It runs the same code as `stepward __jail`, but it starts in a fraction of
//! the time: before `main`, the dynamic loader of the whole `stepward` program relocates about
//! 44,000 pointers and faults in their pages, about a millisecond on every sandbox's path
//! (issue 13). Without it beside `stepward`, `stepward __jail` is used.

fn main() {
    sandbox::jail::jail_main()
}
