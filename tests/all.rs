//! All integration tests compile into this one binary (link time matters on
//! two cores). Each concern lives in `suite/`.

mod suite;
