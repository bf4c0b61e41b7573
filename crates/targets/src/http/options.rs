//! The options of `http://`, `https://` and `h2c://` targets, each spelled once: the lists
//! each scheme takes are made of them.

use engine::driver::OptionSpec;

pub(super) const H2C_OPTIONS: &[OptionSpec] = &[
    OPTIONS[0],
    OPTIONS[1],
    OPTIONS[2],
    OPTIONS[3],
    OPTIONS[5],
    OPTIONS[6],
    OPTIONS[7],
    OPTIONS[8],
    OPTIONS[9],
    OPTIONS[10],
    OPTIONS[11],
    OPTIONS[12],
    OPTIONS[13],
    OPTIONS[14],
    STREAMS,
    WINDOW,
    CONNECTION_WINDOW,
];

#[cfg(feature = "tls")]
pub(crate) const CA: OptionSpec = OptionSpec {
    name: "ca",
    default: "",
    help: "trust the CA certificates of this PEM file instead of Mozilla's roots",
};
#[cfg(feature = "tls")]
pub(crate) const INSECURE: OptionSpec = OptionSpec {
    name: "insecure",
    default: "false",
    help: "accept any certificate (a test server's self-signed one); the traffic is still encrypted",
};

pub(crate) const STREAMS: OptionSpec = OptionSpec {
    name: "streams",
    default: "1",
    help: "HTTP/2: requests in flight on each connection at once, each on its stream (h2load's -m); a closed loop runs connections × streams clients",
};
pub(crate) const WINDOW: OptionSpec = OptionSpec {
    name: "window",
    default: "1GiB",
    help: "HTTP/2: each stream's receive window (SETTINGS_INITIAL_WINDOW_SIZE), at most 2GiB - 1",
};
pub(crate) const CONNECTION_WINDOW: OptionSpec = OptionSpec {
    name: "connection_window",
    default: "1GiB",
    help: "HTTP/2: the connection's receive window, at most 2GiB - 1",
};

#[cfg(feature = "tls")]
pub(super) const HTTPS_OPTIONS: &[OptionSpec] = &[
    OPTIONS[0],
    OPTIONS[1],
    OPTIONS[2],
    OPTIONS[3],
    OPTIONS[4],
    OPTIONS[5],
    OPTIONS[6],
    OPTIONS[7],
    OPTIONS[8],
    OPTIONS[9],
    OPTIONS[10],
    OPTIONS[11],
    OPTIONS[12],
    OPTIONS[13],
    OPTIONS[14],
    CA,
    INSECURE,
    OptionSpec {
        name: "version",
        default: "auto",
        help: "the HTTP version: auto (HTTP/2 if the server picks h2 when offered both by ALPN, asked once before the run; else 1.1), 1.1, or 2 (only h2 offered); HTTP/2's options: streams, window, connection_window",
    },
    STREAMS,
    WINDOW,
    CONNECTION_WINDOW,
];

pub(crate) const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "method",
        default: "GET",
        help: "request method",
    },
    OptionSpec {
        name: "headers",
        default: "",
        help: "extra headers, one `Name: value` per line",
    },
    OptionSpec {
        name: "body",
        default: "",
        help: "request body",
    },
    OptionSpec {
        name: "body_file",
        default: "",
        help: "read the request body from this file",
    },
    OptionSpec {
        name: "keepalive",
        default: "true",
        help: "reuse connections (false: one per request)",
    },
    OptionSpec {
        name: "max_response",
        default: "64MiB",
        help: "largest response accepted",
    },
    OptionSpec {
        name: "requests_file",
        default: "",
        help: "send the requests of this file (vegeta's format: `METHOD URL`, headers, `@BODY_FILE`, a blank line between), each weighted 1 and measured under its name",
    },
    OptionSpec {
        name: "templates",
        default: "true",
        help: "fill in the {{…}} fields of the path, header values and body at each request ({{seq}}, {{client}}, {{uniform A B}}, {{zipf N THETA}}, {{uuid}}, {{data.COLUMN}}); false sends them as written",
    },
    OptionSpec {
        name: "data_rows",
        default: "",
        help: "the rows of {{data.COLUMN}}: a CSV file with a header line, or JSON lines (.jsonl, .ndjson)",
    },
    OptionSpec {
        name: "data_order",
        default: "in-order",
        help: "which row a request takes: in-order (the next, round again), random, or per-client",
    },
    OptionSpec {
        name: "checks",
        default: "",
        help: "conditions each response must meet, one per line (`status in 200,201`, `header NAME exists`, `body contains TEXT`, `json /POINTER == VALUE`, `size < 4KiB`…), each counted passed or failed",
    },
    OptionSpec {
        name: "checks_fail",
        default: "false",
        help: "a response that fails a check fails its request (application), not only the check",
    },
    OptionSpec {
        name: "capture",
        default: "",
        help: "values taken from each response for the client's next requests ({{capture.NAME}}), one per line: `NAME = json /POINTER`, `NAME = header NAME` or `NAME = regex PATTERN`",
    },
    OptionSpec {
        name: "scenario",
        default: "",
        help: "the steps each client takes in turn, by the names of the mix's requests (`login, item, item`), instead of a request drawn by weight; each iteration timed end to end",
    },
    OptionSpec {
        name: "think",
        default: "0s",
        help: "a scenario's think time after each step: a duration, or a range drawn uniformly (`10ms..50ms`)",
    },
];

/// The options a request of a plan's mix may set itself.
pub(super) const REQUEST_OPTIONS: &[OptionSpec] = &[
    OPTIONS[0],
    OPTIONS[1],
    OPTIONS[2],
    OPTIONS[3],
    OPTIONS[10],
    OPTIONS[11],
    OPTIONS[12],
];
