#!/usr/bin/python3
"""Run a torchrun job across N "nodes" made of Linux network namespaces on this machine.

    validation/netns/netns_run.py --nodes 2 --rate 1gbit [--delay-ms 0.5] --out DIR -- \
        -m simreplay_capture.bench ddp --data D --trace DIR/t.jsonl.gz ...

Builds (docs/distributed.md, "The network-namespace harness"):
- a switch namespace holding a Linux bridge, and N node namespaces, each with loopback and one NIC
  `eth0` (a veth pair: the node end in the node, the peer end on the bridge);
- addresses 10.213.0.(i+1)/24 on the node NICs only: every address lives inside a namespace this
  harness created, the host's own interfaces and routes are never touched;
- one full-duplex shaped link per node: `tc tbf rate R` on both veth ends (each direction gets R), plus
  `netem delay D` (one-way) when --delay-ms is given;
- with --server-dir D: a storage-server namespace on the same bridge (10.213.0.250, its own NIC
  shaped at --server-rate) serving D over HTTP on port 8000 (Python's http.server) for the job's
  lifetime, so that data read from it crosses the server's link and the nodes' NICs;
- one torchrun (simreplay_capture.distributed_launch) per node inside its namespace, node 0 the
  rendezvous master, 1 process per node by default; the arguments after `--` are torchrun's script
  and its arguments.
Writes DIR/harness.json (topology, commands, exit codes, times) and DIR/node<i>.log, and removes every
namespace (and with it every veth and the bridge) when the job ends, fails, times out, or on
SIGINT/SIGTERM/SIGHUP. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN): without it, it says so and exits 77.
Exit code: 0 when every node's torchrun exited 0, 1 otherwise, 2 on a bad command line, 77 not root.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional

SUBNET = "10.213.0"
PREFIX = "srn"  # namespace names: srn<pid>s (switch), srn<pid>n<i> (nodes), srn<pid>srv (storage server)
SERVER_ADDRESS = f"{SUBNET}.250"
SERVER_PORT = 8000
EXIT_NOT_ROOT = 77


def _sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(list(argv), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {p.stderr.strip() or p.stdout.strip()}")
    return p


def parse_rate(text: str) -> int:
    """'1gbit', '200mbit', '500kbit', '1000000' (bit/s) -> bits per second."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kmg]?)(bit|bps)?\s*", text.lower())
    if not m:
        raise argparse.ArgumentTypeError(f"expected a rate such as 1gbit or 200mbit, found {text!r}")
    v = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive rate, found {text!r}")
    return int(v)


