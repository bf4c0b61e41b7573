"""The latency the wire shows, from a packet capture of one closed-loop client and etcd.

Reads a pcap file (tcpdump -w) of the traffic on PORT and pairs each request with its answer:
the client's segments with a payload since the server last spoke form a request, timed from the
last of them (the request is then whole in the server's socket); the server's segments that follow
until the client speaks again form the answer, timed to the last of them. A segment that holds
only HTTP/2 control frames (SETTINGS, PING, WINDOW_UPDATE: etcd's gRPC server pings as its
clients' data arrives, and they answer) is left out, so that it neither ends an answer nor starts
a request. A pair whose answer carries more than SIZE bytes is a read (the value comes back), one
whose request carries more is a write; anything else is neither. Prints one JSON line: the pairs
of each kind and their median and 99th percentile in µs, and the control segments left out.

Usage: python3 wire.py FILE PORT SIZE
"""
import json
import struct
import sys

# Link-layer header lengths by pcap link type: Ethernet (Linux's lo), Linux cooked v1 and v2.
LINK = {1: 14, 113: 16, 276: 20}


# HTTP/2 frame types that carry no part of a call: SETTINGS, PING, WINDOW_UPDATE.
CONTROL = {4, 6, 8}


def control_only(head, payload):
    """Whether the segment's payload (of which `head` is the captured start) is whole HTTP/2
    control frames."""
    at = 0
    while at < payload:
        if at + 9 > len(head):
            return False
        n = int.from_bytes(head[at : at + 3], "big")
        if head[at + 3] not in CONTROL:
            return False
        at += 9 + n
    return at == payload


def packets(path):
    """(time in s, destination port, payload bytes, control only?) of each TCP segment with a
    payload."""
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        end = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        end = ">"
    else:
        sys.exit(f"{path}: not a pcap file (magic {magic:#x})")
    scale = 1e-9 if magic in (0xA1B23C4D, 0x4D3CB2A1) else 1e-6
    linktype = struct.unpack(end + "I", data[20:24])[0]
    if linktype not in LINK:
        sys.exit(f"{path}: link type {linktype} not read here")
    off = 24
    while off + 16 <= len(data):
        sec, frac, caplen, _ = struct.unpack(end + "IIII", data[off : off + 16])
        frame = data[off + 16 : off + 16 + caplen]
        off += 16 + caplen
        ip = frame[LINK[linktype] :]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        tcp = ip[ihl:]
        if len(tcp) < 20:
            continue
        dport = struct.unpack(">H", tcp[2:4])[0]
        thl = (tcp[12] >> 4) * 4
        payload = total - ihl - thl
        if payload > 0:
            yield sec + frac * scale, dport, payload, control_only(tcp[thl:], payload)


def pairs(path, port, skipped):
    """(request bytes, answer bytes, seconds from the request's last segment to the answer's);
    the control segments left out counted in `skipped`."""
    req_t, req_b, ans_t, ans_b = None, 0, None, 0
    for t, dport, n, control in packets(path):
        if control:
            skipped[0] += 1
            continue
        if dport == port:
            if ans_t is not None:
                yield req_b, ans_b, ans_t - req_t
                req_b, ans_t, ans_b = 0, None, 0
            req_t, req_b = t, req_b + n
        elif req_t is not None:
            ans_t, ans_b = t, ans_b + n
    if ans_t is not None:
        yield req_b, ans_b, ans_t - req_t


def main():
    path, port, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    kinds = {"get": [], "set": []}
    skipped = [0]
    for req_b, ans_b, dt in pairs(path, port, skipped):
        if ans_b > size and req_b < size:
            kinds["get"].append(dt)
        elif req_b > size:
            kinds["set"].append(dt)
    out = {}
    for k, v in kinds.items():
        v.sort()
        q = lambda p: v[int(p * (len(v) - 1))] * 1e6 if v else None
        out[k] = {"pairs": len(v), "p50_us": q(0.5), "p99_us": q(0.99)}
    out["control_segments"] = skipped[0]
    print(json.dumps(out))


main()
