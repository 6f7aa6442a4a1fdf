//! Tests: copyback.
