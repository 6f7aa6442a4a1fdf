//! Environment variable names of connection fields, and the check that two never collide (G3).

use std::collections::HashMap;

/// The variable a connection field reaches a step as: `CONN_` + alias + `_` + field, upper
/// case, every character that is not an ASCII letter or digit written as `_`
/// (`payments`, `api_key` → `CONN_PAYMENTS_API_KEY`).
pub fn connection_env_name(alias: &str, field: &str) -> String {
    let mut name = String::with_capacity(6 + alias.len() + field.len());
    name.push_str("CONN_");
    push_env_part(&mut name, alias);
    name.push('_');
    push_env_part(&mut name, field);
    name
}

fn push_env_part(name: &mut String, part: &str) {
    name.extend(part.chars().map(|character| {
        if character.is_ascii_alphanumeric() {
            character.to_ascii_uppercase()
        } else {
            '_'
        }
    }));
}

/// One collision: the shared variable name, the first pair that gets it, and the other pair.
pub type EnvNameCollision = (String, (String, String), (String, String));

/// Every pair of distinct `(alias, field)` pairs that would get the same variable name, as
/// `(name, first pair, colliding pair)`, in input order. Granting both would let one value
/// silently replace the other, so the caller must refuse (G3). The same pair listed twice is
/// not a collision.
pub fn env_name_collisions(pairs: &[(String, String)]) -> Vec<EnvNameCollision> {
    let mut first_by_name: HashMap<String, &(String, String)> = HashMap::new();
    let mut collisions = Vec::new();
    for pair in pairs {
        let name = connection_env_name(&pair.0, &pair.1);
        match first_by_name.get(&name) {
            Some(first) if *first != pair => {
                collisions.push((name, (*first).clone(), pair.clone()));
            }
            Some(_) => {}
            None => {
                first_by_name.insert(name, pair);
            }
        }
    }
    collisions
}

#[cfg(test)]
mod tests {
    use crate::env::{connection_env_name, env_name_collisions};

    #[test]
    fn g3_connection_variables_are_upper_case_with_underscores() {
        assert_eq!(
            connection_env_name("payments", "api_key"),
            "CONN_PAYMENTS_API_KEY"
        );
        assert_eq!(connection_env_name("crm", "base-url"), "CONN_CRM_BASE_URL");
        assert_eq!(connection_env_name("é", "x.y"), "CONN___X_Y");
    }

    #[test]
    fn g3_two_pairs_with_one_variable_name_are_a_collision() {
        let pairs = vec![
            ("a_b".to_string(), "c".to_string()),
            ("a".to_string(), "b_c".to_string()),
            ("a".to_string(), "b-c".to_string()),
            ("a_b".to_string(), "c".to_string()),
            ("other".to_string(), "key".to_string()),
        ];
        let collisions = env_name_collisions(&pairs);
        assert_eq!(collisions.len(), 2);
        assert_eq!(collisions[0].0, "CONN_A_B_C");
        assert_eq!(collisions[0].1, pairs[0]);
        assert_eq!(collisions[0].2, pairs[1]);
        assert_eq!(collisions[1].2, pairs[2]);
    }
}
