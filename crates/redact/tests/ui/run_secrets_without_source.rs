//! `RunSecrets` can only come from `RunSecrets::collect` with a secret source.
fn main() {
    let _by_default = redact::RunSecrets::default();
    let _by_new = redact::RunSecrets::new("run-1");
    let _by_literal = redact::RunSecrets { run_id: ids::RunId::from_random([0; 16]) };
}
