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
