//! `Redacted::get` hands out a shared reference only, so the value cannot be replaced through it.
fn change(scrubbed: &redact::Redacted<String>) {
    *scrubbed.get() = String::from("leak");
}
fn main() {}
