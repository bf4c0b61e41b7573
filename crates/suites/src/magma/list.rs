//! What the suites' tests are, for the engine that runs them and the reports that show them.

/// How a test's figure reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Operations per second (shown as a duration when under one per second, as the seed does).
    PerSecond,
    /// The time one run of the operation took.
    Seconds,
}

/// One test of the `magma` suite: its group and name as MagmaBenchmarker prints them.
#[derive(Debug, Clone, Copy)]
pub struct MagmaTest {
    pub group: &'static str,
    pub name: &'static str,
    pub unit: Unit,
    /// What one operation is, for the book and `--help`.
    pub what: &'static str,
}

const fn t(group: &'static str, name: &'static str, unit: Unit, what: &'static str) -> MagmaTest {
    MagmaTest {
        group,
        name,
        unit,
        what,
    }
}

/// MagmaBenchmarker's tests, in the order they run and print. T is `thousands` (1000 by default).
pub const MAGMA: [MagmaTest; 17] = [
    t(
        "connectionTests",
        "timeToDisconnect",
        Unit::Seconds,
        "close a session",
    ),
    t(
        "connectionTests",
        "timeToConnect",
        Unit::Seconds,
        "open a session",
    ),
    t(
        "readTests",
        "peakRefreshRate",
        Unit::PerSecond,
        "end the read transaction, begin a new one, read the root object",
    ),
    t(
        "readTests",
        "singleObjectRead",
        Unit::PerSecond,
        "read one small object",
    ),
    t(
        "readTests",
        "oneThousandElementArrayRead",
        Unit::PerSecond,
        "read one object holding T elements",
    ),
    t(
        "readTests",
        "oneThousandElementArrayOfObjectsRead",
        Unit::PerSecond,
        "read an array of T references and the T objects (one batched read)",
    ),
    t(
        "readTests",
        "oneMillionObjectPointersRead",
        Unit::PerSecond,
        "read T arrays of T references each (T² pointers; one batched read)",
    ),
    t(
        "readTests",
        "oneThousandLevelsDeepRead",
        Unit::PerSecond,
        "follow a chain of T objects, each a dependent read",
    ),
    t(
        "writeTests",
        "peakCommitRate",
        Unit::PerSecond,
        "begin, rewrite one small object, commit",
    ),
    t(
        "writeTests",
        "oneThousandElementArrayCommit",
        Unit::PerSecond,
        "begin, rewrite an object of T elements, commit",
    ),
    t(
        "writeTests",
        "a1001BufferCommit",
        Unit::PerSecond,
        "begin, rewrite a 1001-byte buffer, commit",
    ),
    t(
        "writeTests",
        "aOneMillionBufferCommit",
        Unit::PerSecond,
        "begin, rewrite a T×1000-byte buffer, commit",
    ),
    t(
        "magmaArrayTests",
        "getMagmaArraySize",
        Unit::PerSecond,
        "read a large collection's size",
    ),
    t(
        "magmaArrayTests",
        "updateThousandsOfMagmaArrayElements",
        Unit::PerSecond,
        "elements per second: set T random elements of a T-element collection, one commit",
    ),
    t(
        "magmaCollectionTests",
        "addThousandsOfObjectsTenAtATime",
        Unit::Seconds,
        "add T new objects to a collection, committing every 10",
    ),
    t(
        "magmaCollectionTests",
        "addThousandsOfObjectsOneHundredAtATime",
        Unit::Seconds,
        "add T new objects to a collection, committing every 100",
    ),
    t(
        "magmaCollectionTests",
        "addThousandsOfObjectsAtOnce",
        Unit::Seconds,
        "add T new objects to a collection in one commit",
    ),
];

/// The catalog entry of a `magma` test by name.
pub fn magma_test(name: &str) -> Option<&'static MagmaTest> {
    MAGMA.iter().find(|t| t.name == name)
}
