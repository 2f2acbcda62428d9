//! Waiting, by concern: the records (waiting intents, timers, the pending
//! wake hint: the vocabulary's `model::waiting`), the operations that
//! create, satisfy and settle them (`ops`), what comes due while an agent
//! sleeps (`due`: timers and recheck reminders) and the scheduler's own
//! messages (`ticks`).

pub mod due;
pub mod ops;
pub mod ticks;
