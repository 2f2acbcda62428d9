//! AttachToBrief: the model attaches a file of its execution root (or of
//! its home, `@home/…`) to the brief its turn ends with. The file is read
//! beneath its root (never through a link at its end, never out of the
//! root), bounded, and copied by its digest under Holon's data directory,
//! so the brief keeps what was attached whatever becomes of the file. The
//! attachment waits on the agent record until the turn's brief takes it.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::handler::{Gated, Reach, Tool};
use super::patch::beneath::Dir;
use super::{runtime_error, ToolEnv};
use crate::model::agent::AgentRecord;
use crate::model::brief::{AttachmentKind, BriefAttachment};
use crate::runtime::tool_outcome::{tool_error, ToolErrorKind, ToolOutcome};

/// A file attached, at most.
pub const MAX_BYTES: u64 = 4 * 1024 * 1024;
/// Attachments of one brief, at most.
pub const MAX_PER_BRIEF: usize = 8;

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct AttachArgs {
    /// The file, relative to the execution root, or `@home/...` in the
    /// agent's home.
    path: String,
    /// file, log, diff, image or json (default: from the file's name).
    #[serde(default)]
    kind: Option<AttachmentKind>,
    /// What the operator sees it called (default: the file's name).
    #[serde(default)]
    name: Option<String>,
}

pub(super) struct AttachToBrief;

fn refused(message: impl Into<String>, hint: &str) -> ToolOutcome {
    tool_error(
        ToolErrorKind::InvalidArguments,
        message,
        Some(hint),
        Some("path"),
        false,
    )
}

fn too_many() -> ToolOutcome {
    tool_error(
        ToolErrorKind::InvalidArguments,
        format!("this turn's brief already has {MAX_PER_BRIEF} attachments"),
        Some("attach fewer, larger files (an archive or a combined report)"),
        Some("path"),
        false,
    )
}

/// The root and the normal components beneath it that `path` names.
fn locate(path: &str, root: &Path, home: &Path) -> Result<(PathBuf, PathBuf), ToolOutcome> {
    let (base, rest) = match path.strip_prefix(super::patch::HOME_PREFIX) {
        Some(rest) => (home.to_path_buf(), rest),
        None => (root.to_path_buf(), path),
    };
    let canon = base.canonicalize().map_err(|e| {
        refused(
            format!("{}: {e}", base.display()),
            "attach a file that exists",
        )
    })?;
    let rel = Path::new(rest);
    // An absolute path inside the root is taken as the same place.
    let rel = match rel.strip_prefix(&canon).or(rel.strip_prefix(&base)) {
        Ok(r) => r.to_path_buf(),
        Err(_) => rel.to_path_buf(),
    };
    if rel.as_os_str().is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(refused(
            format!("{path} is not a file beneath the execution root or the agent home"),
            "use a path relative to the execution root (or @home/...), without ..",
        ));
    }
    Ok((canon, rel))
}

/// The file's bytes, read beneath `root` and at most `MAX_BYTES`.
fn read_beneath(root: &Path, rel: &Path) -> Result<Vec<u8>, ToolOutcome> {
    let (parent, name) = (
        rel.parent().unwrap_or(Path::new("")),
        rel.file_name().unwrap_or(OsStr::new("")),
    );
    let failed = |e: std::io::Error| {
        let why = match e.raw_os_error() {
            Some(libc::EXDEV) => "leaves the execution root (through a link)".to_owned(),
            Some(libc::ELOOP) => "is a symbolic link; attach the file it points to".to_owned(),
            Some(libc::ENOENT) => "does not exist".to_owned(),
            _ => e.to_string(),
        };
        refused(
            format!("{} {why}", rel.display()),
            "attach a regular file beneath the root",
        )
    };
    let dir = Dir::root(root)
        .and_then(|d| d.open_dir(parent))
        .map_err(failed)?;
    dir.read_at_most(name, MAX_BYTES)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::FileTooLarge => refused(
                format!("{} is larger than {} MiB", rel.display(), MAX_BYTES >> 20),
                "attach an excerpt (write the part that matters to a file first)",
            ),
            _ => failed(e),
        })
}

