//! A `SecretValue` cannot be copied.
fn main() {
    let value = redact::SecretValue::new(String::from("secret"));
    let _copy = value.clone();
}
