//! There is no `Redacted::new`, nor any other public constructor or `From<T>`.
fn main() {
    let _forged = redact::Redacted::new(String::from("leak"));
    let _converted: redact::Redacted<String> = String::from("leak").into();
}
