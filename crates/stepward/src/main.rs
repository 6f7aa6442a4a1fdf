//! The stepward binary: CLI, configuration and wiring of every component (the composition root).

#![forbid(unsafe_code)]

fn main() {}
