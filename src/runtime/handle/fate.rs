//! What a runtime does with the commands running under it: reattach them
//! at start or not, leave them running or stop them at shutdown.

/// What a runtime does with running commands, by what it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandsFate {
    /// A daemon: reattaches held commands at start, and leaves them
    /// running for the next runtime when it stops.
    Outlive,
    /// A console's own runtime: reattaches them, and stops them all when
    /// it quits (as its quit says; `/detach` leaves them to its daemon).
    StopAtExit,
    /// A one-shot command (`holon run`, a CLI call with no runtime up):
    /// leaves the commands it finds running alone, and stops only those it
    /// started.
    OwnOnly,
}

impl CommandsFate {
    /// Whether held commands found running at start are supervised again.
    pub fn reattaches(self) -> bool {
        self != CommandsFate::OwnOnly
    }
}
