//! A server's reflection service (`grpc.reflection.v1`, or `v1alpha` where that is all it
//! serves): the descriptors of a service asked of the server itself, when no `.proto` file is
//! given — as grpcurl and ghz do. The file that defines the service comes first; the files it
//! imports are asked for by name until none is missing (at most [`MAX_FILES`]).

use super::conn::Conn;
use prost::Message as _;
use prost_reflect::DescriptorPool;
use prost_reflect::prost_types::FileDescriptorProto;
use std::time::Duration;

/// The method's path in each version, the newer first.
const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];
/// The most files one service's descriptors may take.
const MAX_FILES: usize = 200;

/// ServerReflectionRequest: the two questions dyno asks (a oneof on the wire).
#[derive(Clone, PartialEq, prost::Message)]
struct Ask {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(string, optional, tag = "3")]
    file_by_filename: Option<String>,
    #[prost(string, optional, tag = "4")]
    file_containing_symbol: Option<String>,
}

/// ServerReflectionResponse: the two answers dyno reads.
#[derive(Clone, PartialEq, prost::Message)]
struct Answer {
    #[prost(message, optional, tag = "4")]
    file_descriptor_response: Option<Files>,
    #[prost(message, optional, tag = "7")]
    error_response: Option<Refusal>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Files {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Refusal {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// The descriptors of `service` (`package.Service`) and every file they need, asked of the
/// server at `endpoint`; `Err` says why they could not be had.
pub fn pool(endpoint: &str, service: &str, timeout: Duration) -> Result<DescriptorPool, String> {
    let mut conn = Conn::open(endpoint, timeout, &PATHS)
        .map_err(|e| format!("cannot reach {endpoint}: {}", e.message))?;
    let symbol = Ask {
        file_containing_symbol: Some(service.to_string()),
        ..Ask::default()
    };
    let (path, first) = match ask(&mut conn, 0, &symbol) {
        Err(e) if e.contains("UNIMPLEMENTED") => (1, ask(&mut conn, 1, &symbol)),
        other => (0, other),
    };
    let first = first.map_err(|e| {
        format!(
            "{endpoint}'s reflection service: {e} (give the service's .proto file with --proto)"
        )
    })?;
    let mut files: Vec<FileDescriptorProto> = Vec::new();
    take(first, &mut files);
    while files.len() < MAX_FILES {
        let missing = (files.iter())
            .flat_map(|f| f.dependency.iter())
            .find(|d| !files.iter().any(|f| f.name() == d.as_str()))
            .cloned();
        let Some(name) = missing else { break };
        let by_name = Ask {
            file_by_filename: Some(name.clone()),
            ..Ask::default()
        };
        let found = ask(&mut conn, path, &by_name)
            .map_err(|e| format!("{endpoint}'s reflection service, for {name}: {e}"))?;
        if !found.iter().any(|f| f.name() == name) {
            return Err(format!(
                "{endpoint}'s reflection service does not give {name}"
            ));
        }
        take(found, &mut files);
    }
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_protos(files)
        .map_err(|e| format!("{endpoint}'s descriptors do not hold together: {e}"))?;
    Ok(pool)
}

/// The files `found` that `files` does not hold yet, added to it.
fn take(found: Vec<FileDescriptorProto>, files: &mut Vec<FileDescriptorProto>) {
    for f in found {
        if !files.iter().any(|g| g.name() == f.name()) {
            files.push(f);
        }
    }
}

/// One question on the reflection stream: the files of its answer.
fn ask(conn: &mut Conn, path: usize, question: &Ask) -> Result<Vec<FileDescriptorProto>, String> {
    let mut reply = Vec::new();
    conn.call(path, question, &mut reply)
        .map_err(|e| e.message.into_owned())?;
    let answer = Answer::decode(reply.as_slice())
        .map_err(|e| format!("an answer that does not decode: {e}"))?;
    if let Some(r) = answer.error_response {
        return Err(format!("refused ({}): {}", r.error_code, r.error_message));
    }
    let files = answer.file_descriptor_response.unwrap_or_default();
    (files.file_descriptor_proto.iter())
        .map(|b| {
            FileDescriptorProto::decode(b.as_slice())
                .map_err(|e| format!("a file descriptor that does not decode: {e}"))
        })
        .collect()
}