class Topology:
    """The namespaces, bridge and shaped veth links; `close()` removes all of them (idempotent)."""

    def __init__(self, nodes: int, rate_bits_per_s: int, delay_ms: float, tag: str,
                 server_rate_bits_per_s: int = 0) -> None:
        self.nodes = nodes
        self.rate = rate_bits_per_s
        self.delay_ms = delay_ms
        self.switch = f"{PREFIX}{tag}s"
        self.node_ns = [f"{PREFIX}{tag}n{i}" for i in range(nodes)]
        self.addresses = [f"{SUBNET}.{i + 1}" for i in range(nodes)]
        # a storage server namespace on the same bridge, its NIC shaped at its own rate (0: none)
        self.server_rate = server_rate_bits_per_s
        self.server_ns = f"{PREFIX}{tag}srv" if server_rate_bits_per_s > 0 else ""
        self.created: List[str] = []

    def build(self) -> None:
        _sh("ip", "netns", "add", self.switch)
        self.created.append(self.switch)
        sw = ["ip", "netns", "exec", self.switch]
        _sh(*sw, "ip", "link", "add", "br0", "type", "bridge")
        _sh(*sw, "ip", "link", "set", "br0", "up")
        for i, ns in enumerate(self.node_ns):
            _sh("ip", "netns", "add", ns)
            self.created.append(ns)
            ex = ["ip", "netns", "exec", ns]
            # create the pair inside the node namespace, then move the peer end to the switch
            _sh(*ex, "ip", "link", "add", "eth0", "type", "veth", "peer", "name", f"p{i}")
            _sh(*ex, "ip", "link", "set", f"p{i}", "netns", self.switch)
            _sh(*ex, "ip", "addr", "add", f"{self.addresses[i]}/24", "dev", "eth0")
            _sh(*ex, "ip", "link", "set", "lo", "up")
            _sh(*ex, "ip", "link", "set", "eth0", "up")
            _sh(*sw, "ip", "link", "set", f"p{i}", "master", "br0")
            _sh(*sw, "ip", "link", "set", f"p{i}", "up")
            self._shape(ex, "eth0", self.rate)            # node -> switch
            self._shape(sw, f"p{i}", self.rate)           # switch -> node
        if self.server_ns:
            _sh("ip", "netns", "add", self.server_ns)
            self.created.append(self.server_ns)
            ex = ["ip", "netns", "exec", self.server_ns]
            _sh(*ex, "ip", "link", "add", "eth0", "type", "veth", "peer", "name", "psrv")
            _sh(*ex, "ip", "link", "set", "psrv", "netns", self.switch)
            _sh(*ex, "ip", "addr", "add", f"{SERVER_ADDRESS}/24", "dev", "eth0")
            _sh(*ex, "ip", "link", "set", "lo", "up")
            _sh(*ex, "ip", "link", "set", "eth0", "up")
            _sh(*sw, "ip", "link", "set", "psrv", "master", "br0")
            _sh(*sw, "ip", "link", "set", "psrv", "up")
            self._shape(ex, "eth0", self.server_rate)
            self._shape(sw, "psrv", self.server_rate)

    def _shape(self, ex: List[str], dev: str, rate: int) -> None:
        # tbf: burst must hold at least one rate/HZ worth of bytes; 32 KiB + rate/250 is ample and
        # small enough not to let bursts bypass the rate for long. latency bounds the queue (50 ms).
        burst = max(32 * 1024, rate // 8 // 250)
        tbf = ["tbf", "rate", f"{rate}bit", "burst", str(burst), "latency", "50ms"]
        if self.delay_ms > 0:
            _sh(*ex, "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", "delay",
                f"{self.delay_ms}ms")
            _sh(*ex, "tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", *tbf)
        else:
            _sh(*ex, "tc", "qdisc", "add", "dev", dev, "root", *tbf)

    def close(self) -> None:
        for ns in reversed(self.created):
            # kill anything left in the namespace (only processes we started live there), then delete it
            pids = _sh("ip", "netns", "pids", ns, check=False).stdout.split()
            for p in pids:
                try:
                    os.kill(int(p), signal.SIGKILL)
                except (ValueError, ProcessLookupError):
                    pass
            _sh("ip", "netns", "delete", ns, check=False)
        self.created.clear()

    def describe(self) -> Dict[str, object]:
        d: Dict[str, object] = {
            "nodes": self.nodes, "switch_namespace": self.switch, "node_namespaces": self.node_ns,
            "addresses": self.addresses, "rate_bits_per_s": self.rate, "delay_ms": self.delay_ms,
            "link": "veth pair per node to a Linux bridge; tbf rate on both ends (full duplex)"
                    + (", netem delay on both ends" if self.delay_ms > 0 else "")}
        if self.server_ns:
            d["server"] = {"namespace": self.server_ns, "address": SERVER_ADDRESS, "port": SERVER_PORT,
                           "rate_bits_per_s": self.server_rate, "url": f"http://{SERVER_ADDRESS}:{SERVER_PORT}"}
        return d


def start_server(topo: Topology, directory: str, python: str, out: str) -> subprocess.Popen:
    """Python's threading HTTP server (http.server: a connection per request, no byte ranges) serving
    `directory` from the server namespace; returns once it accepts connections (or raises)."""
    log = open(os.path.join(out, "server.log"), "w")
    p = subprocess.Popen(["ip", "netns", "exec", topo.server_ns, python, "-m", "http.server", str(SERVER_PORT),
                          "--bind", SERVER_ADDRESS, "--directory", os.path.abspath(directory)],
                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    probe = ["ip", "netns", "exec", topo.server_ns, python, "-c",
             f"import socket; socket.create_connection(('{SERVER_ADDRESS}', {SERVER_PORT}), 1).close()"]
    for _ in range(100):
        if p.poll() is not None:
            raise RuntimeError(f"the storage server exited with {p.returncode} (see {out}/server.log)")
        if subprocess.run(probe, capture_output=True).returncode == 0:
            return p
        time.sleep(0.1)
    raise RuntimeError("the storage server did not accept connections within 10 s")


def remove_stale() -> List[str]:
    """Namespaces of this harness whose creating process is gone (a SIGKILLed harness)."""
    removed = []
    for line in _sh("ip", "netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(rf"{PREFIX}(\d+)(s|n\d+|srv)", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            _sh("ip", "netns", "delete", name, check=False)
            removed.append(name)
    return removed


def run(args: argparse.Namespace) -> int:
    os.makedirs(args.out, exist_ok=True)
    topo = Topology(args.nodes, args.rate, args.delay_ms, str(os.getpid()),
                    (args.server_rate or args.rate) if args.server_dir else 0)
    procs: List[subprocess.Popen] = []
    stopping = {"signal": None}

    def on_signal(sig: int, frame: object) -> None:
        stopping["signal"] = sig
        raise KeyboardInterrupt
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    report: Dict[str, object] = {"schema": "simreplay.netns-run/1", "command": sys.argv,
                                 "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    rc = 1
    t0 = time.monotonic()
    try:
        stale = remove_stale()
        topo.build()
        report["topology"] = topo.describe()
        report["stale_namespaces_removed"] = stale
        if args.server_dir:
            procs.append(start_server(topo, args.server_dir, args.python, args.out))
        capture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "capture")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.abspath(capture) + os.pathsep + env.get("PYTHONPATH", "")
        env.pop("RANK", None)
        env.pop("WORLD_SIZE", None)
        cmds = []
        server = len(procs)  # the server (if any) runs until the job ends; it is not a node
        for i, ns in enumerate(topo.node_ns):
            cmd = ["ip", "netns", "exec", ns, args.python, "-m", "simreplay_capture.distributed_launch",
                   "--nnodes", str(args.nodes), "--nproc_per_node", str(args.nproc_per_node),
                   "--node_rank", str(i), "--master_addr", topo.addresses[0], "--master_port", str(args.port),
                   *args.script]
            # gloo would otherwise bind the address the host name resolves to (loopback here)
            node_env = dict(env, SIMREPLAY_NODE=f"node{i}", GLOO_SOCKET_IFNAME="eth0", TP_SOCKET_IFNAME="eth0")
            log = open(os.path.join(args.out, f"node{i}.log"), "w")
            procs.append(subprocess.Popen(cmd, env=node_env, stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True))
            log.close()
            cmds.append(cmd)
        report["commands"] = cmds
        deadline = t0 + args.timeout_s
        nodes = procs[server:]
        codes: List[Optional[int]] = [None] * len(nodes)
        while any(c is None for c in codes):
            for i, p in enumerate(nodes):
                if codes[i] is None:
                    codes[i] = p.poll()
            if any(c not in (None, 0) for c in codes):
                time.sleep(2.0)  # let the others notice; then stop them
                break
            if server and procs[0].poll() is not None:
                report["error"] = f"the storage server exited with {procs[0].returncode} during the job"
                break
            if time.monotonic() > deadline:
                report["timed_out"] = True
                break
            time.sleep(0.1)
        report["exit_codes"] = [p.poll() for p in nodes]
        rc = 0 if all(c == 0 for c in report["exit_codes"]) and "error" not in report else 1
    except KeyboardInterrupt:
        report["interrupted_by_signal"] = stopping["signal"] or signal.SIGINT
        rc = 130
    except RuntimeError as e:
        print(f"netns_run: {e}", file=sys.stderr)
        report["error"] = str(e)
        rc = 1
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(timeout=5)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    p.wait()
        topo.close()
        for s, h in old.items():
            signal.signal(s, h)
        report["wall_s"] = time.monotonic() - t0
        report["exit_code"] = rc
        with open(os.path.join(args.out, "harness.json.tmp"), "w") as f:
            json.dump(report, f, indent=1, sort_keys=True, default=str)
        os.replace(os.path.join(args.out, "harness.json.tmp"), os.path.join(args.out, "harness.json"))
    return rc


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="netns_run.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, required=True, help="namespaces (nodes), 1..16")
    ap.add_argument("--nproc-per-node", type=int, default=1)
    ap.add_argument("--rate", type=parse_rate, default=parse_rate("1gbit"), help="per-NIC rate, each direction")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="one-way netem delay per NIC end")
    ap.add_argument("--port", type=int, default=29500)
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter with torch")
    ap.add_argument("--timeout-s", type=float, default=600)
    ap.add_argument("--server-dir", default="",
                    help=f"serve this directory over HTTP from a storage-server namespace at "
                         f"http://{SERVER_ADDRESS}:{SERVER_PORT} (on the same bridge)")
    ap.add_argument("--server-rate", type=parse_rate, default=0,
                    help="the storage server's NIC rate, each direction (default: --rate)")
    ap.add_argument("--out", required=True, help="directory for harness.json and node logs")
    ap.add_argument("script", nargs=argparse.REMAINDER, help="-- then torchrun's script and arguments")
    return ap


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.script and args.script[0] == "--":
        args.script = args.script[1:]
    if not args.script:
        parser().error("expected the torchrun script after --")
    if not 1 <= args.nodes <= 16 or args.nproc_per_node < 1 or args.delay_ms < 0:
        parser().error("expected 1 <= --nodes <= 16, --nproc-per-node >= 1, --delay-ms >= 0")
    if os.geteuid() != 0:
        print("netns_run: needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces, "
              "veth pairs and tc qdiscs; run it as root (nothing was changed)", file=sys.stderr)
        return EXIT_NOT_ROOT
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
