//! etcd's messages (api/etcdserverpb/rpc.proto, api/mvccpb/kv.proto), only the fields dyno
//! sends or reads, with etcd's field numbers; encoded and decoded by prost. Fields a message
//! has and these leave out are skipped when read.

use super::gateway::protocol;
use engine::driver::OpError;

/// The calls dyno makes: each one's number is its place in [`PATHS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    Range,
    Put,
    DeleteRange,
    Txn,
    Status,
    MemberList,
}

/// The calls' HTTP/2 paths, in [`Method`]'s order.
pub(super) const PATHS: [&str; 6] = [
    "/etcdserverpb.KV/Range",
    "/etcdserverpb.KV/Put",
    "/etcdserverpb.KV/DeleteRange",
    "/etcdserverpb.KV/Txn",
    "/etcdserverpb.Maintenance/Status",
    "/etcdserverpb.Cluster/MemberList",
];

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct ResponseHeader {
    #[prost(uint64, tag = "2")]
    pub member_id: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct RangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
    #[prost(bool, tag = "7")]
    pub serializable: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct RangeResponse {
    #[prost(message, repeated, tag = "2")]
    pub kvs: Vec<KeyValue>,
}

/// mvccpb.KeyValue.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct KeyValue {
    /// The revision that last changed the key.
    #[prost(int64, tag = "3")]
    pub mod_revision: i64,
    #[prost(bytes = "vec", tag = "5")]
    pub value: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct PutRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct DeleteRangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct DeleteRangeResponse {
    #[prost(int64, tag = "2")]
    pub deleted: i64,
}

/// One of a transaction's operations: on the wire a oneof, of which dyno sets one field.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct RequestOp {
    #[prost(message, optional, tag = "1")]
    pub request_range: Option<RangeRequest>,
    #[prost(message, optional, tag = "2")]
    pub request_put: Option<PutRequest>,
}

/// `Compare`'s `result` EQUAL and `target` MOD: the key's last modification revision equals
/// `mod_revision` (0 for a key that does not exist).
pub(super) const EQUAL: i32 = 0;
pub(super) const MOD: i32 = 2;

/// One comparison of a Txn's guard. `mod_revision` is a member of etcd's `target_union` oneof,
/// which on the wire is an optional field: set, it is sent even when 0.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Compare {
    #[prost(int32, tag = "1")]
    pub result: i32,
    #[prost(int32, tag = "2")]
    pub target: i32,
    #[prost(bytes = "vec", tag = "3")]
    pub key: Vec<u8>,
    #[prost(int64, optional, tag = "6")]
    pub mod_revision: Option<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct TxnRequest {
    #[prost(message, repeated, tag = "1")]
    pub compare: Vec<Compare>,
    #[prost(message, repeated, tag = "2")]
    pub success: Vec<RequestOp>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct TxnResponse {
    #[prost(bool, tag = "2")]
    pub succeeded: bool,
    #[prost(message, repeated, tag = "3")]
    pub responses: Vec<ResponseOp>,
}

/// One answer of a transaction's operations: a oneof, of which dyno reads ranges.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct ResponseOp {
    #[prost(message, optional, tag = "1")]
    pub response_range: Option<RangeResponse>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct StatusRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct StatusResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(uint64, tag = "4")]
    pub leader: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct MemberListRequest {
    #[prost(bool, tag = "1")]
    pub linearizable: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct MemberListResponse {
    #[prost(message, repeated, tag = "2")]
    pub members: Vec<Member>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Member {
    #[prost(uint64, tag = "1")]
    pub id: u64,
}

/// An answer's message, or a protocol error saying it is not one.
pub(super) fn decode<M: prost::Message + Default>(bytes: &[u8]) -> Result<M, OpError> {
    M::decode(bytes).map_err(|e| protocol(format!("etcd: an answer that does not decode: {e}")))
}
