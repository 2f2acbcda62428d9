//! A pseudo-terminal harness for end-to-end console tests: the real `holon`
//! binary in a real pty, its output parsed by a vt100 screen, keys typed as
//! bytes. Waits are bounded and name what they waited for.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{native_pty_system, Child, CommandBuilder, MasterPty, PtySize};

pub struct Console {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn Child + Send + Sync>,
    _master: Box<dyn MasterPty + Send>,
    raw: Arc<Mutex<Vec<u8>>>,
}

impl Console {
    /// Start `holon ARGS` with `HOLON_HOME=home` in a `cols`x`rows` pty.
    pub fn start(
        home: &std::path::Path,
        args: &[&str],
        cols: u16,
        rows: u16,
        env: &[(&str, &str)],
    ) -> Console {
        let pty = native_pty_system();
        let pair = pty
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap_or_else(|e| panic!("openpty: {e}"));
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_holon"));
        cmd.args(args);
        cmd.env("HOLON_HOME", home);
        cmd.env("HOLON_LISTEN", "127.0.0.1:0");
        cmd.env("HOLON_USER_DIR", home.join("user"));
        cmd.env("TERM", "xterm-256color");
        // The console binds its agent to the directory it opens in: the
        // home unless a test names another (`HOLON_TEST_CWD`, not passed on).
        let cwd = env
            .iter()
            .find(|(k, _)| *k == "HOLON_TEST_CWD")
            .map(|(_, v)| std::path::PathBuf::from(v))
            .unwrap_or_else(|| home.to_path_buf());
        cmd.cwd(cwd);
        // The terminal answers the device-attributes query as a VT220
        // would; `HOLON_TEST_KITTY` makes it also report the kitty
        // keyboard protocol (Shift+Enter distinguishable).
        let kitty = env.iter().any(|(k, _)| *k == "HOLON_TEST_KITTY");
        for var in [
            "HOLON_AGENT_ID",
            "HOLON_MODEL",
            "HOLON_LOG",
            "RUST_LOG",
            "NO_COLOR",
        ] {
            cmd.env_remove(var);
        }
        for (k, v) in env
            .iter()
            .filter(|(k, _)| !matches!(*k, "HOLON_TEST_CWD" | "HOLON_TEST_KITTY"))
        {
            cmd.env(k, v);
        }
        let child = pair
            .slave
            .spawn_command(cmd)
            .unwrap_or_else(|e| panic!("spawn: {e}"));
        drop(pair.slave);
        let mut reader = pair
            .master
            .try_clone_reader()
            .unwrap_or_else(|e| panic!("reader: {e}"));
        let writer = Arc::new(Mutex::new(
            pair.master
                .take_writer()
                .unwrap_or_else(|e| panic!("writer: {e}")),
        ));
        let answer = Arc::clone(&writer);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (s, r) = (Arc::clone(&screen), Arc::clone(&raw));
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if buf[..n].windows(3).any(|w| w == b"\x1b[c") {
                            let reply: &[u8] = match kitty {
                                true => b"\x1b[?0u\x1b[?62;22c",
                                false => b"\x1b[?62;22c",
                            };
                            let mut w = answer.lock().unwrap_or_else(|p| p.into_inner());
                            let _ = w.write_all(reply);
                            let _ = w.flush();
                        }
                        s.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .process(&buf[..n]);
                        r.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .extend_from_slice(&buf[..n]);
                    }
                }
            }
        });
        Console {
            screen,
            writer,
            child,
            _master: pair.master,
            raw,
        }
    }

    pub fn contents(&self) -> String {
        self.screen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .screen()
            .contents()
    }

    /// Wait until the screen shows `text`.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_until(text, |s| s.contains(text))
    }

    pub fn wait_until(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.contents();
            if pred(&s) {
                return s;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what:?}; the screen shows:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Whether the screen comes to satisfy `pred` within `within`.
    pub fn shows_within(&self, within: Duration, pred: impl Fn(&str) -> bool) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if pred(&self.contents()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(30));
        }
        pred(&self.contents())
    }

    pub fn type_text(&mut self, text: &str) {
        self.key(text.as_bytes());
    }

    pub fn enter(&mut self) {
        self.type_text("\r");
    }

    pub fn key(&mut self, bytes: &[u8]) {
        {
            let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
            w.write_all(bytes).unwrap_or_else(|e| panic!("write: {e}"));
            w.flush().unwrap_or_else(|e| panic!("flush: {e}"));
        }
        std::thread::sleep(Duration::from_millis(40));
    }

    /// Wait for the process to exit; its status code.
    pub fn wait_exit(&mut self) -> u32 {
        self.wait_exit_within(Duration::from_secs(20), "the console did not exit")
    }

    /// Its exit code, once it exits before `limit`: a guard for what it
    /// must not wait for (set it well below that), not a speed bound.
    pub fn wait_exit_within(&mut self, limit: Duration, why: &str) -> u32 {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.exit_code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("{why}; screen:\n{}", self.contents());
            }
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// The program's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.process_id()
    }

    /// Everything the program wrote, for checking terminal restoration.
    pub fn raw_output(&self) -> Vec<u8> {
        self.raw.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The cursor's (row, column) on the screen.
    pub fn cursor(&self) -> (u16, u16) {
        self.screen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .screen()
            .cursor_position()
    }

    /// Whether the alternate screen is active (vt100's view).
    pub fn alternate_screen(&self) -> bool {
        self.screen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .screen()
            .alternate_screen()
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}
