use super::gateway::*;
use super::*;
use proptest::prelude::*;

fn read(bytes: &[u8]) -> Result<(u16, Vec<u8>), OpError> {
    let mut input = BufReader::new(bytes);
    let (mut line, mut body) = (Vec::new(), Vec::new());
    let status = read_response(&mut input, &mut line, &mut body)?;
    Ok((status, body))
}

#[test]
fn a_guard_on_a_missing_key_is_sent_with_its_zero_revision() {
    use prost::Message as _;
    let txn = grpc::TxnRequest {
        compare: vec![grpc::Compare {
            result: grpc::EQUAL,
            target: grpc::MOD,
            key: b"k".to_vec(),
            mod_revision: Some(0),
        }],
        success: Vec::new(),
    };
    // compare (field 1, 7 bytes): target MOD (field 2 = 2), key "k" (field 3), mod_revision 0
    // (field 6, sent although 0: a member of etcd's oneof); EQUAL is 0, proto3's default.
    assert_eq!(
        txn.encode_to_vec(),
        [0x0a, 7, 0x10, 2, 0x1a, 1, b'k', 0x30, 0]
    );
    // A TxnResponse whose guard failed says nothing of `succeeded`: false.
    let r: grpc::TxnResponse = grpc::decode(&[0x0a, 0]).unwrap();
    assert!(!r.succeeded && r.responses.is_empty());
}

#[test]
fn proposals_etcd_stopped_waiting_for_are_timeouts_and_its_refusals_stay_refusals() {
    let unavailable = |m: &'static str| OpError::new(ErrorClass::Refused, m);
    for m in [
        "gRPC UNAVAILABLE (14): etcdserver: request timed out",
        "gRPC UNAVAILABLE (14): etcdserver: leader changed",
        "gRPC UNAVAILABLE (14): etcdserver: server stopped",
    ] {
        assert_eq!(
            api::maybe_applied(unavailable(m)).class,
            ErrorClass::Timeout
        );
    }
    let refused = unavailable("gRPC UNAVAILABLE (14): etcdserver: no leader");
    assert_eq!(api::maybe_applied(refused).class, ErrorClass::Refused);
    let other = OpError::new(ErrorClass::Application, "request timed out");
    assert_eq!(api::maybe_applied(other).class, ErrorClass::Application);
}

