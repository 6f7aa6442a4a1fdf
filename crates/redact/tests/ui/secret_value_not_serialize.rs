//! A `SecretValue` cannot be serialized.
fn needs_serialize<T: serde::Serialize>(_value: &T) {}
fn main() {
    let value = redact::SecretValue::new(String::from("secret"));
    needs_serialize(&value);
}
