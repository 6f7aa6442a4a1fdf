//! The server-sent events of both providers' streams, read from the answer's body in time
//! linear in its size: the search for a line's end resumes where it stopped, the bytes are
//! checked as UTF-8 once as they arrive (a bad byte is an error at once), and a line and an
//! event are at most 1 MiB each.
//!
//! Written here rather than taken from a crate: eventsource-stream 0.2.3 scans the unfinished
//! line again from its start at every piece of the body (32 MiB without a line break in 1 KiB
//! pieces took minutes) and has no bound on a line or an event. The format is small
//! (WHATWG HTML, "server-sent events": lines end with CR LF, LF or CR; `field: value`; a blank
//! line ends an event; `:` starts a comment).

use crate::error::Error;
use crate::http::Body;

/// The most bytes of one line.
pub(crate) const MAX_LINE_BYTES: usize = 1024 * 1024;
/// The most bytes of one event's `event` and `data` together.
pub(crate) const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// One event: its type (`message` when it named none) and its data lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) event: String,
    pub(crate) data: String,
}

/// The line splitter and event builder over bytes as they arrive; no IO of its own.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    /// Bytes not yet consumed start at `start`; `buffer[..start]` is waiting to be dropped.
    buffer: Vec<u8>,
    start: usize,
    /// Where the search for the next line's end resumes (never before `start`).
    scanned: usize,
    /// How far the bytes are known to be UTF-8 (a sequence cut by a piece's end waits).
    validated: usize,
    /// The last line ended with CR: an LF right after it belongs to that line's end.
    after_cr: bool,
    /// The stream's first bytes were looked at (for a byte order mark).
    started: bool,
    event: String,
    data: String,
    /// Bytes read so far, for error messages.
    offset: u64,
}

impl Parser {
    /// Takes the next piece of the body and gives the events it completed.
    pub(crate) fn push(&mut self, piece: &[u8]) -> Result<Vec<Event>, Error> {
        self.compact();
        self.buffer.extend_from_slice(piece);
        self.validate()?;
        if !self.started {
            // A byte order mark at the very start is not part of the first line.
            let bom = "\u{feff}".as_bytes();
            let head = &self.buffer[self.start..];
            if head.len() < bom.len() && bom.starts_with(head) {
                return Ok(Vec::new());
            }
            self.started = true;
            if head.starts_with(bom) {
                self.start += bom.len();
                self.scanned = self.scanned.max(self.start);
            }
        }
        let mut events = Vec::new();
        loop {
            if self.after_cr && self.start < self.buffer.len() {
                if self.buffer[self.start] == b'\n' {
                    self.start += 1;
                }
                self.after_cr = false;
                self.scanned = self.scanned.max(self.start);
            }
            let Some(found) = memchr::memchr2(b'\n', b'\r', &self.buffer[self.scanned..]) else {
                self.scanned = self.buffer.len();
                let unfinished = self.buffer.len() - self.start;
                if unfinished > MAX_LINE_BYTES {
                    return Err(self.too_large("a line", MAX_LINE_BYTES));
                }
                return Ok(events);
            };
            let end = self.scanned + found;
            if end - self.start > MAX_LINE_BYTES {
                return Err(self.too_large("a line", MAX_LINE_BYTES));
            }
            self.after_cr = self.buffer[end] == b'\r';
            let line_start = self.start;
            self.start = end + 1;
            self.scanned = self.start;
            if let Some(event) = self.line(line_start, end)? {
                events.push(event);
            }
        }
    }

    /// Drops what was consumed once it is at least half the buffer, so that each byte is
    /// moved a bounded number of times.
    fn compact(&mut self) {
        if self.start > 0 && self.start * 2 >= self.buffer.len() {
            self.buffer.drain(..self.start);
            self.scanned -= self.start;
            self.validated -= self.start;
            self.offset += self.start as u64;
            self.start = 0;
        }
    }

    /// Checks the bytes that arrived since the last check.
    fn validate(&mut self) -> Result<(), Error> {
        match std::str::from_utf8(&self.buffer[self.validated..]) {
            Ok(_) => {
                self.validated = self.buffer.len();
                Ok(())
            }
            Err(error) => match error.error_len() {
                // A sequence cut by the end of the piece: the rest comes with the next one.
                None => {
                    self.validated += error.valid_up_to();
                    Ok(())
                }
                Some(_) => {
                    let at = self.offset + (self.validated + error.valid_up_to()) as u64;
                    Err(Error::InvalidResponse {
                        detail: format!("the event stream is not UTF-8 (at byte {at})"),
                    })
                }
            },
        }
    }

    fn too_large(&self, what: &str, limit: usize) -> Error {
        Error::InvalidResponse {
            detail: format!(
                "{what} of the event stream is longer than {} MiB (at byte {}); it was not read \
                 further",
                limit / (1024 * 1024),
                self.offset + self.start as u64
            ),
        }
    }

