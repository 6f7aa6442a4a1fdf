//! House checks run by cargo test: doc headers, file sizes, forbidden macros, unsafe confinement.

#![forbid(unsafe_code)]