#[test]
fn responses_as_the_gateway_sends_them() {
    let (s, b) =
        read(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
            .unwrap();
    assert_eq!((s, b.as_slice()), (200, b"{}".as_slice()));
    let (s, b) = read(
        b"HTTP/1.1 503 x\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
    )
    .unwrap();
    assert_eq!((s, b.as_slice()), (503, b"abcde".as_slice()));
    assert_eq!(read(b"").unwrap_err().class, ErrorClass::Reset);
    assert_eq!(
        read(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc")
            .unwrap_err()
            .class,
        ErrorClass::Reset
    );
    assert_eq!(
        read(b"HTTP/1.1 200 OK\r\n\r\n").unwrap_err().class,
        ErrorClass::Protocol
    );
    assert_eq!(
        read(b"SSH-2.0-OpenSSH\r\n").unwrap_err().class,
        ErrorClass::Protocol
    );
}

#[test]
fn gateway_errors_are_classed_by_their_grpc_code() {
    let a = Answer {
        status: 503,
        body: br#"{"error":"etcdserver: no leader","code":14,"message":"etcdserver: no leader"}"#,
    };
    let e = gateway_error(&a);
    assert_eq!(e.class, ErrorClass::Refused);
    assert!(e.message.contains("no leader"), "{}", e.message);
    let a = Answer {
        status: 500,
        body: b"<html>",
    };
    assert_eq!(gateway_error(&a).class, ErrorClass::Application);
}

#[test]
fn a_member_leads_only_when_its_status_names_itself() {
    let leads = |body: &str| serde_json::from_str::<Status>(body).unwrap().leads();
    assert!(leads(
        r#"{"header":{"cluster_id":"3","member_id":"331981"},"version":"3.4.23","leader":"331981"}"#
    ));
    assert!(!leads(r#"{"header":{"member_id":"331981"},"leader":"42"}"#));
    // An election: no leader yet.
    assert!(!leads(r#"{"header":{"member_id":"0"},"leader":"0"}"#));
    assert!(!leads(r#"{"header":{"member_id":"7"}}"#));
    assert!(!leads("{}"));
}

#[test]
fn urls_name_their_endpoints() {
    let ok = |u: &str| configure(u, &BTreeMap::new()).map(|c| c.options());
    assert!(ok("//127.0.0.1:2379").is_ok());
    assert!(ok("//127.0.0.1:1,127.0.0.1:2,127.0.0.1:3/").is_ok());
    for bad in ["", "//", "//127.0.0.1", "//a:1,b", "//a:1/x"] {
        let e = ok(bad).unwrap_err();
        assert!(e.hint.unwrap().contains("etcd://"), "{bad}");
    }
    let mut o = BTreeMap::new();
    o.insert("reads".to_string(), "stale".to_string());
    assert_eq!(
        configure("//a:1", &o)
            .err()
            .and_then(|e| e.option)
            .as_deref(),
        Some("reads")
    );
}

#[test]
fn a_prefix_range_ends_just_past_the_prefix() {
    assert_eq!(prefix_end("dyno_1_2_3/"), b"dyno_1_2_30", "'/' + 1 is '0'");
}

proptest! {
    #[test]
    fn any_bytes_are_a_response_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = read(&bytes);
    }
}

/// A server that sends `bytes` as soon as a client connects, then stops writing and waits for
/// the client to go; `H2Conn` on it calls Status once: its result, and the message it kept.
fn grpc_call_against(bytes: Vec<u8>) -> Result<Vec<u8>, OpError> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = l.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let _ = s.write_all(&bytes);
        let _ = s.shutdown(std::net::Shutdown::Write);
        let _ = s.read_to_end(&mut Vec::new());
    });
    let mut reply = Vec::new();
    let r = crate::grpc::Conn::open(&endpoint, Duration::from_secs(5), &grpc::PATHS).and_then(
        |mut c| {
            c.call(
                grpc::Method::Status as usize,
                &grpc::StatusRequest {},
                &mut reply,
            )
        },
    );
    server.join().unwrap();
    r.map(|()| reply)
}

/// Frames as a server writes them: `(type, flags, stream, payload)`.
fn h2_frames(list: &[(u8, u8, u32, &[u8])]) -> Vec<u8> {
    use crate::http::h2::frame;
    let mut out = Vec::new();
    for (kind, flags, stream, payload) in list {
        frame::head(&mut out, payload.len(), *kind, *flags, *stream);
        out.extend_from_slice(payload);
    }
    out
}

#[test]
fn a_grpc_answer_is_read_to_its_trailers_and_its_status_judged() {
    use crate::http::h2::{frame, hpack};
    let ok = hpack::encode(&[("grpc-status", "0")]);
    let message = b"\x00\x00\x00\x00\x03\x12\x01x";
    let end = frame::END_HEADERS | frame::END_STREAM;
    let answer = h2_frames(&[
        (frame::SETTINGS, 0, 0, &[0, 4, 0, 0, 0xff, 0xff]),
        (frame::PING, 0, 0, b"12345678"),
        (frame::HEADERS, frame::END_HEADERS, 1, &[0x88]),
        (frame::DATA, 0, 1, &message[..3]),
        (frame::DATA, 0, 1, &message[3..]),
        (frame::HEADERS, end, 1, &ok),
    ]);
    assert_eq!(grpc_call_against(answer).unwrap(), b"\x12\x01x");
    let unavailable = hpack::encode(&[
        (":status", "200"),
        ("grpc-status", "14"),
        ("grpc-message", "etcdserver:%20no%20leader"),
    ]);
    let e = grpc_call_against(h2_frames(&[(frame::HEADERS, end, 1, &unavailable)])).unwrap_err();
    assert_eq!(e.class, ErrorClass::Refused);
    assert_eq!(e.message, "gRPC UNAVAILABLE (14): etcdserver: no leader");
    // An answer with a body but no trailers, a reset, and a server that closes.
    let no_trailers = h2_frames(&[
        (frame::HEADERS, frame::END_HEADERS, 1, &[0x88]),
        (frame::DATA, frame::END_STREAM, 1, message),
    ]);
    assert_eq!(
        grpc_call_against(no_trailers).unwrap_err().class,
        ErrorClass::Protocol
    );
    let reset = h2_frames(&[(frame::RST_STREAM, 0, 1, &[0, 0, 0, 7])]);
    assert_eq!(
        grpc_call_against(reset).unwrap_err().class,
        ErrorClass::Refused
    );
    assert_eq!(
        grpc_call_against(Vec::new()).unwrap_err().class,
        ErrorClass::Reset
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Whatever a server sends, a call ends — with its answer or an error — and nothing panics.
    #[test]
    fn any_bytes_from_a_grpc_server_end_the_call(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = grpc_call_against(bytes);
    }

    /// Well-formed frames of any kind, flags and stream: the same.
    #[test]
    fn any_frames_from_a_grpc_server_end_the_call(
        frames in proptest::collection::vec(
            (0u8..11, any::<u8>(), 0u32..4, proptest::collection::vec(any::<u8>(), 0..40)),
            0..8,
        )
    ) {
        let list: Vec<(u8, u8, u32, &[u8])> =
            frames.iter().map(|(k, f, s, p)| (*k, *f, *s, p.as_slice())).collect();
        let _ = grpc_call_against(h2_frames(&list));
    }
}
