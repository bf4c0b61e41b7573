//! Rendering a templated request allocates nothing once its buffers have grown: counted by a
//! global allocator that tallies each thread's allocations, around the driver's own `render` —
//! the call the load engine makes at each request's start.

use engine::load::Render;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is passed to the system allocator unchanged; only a thread-local count
// (const-initialised, so reading it never allocates) is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn rendering_a_templated_request_allocates_nothing_once_warm() {
    let dir = tempfile::tempdir().unwrap();
    let rows = dir.path().join("users.csv");
    std::fs::write(&rows, "email,name\na@x.test,Ann Lee\nb@x.test,Bo Ek\n").unwrap();
    let options = BTreeMap::from([
        ("method".to_string(), "POST".to_string()),
        (
            "headers".to_string(),
            "X-Id: {{uuid}}\nX-Client: {{client}}".to_string(),
        ),
        (
            "body".to_string(),
            "{\"user\": \"{{data.email}}\", \"n\": {{uniform 1 1000000}}}".to_string(),
        ),
        ("data_rows".to_string(), rows.display().to_string()),
    ]);
    let target = "//127.0.0.1:9/items/{{zipf 1000 0.99}}?seq={{seq}}&who={{data.name}}";
    let config = targets::http::configure(target, &options).unwrap();
    let protocol = config.endpoint().unwrap().protocol;
    assert!(protocol.templated());
    let (mut rng, mut scratch, mut out) = (7u64, Vec::new(), Vec::new());
    let mut render = |client: u64, out: &mut Vec<u8>| {
        out.clear();
        let mut r = Render {
            client,
            shard: (0, 1),
            rng: &mut rng,
            scratch: &mut scratch,
            captures: &[],
        };
        protocol.render(0, &mut r, out);
    };
    for client in 0..16 {
        render(client, &mut out);
    }
    let first = String::from_utf8(out.clone()).unwrap();
    assert!(first.starts_with("POST /items/"), "{first}");
    assert!(first.contains("&who=Bo%20Ek HTTP/1.1\r\n"), "{first}");
    assert!(first.contains("\r\nX-Client: 15\r\n"), "{first}");
    let body = first.split("\r\n\r\n").nth(1).unwrap();
    assert!(
        first.contains(&format!("Content-Length: {}\r\n", body.len())),
        "{first}"
    );
    // The buffers have grown to a request's size; a reserve covers the longest one.
    out.reserve(256);
    let before = allocations();
    for client in 0..10_000 {
        render(client % 64, &mut out);
    }
    assert_eq!(allocations() - before, 0, "allocations over 10,000 renders");
}
