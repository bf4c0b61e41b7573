// The cost of etcd's two client protocols, measured the same way: the official Go client over
// gRPC, and HTTP/1.1 keep-alive JSON requests to the v3 gateway (the protocol dyno's etcd://
// driver speaks). One client, one request at a time: for DURATION it reads (linearizable
// Range), then for DURATION it writes (Put) one of KEYS keys of SIZE bytes, as dyno's kv suite
// does. Prints one JSON line: operations, this process's CPU (user + system) and the median and
// 99th percentile latency of each phase. Run by bench/etcd-clients.sh, which also reads the
// server's CPU; traffic stays on the endpoint given (127.0.0.1).
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

type phase struct {
	Ops   int     `json:"ops"`
	CPUNs int64   `json:"cpu_ns"`
	P50Us float64 `json:"p50_us"`
	P99Us float64 `json:"p99_us"`
}

func cpuNs() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// run calls op until d has passed (at most 10 million times) and measures it.
func run(d time.Duration, op func(i int) error) (phase, error) {
	lat := make([]time.Duration, 0, 1<<16)
	c0 := cpuNs()
	end := time.Now().Add(d)
	for i := 0; i < 10_000_000 && time.Now().Before(end); i++ {
		t := time.Now()
		if err := op(i); err != nil {
			return phase{}, err
		}
		lat = append(lat, time.Since(t))
	}
	c1 := cpuNs()
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	return phase{Ops: len(lat), CPUNs: c1 - c0, P50Us: q(0.5), P99Us: q(0.99)}, nil
}

// gateway speaks the v3 JSON gateway over one keep-alive connection.
type gateway struct {
	c    *http.Client
	base string
}

func (g *gateway) post(path string, body any, out any) error {
	b, _ := json.Marshal(body)
	resp, err := g.c.Post(g.base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %d %s", path, resp.StatusCode, data)
	}
	return json.Unmarshal(data, out)
}

func main() {
	endpoint := flag.String("endpoint", "127.0.0.1:2379", "etcd client address")
	mode := flag.String("mode", "grpc", "grpc or gateway")
	d := flag.Duration("duration", 5*time.Second, "each phase's length")
	keys := flag.Int("keys", 100, "keys")
	size := flag.Int("size", 300, "value bytes")
	flag.Parse()
	value := bytes.Repeat([]byte{'v'}, *size)
	key := func(i int) string { return fmt.Sprintf("dyno-bench/%d", i%*keys) }
	var get, put func(i int) error
	switch *mode {
	case "grpc":
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{*endpoint}, DialTimeout: 5 * time.Second})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer cli.Close()
		ctx := context.Background()
		get = func(i int) error {
			r, err := cli.Get(ctx, key(i))
			if err == nil && len(r.Kvs) != 1 {
				err = fmt.Errorf("%s: not found", key(i))
			}
			return err
		}
		put = func(i int) error { _, err := cli.Put(ctx, key(i), string(value)); return err }
	case "gateway":
		g := &gateway{c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}, base: "http://" + *endpoint}
		b64 := func(s []byte) string { return base64.StdEncoding.EncodeToString(s) }
		get = func(i int) error {
			var r struct {
				Kvs []struct {
					Value string `json:"value"`
				} `json:"kvs"`
			}
			err := g.post("/v3/kv/range", map[string]string{"key": b64([]byte(key(i)))}, &r)
			if err == nil && len(r.Kvs) != 1 {
				err = fmt.Errorf("%s: not found", key(i))
			}
			return err
		}
		put = func(i int) error {
			var r map[string]any
			return g.post("/v3/kv/put", map[string]string{"key": b64([]byte(key(i))), "value": b64(value)}, &r)
		}
	default:
		fmt.Fprintln(os.Stderr, "mode: grpc or gateway")
		os.Exit(2)
	}
	for i := 0; i < *keys; i++ {
		if err := put(i); err != nil {
			fmt.Fprintln(os.Stderr, "loading:", err)
			os.Exit(1)
		}
	}
	g, err := run(*d, get)
	if err != nil {
		fmt.Fprintln(os.Stderr, "get:", err)
		os.Exit(1)
	}
	p, err := run(*d, put)
	if err != nil {
		fmt.Fprintln(os.Stderr, "set:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(map[string]any{"mode": *mode, "get": g, "set": p})
	fmt.Println(string(out))
}
