//! Clickable links (OSC 8). A link's cells carry a number for its address
//! in their underline colour, so the link travels with its text through
//! wrapping, the render caches and scrolling, and a popup drawn over it
//! takes it away with the text. The console's backend turns the number
//! back into the address around those cells, and underlines them in the
//! terminal's own colour.
//!
//! The address comes from the model, so only `http`, `https` and `mailto`
//! addresses of printable ASCII (no escape can ride along) and at most
//! 2,048 bytes are made clickable; the others stay text. The table of
//! addresses is the process's, bounded: the oldest numbers are forgotten
//! first, and a forgotten one is drawn as plain underlined text.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock, Mutex};

use ratatui::style::{Color, Style};

/// Addresses kept at most.
const MAX_LINKS: usize = 4096;
/// The longest address made clickable, in bytes.
const MAX_URL: usize = 2048;
/// Numbers fit the 24 bits of an RGB colour; 0 is none.
const MAX_ID: u32 = 0xFF_FFFF;

#[derive(Default)]
struct Table {
    last: u32,
    by_url: HashMap<Arc<str>, u32>,
    by_id: BTreeMap<u32, Arc<str>>,
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(Mutex::default);

/// Whether `url` may be made clickable.
pub fn linkable(url: &str) -> bool {
    let scheme = ["http://", "https://", "mailto:"].iter().any(|s| {
        url.len() > s.len()
            && url
                .get(..s.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(s))
    });
    scheme && url.len() <= MAX_URL && url.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// `style` with `url`'s link number, when it may be made clickable.
pub fn link_style(style: Style, url: &str) -> Style {
    match id_of(url) {
        Some(id) => style.underline_color(color(id)),
        None => style,
    }
}

/// A link's number as the colour its cells carry. Never drawn: the
/// backend takes it off (and RGB colours are refused everywhere else, so
/// none is taken for a link).
#[allow(clippy::disallowed_methods)]
fn color(id: u32) -> Color {
    Color::Rgb((id >> 16) as u8, (id >> 8) as u8, id as u8)
}

/// The number of `url`, given one if it has none.
fn id_of(url: &str) -> Option<u32> {
    if !linkable(url) {
        return None;
    }
    TABLE.lock().unwrap_or_else(|e| e.into_inner()).id_of(url)
}

impl Table {
    fn id_of(&mut self, url: &str) -> Option<u32> {
        if let Some(id) = self.by_url.get(url) {
            return Some(*id);
        }
        if self.last >= MAX_ID {
            return None;
        }
        self.last += 1;
        let id = self.last;
        let url: Arc<str> = Arc::from(url);
        self.by_url.insert(Arc::clone(&url), id);
        self.by_id.insert(id, url);
        while self.by_id.len() > MAX_LINKS {
            if let Some((_, old)) = self.by_id.pop_first() {
                self.by_url.remove(&old);
            }
        }
        Some(id)
    }
}

/// The link a cell's underline colour stands for: its number and address.
/// `None` for any other colour, and for a number forgotten since.
pub fn link_of(underline: Color) -> Option<(u32, Arc<str>)> {
    let Color::Rgb(r, g, b) = underline else {
        return None;
    };
    let id = u32::from(r) << 16 | u32::from(g) << 8 | u32::from(b);
    let t = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    t.by_id.get(&id).map(|url| (id, Arc::clone(url)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_and_mail_addresses_of_printable_ascii_are_linked() {
        assert!(linkable("https://example.com/a?b=1#c"));
        assert!(linkable("HTTP://example.com"));
        assert!(linkable("mailto:ops@example.com"));
        for bad in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "https://",
            "https://example.com/\x1b]8;;x\x1b\\",
            "https://example.com/\x07",
            "https://exa mple.com",
            "https://例え.jp",
            "./ドキュメント.md",
            "#日本語",
            "ftp://例え",
            "é",
            "relative/path",
        ] {
            assert!(!linkable(bad), "{bad:?}");
        }
        assert!(!linkable(&format!("https://e.com/{}", "a".repeat(MAX_URL))));
    }

    #[test]
    fn a_link_survives_as_an_underline_colour_and_reads_back() {
        let style = link_style(Style::default(), "https://example.com/docs");
        let Some(underline) = style.underline_color else {
            panic!("no link number");
        };
        let (id, url) = link_of(underline).expect("known");
        assert_eq!(&*url, "https://example.com/docs");
        // The same address keeps its number.
        let again = link_style(Style::default(), "https://example.com/docs");
        assert_eq!(again.underline_color, Some(color(id)));
        // Other addresses and colours are not links.
        assert_eq!(
            link_style(Style::default(), "file:///x").underline_color,
            None
        );
        assert_eq!(link_of(Color::Red), None);
        assert_eq!(link_of(color(0)), None);
    }

    #[test]
    fn the_table_is_bounded_and_forgets_the_oldest_first() {
        let mut t = Table::default();
        let first = t.id_of("https://bounded.example/0").expect("a number");
        for i in 1..=MAX_LINKS {
            t.id_of(&format!("https://bounded.example/{i}"));
        }
        assert!(!t.by_id.contains_key(&first), "forgotten");
        assert_eq!(t.id_of("https://bounded.example/1"), Some(first + 1));
        assert_eq!((t.by_id.len(), t.by_url.len()), (MAX_LINKS, MAX_LINKS));
        // Numbers are never reused: past the last, no more links.
        t.last = MAX_ID;
        assert_eq!(t.id_of("https://bounded.example/new"), None);
    }
}
