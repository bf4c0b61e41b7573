use super::*;

fn render(t: &Template, shared: &Shared, client: u64, rng: &mut u64) -> String {
    let mut out = Vec::new();
    t.render(&mut Draw::new(shared, client, rng), &mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn fields_are_filled_and_literals_kept() {
    let shared = Shared::default();
    let t = Template::parse(
        "/u/{{client}}/o/{{seq}}?r={{ uniform 5 7 }}&again={{seq}}",
        Escape::Path,
        None,
    )
    .unwrap();
    assert!(!t.is_fixed());
    let mut rng = 1;
    let a = render(&t, &shared, 3, &mut rng);
    let b = render(&t, &shared, 3, &mut rng);
    assert!(a.starts_with("/u/3/o/0?r="), "{a}");
    assert!(a.ends_with("&again=0"), "one seq per request: {a}");
    assert!(b.starts_with("/u/3/o/1?r="), "{b}");
    let mut seen = [false; 3];
    for _ in 0..200 {
        let s = render(&t, &shared, 0, &mut rng);
        let r: usize = s
            .split("r=")
            .nth(1)
            .unwrap()
            .split('&')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        seen[r - 5] = true;
    }
    assert_eq!(seen, [true; 3], "uniform covers both ends");
    assert!(
        Template::parse("/static", Escape::Path, None)
            .unwrap()
            .is_fixed()
    );
}

#[test]
fn a_uuid_is_version_4() {
    let t = Template::parse("{{uuid}}", Escape::None, None).unwrap();
    let mut rng = 9;
    let u = render(&t, &Shared::default(), 0, &mut rng);
    assert_eq!(u.len(), 36, "{u}");
    assert_eq!(&u[14..15], "4", "{u}");
    assert!("89ab".contains(&u[19..20]), "{u}");
    assert_ne!(u, render(&t, &Shared::default(), 0, &mut rng));
}

#[test]
fn zipf_draws_ranks_from_one_with_the_exact_shares() {
    let t = Template::parse("{{zipf 1000 0.99}}", Escape::None, None).unwrap();
    let shared = Shared::default();
    let mut rng = 5;
    let n = 100_000;
    let mut top = 0;
    for _ in 0..n {
        let k: u64 = render(&t, &shared, 0, &mut rng).parse().unwrap();
        assert!((1..=1000).contains(&k));
        top += u64::from(k == 1);
    }
    let p = ExactZipf::new(1000, 0.99).p(0);
    let share = top as f64 / n as f64;
    assert!((share / p - 1.0).abs() < 0.02, "{share} against {p}");
}

#[test]
fn data_rows_are_taken_in_order_at_random_or_per_client() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("users.csv");
    std::fs::write(
        &f,
        "email,name\na@x.test,Ann Lee\nb@x.test,Bo\nc@x.test,\"Cy, Jr\"\n",
    )
    .unwrap();
    let rows = |order| Rows::read(&f, order).unwrap();
    let shared = Shared::new(Some(rows(Order::InOrder)));
    let t = Template::parse("{{data.email}} {{data.name}}", Escape::None, shared.rows()).unwrap();
    let mut rng = 0;
    let got: Vec<String> = (0..4).map(|_| render(&t, &shared, 0, &mut rng)).collect();
    assert_eq!(
        got,
        [
            "a@x.test Ann Lee",
            "b@x.test Bo",
            "c@x.test Cy, Jr",
            "a@x.test Ann Lee"
        ]
    );
    // A path's value is percent-encoded where a byte cannot stand; a header's has no line break.
    let path = Template::parse("/u/{{data.name}}", Escape::Path, shared.rows()).unwrap();
    assert_eq!(render(&path, &shared, 0, &mut rng), "/u/Bo");
    assert_eq!(render(&path, &shared, 0, &mut rng), "/u/Cy,%20Jr");
    let shared = Shared::new(Some(rows(Order::PerClient)));
    for client in [0, 4, 2] {
        let s = render(&t, &shared, client, &mut rng);
        assert!(
            s.starts_with(["a", "b", "c"][client as usize % 3]),
            "{client}: {s}"
        );
    }
    let shared = Shared::new(Some(rows(Order::Random)));
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..100 {
        seen.insert(render(&t, &shared, 0, &mut rng));
    }
    assert_eq!(seen.len(), 3, "every row drawn: {seen:?}");

    let j = dir.path().join("users.jsonl");
    std::fs::write(
        &j,
        "{\"id\": 7, \"email\": \"a@x.test\"}\n\n{\"id\": 8, \"email\": \"b@x.test\"}\n",
    )
    .unwrap();
    let shared = Shared::new(Some(Rows::read(&j, Order::InOrder).unwrap()));
    let t = Template::parse("{{data.id}}:{{data.email}}", Escape::None, shared.rows()).unwrap();
    assert_eq!(render(&t, &shared, 0, &mut rng), "7:a@x.test");
}

#[test]
fn bad_templates_and_data_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("d.csv");
    std::fs::write(&f, "email\na@x.test\n").unwrap();
    let rows = Rows::read(&f, Order::InOrder).unwrap();
    let bad = |text: &str| Template::parse(text, Escape::None, Some(&rows)).unwrap_err();
    let e = bad("/x/{{sequ}}");
    assert_eq!(e.offset, 3);
    assert!(
        e.message
            .contains("unknown template field {{sequ}}; did you mean \"seq\"?"),
        "{}",
        e.message
    );
    assert!(
        bad("{{data.mail}}")
            .message
            .contains("no column \"mail\"; did you mean \"email\"?")
    );
    assert!(bad("{{uniform 9 1}}").message.contains("9 is above 1"));
    assert!(
        bad("{{uniform 1}}")
            .message
            .contains("write {{uniform A B}}")
    );
    assert!(bad("{{zipf 0 0.99}}").message.contains("N is 1 to"));
    assert!(bad("{{zipf 10 -1}}").message.contains("THETA"));
    assert!(bad("a {{seq").message.contains("no `}}`"));
    let none = Template::parse("{{data.email}}", Escape::None, None).unwrap_err();
    assert!(none.message.contains("no data file"), "{}", none.message);

    let read = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        Rows::read(&p, Order::InOrder).unwrap_err()
    };
    assert!(read("e.csv", "email\n").contains("no rows"));
    assert!(
        read("r.csv", "a,b\n1,2\n3\n").contains("line 3"),
        "{}",
        read("r.csv", "a,b\n1,2\n3\n")
    );
    assert!(read("j.jsonl", "{\"a\": 1}\n[1]\n").contains("line 2: not a JSON object"));
    assert!(read("k.jsonl", "{\"a\": 1}\n{\"b\": 2}\n").contains("line 1: no \"b\""));
}

proptest::proptest! {
    /// Any text parses or is refused with an offset inside it; what parses renders without
    /// panicking, and a text without `{{` renders as itself.
    #[test]
    fn any_text_parses_or_is_refused_in_place(text in "[a-z{} 0-9.]{0,40}") {
        match Template::parse(&text, Escape::Path, None) {
            Ok(t) => {
                let mut rng = 0;
                let s = render(&t, &Shared::default(), 0, &mut rng);
                if !text.contains("{{") {
                    proptest::prop_assert_eq!(s, text);
                }
            }
            Err(e) => proptest::prop_assert!(e.offset < text.len()),
        }
    }
}