/// The kind a file's name suggests.
fn kind_of(name: &str) -> AttachmentKind {
    let ext = Path::new(name)
        .extension()
        .and_then(OsStr::to_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    match ext.as_str() {
        "diff" | "patch" => AttachmentKind::Diff,
        "log" | "out" => AttachmentKind::Log,
        "json" => AttachmentKind::Json,
        "png" | "jpg" | "jpeg" | "gif" | "webp" | "svg" => AttachmentKind::Image,
        _ => AttachmentKind::File,
    }
}

impl Tool for AttachToBrief {
    const NAME: &'static str = "AttachToBrief";
    const DESCRIPTION: &'static str = "Attach a file (a report, a log, a diff) to the brief this \
        turn ends with; the operator sees it with the brief. At most 8 files of 4 MiB each.";
    type Args = AttachArgs;

    fn gate(&self, _: &AttachArgs) -> Gated {
        Gated::No
    }

    fn reach(&self) -> Reach {
        Reach::Runtime
    }

    async fn call(&self, env: &ToolEnv<'_>, a: AttachArgs) -> ToolOutcome {
        let (root, _, _) = match super::exec::execution_dirs(env) {
            Ok(dirs) => dirs,
            Err(e) => return e,
        };
        let home = env.host.agent_home(env.agent_id);
        let (base, rel) = match locate(a.path.trim(), &root, &home) {
            Ok(l) => l,
            Err(e) => return e,
        };
        // Holon's own files beneath the root (a workspace that holds
        // HOLON_HOME) are not the model's to read, as in its sandbox; its
        // own home is.
        let real = base.join(&rel);
        let own = env.host.config().data_dir.join("agents").join(env.agent_id);
        let holon =
            std::iter::once(&env.host.config().data_dir).chain(&env.host.config().holon_dirs);
        let hidden = holon
            .filter_map(|d| d.canonicalize().ok())
            .any(|d| real.starts_with(&d))
            && !own.canonicalize().is_ok_and(|o| real.starts_with(o));
        if hidden {
            return refused(
                format!("{} is one of Holon's own files", a.path.trim()),
                "attach a file of the project or of your home",
            );
        }
        // A full brief refuses before anything is read or kept.
        let full = match env.host.store().read() {
            Ok(rx) => rx
                .agent::<AgentRecord>(env.agent_id)
                .ok()
                .flatten()
                .is_some_and(|a| a.pending_attachments.len() >= MAX_PER_BRIEF),
            Err(e) => return runtime_error(e.into()),
        };
        if full {
            return too_many();
        }
        let bytes = match read_beneath(&base, &rel) {
            Ok(b) => b,
            Err(e) => return e,
        };
        let digest = {
            use sha2::{Digest, Sha256};
            Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        let file_name = rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = crate::model::text::escape_hidden(&crate::model::text::truncate_chars(
            a.name.as_deref().unwrap_or(&file_name).trim(),
            120,
        ))
        .into_owned();
        // Kept by its digest: the same content attached twice is one copy.
        let dir = env
            .host
            .config()
            .data_dir
            .join("attachments")
            .join(env.agent_id);
        let kept = dir.join(&digest);
        if !kept.exists() {
            let stored =
                std::fs::create_dir_all(&dir).and_then(|()| crate::durable::write(&kept, &bytes));
            if let Err(e) = stored {
                return tool_error(
                    ToolErrorKind::Failed,
                    format!("cannot keep the attachment: {e}"),
                    None,
                    None,
                    true,
                );
            }
        }
        let attachment = BriefAttachment {
            kind: a.kind.unwrap_or_else(|| kind_of(&file_name)),
            name,
            uri: Some(kept.display().to_string()),
            value: None,
            source_path: Some(rel.display().to_string()),
            size_bytes: bytes.len() as u64,
            digest: format!("sha256:{digest}"),
        };
        let (id, att) = (env.agent_id.to_owned(), attachment.clone());
        let pending = env
            .host
            .store()
            .write(move |tx| {
                let mut agent: AgentRecord = crate::runtime::agent::agent_in(tx, &id)?;
                agent.pending_attachments.retain(|p| p.digest != att.digest);
                if agent.pending_attachments.len() >= MAX_PER_BRIEF {
                    return Ok(None);
                }
                agent.pending_attachments.push(att.clone());
                let n = agent.pending_attachments.len();
                tx.put_agent(&id, &agent)?;
                Ok(Some(n))
            })
            .await;
        match pending {
            Ok(Some(n)) => ToolOutcome::ok(json!({
                "ok": true, "attachment": attachment, "attached_to_this_turns_brief": n,
            })),
            Ok(None) => too_many(),
            Err(e) => runtime_error(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_beneath_its_root_or_refused() {
        let root = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let canon = root.path().canonicalize().unwrap();
        let (base, rel) = locate("out/report.md", root.path(), home.path()).unwrap();
        assert_eq!((base, rel), (canon.clone(), PathBuf::from("out/report.md")));
        let inside = format!("{}/a.txt", canon.display());
        assert_eq!(
            locate(&inside, root.path(), home.path()).unwrap().1,
            PathBuf::from("a.txt")
        );
        let (base, _) = locate("@home/memory/self.md", root.path(), home.path()).unwrap();
        assert_eq!(base, home.path().canonicalize().unwrap());
        for bad in ["../x", "/etc/passwd", "a/../../x", "", "@home/../x"] {
            assert!(locate(bad, root.path(), home.path()).is_err(), "{bad}");
        }
    }

    #[test]
    fn missing_huge_and_linked_files_are_refused_with_why() {
        let root = tempfile::tempdir().unwrap();
        let canon = root.path().canonicalize().unwrap();
        std::fs::write(canon.join("ok.txt"), b"fine").unwrap();
        assert_eq!(read_beneath(&canon, Path::new("ok.txt")).unwrap(), b"fine");
        let text = |o: ToolOutcome| o.text();
        let missing = text(read_beneath(&canon, Path::new("nope.txt")).unwrap_err());
        assert!(missing.contains("does not exist"), "{missing}");
        let big = std::fs::File::create(canon.join("big.bin")).unwrap();
        big.set_len(MAX_BYTES + 1).unwrap();
        let huge = text(read_beneath(&canon, Path::new("big.bin")).unwrap_err());
        assert!(huge.contains("larger than 4 MiB"), "{huge}");
        std::os::unix::fs::symlink("/etc/hostname", canon.join("link")).unwrap();
        let linked = text(read_beneath(&canon, Path::new("link")).unwrap_err());
        assert!(linked.contains("symbolic link"), "{linked}");
        std::os::unix::fs::symlink("/etc", canon.join("out")).unwrap();
        let out = text(read_beneath(&canon, Path::new("out/hostname")).unwrap_err());
        assert!(out.contains("leaves the execution root"), "{out}");
        std::fs::create_dir(canon.join("d")).unwrap();
        assert!(
            read_beneath(&canon, Path::new("d")).is_err(),
            "a directory is not a file"
        );
    }

    #[test]
    fn a_files_kind_follows_its_name() {
        assert_eq!(kind_of("fix.patch"), AttachmentKind::Diff);
        assert_eq!(kind_of("build.LOG"), AttachmentKind::Log);
        assert_eq!(kind_of("shot.png"), AttachmentKind::Image);
        assert_eq!(kind_of("report.md"), AttachmentKind::File);
    }
}
