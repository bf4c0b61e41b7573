use super::*;
use crate::consistency::linearizable;
use proptest::prelude::*;
use std::time::Duration;

const KNOSSOS: &str = r#"
; a register history as Knossos and Jepsen write them
{:type :invoke, :f :write, :value 1, :process 0, :time 10, :index 0}
{:type :ok,     :f :write, :value 1, :process 0, :time 20, :index 1}
{:type :invoke, :f :read, :value nil, :process 1, :time 30, :index 2}
{:type :invoke, :f :cas, :value [1 2], :process 2, :time 31}
{:type :ok,     :f :read, :value 1, :process 1, :time 40, :index 3}
{:type :fail,   :f :cas, :value [1 2], :process 2, :time 45}
{:type :info,   :f :kill, :value nil, :process :nemesis, :time 50}
{:type :invoke, :f :write, :value 3, :process 3, :time 60}
"#;

#[test]
fn a_knossos_history_is_read_with_its_outcomes() {
    let ops = read(KNOSSOS).unwrap();
    assert_eq!(ops.len(), 4, "{ops:?}");
    assert_eq!(ops[0].call, Call::Write { value: 1 });
    assert_eq!((ops[0].invoke_ns, ops[0].complete_ns), (10, 20));
    assert_eq!(ops[1].call, Call::Read { saw: Some(1) });
    assert_eq!(ops[2].outcome, Outcome::Failed);
    // Never answered: unknown.
    assert_eq!((ops[3].client, ops[3].outcome), (3, Outcome::Unknown));
    assert!(linearizable::check(&ops, Duration::from_secs(1)).is_valid());
}

