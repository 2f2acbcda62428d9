//! The `holon` binary: parse the command line and hand over to `app::run`.

fn main() -> std::process::ExitCode {
    // glibc gives each thread that allocates its own malloc arena (up to
    // 8 per core), each with its own resident pages: two arenas are plenty
    // for a runtime whose threads mostly wait, and keep an idle daemon
    // small.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only tunes the allocator; it is called before any
    // other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
    holon::app::run()
}
