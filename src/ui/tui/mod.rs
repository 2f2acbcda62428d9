//! The terminal console's pure core: `State`, `update`, `view`, keys,
//! composer and overlays. No I/O here: the event loop (`app::console`)
//! feeds `Msg`s in and performs the `Effect`s that come out.
//!
//! Map: `state` (the model, layout), `update` (messages), `keys` (input),
//! `commands` (what a submitted line does), `conversation` and `rows`
//! (the conversation model and its rows), `scroll` (the virtualised
//! viewport), `projection` (the viewed agent), `composer`, `keymap` (the
//! key and command tables), `overlays`, `view`, `frame_pacer` (when to
//! draw), `bench`.

mod answers;
#[cfg(any(test, feature = "bench"))]
mod bench;
mod commands;
pub mod composer;
pub mod conversation;
mod copy;
mod detach;
mod find;
mod fmt;
pub mod frame_pacer;
pub mod highlight;
pub mod keymap;
mod keys;
pub mod links;
mod markdown;
pub mod mention;
pub mod msg;
pub mod overlays;
mod pages;
pub mod projection;
mod quit;
pub mod rows;
pub mod runtimes;
mod scroll;
mod settings;
pub mod state;
mod status_line;
pub mod theme;
mod tool_rows;
mod update;
mod view;
mod wrap;

#[cfg(test)]
mod tests;

#[cfg(any(test, feature = "bench"))]
pub use bench::{bench_attached, bench_keystrokes, bench_mentions, bench_render, bench_streaming};
pub use state::{Init, NotifyWhen, State};
pub use update::update;
pub use view::{transcript_lines, view};
