use super::*;
use proptest::prelude::*;

/// The handshake a MariaDB 10.11.19 (Debian 12) sent on 2026-11-26.
pub(in crate::mysql) const MARIADB_HANDSHAKE: &str = "0a352e352e352d31302e31312e31392d4d6172696144422d302b64656231327531\
    000400000047794b496a5e765600fef7080200ff81150000000000001d0000002d7b452733693a25487b5679006d\
    7973716c5f6e61746976655f70617373776f726400";

pub(in crate::mysql) fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn a_real_mariadb_handshake_parses() {
    let h = parse_handshake(&hex(MARIADB_HANDSHAKE)).unwrap();
    assert_eq!(h.version, "5.5.5-10.11.19-MariaDB-0+deb12u1");
    assert_eq!(h.connection_id, 4);
    assert_eq!(h.plugin, NATIVE_PASSWORD);
    assert_eq!(h.nonce.len(), 20);
    // MariaDB's extended capabilities (CLIENT_MYSQL clear): cached metadata among them, asked
    // for in the answer (its last 4 reserved bytes), with CLIENT_MYSQL cleared in turn.
    assert_eq!(h.mariadb, 0x1d);
    let answer = handshake_response("u", &[], None, &h);
    assert_eq!(answer[0] & 1, 0);
    assert_eq!(&answer[28..32], &MARIADB_CACHE_METADATA.to_le_bytes());
    assert_eq!(&h.nonce[..8], b"GyKIj^vV");
    assert_ne!(h.capabilities & CLIENT_PLUGIN_AUTH, 0);
}

#[test]
fn the_native_password_scramble_is_mysqls() {
    // SHA1("secret") XOR SHA1(nonce ‖ SHA1(SHA1("secret"))), computed apart with Python's hashlib.
    let got = scramble_native(b"secret", b"abcdefghijklmnopqrst");
    assert_eq!(got, hex("8817c50fa779daef010ee7577825b0847df9842e"));
    assert!(scramble_native(b"", b"abcdefghijklmnopqrst").is_empty());
}

#[test]
fn an_error_packet_names_its_code_state_and_message() {
    let mut p = vec![0xff, 0x1f, 0x04];
    p.extend_from_slice(b"#42000Unknown database 'x'");
    let e = parse_err(&p).unwrap();
    assert_eq!((e.code, e.state.as_str()), (1055, "42000"));
    assert_eq!(e.to_string(), "ERROR 1055 (42000): Unknown database 'x'");
}

#[test]
fn an_execute_request_carries_typed_parameters() {
    let mut out = Vec::new();
    let mut sent = Vec::new();
    execute_request(
        &mut out,
        7,
        &[Param::U64(5), Param::Bytes(b"ab")],
        &mut sent,
    );
    let want = [
        vec![COM_STMT_EXECUTE, 7, 0, 0, 0, 0, 1, 0, 0, 0],
        vec![0, 1, TYPE_LONGLONG, 0x80, TYPE_BLOB, 0],
        vec![5, 0, 0, 0, 0, 0, 0, 0, 2, b'a', b'b'],
    ]
    .concat();
    assert_eq!(out, want);
    // The same types again: the server has them (flag 0, no types).
    execute_request(&mut out, 7, &[Param::U64(6), Param::Bytes(b"c")], &mut sent);
    let want = [
        vec![COM_STMT_EXECUTE, 7, 0, 0, 0, 0, 1, 0, 0, 0],
        vec![0, 0],
        vec![6, 0, 0, 0, 0, 0, 0, 0, 1, b'c'],
    ]
    .concat();
    assert_eq!(out, want);
    // A signed whole number (sysbench's binding), text and NULL: the NULL in the bitmap; new
    // types are sent.
    execute_request(
        &mut out,
        1,
        &[Param::I64(-2), Param::Text(Some("x")), Param::Text(None)],
        &mut sent,
    );
    let want = [
        vec![COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0],
        vec![
            0b100,
            1,
            TYPE_LONGLONG,
            0,
            TYPE_VAR_STRING,
            0,
            TYPE_VAR_STRING,
            0,
        ],
        vec![0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, b'x'],
    ]
    .concat();
    assert_eq!(out, want);
}

#[test]
fn a_binary_row_gives_each_column_and_its_nulls() {
    // Two columns (BIGINT, BLOB), the second NULL: bit 3 of the bitmap (offset 2).
    let row = [0, 0b1000, 9, 0, 0, 0, 0, 0, 0, 0];
    let mut at = Vec::new();
    binary_row(&row, &[TYPE_LONGLONG, TYPE_BLOB], &mut at).unwrap();
    let r = Row {
        payload: &row,
        at: &at,
        columns: &[],
    };
    assert_eq!((r.u64(0), r.get(1)), (Some(9), None));
    let row = [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, b'x', b'y', b'z'];
    binary_row(&row, &[TYPE_LONGLONG, TYPE_BLOB], &mut at).unwrap();
    let r = Row {
        payload: &row,
        at: &at,
        columns: &[],
    };
    assert_eq!((r.u64(0), r.get(1)), (Some(1), Some(&b"xyz"[..])));
    // A NULL length (0xfb) where a value should be: malformed, not a panic.
    assert!(binary_row(&[0, 0, 0xfb], &[TYPE_BLOB], &mut at).is_err());
    let mut out = Vec::new();
    // Cut anywhere: an error, never a panic.
    for cut in 0..row.len() {
        assert!(binary_row(&row[..cut], &[TYPE_LONGLONG, TYPE_BLOB], &mut out).is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn lengths_round_trip(n in any::<u64>()) {
        let mut out = Vec::new();
        put_lenenc(&mut out, n);
        let mut c = Cur::new(&out);
        prop_assert_eq!(c.lenenc().unwrap(), Some(n));
        prop_assert!(c.is_empty());
    }

    /// What a server sends is read without a panic, whatever it is.
    #[test]
    fn any_bytes_parse_or_fail_cleanly(b in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse_handshake(&b);
        let _ = parse_err(&b);
        let _ = parse_prepare_ok(&b);
        let _ = column(&b);
        let _ = text_row(&b, 3);
        let mut out = Vec::new();
        let _ = binary_row(&b, &[TYPE_LONGLONG, TYPE_BLOB, 0x03], &mut out);
    }

    /// The real handshake, mutated at one byte and cut anywhere.
    #[test]
    fn a_mutated_handshake_never_panics(at in 0usize..100, byte in any::<u8>(), cut in 0usize..=100) {
        let mut b = hex(MARIADB_HANDSHAKE);
        b[at] = byte;
        b.truncate(cut);
        let _ = parse_handshake(&b);
    }
}
