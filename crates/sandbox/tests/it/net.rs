//! Tests: net.
