//! Hand memory back to the system once the runtime goes quiet.
//!
//! glibc's allocator keeps memory a burst of work freed (start-up, a
//! turn's request and transcript, a page of events) in its arenas, and a
//! daemon that then idles for hours holds it as resident memory for
//! nothing: ~2.4 MiB of the idle daemon's 6 MiB of heap just after start.
//! The binary's own pages that start-up and the work mapped are most of
//! the rest ([`release_code_pages`]). Each actor says when it has nothing
//! left to do, and so does each request served; once none has said so
//! for [`QUIET`], both are given back. Under steady work they keep saying
//! it and nothing is trimmed; an idle runtime waits on the notify and
//! wakes for nothing.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};

/// How long nothing may have ended (an actor gone idle, a request served,
/// a subscriber gone) before memory is given back.
pub(super) const QUIET: Duration = Duration::from_secs(1);

/// Call `trim` once nothing has ended for [`QUIET`] after something did;
/// return at shutdown.
pub(super) async fn run(
    went_idle: Arc<Notify>,
    mut shutdown: watch::Receiver<bool>,
    trim: impl Fn(),
) {
    loop {
        tokio::select! {
            _ = went_idle.notified() => {}
            _ = shutdown.changed() => return,
        }
        loop {
            tokio::select! {
                _ = went_idle.notified() => {}
                _ = tokio::time::sleep(QUIET) => break,
                _ = shutdown.changed() => return,
            }
        }
        trim();
    }
}

/// Return the allocator's free pages to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn release_free_heap() {
    // SAFETY: malloc_trim takes no pointers; it walks glibc's own free
    // lists under their locks and may be called from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn release_free_heap() {}

/// What an idle daemon gives back: the binary's pages mapped while it
/// worked, and the allocator's free pages (last, so the smaps text read
/// for the first is among what the trim returns).
pub(crate) fn release_idle_memory() {
    release_code_pages();
    release_free_heap();
}

