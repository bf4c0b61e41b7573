//! A gRPC method's messages, described by `.proto` files compiled when the plan is resolved
//! (protox) into descriptors (prost-reflect): the method found by name, the request turned
//! from JSON into the bytes sent. Each failure names its place: the `.proto` file's line and
//! column, the service's methods, the JSON's field.

use engine::driver::ConfigError;
use miette::Diagnostic;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};
use std::path::{Path, PathBuf};

/// The descriptors of `proto` and every file it imports, looked up in `imports` and then in
/// `proto`'s own directory (as ghz and protoc do).
pub fn pool(proto: &Path, imports: &[PathBuf]) -> Result<DescriptorPool, ConfigError> {
    let dir = (proto.parent())
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut includes = imports.to_vec();
    if !includes.iter().any(|i| i == dir) {
        includes.push(dir.to_path_buf());
    }
    let fail = |e: protox::Error| located(proto, &e);
    let mut compiler = protox::Compiler::new(&includes).map_err(fail)?;
    compiler.include_imports(true);
    compiler.open_file(proto).map_err(fail)?;
    Ok(compiler.descriptor_pool())
}

/// A compiler's error as `FILE:LINE:COL: what` where it has a place in a file.
fn located(proto: &Path, e: &protox::Error) -> ConfigError {
    let file = e
        .file()
        .map_or_else(|| proto.display().to_string(), str::to_string);
    let place = (e.labels().and_then(|mut l| l.next()))
        .zip(e.source_code())
        .and_then(|(label, source)| {
            let span = source.read_span(label.inner(), 0, 0).ok()?;
            Some((span.line() + 1, span.column() + 1))
        });
    let at = match place {
        Some((line, col)) => format!("{file}:{line}:{col}"),
        None => file,
    };
    ConfigError::option("proto", format!("{at}: {e}"))
        .hint("fix the .proto file, or give the directories its imports are in (--import-path)")
}

/// `package.Service/Method` in `pool`: a unary or server-streaming method (one request).
pub fn method(pool: &DescriptorPool, name: &str) -> Result<MethodDescriptor, ConfigError> {
    let example = "grpc://127.0.0.1:50051/helloworld.Greeter/SayHello";
    let (service, method) = name.split_once('/').ok_or_else(|| {
        ConfigError::url(format!("{name:?} is not package.Service/Method"))
            .hint(format!("write e.g. {example}"))
    })?;
    let Some(s) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err(ConfigError::url(format!(
            "no service {service} in the .proto files; they have: {}",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    };
    let Some(m) = s.methods().find(|m| m.name() == method) else {
        let known: Vec<String> = s.methods().map(|m| m.name().to_string()).collect();
        return Err(ConfigError::url(format!(
            "{service} has no method {method}; its methods: {}",
            known.join(", ")
        )));
    };
    if m.is_client_streaming() {
        return Err(ConfigError::url(format!(
            "{name} takes a stream of requests; dyno sends one request per call"
        ))
        .hint("name a unary or a server-streaming method"));
    }
    Ok(m)
}

/// The request message of `method` from JSON (protobuf's JSON mapping): its encoded bytes.
pub fn request(method: &MethodDescriptor, json: &str) -> Result<Vec<u8>, ConfigError> {
    let input = method.input();
    let misfit = |e: serde_json::Error| {
        ConfigError::option(
            "data",
            format!("the JSON does not fit {}: {e}", input.full_name()),
        )
        .hint(format!(
            "its fields: {}",
            (input.fields())
                .map(|f| f.json_name().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    };
    let json = if json.trim().is_empty() { "{}" } else { json };
    let mut de = serde_json::Deserializer::from_str(json);
    let message = DynamicMessage::deserialize(input.clone(), &mut de).map_err(misfit)?;
    de.end().map_err(misfit)?;
    Ok(prost::Message::encode_to_vec(&message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const GREETER: &str = "syntax = \"proto3\";\npackage helloworld;\n\
        service Greeter { rpc SayHello (HelloRequest) returns (HelloReply); \
        rpc Lots (HelloRequest) returns (stream HelloReply); \
        rpc Upload (stream HelloRequest) returns (HelloReply); }\n\
        message HelloRequest { string name = 1; int32 times = 2; }\n\
        message HelloReply { string message = 1; }\n";

    #[test]
    fn a_method_is_found_and_its_request_encoded_from_json() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "greeter.proto", GREETER);
        let pool = pool(&p, &[]).unwrap();
        let m = method(&pool, "helloworld.Greeter/SayHello").unwrap();
        let bytes = request(&m, r#"{"name":"dyno","times":3}"#).unwrap();
        // Field 1, length-delimited "dyno"; field 2, varint 3.
        assert_eq!(bytes, b"\x0a\x04dyno\x10\x03");
        assert_eq!(request(&m, "").unwrap(), b"");
    }

    #[test]
    fn each_mistake_is_named_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "greeter.proto", GREETER);
        let pool = pool(&p, &[]).unwrap();
        let e = method(&pool, "helloworld.Greeter/SayGoodbye").unwrap_err();
        assert!(
            e.message.contains("its methods: SayHello, Lots"),
            "{}",
            e.message
        );
        let e = method(&pool, "helloworld.Nope/SayHello").unwrap_err();
        assert!(
            e.message.contains("they have: helloworld.Greeter"),
            "{}",
            e.message
        );
        assert!(
            method(&pool, "helloworld.Greeter/Lots")
                .unwrap()
                .is_server_streaming()
        );
        let e = method(&pool, "helloworld.Greeter/Upload").unwrap_err();
        assert!(e.message.contains("a stream of requests"), "{}", e.message);
        let m = method(&pool, "helloworld.Greeter/SayHello").unwrap();
        let e = request(&m, r#"{"nmae":"x"}"#).unwrap_err();
        assert!(e.message.contains("nmae"), "{}", e.message);
        assert!(e.hint.as_deref().unwrap_or("").contains("name, times"));
        let e = request(&m, r#"{"times":"many"}"#).unwrap_err();
        assert!(
            e.message.contains("helloworld.HelloRequest"),
            "{}",
            e.message
        );
        // A .proto that does not parse: the place of the mistake, FILE:LINE:COL.
        let bad = write(
            dir.path(),
            "bad.proto",
            "syntax = \"proto3\";\nmessage A {\n  string x = 1\n}\n",
        );
        let e = super::pool(&bad, &[]).unwrap_err();
        assert!(e.message.starts_with("bad.proto:4:1: "), "{}", e.message);
        let e = super::pool(&dir.path().join("absent.proto"), &[]).unwrap_err();
        assert!(e.message.contains("absent.proto"), "{}", e.message);
        let imports = write(
            dir.path(),
            "i.proto",
            "syntax = \"proto3\";\nimport \"other/x.proto\";\n",
        );
        let e = super::pool(&imports, &[]).unwrap_err();
        assert!(e.message.contains("i.proto:2:"), "{}", e.message);
        assert!(e.message.contains("other/x.proto"), "{}", e.message);
    }
}
