//! Waiting, by concern: the records (waiting intents, timers, the pending
//! wake hint: the vocabulary's `model::waiting`) and the operations that
//! create, satisfy and settle them (`ops`).

pub mod ops;
