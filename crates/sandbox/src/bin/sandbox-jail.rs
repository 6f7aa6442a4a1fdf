//! The jail helper as its own binary, for tests and benchmarks (the platform's binary runs the
//! same code as `stepward __jail`). It is exec'd by the platform with an empty environment and
//! its plan on a pipe; see `sandbox::jail`.

fn main() {
    sandbox::jail::jail_main()
}