    /// One line, `buffer[start..end]`: a field of the event, a comment, or the blank line
    /// that ends the event.
    fn line(&mut self, start: usize, end: usize) -> Result<Option<Event>, Error> {
        // Checked as UTF-8 as the bytes arrived; this cannot fail, and costs one more pass.
        let line =
            std::str::from_utf8(&self.buffer[start..end]).map_err(|_| Error::InvalidResponse {
                detail: "the event stream is not UTF-8".to_owned(),
            })?;
        if line.is_empty() {
            if self.data.is_empty() {
                self.event.clear();
                return Ok(None);
            }
            // The last data line's `\n` is not part of the data.
            self.data.pop();
            let event = if self.event.is_empty() {
                "message".to_owned()
            } else {
                std::mem::take(&mut self.event)
            };
            return Ok(Some(Event {
                event,
                data: std::mem::take(&mut self.data),
            }));
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.event.len() + self.data.len() + value.len() + 1 > MAX_EVENT_BYTES {
                    return Err(Error::InvalidResponse {
                        detail: format!(
                            "an event of the event stream is larger than {} MiB (at byte {}); it \
                             was not read further",
                            MAX_EVENT_BYTES / (1024 * 1024),
                            self.offset + start as u64
                        ),
                    });
                }
                self.data.push_str(value);
                self.data.push('\n');
            }
            "event" => {
                self.event.clear();
                self.event.push_str(value);
            }
            // `id` and `retry` matter to a browser reconnecting; a model turn never does.
            _ => {}
        }
        Ok(None)
    }
}

/// The events of an answer's body, read piece by piece under the body's own limits.
pub(crate) struct EventReader {
    body: Body,
    parser: Parser,
    ready: std::collections::VecDeque<Event>,
    ended: bool,
}

impl EventReader {
    pub(crate) fn new(body: Body) -> EventReader {
        EventReader {
            body,
            parser: Parser::default(),
            ready: std::collections::VecDeque::new(),
            ended: false,
        }
    }

    /// The next whole event; `None` when the body ended (an unfinished event at the end is
    /// dropped, as the format says).
    pub(crate) async fn next(&mut self) -> Result<Option<Event>, Error> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            match self.body.next_chunk().await? {
                Some(piece) => self.ready.extend(self.parser.push(&piece)?),
                None => self.ended = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(pieces: &[&[u8]]) -> Result<Vec<Event>, Error> {
        let mut parser = Parser::default();
        let mut events = Vec::new();
        for piece in pieces {
            events.extend(parser.push(piece)?);
        }
        Ok(events)
    }

    fn event(event: &str, data: &str) -> Event {
        Event {
            event: event.to_owned(),
            data: data.to_owned(),
        }
    }

    #[test]
    fn fields_comments_and_every_line_ending() {
        let stream: &[u8] = b"\xEF\xBB\xBF: a comment\nevent: ping\ndata: {}\n\n\
            data:one\r\ndata: two\r\n\r\nevent:x\rdata: three\r\rid: 7\nretry: 10\nnothing\n\n";
        assert_eq!(
            events(&[stream]).unwrap(),
            [
                event("ping", "{}"),
                event("message", "one\ntwo"),
                event("x", "three")
            ]
        );
    }

    #[test]
    fn an_event_split_anywhere_is_the_same_event() {
        let stream: &[u8] = "event: delta\r\ndata: {\"text\":\"ünïcødé\"}\r\n\r\n".as_bytes();
        let whole = events(&[stream]).unwrap();
        assert_eq!(whole, [event("delta", "{\"text\":\"ünïcødé\"}")]);
        for cut in 0..stream.len() {
            let (first, second) = stream.split_at(cut);
            assert_eq!(events(&[first, second]).unwrap(), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(events(&bytes).unwrap(), whole);
    }

    #[test]
    fn an_unfinished_event_gives_nothing_and_an_empty_one_is_skipped() {
        assert_eq!(events(&[b"data: a\n"]).unwrap(), []);
        assert_eq!(
            events(&[b"event: x\n\ndata: b\n\n"]).unwrap(),
            [event("message", "b")]
        );
    }

    #[test]
    fn a_byte_that_is_not_utf_8_is_an_error_where_it_arrives() {
        let error = events(&[b"data: ok\n\n", b": \xFF"]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the model's answer is not valid: the event stream is not UTF-8 (at byte 12)"
        );
        // A character cut between two pieces is not an error.
        assert!(events(&[b"data: \xC3", b"\xA9\n\n"]).is_ok());
    }

    #[test]
    fn a_line_or_an_event_over_1_mib_is_refused() {
        let long = vec![b'x'; MAX_LINE_BYTES + 1];
        let error = events(&[b"data: ", &long]).unwrap_err();
        assert!(
            error.to_string().contains("a line of the event stream"),
            "{error}"
        );
        let line = format!("data: {}\n", "y".repeat(1000));
        let mut parser = Parser::default();
        let refused = (0..2000).find_map(|_| parser.push(line.as_bytes()).err());
        assert!(
            refused.is_some_and(|error| error.to_string().contains("an event of")),
            "an event of 2 MB was accepted"
        );
    }

    #[test]
    fn a_long_line_in_small_pieces_is_scanned_once() {
        // 1 MiB in 64-byte pieces: a parser that scanned the line again at each piece would do
        // 16,384 scans of up to 1 MiB; this one looks at each byte a bounded number of times.
        let mut parser = Parser::default();
        let piece = [b'z'; 64];
        parser.push(b"data: ").unwrap();
        for _ in 0..(MAX_LINE_BYTES / 64 - 1) {
            assert!(parser.push(&piece).unwrap().is_empty());
        }
        assert!(parser.scanned == parser.buffer.len());
        assert_eq!(parser.push(b"\n\n").unwrap().len(), 1);
    }
}
