//! Working memory: `memory/self.md` (what the agent keeps for itself) and
//! `memory/operator.md` (what it knows of its operator) in the agent home.
//! Created when missing, loaded into every prompt frame bounded, read
//! lossily when they are not UTF-8; the model edits them with ApplyPatch
//! (`@home/memory/self.md`) like any file.

use std::io::Read;
use std::path::Path;

/// Characters of each memory file the prompt carries.
pub const MAX_MEMORY_CHARS: usize = 8_000;

pub const FILES: [(&str, &str); 2] = [
    (
        "memory/self.md",
        "# Self\n\nWhat I keep for myself across days: conventions of the projects I work on, \
         decisions and their reasons, lessons learned. I edit this file with ApplyPatch \
         (`@home/memory/self.md`).\n",
    ),
    (
        "memory/operator.md",
        "# Operator\n\nWhat I know of my operator: preferences, standing instructions, how \
         they like to be briefed. I edit this file with ApplyPatch \
         (`@home/memory/operator.md`).\n",
    ),
];

/// Create the memory files that are missing (never overwriting).
pub fn ensure(home: &Path) -> std::io::Result<()> {
    for (rel, initial) in FILES {
        let path = home.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => std::io::Write::write_all(&mut f, initial.as_bytes())?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One memory file as the prompt carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFile {
    pub rel: &'static str,
    pub text: String,
    /// Why the text is not the whole file, if it is not.
    pub note: Option<String>,
}

fn read_bounded(path: &Path) -> std::io::Result<(Vec<u8>, u64)> {
    // The agent's home is a command's to write: a FIFO or a device in a
    // memory file's place must not hang or flood the turn.
    let f = crate::durable::open_regular(path)?
        .ok_or_else(|| std::io::Error::other("not a regular file"))?;
    let len = f.metadata()?.len();
    let mut buf = Vec::new();
    // Four bytes a character at most: enough for the bound.
    f.take((MAX_MEMORY_CHARS * 4) as u64)
        .read_to_end(&mut buf)?;
    Ok((buf, len))
}

/// Load both files (missing ones are simply absent).
pub fn load(home: &Path) -> Vec<MemoryFile> {
    let mut out = Vec::new();
    for (rel, _) in FILES {
        let (bytes, len) = match read_bounded(&home.join(rel)) {
            Ok(r) => r,
            Err(_) => continue,
        };
        let mut notes = Vec::new();
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                let lossy = String::from_utf8_lossy(e.as_bytes()).into_owned();
                // A cut in the middle of a character is not an encoding
                // problem of the file.
                if (len as usize) <= MAX_MEMORY_CHARS * 4 || lossy.matches('\u{FFFD}').count() > 1 {
                    notes.push("not valid UTF-8: shown lossily".to_owned());
                }
                lossy
            }
        };
        let chars = text.chars().count();
        let text = if chars > MAX_MEMORY_CHARS || len as usize > MAX_MEMORY_CHARS * 4 {
            notes.push(format!(
                "{len} bytes: only the first {MAX_MEMORY_CHARS} characters are shown; keep it short"
            ));
            text.chars().take(MAX_MEMORY_CHARS).collect()
        } else {
            text
        };
        out.push(MemoryFile {
            rel,
            text,
            note: (!notes.is_empty()).then(|| notes.join("; ")),
        });
    }
    out
}

/// The prompt block for the memory files.
pub fn block(files: &[MemoryFile]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut s = String::from(
        "Working memory (your own files in your agent home; keep them current and short — edit \
         with ApplyPatch on `@home/memory/self.md` or `@home/memory/operator.md`):\n",
    );
    for f in files {
        s.push_str(&format!("\n## {}", f.rel));
        if let Some(n) = &f.note {
            s.push_str(&format!(" ({n})"));
        }
        s.push('\n');
        s.push_str(f.text.trim_end());
        s.push('\n');
    }
    Some(s.trim_end().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command can put a FIFO or a link to a device in a memory file's
    /// place: the prompt is built without it, and nothing hangs.
    #[test]
    fn a_fifo_or_device_in_a_memory_files_place_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("memory")).unwrap();
        let fifo = dir.path().join("memory/self.md");
        let c = std::ffi::CString::new(fifo.as_os_str().to_str().unwrap()).unwrap();
        // SAFETY: mkfifo of a NUL-terminated path in a temporary directory.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("memory/operator.md")).unwrap();
        assert!(load(dir.path()).is_empty());
    }

    #[test]
    fn missing_files_are_created_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        ensure(dir.path()).unwrap();
        let own = dir.path().join("memory/self.md");
        std::fs::write(&own, "mine").unwrap();
        ensure(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&own).ok().as_deref(), Some("mine"));
        let files = load(dir.path());
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].text, "mine");
        assert!(block(&files)
            .unwrap_or_default()
            .contains("## memory/operator.md"));
    }

    #[test]
    fn huge_and_invalid_files_are_bounded_lossy_and_noted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("memory")).unwrap();
        std::fs::write(dir.path().join("memory/self.md"), "x".repeat(1_000_000)).unwrap();
        std::fs::write(
            dir.path().join("memory/operator.md"),
            b"ok \xff\xfe not utf8".as_slice(),
        )
        .unwrap();
        let files = load(dir.path());
        assert_eq!(files[0].text.chars().count(), MAX_MEMORY_CHARS);
        assert!(files[0]
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("1000000 bytes"));
        assert!(files[1].text.starts_with("ok "));
        assert!(files[1]
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("not valid UTF-8"));
    }
}
