//! Storage traits (runs, events, audit, decisions, vault rows) and plain data types; no database code.

#![forbid(unsafe_code)]
