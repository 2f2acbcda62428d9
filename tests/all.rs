//! All integration tests compile into this one binary (link time matters on
//! two cores). Each concern lives in `suite/`.

// Helpers outside `#[test]` functions unwrap too: a failed unwrap is a
// failed test (clippy.toml allows it inside test functions and modules).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
