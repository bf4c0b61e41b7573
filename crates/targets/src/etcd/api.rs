//! The operations dyno asks of an etcd member, in either of its APIs: gRPC (`api=grpc`, the
//! default: etcd's own protocol, as its Go client speaks it) or the v3 JSON gateway
//! (`api=gateway`: HTTP/1.1, keys and values in base64). A session holds one [`Member`]
//! connection; what fails on it says whether the session should move.

use super::gateway::{self, Conn, gateway_error, protocol};
use super::grpc::{self, Method};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use engine::driver::{ErrorClass, OpError};
use std::io::Write as _;
use std::time::Duration;

/// Which of etcd's APIs a target speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Api {
    Grpc,
    Gateway,
}

/// What a member says of itself.
pub(super) struct Health {
    /// It is the leader (its status names itself).
    pub leads: bool,
    pub version: String,
}

/// One connection to one member, and the buffers its calls reuse.
pub(super) struct Member {
    conn: Wire,
    body: Vec<u8>,
    reply: Vec<u8>,
}

enum Wire {
    Grpc(Box<crate::grpc::Conn>),
    Gateway(Box<Conn>),
}

impl Member {
    pub(super) fn open(api: Api, endpoint: &str, timeout: Duration) -> Result<Member, OpError> {
        let conn = match api {
            Api::Grpc => Wire::Grpc(Box::new(crate::grpc::Conn::open(
                endpoint,
                timeout,
                &grpc::PATHS,
            )?)),
            Api::Gateway => Wire::Gateway(Box::new(Conn::open(endpoint, timeout)?)),
        };
        Ok(Member {
            conn,
            body: Vec::with_capacity(512),
            reply: Vec::with_capacity(512),
        })
    }

    /// A gateway call: JSON `self.body` to `path`, the answer in `self.reply`.
    fn post(&mut self, path: &str) -> Result<(), OpError> {
        let Wire::Gateway(c) = &mut self.conn else {
            unreachable!("gateway calls go on gateway connections");
        };
        let a = c.call("POST", path, &self.body, &mut self.reply)?;
        if a.status != 200 {
            return Err(maybe_applied(gateway_error(&a)));
        }
        Ok(())
    }

    /// A gRPC call: `request` to `method`, the answer's message in `self.reply`.
    fn call(&mut self, method: Method, request: &impl prost::Message) -> Result<(), OpError> {
        let Wire::Grpc(c) = &mut self.conn else {
            unreachable!("gRPC calls go on gRPC connections");
        };
        c.call(method as usize, request, &mut self.reply)
            .map_err(maybe_applied)
    }

    /// Whether operations may still go on it: not after the member's GOAWAY, nor once a reply
    /// failed on the connection.
    pub(super) fn usable(&self) -> bool {
        match &self.conn {
            Wire::Grpc(c) => c.usable(),
            Wire::Gateway(c) => c.usable(),
        }
    }

    fn is_grpc(&self) -> bool {
        matches!(self.conn, Wire::Grpc(_))
    }

    pub(super) fn status(&mut self) -> Result<Health, OpError> {
        if self.is_grpc() {
            self.call(Method::Status, &grpc::StatusRequest {})?;
            let s: grpc::StatusResponse = grpc::decode(&self.reply)?;
            let me = s.header.map_or(0, |h| h.member_id);
            return Ok(Health {
                leads: s.leader != 0 && s.leader == me,
                version: s.version,
            });
        }
        self.body.clear();
        self.body.extend_from_slice(b"{}");
        self.post("/v3/maintenance/status")?;
        let s: gateway::Status = serde_json::from_slice(&self.reply)
            .map_err(|e| protocol(format!("etcd: a status that is not JSON: {e}")))?;
        Ok(Health {
            leads: s.leads(),
            version: s.version.clone(),
        })
    }

    /// How many members the cluster has.
    pub(super) fn members(&mut self) -> Result<usize, OpError> {
        if self.is_grpc() {
            let ask = grpc::MemberListRequest {
                linearizable: false,
            };
            self.call(Method::MemberList, &ask)?;
            let m: grpc::MemberListResponse = grpc::decode(&self.reply)?;
            return Ok(m.members.len());
        }
        self.body.clear();
        self.body.extend_from_slice(b"{}");
        self.post("/v3/cluster/member/list")?;
        let m: gateway::MemberList = serde_json::from_slice(&self.reply)
            .map_err(|e| protocol(format!("etcd: a member list that is not JSON: {e}")))?;
        Ok(m.members.len())
    }

