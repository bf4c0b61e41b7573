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

/// One of a transaction's operations: on the wire a oneof, of which dyno sends puts.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct RequestOp {
    #[prost(message, optional, tag = "2")]
    pub request_put: Option<PutRequest>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct TxnRequest {
    #[prost(message, repeated, tag = "2")]
    pub success: Vec<RequestOp>,
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
