//! G16: the type rules, proved by programs that must not compile (`tests/ui/*.rs`).

#[test]
fn g16_redacted_and_secret_types_cannot_be_forged() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
