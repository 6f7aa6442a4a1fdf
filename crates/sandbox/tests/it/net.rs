//! Tests of the public_egress network (G11), following DESIGN section 7: every packet goes to a
//! namespace these tests made, the platform side runs in a test "host" namespace (so no host
//! setting is touched), and every denial is shown beside a control run where it would succeed.

// The helpers are test code too: a setup step that cannot be done must stop the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod dns;
mod lifecycle;
pub(crate) mod probe;
pub(crate) mod reach;
pub(crate) mod step;
pub(crate) mod support;
pub(crate) mod topology;
