//! The run state machine: steps, gates, suspend and resume, the failure policy, recovery.

#![forbid(unsafe_code)]