/// Unmap the binary's code and read-only data. Start-up and a burst of
/// work touch code the idle runtime does not run again for hours (the
/// command line, the config, the store's checks), and the kernel maps it
/// in large pieces: an idle daemon was 16.5 MiB resident, 5.5 MiB after
/// this. The pages stay in the page cache (the memory they take is the
/// system's cache either way); the code that runs next is mapped again as
/// it runs, a minor fault a page while the cache holds it. Only mappings
/// of the binary that hold no page of their own, in memory or in swap,
/// are released: a relocated or written page (RELRO, a debugger's
/// breakpoint) would be lost, so a mapping with one is left alone.
#[cfg(target_os = "linux")]
fn release_code_pages() {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return;
    };
    let here = release_code_pages as *const () as usize;
    for (start, end) in clean_binary_mappings(&smaps, here) {
        // SAFETY: the range is a whole private, read-only mapping of the
        // binary's file with no page of its own (none anonymous, none in
        // swap): dropping it loses nothing, and any access maps the same
        // file pages again.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn release_code_pages() {}

/// The mappings of the file that maps `addr` (the binary) that are
/// read-only, private, and hold no page of their own (`Anonymous` and
/// `Swap` both 0), from `/proc/self/smaps`. A record this cannot read is
/// never one of them.
#[cfg(any(target_os = "linux", test))]
fn clean_binary_mappings(smaps: &str, addr: usize) -> Vec<(usize, usize)> {
    struct Mapping<'a> {
        /// `None` when the header could not be read: its fields land
        /// here, and it is never released.
        range: Option<(usize, usize)>,
        perms: &'a str,
        /// Device, inode and path: a binary replaced on disk is another
        /// file.
        file: (&'a str, &'a str, &'a str),
        anonymous_kb: Option<u64>,
        swap_kb: Option<u64>,
    }
    let kb = |v: &str| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok();
    let mut maps: Vec<Mapping> = Vec::new();
    for line in smaps.lines() {
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or("");
        if first.ends_with(':') {
            // A field of the record above.
            let Some(m) = maps.last_mut() else { continue };
            if let Some(v) = line.strip_prefix("Anonymous:") {
                m.anonymous_kb = kb(v);
            } else if let Some(v) = line.strip_prefix("Swap:") {
                m.swap_kb = kb(v);
            }
            continue;
        }
        // A record's header: range, perms, offset, device, inode, path.
        let range = first.split_once('-').and_then(|(a, b)| {
            Some((
                usize::from_str_radix(a, 16).ok()?,
                usize::from_str_radix(b, 16).ok()?,
            ))
        });
        let perms = words.next().unwrap_or("");
        let device = words.nth(1).unwrap_or("");
        let inode = words.next().unwrap_or("0");
        let path = words.next().filter(|_| inode != "0").unwrap_or("");
        maps.push(Mapping {
            range,
            perms,
            file: (device, inode, path),
            anonymous_kb: None,
            swap_kb: None,
        });
    }
    let Some(binary) = maps
        .iter()
        .find(|m| m.range.is_some_and(|(a, b)| (a..b).contains(&addr)) && m.file.2.starts_with('/'))
        .map(|m| m.file)
    else {
        return Vec::new();
    };
    maps.iter()
        .filter(|m| m.file == binary && !m.perms.contains('w') && m.perms.ends_with('p'))
        .filter(|m| m.anonymous_kb == Some(0) && m.swap_kb == Some(0))
        .filter_map(|m| m.range)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn only_the_binarys_clean_read_only_mappings_are_released() {
        let smaps = "\
5600000-5601000 r--p 00000000 fe:00 42    /opt/holon
Anonymous:             0 kB
Swap:                  0 kB
5601000-5609000 r-xp 00001000 fe:00 42    /opt/holon
Rss:                 400 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me dw
5609000-560a000 r--p 00009000 fe:00 42    /opt/holon
Anonymous:             4 kB
Swap:                  0 kB
560a000-560b000 r--p 0000a000 fe:00 42    /opt/holon
Anonymous:             0 kB
Swap:                  4 kB
560b000-560c000 rw-p 0000b000 fe:00 42    /opt/holon
Anonymous:             4 kB
Swap:                  0 kB
560c000-560d000 r-xp 00000000 00:00 0
Anonymous:             0 kB
Swap:                  0 kB
7f00000-7f10000 r-xp 00026000 fe:00 77    /usr/lib/libc.so.6
Anonymous:             0 kB
Swap:                  0 kB
7f10000-7f11000 r-xp 00000000 fe:00 43    /opt/holon (deleted)
Anonymous:             0 kB
Swap:                  0 kB
7f11000-7f12000 r-xp 00000000 fe:01 42    /opt/holon
Anonymous:             0 kB
Swap:                  0 kB
";
        // Code and read-only data of the binary; not its relocated data
        // (RELRO) in memory or swapped out, its writable data, an
        // anonymous mapping, libc, another file of the same path or inode.
        assert_eq!(
            clean_binary_mappings(smaps, 0x5602000),
            vec![(0x5600000, 0x5601000), (0x5601000, 0x5609000)]
        );
        // An address outside any file mapping: nothing.
        assert!(clean_binary_mappings(smaps, 0x560c500).is_empty());
        // A record without its Anonymous or Swap line is not known clean.
        for cut in [
            "Anonymous:             0 kB\n",
            "Swap:                  0 kB\n",
        ] {
            let text = "5601000-5609000 r-xp 00001000 fe:00 42 /opt/holon\nRss: 4 kB\n";
            assert!(clean_binary_mappings(&format!("{text}{cut}"), 0x5602000).is_empty());
        }
        // A header this cannot read takes the fields after it: the
        // mapping above keeps its own.
        let garbled = "\
5609000-560a000 r--p 00009000 fe:00 42 /opt/holon
Anonymous:             4 kB
Swap:                  0 kB
zz-yy r--p 00000000 fe:00 42 /opt/holon
Anonymous:             0 kB
Swap:                  0 kB
5601000-5609000 r-xp 00001000 fe:00 42 /opt/holon
Anonymous:             0 kB
Swap:                  0 kB
";
        assert_eq!(
            clean_binary_mappings(garbled, 0x5602000),
            vec![(0x5601000, 0x5609000)]
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_binarys_code_is_found_and_its_relocated_data_is_not() {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let here = release_code_pages as *const () as usize;
        let clean = clean_binary_mappings(&smaps, here);
        assert!(
            clean.iter().any(|(a, b)| (*a..*b).contains(&here)),
            "{clean:x?}"
        );
        // The GOT this very process reached `read_to_string` through is
        // relocated: its mapping holds pages of its own.
        let got = std::ptr::addr_of!(RELOCATED) as usize;
        assert!(
            !clean.iter().any(|(a, b)| (*a..*b).contains(&got)),
            "{clean:x?}"
        );
    }

    /// A pointer in read-only data: relocated at start in a position-
    /// independent binary, so it lives in the RELRO mapping.
    static RELOCATED: &str = "relocated";

    #[test]
    fn releasing_the_code_pages_leaves_a_process_that_runs() {
        let v: Vec<u64> = (0..1000).collect();
        release_code_pages();
        assert_eq!(v.iter().sum::<u64>(), 499_500);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(format!("{:?}", v.len())));
        assert_eq!(rx.recv().unwrap(), "1000");
    }

    #[tokio::test(start_paused = true)]
    async fn trims_once_per_quiet_spell_and_never_while_actors_keep_going_idle() {
        let went_idle = Arc::new(Notify::new());
        let (stop, shutdown) = watch::channel(false);
        let trims = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&trims);
        let task = tokio::spawn(run(Arc::clone(&went_idle), shutdown, move || {
            counted.fetch_add(1, Ordering::SeqCst);
        }));
        let step = |ms| tokio::time::sleep(Duration::from_millis(ms));
        // Nothing went idle yet: no trim, however long it waits.
        step(5_000).await;
        assert_eq!(trims.load(Ordering::SeqCst), 0);
        // Busy: an actor goes idle every 300 ms for 3 s.
        for _ in 0..10 {
            went_idle.notify_one();
            step(300).await;
        }
        assert_eq!(trims.load(Ordering::SeqCst), 0);
        step(1_000).await;
        assert_eq!(trims.load(Ordering::SeqCst), 1);
        // Quiet: still one.
        step(10_000).await;
        assert_eq!(trims.load(Ordering::SeqCst), 1);
        went_idle.notify_one();
        step(1_100).await;
        assert_eq!(trims.load(Ordering::SeqCst), 2);
        let _ = stop.send(true);
        task.await.unwrap();
    }
}
