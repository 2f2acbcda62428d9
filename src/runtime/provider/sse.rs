//! A small, pure Server-Sent Events parser for streamed provider responses.
//!
//! It owns only framing: bytes arrive in arbitrary chunks (a line, an event
//! or a UTF-8 character may be split across chunks) and complete events come
//! out in order. It knows nothing about providers or JSON; the wire modules
//! interpret `event`/`data`. Invariants: an event is emitted only at a blank
//! line (or by `finish` for a trailing unterminated event), multi-line `data`
//! fields are joined with `\n`, comments (`:`) and `id`/`retry` fields are
//! ignored, and `\n`, `\r\n` and `\r` all end a line.

/// One dispatched event: the `event:` name (if any) and its joined `data`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

/// Incremental parser: feed it chunks with [`SseParser::push`].
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// The previous chunk ended with `\r`; a leading `\n` belongs to it.
    after_cr: bool,
    event: Option<String>,
    data: Vec<String>,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds one chunk and returns every event it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &byte in chunk {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out);
                }
                other => self.line.push(other),
            }
        }
        out
    }

    /// Ends the stream: an unterminated last line and event are dispatched.
    pub fn finish(mut self) -> Option<SseEvent> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            self.end_line(&mut out);
        }
        self.dispatch(&mut out);
        out.pop()
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let line = std::mem::take(&mut self.line);
        let text = String::from_utf8_lossy(&line);
        if text.is_empty() {
            self.dispatch(out);
            return;
        }
        if text.starts_with(':') {
            return;
        }
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                self.data.push(value.to_owned());
                self.has_data = true;
            }
            // `id`, `retry` and unknown fields do not matter to providers.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if !self.has_data {
            return;
        }
        self.has_data = false;
        let data = std::mem::take(&mut self.data).join("\n");
        out.push(SseEvent { event, data });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    #[test]
    fn parses_named_and_unnamed_events() {
        let mut p = SseParser::new();
        let got = p.push(b"event: message_start\ndata: {\"a\":1}\n\ndata: [DONE]\n\n");
        assert_eq!(
            got,
            vec![ev(Some("message_start"), "{\"a\":1}"), ev(None, "[DONE]")]
        );
    }

    #[test]
    fn events_split_across_chunks_and_utf8_boundaries() {
        let bytes = "data: h\u{e9}llo\n\n".as_bytes();
        let mut p = SseParser::new();
        let mut got = Vec::new();
        for b in bytes {
            got.extend(p.push(std::slice::from_ref(b)));
        }
        assert_eq!(got, vec![ev(None, "h\u{e9}llo")]);
    }

    #[test]
    fn crlf_and_cr_line_endings() {
        let mut p = SseParser::new();
        let mut got = p.push(b"data: a\r");
        got.extend(p.push(b"\n\r\ndata: b\r\r"));
        assert_eq!(got, vec![ev(None, "a"), ev(None, "b")]);
    }

    #[test]
    fn multi_line_data_comments_and_ignored_fields() {
        let mut p = SseParser::new();
        let got = p.push(b": ping\nid: 7\nretry: 10\ndata: one\ndata:two\n\n");
        assert_eq!(got, vec![ev(None, "one\ntwo")]);
    }

    #[test]
    fn event_without_data_is_not_dispatched_and_name_resets() {
        let mut p = SseParser::new();
        let got = p.push(b"event: ping\n\ndata: x\n\n");
        assert_eq!(got, vec![ev(None, "x")]);
    }

    #[test]
    fn finish_flushes_trailing_event() {
        let mut p = SseParser::new();
        assert!(p.push(b"event: done\ndata: tail").is_empty());
        assert_eq!(p.finish(), Some(ev(Some("done"), "tail")));
        assert_eq!(SseParser::new().finish(), None);
    }
}
