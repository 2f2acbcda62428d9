//! The terminal console's pure core: `State`, `update`, `view`, keys,
//! composer and overlays. No I/O here: the event loop (`app::console`)
//! feeds `Msg`s in and performs the `Effect`s that come out.

pub mod msg;
