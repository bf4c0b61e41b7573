"""A real gRPC server for dyno's tests: grpcio (gRPC's C core) serving the Echo service of a
.proto file (examples/grpc/echo.proto): Say answers with its request, Repeat streams its request
back `n` times (the request's field n, 1 to 1000); the reflection service is on, so a client
can learn the service without the file. The .proto file is compiled here at start (grpc_tools'
protoc). Listens on 127.0.0.1 only.

Usage: echo_server.py PROTO PORT
"""

import importlib
import os
import sys
import tempfile
from concurrent import futures

import grpc
import grpc_tools
from grpc_reflection.v1alpha import reflection
from grpc_tools import protoc


def compile_proto(proto):
    """The generated modules of `proto` (messages, and the service's stubs)."""
    out = tempfile.mkdtemp(prefix="dyno-grpc-")
    folder, name = os.path.split(os.path.abspath(proto))
    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = ["protoc", f"-I{folder}", f"-I{well_known}", f"--python_out={out}", f"--grpc_python_out={out}", name]
    if protoc.main(args) != 0:
        sys.exit(f"echo_server: protoc failed on {proto}")
    sys.path.insert(0, out)
    base = name[: -len(".proto")]
    return importlib.import_module(base + "_pb2"), importlib.import_module(base + "_pb2_grpc")


def main():
    proto, port = sys.argv[1], int(sys.argv[2])
    pb2, pb2_grpc = compile_proto(proto)

    class Echo(pb2_grpc.EchoServicer):
        def Say(self, request, context):
            return request

        def Repeat(self, request, context):
            for _ in range(max(1, min(request.n, 1000))):
                yield request

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb2_grpc.add_EchoServicer_to_server(Echo(), server)
    service = pb2.DESCRIPTOR.services_by_name["Echo"].full_name
    reflection.enable_server_reflection((service, reflection.SERVICE_NAME), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print(f"serving {service} on 127.0.0.1:{port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
