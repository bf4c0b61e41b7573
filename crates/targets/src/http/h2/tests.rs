use super::*;
use host::h2::huffman;
use proptest::prelude::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Header blocks written by another implementation (Python's `hpack` 4.0.0, Huffman and
/// incremental indexing on), one after the other on one connection.
const BLOCKS: [&str; 3] = [
    "887689aa6355e580ae212e1f6196df3dbf4a09c5349fba82009c500fdc6dbb800298b46f5f87497ca589d34d1f5c83702dff",
    "88c16196df3dbf4a09c5349fba82009c500fdc6dbb800a98b46fc0bf",
    "48836c0cffc3408bf2b12d424f4ad3947216cf90fffe3ffffc2afffe3ffffb08790bfe7f40889acac8b21234da8f820b5f",
];

fn decode_all(d: &mut hpack::Decoder, block: &[u8]) -> Vec<(String, String)> {
    let mut got = Vec::new();
    d.decode(block, &|_| true, &mut |n, v| {
        got.push((
            String::from_utf8_lossy(n).into(),
            String::from_utf8_lossy(v).into(),
        ))
    })
    .unwrap();
    got
}

#[test]
fn huffman_matches_the_rfcs_example_and_round_trips() {
    let mut out = Vec::new();
    huffman::encode(b"www.example.com", &mut out);
    assert_eq!(out, hex("f1e3c2e5f23a6ba0ab90f4ff"));
    let mut text = Vec::new();
    huffman::decode(&out, &mut text).unwrap();
    assert_eq!(text, b"www.example.com");
    // EOS's code inside a string, and padding of eight ones, are refused.
    assert!(huffman::decode(&[0xff, 0xff, 0xff, 0xff], &mut text).is_err());
    out.clear();
    huffman::encode(b"a", &mut out);
    out.push(0xff);
    assert!(huffman::decode(&out, &mut text).is_err());
}

#[test]
fn header_blocks_of_another_implementation_decode_with_its_table() {
    let mut d = hpack::Decoder::new(4096);
    let date = |s| {
        vec![
            (":status".into(), "200".into()),
            ("server".into(), "nginx/1.22.1".into()),
            ("date".into(), format!("Thu, 26 Nov 2026 09:55:0{s} GMT")),
            ("content-type".into(), "text/html".into()),
            ("content-length".into(), "615".into()),
        ]
    };
    assert_eq!(decode_all(&mut d, &hex(BLOCKS[0])), date(0));
    // The second refers to the entries the first made.
    assert_eq!(decode_all(&mut d, &hex(BLOCKS[1])), date(1));
    let third = decode_all(&mut d, &hex(BLOCKS[2]));
    assert_eq!(third[0], (":status".into(), "503".into()));
    assert_eq!(third[2], ("x-custom-header".into(), "ünïcode?".into()));
    assert_eq!(third[3], ("grpc-status".into(), "14".into()));
    // Only the wanted header is handed over, and the table still follows.
    let mut d = hpack::Decoder::new(4096);
    for b in BLOCKS {
        let mut status = Vec::new();
        d.decode(&hex(b), &|n| n == b":status", &mut |_, v| {
            status.push(v.to_vec())
        })
        .unwrap();
        assert_eq!(status.len(), 1);
    }
}

#[test]
fn a_request_block_is_static_indexes_and_plain_literals() {
    let block = hpack::encode(&[
        (":method", "GET"),
        (":scheme", "http"),
        (":authority", "127.0.0.1:8080"),
        (":path", "/x"),
        ("user-agent", "dyno"),
        ("x-a", "1"),
    ]);
    let mut d = hpack::Decoder::new(4096);
    let got = decode_all(&mut d, &block);
    assert_eq!(got[0], (":method".into(), "GET".into()));
    assert_eq!(got[2], (":authority".into(), "127.0.0.1:8080".into()));
    assert_eq!(got[5], ("x-a".into(), "1".into()));
    assert_eq!(&block[..3], &[0x20, 0x82, 0x86]);
}

fn request(body: &[u8]) -> Arc<[Request]> {
    Arc::from([Request {
        block: hpack::encode(&[(":method", "GET"), (":path", "/")]),
        body: body.to_vec(),
        max_response: 1 << 20,
        stream_window: 1 << 16,
        connection_window: 1 << 20,
        grpc: false,
        streaming: false,
    }])
}

/// Frames a server sends: `(type, flags, stream, payload)`.
fn frames(list: &[(u8, u8, u32, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (kind, flags, stream, payload) in list {
        frame::head(&mut out, payload.len(), *kind, *flags, *stream);
        out.extend_from_slice(payload);
    }
    out
}

/// Each request that ended, its outcome's class (a response's or a failure's); `Err(None)`
/// for one to send again.
type Done = Vec<(usize, Result<(), Option<ErrorClass>>)>;

fn feed(h: &mut H2, bytes: &[u8], out: &mut Vec<u8>) -> Result<Done, OpError> {
    let mut done = Vec::new();
    h.feed(bytes, out, &mut |slot, how| {
        done.push((
            slot,
            match how {
                Ended::Response(r) => r.map_err(|e| Some(e.class)),
                Ended::Failed(e) => Err(Some(e.class)),
                Ended::Unprocessed => Err(None),
                Ended::Message => return,
            },
        ))
    })?;
    Ok(done)
}

#[test]
fn responses_end_their_requests_by_stream_and_are_judged_by_status() {
    let mut h = H2::new(request(b""));
    let mut out = Vec::new();
    h.start(&mut out);
    assert!(out.starts_with(frame::PREFACE));
    out.clear();
    h.open(7, 0, &mut out);
    h.open(8, 0, &mut out);
    // HEADERS on streams 1 and 3, each ending its stream.
    assert_eq!(Head::parse(out[..9].try_into().unwrap()).stream, 1);
    assert_eq!(out[4], frame::END_STREAM | frame::END_HEADERS);
    out.clear();
    let reply = frames(&[
        (frame::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]),
        (frame::HEADERS, frame::END_HEADERS, 3, &[0x8e]), // :status 500
        (frame::HEADERS, frame::END_HEADERS, 1, &[0x88]), // :status 200
        (frame::DATA, 0, 1, b"hello "),
        (frame::DATA, frame::END_STREAM, 1, b"world"),
        (frame::DATA, frame::END_STREAM, 3, b""),
        (frame::PING, 0, 0, b"12345678"),
    ]);
    // Fed a byte at a time: frames cut anywhere are kept until whole.
    let mut done = Vec::new();
    for b in &reply {
        done.extend(feed(&mut h, std::slice::from_ref(b), &mut out).unwrap());
    }
    assert_eq!(
        done,
        vec![(7, Ok(())), (8, Err(Some(ErrorClass::Application)))]
    );
    // A SETTINGS acknowledgement and the PING's answer went out.
    let ack = frames(&[(frame::SETTINGS, frame::ACK, 0, &[])]);
    assert!(out.windows(ack.len()).any(|w| w == ack));
    let pong = frames(&[(frame::PING, frame::ACK, 0, b"12345678")]);
    assert!(out.ends_with(&pong));
}

/// A server that sends pings and nothing else: answered, up to a bound, then the connection
/// ends with ENHANCE_YOUR_CALM; a response between them starts the count again.
#[test]
fn a_flood_of_frames_that_answer_nothing_ends_the_connection() {
    let mut h = H2::new(request(b""));
    let mut out = Vec::new();
    h.start(&mut out);
    h.open(7, 0, &mut out);
    let ping = frames(&[(frame::PING, 0, 0, b"12345678")]);
    let response = frames(&[(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        1,
        &[0x88],
    )]);
    for _ in 0..MOST_IDLE_FRAMES {
        out.clear();
        feed(&mut h, &ping, &mut out).unwrap();
    }
    assert_eq!(
        feed(&mut h, &response, &mut out).unwrap(),
        vec![(7, Ok(()))]
    );
    for _ in 0..MOST_IDLE_FRAMES {
        out.clear();
        feed(&mut h, &ping, &mut out).unwrap();
    }
    let e = feed(&mut h, &ping, &mut out).unwrap_err();
    assert_eq!(e.class, ErrorClass::Protocol, "{e}");
    assert!(e.message.contains("ENHANCE_YOUR_CALM"), "{e}");
    let goaway = frames(&[(frame::GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 0xb])]);
    assert!(out.ends_with(&goaway), "{out:?}");
}

#[cfg(feature = "grpc")]
#[test]
fn grpc_calls_are_judged_by_their_trailers() {
    let mut req = request(b"\0\0\0\0\0")[0].clone();
    req.grpc = true;
    let mut h = H2::new(Arc::from([req]));
    let mut out = Vec::new();
    h.start(&mut out);
    for slot in 0..4 {
        h.open(slot, 0, &mut out);
    }
    let ok = hpack::encode(&[("grpc-status", "0")]);
    let unavailable = hpack::encode(&[
        (":status", "200"),
        ("grpc-status", "14"),
        ("grpc-message", "no%20leader"),
    ]);
    let end = frame::END_HEADERS | frame::END_STREAM;
    let reply = frames(&[
        // A whole call: headers, a message, trailers.
        (frame::HEADERS, frame::END_HEADERS, 1, &[0x88]),
        (frame::DATA, 0, 1, b"\0\0\0\0\0"),
        (frame::HEADERS, end, 1, &ok),
        // Trailers only: the status in the one header block.
        (frame::HEADERS, end, 3, &unavailable),
        // A body ended without trailers: no grpc-status.
        (frame::HEADERS, frame::END_HEADERS, 5, &[0x88]),
        (frame::DATA, frame::END_STREAM, 5, b""),
        // Not 200.
        (frame::HEADERS, end, 7, &[0x8e]),
    ]);
    let done = feed(&mut h, &reply, &mut out).unwrap();
    assert_eq!(
        done,
        vec![
            (0, Ok(())),
            (1, Err(Some(ErrorClass::Refused))),
            (2, Err(Some(ErrorClass::Protocol))),
            (3, Err(Some(ErrorClass::Application))),
        ]
    );
}

/// Server streaming: each message is told as its last byte comes, wherever the frames cut it;
/// the call ends with its trailers.
#[test]
fn a_streamed_response_tells_each_message() {
    let mut req = request(b"\0\0\0\0\0")[0].clone();
    (req.grpc, req.streaming) = (true, true);
    let mut h = H2::new(Arc::from([req]));
    let mut out = Vec::new();
    h.start(&mut out);
    h.open(3, 0, &mut out);
    let ok = hpack::encode(&[("grpc-status", "0")]);
    let two = b"\0\0\0\0\x02ab\0\0\0\0\x01c";
    let reply = frames(&[
        (frame::HEADERS, frame::END_HEADERS, 1, &[0x88]),
        (frame::DATA, 0, 1, &two[..4]),
        (frame::DATA, 0, 1, &two[4..9]),
        (frame::DATA, 0, 1, &two[9..]),
        (
            frame::HEADERS,
            frame::END_HEADERS | frame::END_STREAM,
            1,
            &ok,
        ),
    ]);
    let mut seen = Vec::new();
    h.feed(&reply, &mut out, &mut |slot, how| seen.push((slot, how)))
        .unwrap();
    assert_eq!(
        seen,
        vec![
            (3, Ended::Message),
            (3, Ended::Message),
            (3, Ended::Response(Ok(())))
        ]
    );
}

#[test]
fn resets_goaway_and_timeouts_end_only_their_requests() {
    let mut h = H2::new(request(b""));
    let mut out = Vec::new();
    h.start(&mut out);
    for slot in 0..3 {
        h.open(slot, 0, &mut out);
    }
    let reply = frames(&[
        (frame::RST_STREAM, 0, 1, &[0, 0, 0, 7]),
        (frame::GOAWAY, 0, 0, &[0, 0, 0, 3, 0, 0, 0, 0]),
    ]);
    let done = feed(&mut h, &reply, &mut out).unwrap();
    // Refused by a reset; above GOAWAY's last stream: to be sent again.
    assert_eq!(
        done,
        vec![(0, Err(Some(ErrorClass::Refused))), (2, Err(None))]
    );
    assert!(h.closing() && !h.can_open());
    // Stream 3 is still the server's to answer; dyno gives up on it.
    out.clear();
    h.cancel(1, &mut out);
    assert_eq!(out, frames(&[(frame::RST_STREAM, 0, 3, &[0, 0, 0, 8])]));
    let late = frames(&[(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        3,
        &[0x88],
    )]);
    assert_eq!(feed(&mut h, &late, &mut out).unwrap(), vec![]);
}

#[test]
fn a_body_waits_for_the_servers_window() {
    let body = vec![7u8; 70_000];
    let mut h = H2::new(request(&body));
    let mut out = Vec::new();
    h.start(&mut out);
    out.clear();
    h.open(0, 0, &mut out);
    // HEADERS, then DATA up to the initial window of 65,535 bytes, in frames of 16,384.
    let sent_data = |out: &[u8]| {
        let (mut at, mut n) = (0, 0);
        while at < out.len() {
            let h = Head::parse(out[at..at + 9].try_into().unwrap());
            if h.kind == frame::DATA {
                n += h.len;
            }
            at += 9 + h.len;
        }
        n
    };
    assert_eq!(sent_data(&out), 65_535);
    out.clear();
    let more = frames(&[
        (frame::WINDOW_UPDATE, 0, 0, &[0, 1, 0, 0]),
        (frame::WINDOW_UPDATE, 0, 1, &[0, 1, 0, 0]),
    ]);
    feed(&mut h, &more, &mut out).unwrap();
    assert_eq!(sent_data(&out), 70_000 - 65_535);
}

/// A body the server lets through a byte at a time, each byte by two window updates (the
/// connection's, then the stream's): updates that let it go on are no flood, past the bound.
#[test]
fn window_updates_that_let_a_body_go_on_are_not_a_flood() {
    let steps = MOST_IDLE_FRAMES as usize + 10;
    let body = vec![7u8; 65_535 + steps];
    let mut h = H2::new(request(&body));
    let mut out = Vec::new();
    h.start(&mut out);
    h.open(0, 0, &mut out);
    let byte = frames(&[
        (frame::WINDOW_UPDATE, 0, 0, &[0, 0, 0, 1]),
        (frame::WINDOW_UPDATE, 0, 1, &[0, 0, 0, 1]),
    ]);
    for i in 0..steps {
        out.clear();
        feed(&mut h, &byte, &mut out).unwrap_or_else(|e| panic!("at {i}: {e}"));
        assert_eq!(out[3], frame::DATA, "at {i}");
    }
}

#[test]
fn broken_frames_end_the_connection_with_a_named_error() {
    let cases: [(&[u8], &str); 5] = [
        (
            &frames(&[(frame::SETTINGS, 0, 0, &[0, 3, 0])]),
            "FRAME_SIZE_ERROR",
        ),
        (
            &frames(&[(frame::HEADERS, 0, 1, &[0x88]), (frame::DATA, 0, 1, b"x")]),
            "interrupted",
        ),
        (
            &frames(&[(frame::PUSH_PROMISE, frame::END_HEADERS, 1, &[0, 0, 0, 2])]),
            "push",
        ),
        (
            &frames(&[(
                frame::HEADERS,
                frame::END_HEADERS,
                1,
                &[0xff, 0xff, 0xff, 0xff],
            )]),
            "COMPRESSION_ERROR",
        ),
        (
            &frames(&[(frame::WINDOW_UPDATE, 0, 0, &[0, 0, 0, 0])]),
            "FLOW_CONTROL_ERROR",
        ),
    ];
    for (bytes, words) in cases {
        let mut h = H2::new(request(b""));
        let mut out = Vec::new();
        h.open(0, 0, &mut out);
        let e = feed(&mut h, bytes, &mut out).unwrap_err();
        assert_eq!(e.class, ErrorClass::Protocol);
        assert!(e.message.contains(words), "{words}: {}", e.message);
    }
    // A frame longer than dyno allows, and a header block past its limit.
    let mut h = H2::new(request(b""));
    let mut big = Vec::new();
    frame::head(&mut big, 20_000, frame::DATA, 0, 1);
    assert!(feed(&mut h, &big, &mut Vec::new()).is_err());
    let mut h = H2::new(request(b""));
    let mut out = Vec::new();
    h.open(0, 0, &mut out);
    let mut huge = frames(&[(frame::HEADERS, 0, 1, &[0x88])]);
    for _ in 0..(MAX_HEADER_BLOCK / 16_000 + 1) {
        huge.extend(frames(&[(frame::CONTINUATION, 0, 1, &[0u8; 16_000])]));
    }
    let e = feed(&mut h, &huge, &mut out).unwrap_err();
    assert!(e.message.contains("256 KiB"), "{}", e.message);
}

proptest! {
    /// Whatever a server sends, in whatever pieces, the session answers without a panic, and
    /// the pieces do not change what it concludes.
    #[test]
    fn any_bytes_in_any_pieces_are_read_alike(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        cut in 0usize..300,
    ) {
        let run = |pieces: &[&[u8]]| {
            let mut h = H2::new(request(b""));
            let mut out = Vec::new();
            for slot in 0..4 {
                h.open(slot, 0, &mut out);
            }
            let mut all = Vec::new();
            for p in pieces {
                match feed(&mut h, p, &mut out) {
                    Ok(d) => all.extend(d),
                    Err(e) => return (all, Some(e.message.to_string())),
                }
            }
            (all, None)
        };
        let cut = cut.min(bytes.len());
        prop_assert_eq!(run(&[&bytes]), run(&[&bytes[..cut], &bytes[cut..]]));
    }

    #[test]
    fn huffman_round_trips(text in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut coded = Vec::new();
        huffman::encode(&text, &mut coded);
        let mut back = Vec::new();
        prop_assert!(huffman::decode(&coded, &mut back).is_ok());
        prop_assert_eq!(back, text);
    }

    #[test]
    fn any_header_block_decodes_or_fails_cleanly(b in proptest::collection::vec(any::<u8>(), 0..128)) {
        let mut d = hpack::Decoder::new(4096);
        let _ = d.decode(&b, &|_| true, &mut |_, _| {});
    }
}