    pub(super) fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), OpError> {
        if self.is_grpc() {
            let put = grpc::PutRequest {
                key: key.to_vec(),
                value: value.to_vec(),
            };
            return self.call(Method::Put, &put);
        }
        self.body.clear();
        let (k, v) = (B64.encode(key), B64.encode(value));
        write!(self.body, r#"{{"key":"{k}","value":"{v}"}}"#).expect("writing to a Vec");
        self.post("/v3/kv/put")
    }

    /// The value of `key` into `out`: `false` when there is none.
    pub(super) fn range(
        &mut self,
        key: &[u8],
        serializable: bool,
        out: &mut Vec<u8>,
    ) -> Result<bool, OpError> {
        out.clear();
        if self.is_grpc() {
            let ask = grpc::RangeRequest {
                key: key.to_vec(),
                range_end: Vec::new(),
                serializable,
            };
            self.call(Method::Range, &ask)?;
            let r: grpc::RangeResponse = grpc::decode(&self.reply)?;
            let Some(kv) = r.kvs.into_iter().next() else {
                return Ok(false);
            };
            *out = kv.value;
            return Ok(true);
        }
        self.body.clear();
        let k = B64.encode(key);
        write!(
            self.body,
            r#"{{"key":"{k}","serializable":{serializable}}}"#
        )
        .expect("writing to a Vec");
        self.post("/v3/kv/range")?;
        let r: gateway::RangeReply = serde_json::from_slice(&self.reply)
            .map_err(|e| protocol(format!("etcd: a range reply that is not JSON: {e}")))?;
        let Some(kv) = r.kvs.first() else {
            return Ok(false);
        };
        B64.decode_vec(&kv.value, out)
            .map_err(|_| protocol("etcd: a value that is not base64"))?;
        Ok(true)
    }

    /// Deletes `key`, or every key from `key` up to `end` (excluded) when `end` is not empty;
    /// how many keys went.
    pub(super) fn delete(&mut self, key: &[u8], end: &[u8]) -> Result<i64, OpError> {
        if self.is_grpc() {
            let del = grpc::DeleteRangeRequest {
                key: key.to_vec(),
                range_end: end.to_vec(),
            };
            self.call(Method::DeleteRange, &del)?;
            let r: grpc::DeleteRangeResponse = grpc::decode(&self.reply)?;
            return Ok(r.deleted);
        }
        self.body.clear();
        let k = B64.encode(key);
        if end.is_empty() {
            write!(self.body, r#"{{"key":"{k}"}}"#)
        } else {
            write!(
                self.body,
                r#"{{"key":"{k}","range_end":"{}"}}"#,
                B64.encode(end)
            )
        }
        .expect("writing to a Vec");
        self.post("/v3/kv/deleterange")?;
        let r: gateway::DeleteReply = serde_json::from_slice(&self.reply)
            .map_err(|e| protocol(format!("etcd: a delete's reply that is not JSON: {e}")))?;
        (r.deleted.as_deref().unwrap_or("0").parse())
            .map_err(|_| protocol("etcd: a delete's count that is not a number"))
    }
}

/// One key as a transaction read it: its value (none when it does not exist) and the revision
/// that last changed it (0 when it does not exist, as etcd compares a missing key's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Seen {
    pub value: Option<Vec<u8>>,
    pub revision: i64,
}

