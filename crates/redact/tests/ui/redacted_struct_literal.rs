//! A `Redacted` cannot be built by a struct literal: its fields are private.
fn main() {
    let _forged = redact::Redacted { value: String::from("leak"), scope: redact::Scope::run(&ids::RunId::from_random([0; 16])) };
}
