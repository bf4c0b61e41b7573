use super::*;

#[test]
fn regions_and_added_collections_never_collide() {
    let mut seen = std::collections::HashSet::new();
    for rep in [0, 1, 999] {
        for variant in 0..3 {
            for what in [
                Added::Header,
                Added::Chunk(0),
                Added::Chunk(19),
                Added::Element(0),
                Added::Element(1999),
            ] {
                assert!(seen.insert(added(rep, variant, what)));
            }
        }
    }
    for region in [SMALL, ARRAY, CHAIN, COLLECTION] {
        assert!(seen.insert(key(region, 0)));
        assert!(seen.insert(key(region, 1999)));
    }
}

/// A store in memory that counts the sessions opened.
#[derive(Default)]
struct Counting {
    map: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<u64, Vec<u8>>>>,
    connects: std::sync::atomic::AtomicU64,
}

/// Each operation takes 1 µs of virtual time: the counts are exact.
struct CountingSession(
    std::sync::Arc<std::sync::Mutex<std::collections::HashMap<u64, Vec<u8>>>>,
    Clock,
);

impl Session for CountingSession {
    fn begin(&mut self, _: TxMode) -> Result<(), OpError> {
        self.1.advance(1_000);
        Ok(())
    }
    fn put(&mut self, key: u64, value: &[u8]) -> Result<(), OpError> {
        self.1.advance(1_000);
        self.0.lock().unwrap().insert(key, value.to_vec());
        Ok(())
    }
    fn get(&mut self, key: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.1.advance(1_000);
        out.clear();
        match self.0.lock().unwrap().get(&key) {
            Some(v) => out.extend_from_slice(v),
            None => return Err(OpError::new(ErrorClass::NotFound, "no such key")),
        }
        Ok(())
    }
    fn delete(&mut self, key: u64) -> Result<(), OpError> {
        self.0.lock().unwrap().remove(&key);
        Ok(())
    }
    fn commit(&mut self) -> Result<(), OpError> {
        self.1.advance(1_000);
        Ok(())
    }
    fn storage_reads(&self) -> u64 {
        0
    }
}

impl Store for Counting {
    fn namespace(&self) -> engine::driver::Namespace {
        engine::driver::Namespace {
            location: "test memory".into(),
            created_by_dyno: true,
            temporary: true,
        }
    }
    fn versions(&self) -> std::collections::BTreeMap<String, String> {
        Default::default()
    }
    fn connect(&self, clock: &Clock) -> Result<Box<dyn Session>, OpError> {
        clock.advance(1_000);
        self.connects.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(CountingSession(self.map.clone(), clock.clone())))
    }
    fn drop_caches(&self) -> Result<engine::driver::CacheDrop, OpError> {
        Ok(engine::driver::CacheDrop::NotReachable("test".into()))
    }
    fn close(self: Box<Self>) -> Result<(), engine::driver::DriverError> {
        Ok(())
    }
}

/// The sessions a repetition opens, the outcomes' reasons, with `epoch` read before each
/// test.
fn sessions_and_reasons(epoch: &dyn Fn() -> u64) -> (u64, Vec<Option<String>>) {
    let store = Counting::default();
    let stop = AtomicBool::new(false);
    let params = Params {
        thousands: 1,
        test_ns: 1_000_000,
        seed: 1,
    };
    let mut m = Magma::new(&store, params, true, &stop);
    let mut reasons = Vec::new();
    m.run_rep_restarting(1, epoch, &mut |o| reasons.push(o.reason));
    (store.connects.load(Ordering::SeqCst), reasons)
}

#[test]
fn a_client_restart_opens_a_new_session_before_the_next_test() {
    let (calm, reasons) = sessions_and_reasons(&|| 0);
    assert!(
        reasons
            .iter()
            .all(|r| !r.as_deref().unwrap_or("").contains("restart"))
    );
    // A fault falls while the fifth test runs (the epoch read before each test).
    let looks = std::sync::atomic::AtomicU64::new(0);
    let epoch = || u64::from(looks.fetch_add(1, Ordering::SeqCst) >= 6);
    let (restarted, reasons) = sessions_and_reasons(&epoch);
    assert_eq!(
        restarted,
        calm + 1,
        "one session more: the one opened after the fault"
    );
    let noted: Vec<usize> = (reasons.iter().enumerate())
        .filter(|(_, r)| r.as_deref().unwrap_or("").contains("restart-clients fault"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(noted, vec![5], "{reasons:?}");
}
