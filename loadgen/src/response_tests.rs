use super::*;

#[derive(Default)]
struct Collect {
    head: Option<ResponseHead>,
    body: Vec<u8>,
}

impl BodySink for Collect {
    fn head(&mut self, head: &ResponseHead) -> Result<(), Failure> {
        assert!(self.head.is_none(), "head reported twice");
        self.head = Some(head.clone());
        Ok(())
    }
    fn data(&mut self, payload: &[u8]) {
        assert!(self.head.is_some(), "data before head");
        self.body.extend_from_slice(payload);
    }
}

/// Feeds `raw` in pieces of `split` bytes, then EOF if the body is not done.
fn read(raw: &[u8], split: usize) -> (Collect, Result<(), Failure>) {
    let mut r = ResponseReader::default();
    let mut sink = Collect::default();
    for piece in raw.chunks(split) {
        match r.feed(piece, &mut sink) {
            Ok(true) => return (sink, Ok(())),
            Ok(false) => {}
            Err(e) => return (sink, Err(e)),
        }
    }
    let end = r.eof();
    (sink, end)
}

#[test]
fn content_length_body_in_any_split() {
    let raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"ok\": true}";
    for split in 1..=raw.len() {
        let (sink, end) = read(raw, split);
        assert_eq!(end, Ok(()), "split {split}");
        let head = sink.head.expect("head");
        assert_eq!((head.status, head.content_length), (200, Some(12)));
        assert_eq!(sink.body, b"{\"ok\": true}");
    }
}

#[test]
fn block_header_and_case_insensitive_names() {
    let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nX-SLOWLAB-BLOCK:  65536 \r\n\r\n";
    let (sink, end) = read(raw, 7);
    assert_eq!(end, Ok(()));
    assert_eq!(sink.head.expect("head").block.as_deref(), Some("65536"));
}

#[test]
fn body_until_eof_without_content_length() {
    let (sink, end) = read(b"HTTP/1.0 200 OK\r\n\r\nabc", 2);
    assert_eq!(end, Ok(()));
    assert_eq!(sink.body, b"abc");
}

#[test]
fn chunked_overrides_content_length() {
    let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    let (sink, end) = read(raw, 5);
    assert_eq!(end, Ok(()));
    assert_eq!(sink.body, b"abc");
}

#[test]
fn short_bodies_and_early_closes() {
    let (_, end) = read(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 4);
    assert_eq!(end.expect_err("short").kind, ErrorKind::ShortBody);
    let (_, end) = read(b"", 4);
    assert_eq!(end.expect_err("nothing").kind, ErrorKind::ShortBody);
    let (_, end) = read(b"HTTP/1.1 200 OK\r\nContent-Le", 4);
    assert_eq!(end.expect_err("cut head").kind, ErrorKind::Malformed);
    let (_, end) = read(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        4,
    );
    assert_eq!(end.expect_err("cut chunk").kind, ErrorKind::ShortBody);
}

#[test]
fn malformed_responses() {
    for raw in [
        &b"SSH-2.0-OpenSSH\r\n\r\n"[..],
        b"HTTP/1.1 abc OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nab",
    ] {
        let (_, end) = read(raw, 64);
        assert_eq!(
            end.expect_err("malformed").kind,
            ErrorKind::Malformed,
            "{raw:?}"
        );
    }
    let endless = [
        b"HTTP/1.1 200 OK\r\n".as_slice(),
        &vec![b'a'; MAX_HEAD_BYTES + 10],
    ]
    .concat();
    let (_, end) = read(&endless, 4096);
    assert_eq!(end.expect_err("huge head").kind, ErrorKind::Malformed);
}

#[test]
fn repeated_equal_content_length_is_fine() {
    let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx";
    assert_eq!(read(raw, 64).1, Ok(()));
}

#[test]
fn no_body_statuses() {
    let (sink, end) = read(b"HTTP/1.1 204 No Content\r\n\r\n", 64);
    assert_eq!(end, Ok(()));
    assert_eq!(sink.head.expect("head").status, 204);
    let (sink, end) = read(
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno\n",
        64,
    );
    assert_eq!(end, Ok(()));
    assert_eq!(sink.head.expect("head").status, 404);
}

