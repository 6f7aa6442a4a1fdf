//! Tests: jail.
