//! A `Redacted` cannot be read back from serialized data.
fn needs_deserialize<T: serde::de::DeserializeOwned>() {}
fn main() {
    needs_deserialize::<redact::Redacted<String>>();
}