// The single reader, as every client of the crate uses it.

fn keeps_alive(raw: &[u8]) -> bool {
    let mut r = ResponseReader::default();
    assert_eq!(r.feed(raw, &mut Discard), Ok(true), "{raw:?} is whole");
    r.keeps_alive()
}

#[test]
fn version_and_connection_header_decide_keep_alive() {
    assert!(keeps_alive(
        b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc"
    ));
    assert!(!keeps_alive(
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    ));
    assert!(!keeps_alive(
        b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"
    ));
    assert!(keeps_alive(
        b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n"
    ));
    assert!(keeps_alive(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    ));
    assert!(keeps_alive(b"HTTP/1.1 204 No Content\r\n\r\n"));
    // A body that ends with the connection ends the connection.
    let mut r = ResponseReader::default();
    assert_eq!(
        r.feed(b"HTTP/1.1 503 Busy\r\n\r\nno", &mut Discard),
        Ok(false)
    );
    assert_eq!(r.eof(), Ok(()));
    assert_eq!(
        (r.status(), r.framing()),
        (Some(503), Some(Framing::UntilEof))
    );
    assert!(!r.keeps_alive());
    // Nothing is known before the head is whole.
    let mut r = ResponseReader::default();
    assert_eq!(
        r.feed(b"HTTP/1.1 200 OK\r\nContent-", &mut Discard),
        Ok(false)
    );
    assert!(!r.keeps_alive() && r.status().is_none() && r.framing().is_none());
}

#[test]
fn no_body_for_head_requests_1xx_204_and_304() {
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 16777216\r\n\r\n";
    let mut r = ResponseReader::new(Method::Head);
    let mut sink = Collect::default();
    assert_eq!(
        r.feed(head, &mut sink),
        Ok(true),
        "a HEAD answer ends at its head"
    );
    assert_eq!(sink.head.expect("head").content_length, Some(16_777_216));
    assert_eq!(r.body_bytes(), 0);
    // The same head answering a GET announces a body.
    let mut r = ResponseReader::new(Method::Get);
    assert_eq!(r.feed(head, &mut Discard), Ok(false));
    assert_eq!(r.framing(), Some(Framing::Length(16_777_216)));
    for raw in [
        &b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n"[..],
        b"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\n",
    ] {
        let mut r = ResponseReader::default();
        assert_eq!(r.feed(raw, &mut Discard), Ok(true), "{raw:?}");
        assert_eq!(r.framing(), Some(Framing::Length(0)));
        // A body after it is not part of this response.
        assert!(r.feed(b"x", &mut Discard).is_err());
    }
}

#[test]
fn conflicting_content_lengths_are_malformed_in_any_split() {
    let conflicting = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd";
    let list = b"HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabcd";
    for raw in [&conflicting[..], list] {
        for split in 1..=raw.len() {
            let (sink, end) = read(raw, split);
            assert_eq!(end.expect_err("conflict").kind, ErrorKind::Malformed);
            assert!(sink.head.is_none(), "no head is reported");
        }
    }
    // A list of one value repeated is that value (RFC 9110 8.6).
    let (sink, end) = read(b"HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\nabc", 64);
    assert_eq!((end, sink.body.as_slice()), (Ok(()), &b"abc"[..]));
}

#[test]
fn truncated_bodies_are_short_in_load_and_resets_in_the_sweep() {
    for raw in [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"[..],
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        b"",
    ] {
        let (_, end) = read(raw, 3);
        let kind = end.expect_err("truncated").kind;
        assert_eq!(kind, ErrorKind::ShortBody, "{raw:?}");
        assert_eq!(kind.sweep_column(), crate::error::SweepColumn::Reset);
    }
}

#[test]
fn a_head_split_across_reads_is_copied_once_whole() {
    let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Slowlab-Block: 4096\r\n\r\nhello";
    let mut r = ResponseReader::default();
    let mut sink = Collect::default();
    assert_eq!(r.feed(&raw[..10], &mut sink), Ok(false));
    assert!(r.first_byte().is_some());
    let first = r.first_byte();
    // The rest of the head and part of the body in one read.
    assert_eq!(r.feed(&raw[10..raw.len() - 2], &mut sink), Ok(false));
    assert_eq!(r.first_byte(), first, "the first byte is noted once");
    assert_eq!(r.feed(&raw[raw.len() - 2..], &mut sink), Ok(true));
    assert_eq!(sink.body, b"hello");
    assert_eq!(sink.head.expect("head").block.as_deref(), Some("4096"));
    assert!(r.is_done() && r.body_bytes() == 5);
}