#[test]
fn independent_keys_tagged_maps_and_one_vector_are_read() {
    let text = r#"[#jepsen.history.Op{:type :invoke, :f :write, :value [7 1], :process 0, :time 1}
                   {:type :ok, :f :write, :value [7 1], :process 0, :time 2}
                   {:type :invoke, :f :read, :value [7 nil], :process 1, :time 3}
                   {:type :ok, :f :read, :value [7 nil], :process 1, :time 4}
                   {:type :invoke, :f :cas, :value [8 [1 2]], :process 2, :time 5 #_ :ignored}]"#;
    let ops = read(text).unwrap();
    assert_eq!(ops.len(), 3);
    assert!(ops.iter().take(2).all(|o| o.key == 7));
    assert_eq!(ops[2].key, 8);
    // Write 1 acknowledged, then a read of nothing: a lost write.
    let r = linearizable::check(&ops, Duration::from_secs(1));
    assert_eq!(r.violations.len(), 1);
    assert_eq!(r.violations[0].0, 7);
}

#[test]
fn bad_input_is_named_by_its_place() {
    let e = read("{:type :invoke, :f :read\n :process 0").unwrap_err();
    assert!(
        e.starts_with("line 2") && e.contains("`}` is missing"),
        "{e}"
    );
    let e = read("{:type :ok, :f :read, :value 1, :process 4}").unwrap_err();
    assert!(
        e.contains("operation 1") && e.contains("never invoked"),
        "{e}"
    );
    let e = read("{:type :invoke, :f :append, :value 1, :process 4}\n{:type :ok, :f :append, :value 1, :process 4}").unwrap_err();
    assert!(
        e.contains("operation 2") && e.contains(":read, :write and :cas"),
        "{e}"
    );
    let e = read(&"[".repeat(100)).unwrap_err();
    assert!(e.contains("nested deeper"), "{e}");
}

fn edn_of(ops: &[Op]) -> String {
    let v = |v: Option<u64>| v.map_or("nil".to_string(), |v| v.to_string());
    let mut events: Vec<(u64, u8, String)> = Vec::new();
    for (p, o) in ops.iter().enumerate() {
        let (f, value) = match o.call {
            Call::Read { saw } => ("read", v(saw)),
            Call::Write { value } => ("write", value.to_string()),
            Call::Cas { from, to, .. } => ("cas", format!("[{} {to}]", v(from))),
        };
        let ask = if f == "read" {
            "nil".to_string()
        } else {
            value.clone()
        };
        events.push((
            o.invoke_ns,
            0,
            format!(
                "{{:type :invoke, :f :{f}, :value [{} {ask}], :process {p}, :time {}}}",
                o.key, o.invoke_ns
            ),
        ));
        let kind = match o.outcome {
            Outcome::Ok => "ok",
            Outcome::Failed => "fail",
            Outcome::Unknown => continue,
        };
        events.push((
            o.complete_ns,
            1,
            format!(
                "{{:type :{kind}, :f :{f}, :value [{} {value}], :process {p}, :time {}}}",
                o.key, o.complete_ns
            ),
        ));
    }
    events.sort();
    events.into_iter().map(|e| e.2 + "\n").collect()
}

proptest! {
    #[test]
    fn a_history_written_as_edn_reads_back(
        raw in proptest::collection::vec((0u64..3, 0u64..4, any::<bool>(), 0u64..100, 0u64..100, 0u8..3), 0..30)
    ) {
        let ops: Vec<Op> = raw.iter().enumerate().map(|(i, &(key, v, read, a, d, out))| {
            let outcome = [Outcome::Ok, Outcome::Failed, Outcome::Unknown][out as usize];
            let call = if read {
                Call::Read { saw: if outcome == Outcome::Unknown { None } else { Some(v) } }
            } else {
                Call::Write { value: v }
            };
            Op { client: i as u32, key, call, outcome, invoke_ns: a,
                 complete_ns: if outcome == Outcome::Unknown { a } else { a + d } }
        }).collect();
        let mut back = read(&edn_of(&ops)).unwrap();
        back.sort_by_key(|o| o.client);
        prop_assert_eq!(back, ops);
    }

    #[test]
    fn any_text_is_read_or_refused_never_a_panic(text in "[ -~\n]{0,300}") {
        let _ = read(&text);
    }

    #[test]
    fn edn_like_text_is_read_or_refused_never_a_panic(
        parts in proptest::collection::vec(prop_oneof![
            Just("{"), Just("}"), Just("["), Just("]"), Just("("), Just(")"), Just("#{"), Just("#_"),
            Just(":type"), Just(":invoke"), Just(":ok"), Just(":f"), Just(":read"), Just(":value"),
            Just(":process"), Just("nil"), Just("1"), Just("-3"), Just("\"s\\\""), Just("#tag"), Just(";c\n"), Just(" ")
        ], 0..60)
    ) {
        let _ = read(&parts.concat());
    }
}

/// Write skew, as Elle's list-append histories are written.
const SKEW: &str = r#"
{:type :invoke, :f :txn, :value [[:r 1 nil] [:append 2 1]], :process 0, :time 1}
{:type :invoke, :f :txn, :value [[:r 2 nil] [:append 1 1]], :process 1, :time 2}
{:type :ok, :f :txn, :value [[:r 1 []] [:append 2 1]], :process 0, :time 3}
{:type :ok, :f :txn, :value [[:r 2 []] [:append 1 1]], :process 1, :time 4}
{:type :invoke, :f :txn, :value [[:r 1 nil] [:r 2 nil]], :process 2, :time 5}
{:type :ok, :f :txn, :value [[:r 1 [1]] [:r 2 [1]]], :process 2, :time 6}
{:type :invoke, :f :txn, :value [[:append 3 9] [:r 3 nil]], :process 3, :time 7}
"#;

#[test]
fn list_append_transactions_are_read_and_their_anomaly_found() {
    use crate::consistency::append::{Mop, check};
    let txns = read_txns(SKEW).unwrap();
    assert_eq!(txns.len(), 4);
    assert_eq!(
        txns[0].mops,
        [
            Mop::Read {
                key: 1,
                list: Some(vec![])
            },
            Mop::Append { key: 2, value: 1 }
        ]
    );
    assert_eq!((txns[0].invoke_ns, txns[0].complete_ns), (1, 3));
    // Never answered: unknown, what it read not known.
    assert_eq!(txns[3].outcome, Outcome::Unknown);
    assert_eq!(txns[3].mops[1], Mop::Read { key: 3, list: None });
    let report = check(&txns, std::time::Duration::from_secs(5));
    let kinds: Vec<&str> = report.findings.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, ["G2-item"]);
    let e = read_txns("{:type :invoke, :f :read, :value nil, :process 0}").unwrap_err();
    assert!(e.contains("operation 1") && e.contains("are :txn"), "{e}");
    let e = read_txns("{:type :invoke, :f :txn, :value [[:incr 1 1]], :process 0}").unwrap_err();
    assert!(e.contains("[:append KEY VALUE] or [:r KEY LIST]"), "{e}");
    let e = read_txns("{:type :invoke, :f :txn, :value [[:r 1 nil]], :process 0}\n{:type :ok, :f :txn, :value [[:r 1 7]], :process 0}").unwrap_err();
    assert!(
        e.contains("operation 2") && e.contains("not a vector"),
        "{e}"
    );
}

proptest::proptest! {
    /// Nothing makes the list-append reader panic or loop: any text is read or refused.
    #[test]
    fn any_text_is_read_as_transactions_or_refused(text in "[ -~\n]{0,200}") {
        let _ = read_txns(&text);
    }
}
