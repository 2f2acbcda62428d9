//! The console's terminal backend: crossterm's, with clickable links. A
//! cell whose underline colour stands for a link (`ui::tui::links`) is
//! written inside an OSC 8 hyperlink to its address, underlined in the
//! terminal's own colour; with links off, or for a number forgotten, the
//! cell is written as plain underlined text. Everything else is
//! crossterm's backend unchanged.

use std::io::{self, Write};
use std::sync::Arc;

use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::style::Color;

use crate::ui::tui::links::link_of;

pub struct LinkBackend<W: Write> {
    inner: CrosstermBackend<W>,
    /// Write OSC 8 around links (`[console] hyperlinks`).
    links: bool,
}

impl<W: Write> LinkBackend<W> {
    pub fn new(writer: W, links: bool) -> LinkBackend<W> {
        LinkBackend {
            inner: CrosstermBackend::new(writer),
            links,
        }
    }

    /// Draw `cells`, all of one link or none, inside its hyperlink.
    fn run(
        &mut self,
        cells: &[(u16, u16, Cell)],
        link: Option<&(u32, Arc<str>)>,
    ) -> io::Result<()> {
        if cells.is_empty() {
            return Ok(());
        }
        let link = link.filter(|_| self.links);
        if let Some((id, url)) = link {
            // The id joins the pieces of one link (a wrapped address).
            write!(self.inner, "\x1b]8;id=holon-{id};{url}\x1b\\")?;
        }
        self.inner.draw(cells.iter().map(|(x, y, c)| (*x, *y, c)))?;
        if link.is_some() {
            write!(self.inner, "\x1b]8;;\x1b\\")?;
        }
        Ok(())
    }
}

/// Whether a terminal called `term` (`$TERM`) takes OSC 8 or at least
/// ignores it: the Linux console (`linux`, `linux-16color`, ...) prints
/// an unknown OSC as text.
pub fn takes_links(term: Option<&str>) -> bool {
    !term.is_some_and(|t| t.starts_with("linux") || t == "dumb")
}

impl<W: Write> Backend for LinkBackend<W> {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        // Cells in runs of one link (or none), the link's mark taken off.
        let mut run: Vec<(u16, u16, Cell)> = Vec::new();
        let mut current: Option<(u32, Arc<str>)> = None;
        for (x, y, cell) in content {
            let link = link_of(cell.underline_color);
            let mut cell = cell.clone();
            // Only links' numbers are RGB underline colours.
            if let Color::Rgb(..) = cell.underline_color {
                cell.underline_color = Color::Reset;
            }
            let same = match (&link, &current) {
                (Some((a, _)), Some((b, _))) => a == b,
                (None, None) => true,
                _ => false,
            };
            if !same {
                self.run(&run, current.as_ref())?;
                run.clear();
                current = link;
            }
            run.push((x, y, cell));
        }
        self.run(&run, current.as_ref())
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> io::Result<()> {
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        self.inner.clear_region(clear_type)
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.inner.append_lines(n)
    }

    fn size(&self) -> io::Result<Size> {
        self.inner.size()
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.inner)
    }
}

#[cfg(test)]
mod tests {
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::style::{Modifier, Style};

    use super::*;
    use crate::ui::tui::links::link_style;

    /// What the backend writes for one row: `before`, a link, `after`.
    fn written(links: bool) -> String {
        let mut buf = Buffer::empty(Rect::new(0, 0, 30, 1));
        let link = link_style(
            Style::default().add_modifier(Modifier::UNDERLINED),
            "https://example.com/backend",
        );
        buf.set_string(0, 0, "see ", Style::default());
        buf.set_string(4, 0, "docs", link);
        buf.set_string(8, 0, " now", Style::default());
        let out = Shared::default();
        let mut b = LinkBackend::new(out.clone(), links);
        let cells = buf
            .content
            .iter()
            .enumerate()
            .map(|(i, c)| (i as u16, 0, c))
            .take(12);
        b.draw(cells).expect("drawn");
        Backend::flush(&mut b).expect("flushed");
        let bytes = out.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if let Ok(mut b) = self.0.lock() {
                b.extend_from_slice(buf);
            }
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_link_is_written_inside_its_hyperlink_and_nothing_else_is() {
        let out = written(true);
        let open = out.find("\x1b]8;id=holon-").expect("opened");
        let address = out
            .find(";https://example.com/backend\x1b\\")
            .expect("address");
        let close = out.find("\x1b]8;;\x1b\\").expect("closed");
        let (see, docs, now) = (
            out.find("see ").expect("see"),
            out.find("docs").expect("docs"),
            out.find(" now").expect("now"),
        );
        assert!(see < open && open < address && address < docs, "{out:?}");
        assert!(docs < close && close < now, "{out:?}");
        assert_eq!(out.matches("\x1b]8;").count(), 2, "one link: {out:?}");
        // Underlined in the terminal's colour, never the link's number.
        assert!(!out.contains("58;2;"), "{out:?}");
    }

    #[test]
    fn with_links_off_the_text_is_written_plain() {
        let out = written(false);
        assert!(!out.contains("\x1b]8;"), "{out:?}");
        assert!(out.contains("docs") && !out.contains("58;2;"), "{out:?}");
    }

    #[test]
    fn the_linux_console_gets_no_links() {
        assert!(takes_links(Some("xterm-256color")));
        assert!(takes_links(None));
        assert!(!takes_links(Some("linux")));
        assert!(!takes_links(Some("linux-16color")));
    }
}
