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
    Gateway(Conn),
}

impl Member {
    pub(super) fn open(api: Api, endpoint: &str, timeout: Duration) -> Result<Member, OpError> {
        let conn = match api {
            Api::Grpc => Wire::Grpc(Box::new(crate::grpc::Conn::open(
                endpoint,
                timeout,
                &grpc::PATHS,
            )?)),
            Api::Gateway => Wire::Gateway(Conn::open(endpoint, timeout)?),
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
            return Err(gateway_error(&a));
        }
        Ok(())
    }

    /// A gRPC call: `request` to `method`, the answer's message in `self.reply`.
    fn call(&mut self, method: Method, request: &impl prost::Message) -> Result<(), OpError> {
        let Wire::Grpc(c) = &mut self.conn else {
            unreachable!("gRPC calls go on gRPC connections");
        };
        c.call(method as usize, request, &mut self.reply)
    }

    /// Whether operations may still go on it: not after the member's GOAWAY.
    pub(super) fn usable(&self) -> bool {
        match &self.conn {
            Wire::Grpc(c) => c.usable(),
            Wire::Gateway(_) => true,
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

    /// Deletes `key`, or every key from `key` up to `end` (excluded) when `end` is not empty.
    pub(super) fn delete(&mut self, key: &[u8], end: &[u8]) -> Result<(), OpError> {
        if self.is_grpc() {
            let del = grpc::DeleteRangeRequest {
                key: key.to_vec(),
                range_end: end.to_vec(),
            };
            return self.call(Method::DeleteRange, &del);
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
        self.post("/v3/kv/deleterange")
    }

    /// The puts of one transaction, in one `Txn`.
    pub(super) fn txn(&mut self, puts: &[(Vec<u8>, Vec<u8>)]) -> Result<(), OpError> {
        if self.is_grpc() {
            let success = (puts.iter())
                .map(|(key, value)| grpc::RequestOp {
                    request_put: Some(grpc::PutRequest {
                        key: key.clone(),
                        value: value.clone(),
                    }),
                })
                .collect();
            return self.call(Method::Txn, &grpc::TxnRequest { success });
        }
        self.body.clear();
        self.body.extend_from_slice(br#"{"success":["#);
        for (i, (k, v)) in puts.iter().enumerate() {
            if i > 0 {
                self.body.push(b',');
            }
            let (k, v) = (B64.encode(k), B64.encode(v));
            write!(
                self.body,
                r#"{{"requestPut":{{"key":"{k}","value":"{v}"}}}}"#
            )
            .expect("writing to a Vec");
        }
        self.body.extend_from_slice(b"]}");
        self.post("/v3/kv/txn")
    }
}

/// A refusal saying no member answered or led.
pub(super) fn nobody(why: &'static str) -> OpError {
    OpError::new(ErrorClass::Refused, why)
}