impl Member {
    /// Reads `keys` at one revision of the store: one `Txn` of ranges.
    pub(super) fn snapshot(
        &mut self,
        keys: &[Vec<u8>],
        serializable: bool,
    ) -> Result<Vec<Seen>, OpError> {
        let odd = || protocol("etcd: a transaction of reads answered with something else");
        if self.is_grpc() {
            let success = (keys.iter())
                .map(|key| grpc::RequestOp {
                    request_range: Some(grpc::RangeRequest {
                        key: key.clone(),
                        range_end: Vec::new(),
                        serializable,
                    }),
                    request_put: None,
                })
                .collect();
            let txn = grpc::TxnRequest {
                compare: Vec::new(),
                success,
            };
            self.call(Method::Txn, &txn)?;
            let r: grpc::TxnResponse = grpc::decode(&self.reply)?;
            if r.responses.len() != keys.len() {
                return Err(odd());
            }
            return (r.responses.into_iter())
                .map(|op| {
                    let kv = op.response_range.ok_or_else(odd)?.kvs.into_iter().next();
                    Ok(kv.map_or(Seen::NONE, |kv| Seen {
                        value: Some(kv.value),
                        revision: kv.mod_revision,
                    }))
                })
                .collect();
        }
        self.body.clear();
        self.body.extend_from_slice(br#"{"success":["#);
        for (i, key) in keys.iter().enumerate() {
            let comma = if i > 0 { "," } else { "" };
            let k = B64.encode(key);
            write!(
                self.body,
                r#"{comma}{{"request_range":{{"key":"{k}","serializable":{serializable}}}}}"#
            )
            .expect("writing to a Vec");
        }
        self.body.extend_from_slice(b"]}");
        self.post("/v3/kv/txn")?;
        let r: gateway::TxnReply = serde_json::from_slice(&self.reply)
            .map_err(|e| protocol(format!("etcd: a txn reply that is not JSON: {e}")))?;
        if r.responses.len() != keys.len() {
            return Err(odd());
        }
        (r.responses.iter())
            .map(|op| {
                let Some(kv) = op.response_range.as_ref().ok_or_else(odd)?.kvs.first() else {
                    return Ok(Seen::NONE);
                };
                let revision = (kv.mod_revision.parse())
                    .map_err(|_| protocol("etcd: a revision that is not a number"))?;
                let value = (B64.decode(&kv.value))
                    .map_err(|_| protocol("etcd: a value that is not base64"))?;
                Ok(Seen {
                    value: Some(value),
                    revision,
                })
            })
            .collect()
    }

    /// Puts `puts` in one `Txn` if no key of `guard` (which may be empty) changed since the
    /// revision beside it: whether it did (false: a guard failed, nothing was written).
    pub(super) fn guarded(
        &mut self,
        guard: &[(Vec<u8>, i64)],
        puts: &[(Vec<u8>, Vec<u8>)],
    ) -> Result<bool, OpError> {
        if self.is_grpc() {
            let compare = (guard.iter())
                .map(|(key, revision)| grpc::Compare {
                    result: grpc::EQUAL,
                    target: grpc::MOD,
                    key: key.clone(),
                    mod_revision: Some(*revision),
                })
                .collect();
            let success = (puts.iter())
                .map(|(key, value)| grpc::RequestOp {
                    request_range: None,
                    request_put: Some(grpc::PutRequest {
                        key: key.clone(),
                        value: value.clone(),
                    }),
                })
                .collect();
            self.call(Method::Txn, &grpc::TxnRequest { compare, success })?;
            let r: grpc::TxnResponse = grpc::decode(&self.reply)?;
            return Ok(r.succeeded);
        }
        self.body.clear();
        self.body.extend_from_slice(br#"{"compare":["#);
        for (i, (key, revision)) in guard.iter().enumerate() {
            let comma = if i > 0 { "," } else { "" };
            let k = B64.encode(key);
            write!(
                self.body,
                r#"{comma}{{"result":"EQUAL","target":"MOD","key":"{k}","mod_revision":"{revision}"}}"#
            )
            .expect("writing to a Vec");
        }
        self.body.extend_from_slice(br#"],"success":["#);
        for (i, (key, value)) in puts.iter().enumerate() {
            let comma = if i > 0 { "," } else { "" };
            let (k, v) = (B64.encode(key), B64.encode(value));
            write!(
                self.body,
                r#"{comma}{{"request_put":{{"key":"{k}","value":"{v}"}}}}"#
            )
            .expect("writing to a Vec");
        }
        self.body.extend_from_slice(b"]}");
        self.post("/v3/kv/txn")?;
        let r: gateway::TxnReply = serde_json::from_slice(&self.reply)
            .map_err(|e| protocol(format!("etcd: a txn reply that is not JSON: {e}")))?;
        Ok(r.succeeded)
    }
}

impl Seen {
    const NONE: Seen = Seen {
        value: None,
        revision: 0,
    };
}

/// etcd answers UNAVAILABLE both for a request it refused (no leader) and for one it proposed
/// and stopped waiting for ("request timed out", "leader changed", "server stopped"), which may
/// still be applied: the latter are timeouts, whose outcome a history keeps as unknown.
pub(super) fn maybe_applied(e: OpError) -> OpError {
    const PROPOSED: [&str; 3] = ["timed out", "leader changed", "server stopped"];
    if e.class == ErrorClass::Refused && PROPOSED.iter().any(|p| e.message.contains(p)) {
        return OpError::new(ErrorClass::Timeout, e.message);
    }
    e
}

/// A refusal saying no member answered or led.
pub(super) fn nobody(why: &'static str) -> OpError {
    OpError::new(ErrorClass::Refused, why)
}
