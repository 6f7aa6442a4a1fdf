//! A `Redacted` cannot be changed in place: no `DerefMut` (no `String` method reaches the inside), no `get_mut`.
fn change(scrubbed: &mut redact::Redacted<String>) {
    scrubbed.push_str("leak");
    scrubbed.get_mut().push_str("leak");
}
fn main() {}
