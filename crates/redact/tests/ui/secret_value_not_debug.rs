//! A `SecretValue` cannot be printed with `{:?}` (nor `{}`).
fn main() {
    let value = redact::SecretValue::new(String::from("secret"));
    println!("{value:?}");
    println!("{value}");
}
