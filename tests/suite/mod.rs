mod cli;
mod provider_transports;
mod runtime_core;
mod runtime_restart;
mod scheduler_fixtures;
mod store_durability;
mod support;
