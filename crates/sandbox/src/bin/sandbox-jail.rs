//! The jail helper as its own binary, for this crate's tests and benchmarks (the platform's
//! `stepward-jail` and `stepward __jail` run the same code). It is exec'd by the platform with
//! an empty environment and its plan on a pipe; see `sandbox::jail`.

fn main() {
    sandbox::jail::jail_main()
}
