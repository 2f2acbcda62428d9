//! The `holon` binary: parse the command line and hand over to `app::run`.

fn main() -> std::process::ExitCode {
    holon::app::run()
}
