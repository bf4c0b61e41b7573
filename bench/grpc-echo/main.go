// A gRPC echo server for bench/grpc-vs-ghz.sh: grpc-go serving dyno.example.Echo/Say
// (examples/grpc/echo.proto) by sending every request's message back as its response. The
// message is passed through as bytes (a codec that neither decodes nor encodes), so the server's
// cost per call is grpc-go's own: HTTP/2, HPACK, framing.
package main

import (
	"context"
	"flag"
	"log"
	"net"

	"google.golang.org/grpc"
)

// raw passes messages through as bytes, under the name of the codec clients ask for.
type raw struct{}

func (raw) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }

func (raw) Unmarshal(data []byte, v any) error {
	p := v.(*[]byte)
	*p = append((*p)[:0], data...)
	return nil
}

func (raw) Name() string { return "proto" }

func say(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	var b []byte
	if err := dec(&b); err != nil {
		return nil, err
	}
	return &b, nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:50051", "address to listen on (loopback)")
	flag.Parse()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	s := grpc.NewServer(grpc.ForceServerCodec(raw{}))
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "dyno.example.Echo",
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "Say", Handler: say}},
	}, struct{}{})
	log.Fatal(s.Serve(l))
}
