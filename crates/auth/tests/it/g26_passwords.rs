//! G26: passwords are hashed with argon2id under the documented parameters, verified, and
//! checked for length with a clear message.

use argon2::password_hash::{PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use auth::{
    Error, MIN_PASSWORD_CHARS, PasswordHash, check_new_password, hash_password, verify_password,
    verify_password_for_unknown_person,
};

const PASSWORD: &str = "correct horse battery staple";

#[test]
fn g26_password_hash_is_argon2id_with_the_documented_parameters() {
    let hash = hash_password(PASSWORD).unwrap();
    assert!(
        hash.as_phc_str()
            .starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
        "{}",
        hash.as_phc_str()
    );
    assert!(!hash.as_phc_str().contains(PASSWORD));
    assert_eq!(format!("{hash:?}"), "PasswordHash(argon2id)");
    // A fresh salt each time.
    assert_ne!(hash_password(PASSWORD).unwrap(), hash);
}

#[test]
fn g26_password_verifies_and_a_wrong_one_does_not() {
    let hash = hash_password(PASSWORD).unwrap();
    let stored = PasswordHash::from_phc_string(hash.as_phc_str().to_owned());
    verify_password(PASSWORD, &stored).unwrap();
    for wrong in [
        "",
        "correct horse battery stapl",
        "Correct horse battery staple",
    ] {
        assert!(
            matches!(
                verify_password(wrong, &stored),
                Err(Error::PasswordMismatch)
            ),
            "{wrong:?}"
        );
    }
}

#[test]
fn g26_password_length_rule_has_a_clear_message() {
    let error = hash_password("short").unwrap_err();
    assert_eq!(
        error.to_string(),
        "a password needs at least 12 characters; this one has 5. A longer phrase of \
         ordinary words is easier to remember and harder to guess"
    );
    // Characters, not bytes: twelve accented letters are enough, eleven are not.
    assert!(check_new_password(&"é".repeat(MIN_PASSWORD_CHARS)).is_ok());
    assert!(matches!(
        check_new_password(&"é".repeat(MIN_PASSWORD_CHARS - 1)),
        Err(Error::PasswordTooShort {
            minimum: 12,
            actual: 11
        })
    ));
    assert!(matches!(
        check_new_password(&"a".repeat(1025)),
        Err(Error::PasswordTooLong {
            maximum: 1024,
            actual: 1025
        })
    ));
}

#[test]
fn g26_only_argon2id_hashes_are_accepted() {
    let params = Params::new(19 * 1024, 2, 1, Some(32)).unwrap();
    let salt = SaltString::encode_b64(&[1_u8; 16]).unwrap();
    let argon2i = Argon2::new(Algorithm::Argon2i, Version::V0x13, params)
        .hash_password(PASSWORD.as_bytes(), &salt)
        .unwrap()
        .to_string();
    assert!(matches!(
        verify_password(PASSWORD, &PasswordHash::from_phc_string(argon2i)),
        Err(Error::PasswordHashAlgorithm { .. })
    ));
    assert!(matches!(
        verify_password(
            PASSWORD,
            &PasswordHash::from_phc_string("plain text".to_owned())
        ),
        Err(Error::PasswordHashUnusable { .. })
    ));
}

#[test]
fn g26_sign_in_for_an_unknown_person_always_fails() {
    assert!(matches!(
        verify_password_for_unknown_person(PASSWORD),
        Err(Error::PasswordMismatch)
    ));
    assert!(matches!(
        verify_password_for_unknown_person(""),
        Err(Error::PasswordMismatch)
    ));
}

/// The hashes made in reused memory are argon2's own: argon2's verifier accepts ours, ours
/// accepts argon2's (also with other parameters, which need another buffer size), and one
/// memory serves many hashes and checks in a row without mixing them up.
#[test]
fn g26_hashes_in_reused_memory_are_argon2s_own() {
    use argon2::password_hash::PasswordVerifier;
    let mut memory = auth::PasswordMemory::new();
    let ours = auth::hash_password_with(&mut memory, PASSWORD).unwrap();
    let parsed = argon2::password_hash::PasswordHash::new(ours.as_phc_str()).unwrap();
    Argon2::default()
        .verify_password(PASSWORD.as_bytes(), &parsed)
        .unwrap();
    assert!(
        Argon2::default()
            .verify_password(b"another password", &parsed)
            .is_err()
    );
    let salt = SaltString::encode_b64(b"a salt of sixteen").unwrap();
    for m_cost in [19 * 1024, 8 * 1024] {
        let theirs = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(m_cost, 2, 1, Some(32)).unwrap(),
        )
        .hash_password(PASSWORD.as_bytes(), &salt)
        .unwrap()
        .to_string();
        let stored = PasswordHash::from_phc_string(theirs);
        auth::verify_password_with(&mut memory, PASSWORD, &stored).unwrap();
        assert!(matches!(
            auth::verify_password_with(&mut memory, "not the password", &stored),
            Err(Error::PasswordMismatch)
        ));
    }
    auth::verify_password_with(&mut memory, PASSWORD, &ours).unwrap();
    assert!(matches!(
        auth::verify_password_for_unknown_person_with(&mut memory, PASSWORD),
        Err(Error::PasswordMismatch)
    ));
}
