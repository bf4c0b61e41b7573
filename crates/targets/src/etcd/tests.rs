use super::*;
use proptest::prelude::*;

fn read(bytes: &[u8]) -> Result<(u16, Vec<u8>), OpError> {
    let mut input = BufReader::new(bytes);
    let (mut line, mut body) = (Vec::new(), Vec::new());
    let status = read_response(&mut input, &mut line, &mut body)?;
    Ok((status, body))
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
    let r = prefix_range("dyno_1_2_3/");
    assert!(r.contains(&B64.encode("dyno_1_2_3/")));
    assert!(r.contains(&B64.encode("dyno_1_2_30")), "'/' + 1 is '0'");
}

proptest! {
    #[test]
    fn any_bytes_are_a_response_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = read(&bytes);
    }
}