/// A blocking stream that returns its pieces one per read and records how
/// many bytes each read asked for.
struct Script {
    pieces: Vec<std::io::Result<Vec<u8>>>,
    asked: Vec<usize>,
}

impl Script {
    fn new(pieces: Vec<std::io::Result<Vec<u8>>>) -> Script {
        Script {
            pieces: pieces.into_iter().rev().collect(),
            asked: Vec::new(),
        }
    }
}

impl std::io::Read for Script {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.asked.push(buf.len());
        match self.pieces.pop() {
            None => Ok(0),
            Some(Err(e)) => Err(e),
            Some(Ok(p)) => {
                buf[..p.len()].copy_from_slice(&p);
                Ok(p.len())
            }
        }
    }
}

#[test]
fn the_blocking_driver_reads_whole_buffers_and_calls_back_after_each() {
    let interrupted = std::io::Error::from(std::io::ErrorKind::Interrupted);
    let mut stream = Script::new(vec![
        Ok(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nab".to_vec()),
        Err(interrupted),
        Ok(b"cd".to_vec()),
        Ok(b"ef".to_vec()),
        Ok(b"never read".to_vec()),
    ]);
    let mut buf = vec![0u8; 64];
    let mut reader = ResponseReader::default();
    let mut sink = Collect::default();
    let mut seen = Vec::new();
    let end = read_blocking(&mut stream, &mut buf, &mut reader, &mut sink, |r| {
        seen.push(r.body_bytes());
    });
    assert_eq!(end, Ok(()));
    assert_eq!(seen, [2, 4, 6], "one call per read, after its bytes");
    assert_eq!(
        stream.asked, [64; 4],
        "every read asks for the whole buffer"
    );
    assert_eq!(sink.body, b"abcdef");
}

#[test]
fn the_blocking_driver_classifies_what_ends_a_download() {
    let timeout = std::io::Error::from(std::io::ErrorKind::WouldBlock);
    let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nab".to_vec();
    for (last, kind) in [
        (Err(timeout), ErrorKind::Timeout),
        (Err(reset), ErrorKind::Reset),
        (Ok(Vec::new()), ErrorKind::ShortBody),
        (Ok(b"abcdefgh".to_vec()), ErrorKind::Malformed),
    ] {
        let mut stream = Script::new(vec![Ok(head.clone()), last]);
        let mut reader = ResponseReader::default();
        let end = read_blocking(
            &mut stream,
            &mut [0u8; 64],
            &mut reader,
            &mut Discard,
            |_| {},
        );
        assert_eq!(end.expect_err("fails").kind, kind);
        assert_eq!(reader.status(), Some(200), "what was seen is kept");
    }
}

#[test]
fn the_async_driver_reads_until_the_framing_says_done() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    let mut stream = &raw[..];
    let mut reader = ResponseReader::default();
    let end = rt.block_on(read_async(
        &mut stream,
        &mut [0u8; 7],
        &mut reader,
        &mut Discard,
    ));
    assert_eq!(end, Ok(()));
    assert_eq!((reader.status(), reader.body_bytes()), (Some(200), 3));
    // EOF-delimited: whole at EOF; Content-Length: short at EOF.
    let mut eof = &b"HTTP/1.0 200 OK\r\n\r\nabc"[..];
    let mut reader = ResponseReader::default();
    let end = rt.block_on(read_async(
        &mut eof,
        &mut [0u8; 4],
        &mut reader,
        &mut Discard,
    ));
    assert_eq!((end, reader.body_bytes()), (Ok(()), 3));
    let mut short = &b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc"[..];
    let mut reader = ResponseReader::default();
    let end = rt.block_on(read_async(
        &mut short,
        &mut [0u8; 4],
        &mut reader,
        &mut Discard,
    ));
    assert_eq!(end.expect_err("short").kind, ErrorKind::ShortBody);
}
