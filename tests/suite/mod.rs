mod cli;
mod scheduler_fixtures;
mod store_durability;
mod support;
