use super::*;

/// Feeds `parts` one after another; returns the final feed and the bytes used of the last part.
fn feed_all(r: &mut HttpReader, parts: &[&[u8]]) -> Result<Feed, OpError> {
    let mut last = Ok(Feed::More);
    for p in parts {
        last = r.feed(p, false);
        if !matches!(last, Ok(Feed::More)) {
            return last;
        }
    }
    last
}

#[test]
fn content_length_split_anywhere() {
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    for cut in 1..resp.len() {
        let mut r = HttpReader::new(false, 1 << 20);
        let f = feed_all(&mut r, &[&resp[..cut], &resp[cut..]]).unwrap();
        assert_eq!(
            f,
            Feed::Done {
                used: resp.len() - cut,
                outcome: Ok(()),
                keep_alive: true
            },
            "cut at {cut}"
        );
    }
}

#[test]
fn chunked_with_extensions_and_trailers() {
    let resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n";
    for cut in 1..resp.len() {
        let mut r = HttpReader::new(false, 1 << 20);
        match feed_all(&mut r, &[&resp[..cut], &resp[cut..]]).unwrap() {
            Feed::Done {
                used,
                outcome,
                keep_alive,
            } => {
                assert_eq!(used, resp.len() - cut, "cut at {cut}");
                assert!(outcome.is_ok() && keep_alive);
            }
            Feed::More => panic!("cut at {cut}: not done"),
        }
    }
}

#[test]
fn non_2xx_is_application_and_close_is_honoured() {
    let mut r = HttpReader::new(false, 1 << 20);
    let f = r
        .feed(
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            false,
        )
        .unwrap();
    let Feed::Done {
        outcome,
        keep_alive,
        ..
    } = f
    else {
        panic!()
    };
    assert_eq!(outcome.unwrap_err().class, ErrorClass::Application);
    assert!(!keep_alive);
}

#[test]
fn until_close_and_http10() {
    let mut r = HttpReader::new(false, 1 << 20);
    assert_eq!(
        r.feed(b"HTTP/1.0 200 OK\r\n\r\nsome body", false).unwrap(),
        Feed::More
    );
    assert_eq!(
        r.feed(b"", true).unwrap(),
        Feed::Done {
            used: 0,
            outcome: Ok(()),
            keep_alive: false
        }
    );
}

/// A server that sends interim responses and nothing else is stopped at the limit.
#[test]
fn interim_responses_alone_end_at_the_limit() {
    let mut r = HttpReader::new(false, 1000);
    let interim = b"HTTP/1.1 100 Continue\r\n\r\n";
    let mut fed = 0;
    let e = loop {
        match r.feed(interim, false) {
            Ok(Feed::More) if fed < 1000 => fed += 1,
            Ok(f) => panic!("after {fed}: {f:?}"),
            Err(e) => break e,
        }
    };
    assert_eq!(e.class, ErrorClass::Protocol, "{e}");
    assert!(fed * interim.len() <= 1000, "{fed} interim responses taken");
}

#[test]
fn interim_100_is_skipped_and_head_has_no_body() {
    let mut r = HttpReader::new(false, 1 << 20);
    let resp = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
    assert!(matches!(
        r.feed(resp, false).unwrap(),
        Feed::Done {
            used: 70,
            outcome: Ok(()),
            ..
        }
    ));
    let mut r = HttpReader::new(true, 1 << 20);
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
    assert!(matches!(
        r.feed(resp, false).unwrap(),
        Feed::Done { used: 39, .. }
    ));
}

#[test]
fn garbage_and_truncation_are_errors_not_hangs() {
    let mut r = HttpReader::new(false, 1 << 20);
    let e = r.feed(b"\x00\x01garbage\r\n\r\n", false).unwrap_err();
    assert_eq!(e.class, ErrorClass::Protocol);
    let mut r = HttpReader::new(false, 1 << 20);
    assert_eq!(
        r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", false)
            .unwrap(),
        Feed::More
    );
    assert_eq!(r.feed(b"", true).unwrap_err().class, ErrorClass::Reset);
    let mut r = HttpReader::new(false, 1 << 20);
    let e = r.feed(&vec![b'a'; MAX_HEAD + 10], false).unwrap_err();
    assert!(e.message.contains("64 KiB"));
    let mut r = HttpReader::new(false, 100);
    let e = r
        .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", false)
        .unwrap_err();
    assert!(e.message.contains("max_response"));
    let mut r = HttpReader::new(false, 1 << 20);
    let e = r
        .feed(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            false,
        )
        .unwrap_err();
    assert!(e.message.contains("chunk size"));
}

#[test]
fn reader_is_reusable_across_responses() {
    let mut r = HttpReader::new(false, 1 << 20);
    for _ in 0..3 {
        r.reset(0);
        let f = r
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
            .unwrap();
        assert!(matches!(
            f,
            Feed::Done {
                outcome: Ok(()),
                ..
            }
        ));
    }
}

mod fuzz {
    use super::*;
    use crate::fuzz::{bytes_and_cuts, drive, mutated};
    use proptest::prelude::*;

    const VALID: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n0\r\nT: v\r\n\r\nHTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\nbye";

    fn check(data: &[u8], cuts: &[usize], eof: bool) {
        for head in [false, true] {
            let mut r = HttpReader::new(head, 4096);
            // The reader keeps only a head, of at most MAX_HEAD bytes.
            drive(&mut r, data, cuts, eof);
            assert!(r.head.len() <= MAX_HEAD);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_bytes_are_responses_or_an_error((data, cuts, eof) in bytes_and_cuts()) {
            check(&data, &cuts, eof);
        }

        #[test]
        fn mutated_responses_are_responses_or_an_error((data, cuts, eof) in mutated(VALID)) {
            check(&data, &cuts, eof);
        }
    }

    #[test]
    fn a_head_that_never_ends_is_refused_at_its_bound() {
        let mut r = HttpReader::new(false, 1 << 20);
        let line = b"X-Long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
        let mut fed = 0;
        let mut first = r.feed(b"HTTP/1.1 200 OK\r\n", false);
        while matches!(first, Ok(Feed::More)) && fed <= MAX_HEAD * 2 {
            first = r.feed(line, false);
            fed += line.len();
        }
        assert!(first.is_err(), "an endless head must be an error");
        assert!(r.head.len() <= MAX_HEAD);
    }
}
