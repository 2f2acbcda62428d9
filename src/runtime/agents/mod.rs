//! Agents, by concern: creating, archiving and listing them (`ops`),
//! delegation to private children (`child_ops` spawns and acts on them,
//! `child_life` decides when a child is done, `child_view` is what a
//! parent sees of one), templates an agent is made from (`templates`) and
//! the skills it may activate (`skills`). The record itself is the
//! vocabulary's (`model::agent`, re-exported as `runtime::agent`).

pub mod child_life;
pub mod child_ops;
pub mod child_view;
pub mod ops;
pub mod skills;
pub mod templates;
