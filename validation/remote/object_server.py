#!/usr/bin/python3
"""A real HTTP object server for tests and validation: Debian's nginx in a network namespace, behind a
link shaped like an object store's (docs/remote-storage.md, "The object server").

    validation/remote/object_server.py --dir D --out DIR [--first-byte-ms 20] [--link-rate 200mbit]
        [--conn-rate 2000000] [--max-conns 0] [--req-rate 0] [--rtt-ms 0] -- COMMAND...

runs COMMAND in the client namespace (it reaches the server at $SIMREPLAY_OBJECT_URL) and tears
everything down when it ends. From Python: `with ObjectServer(...) as srv: srv.run_client([...])`.

Topology: the network-namespace harness of the multi-node validation (validation/netns/netns_run.py,
`Topology`: a switch namespace with a bridge, one client "node" namespace, one storage-server
namespace, each NIC a veth pair shaped with `tc netem delay` + `tbf rate` on both ends), with nginx in
the server namespace instead of Python's http.server. What each knob is:
- --first-byte-ms: the store's time to first byte, spent in the server before it answers each request
  (nginx's Lua module: `access_by_lua_block { ngx.sleep(..) }`, non-blocking: requests wait
  concurrently). An object store's 10-50 ms first-byte latency is mostly this: the request's own
  processing (metadata look-up, placement), not the network's round trip.
- --rtt-ms: a network round trip (netem delay rtt/4 on each of the four shaped veth ends a round trip
  crosses), where the kernel has sch_netem; 0 (the default) adds none. The development VM's kernel
  has no netem ("Specified qdisc kind is unknown"), hence the server-side delay above.
- --link-rate: the server link's rate, each direction (tbf): what every connection shares.
- --conn-rate: bytes/s per request, hence per connection, paced from the first byte by a Lua content
  handler (PACED_BODY_LUA; nginx's own `limit_rate` lets a second's worth out at once): an object
  store's per-connection throughput. 0 = unlimited (nginx's static file handler).
- --max-conns: nginx `limit_conn` on the server: requests in progress beyond it get 503 at once (an
  object store's "slow down"). 0 = unlimited.
- --req-rate: nginx `limit_req` (requests/s over the server, burst = the rate, no delay): beyond it 503.
Byte ranges (Range: bytes=a-b -> 206) and keep-alive are nginx's own. `GET /_cut/N/PATH` serves PATH
cut short after N body bytes (the connection dropped mid-body: CUT_BODY_LUA), for the bad-input tests. The access log (one line per
request: status, bytes sent, request time, connection number and requests on it) is kept in DIR.
Needs root (namespaces, tc); exit 77 otherwise. Exit code of the CLI: COMMAND's.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
from netns_run import SERVER_ADDRESS, SERVER_PORT, Topology, parse_rate, remove_stale  # noqa: E402

NGINX = "/usr/sbin/nginx"
EXIT_SKIP = 77
ACCESS_FORMAT = ('$msec $status $request_method "$uri" "$http_range" $bytes_sent $body_bytes_sent $request_time '
                 '$connection $connection_requests')


# The body of a GET paced at RATE bytes/s from its first byte (byte ranges "a-b", "a-" and "-n" answered
# with 206). nginx's own limit_rate lets the first second's worth of bytes out at once (its allowance is
# rate x (elapsed seconds + 1)), so a 16 KB sample under "1 MB/s" arrived in one burst: no object store
# behaves so, and the per-connection rate would not apply to small objects at all.
PACED_BODY_LUA = r"""
    local rate, chunk = %(rate)d, 4096
    local f = io.open(ngx.var.document_root .. ngx.var.uri, "rb")
    if not f or ngx.var.uri:sub(-1) == "/" then
      if f then f:close() end
      return ngx.exit(404)
    end
    local size = f:seek("end")
    local first, last, status = 0, size - 1, 200
    local range = ngx.var.http_range
    if range then
      local a, b = range:match("^bytes=(%%d*)-(%%d*)$")
      if a == nil or (a == "" and b == "") then f:close() return ngx.exit(416) end
      if a == "" then first = math.max(0, size - tonumber(b)) else first = tonumber(a) end
      if a ~= "" and b ~= "" then last = math.min(size - 1, tonumber(b)) end
      if first > last then f:close() ngx.header["Content-Range"] = "bytes */" .. size return ngx.exit(416) end
      status = 206
      ngx.header["Content-Range"] = "bytes " .. first .. "-" .. last .. "/" .. size
    end
    ngx.status = status
    ngx.header["Content-Length"] = last - first + 1
    ngx.header["Accept-Ranges"] = "bytes"
    ngx.header["Content-Type"] = "application/octet-stream"
    f:seek("set", first)
    local remaining, sent = last - first + 1, 0
    ngx.update_time()
    local t0 = ngx.now()
    while remaining > 0 do
      ngx.update_time()
      local allowed = math.floor((ngx.now() - t0) * rate) - sent
      if allowed <= 0 then
        ngx.sleep(math.max(0.001, math.min(chunk, remaining) / rate / 4))
      else
        local n = math.min(allowed, remaining, chunk)
        local ok, err = ngx.print(f:read(n))
        if not ok then break end
        ngx.flush(true)
        sent, remaining = sent + n, remaining - n
      end
    end
    f:close()
"""


# A body cut short, for the bad-input tests: GET /_cut/N/PATH answers 200 with PATH's whole length as
# Content-Length (any Range ignored), sends its first N bytes, and drops the connection -- a server or a
# load balancer that dies mid-body.
CUT_BODY_LUA = r"""
      local limit = tonumber(ngx.var[1])
      local f = io.open(ngx.var.document_root .. ngx.var[2], "rb")
      if not f then return ngx.exit(404) end
      local size = f:seek("end")
      f:seek("set", 0)
      ngx.status = 200
      ngx.header["Content-Length"] = size
      ngx.header["Content-Type"] = "application/octet-stream"
      local n = math.min(limit, size)
      if n > 0 then ngx.print(f:read(n)) end
      f:close()
      ngx.flush(true)
      return ngx.exit(ngx.ERROR)
"""


def nginx_conf(prefix: str, root: str, conn_rate: int, max_conns: int, req_rate: float, first_byte_s: float,
               workers: int = 2) -> str:
    lim = []
    zones = []
    if first_byte_s > 0:
        lim.append(f"access_by_lua_block {{ ngx.sleep({first_byte_s:.6f}) }}")
    if conn_rate > 0:
        lim.append("content_by_lua_block {" + PACED_BODY_LUA % {"rate": int(conn_rate)} + "    }")
    if max_conns > 0:
        zones.append("limit_conn_zone $server_addr zone=conns:1m;")
        lim += [f"limit_conn conns {int(max_conns)};", "limit_conn_status 503;"]
    if req_rate > 0:
        zones.append(f"limit_req_zone $server_addr zone=reqs:1m rate={int(round(req_rate))}r/s;")
        lim += [f"limit_req zone=reqs burst={max(1, int(round(req_rate)))} nodelay;", "limit_req_status 503;"]
    body = "\n".join("      " + x for x in lim)
    return f"""# written by validation/remote/object_server.py
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
worker_processes {workers};
daemon off;
user root root;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  log_format objects '{ACCESS_FORMAT}';
  access_log {prefix}/access.log objects;
  client_body_temp_path {prefix}/tmp/body;
  proxy_temp_path {prefix}/tmp/proxy;
  fastcgi_temp_path {prefix}/tmp/fastcgi;
  uwsgi_temp_path {prefix}/tmp/uwsgi;
  scgi_temp_path {prefix}/tmp/scgi;
  sendfile on;
  tcp_nodelay on;
  keepalive_timeout 60s;
  keepalive_requests 100000;
  {' '.join(zones)}
  server {{
    listen {SERVER_ADDRESS}:{SERVER_PORT};
    root {os.path.abspath(root)};
    location / {{
{body}
    }}
    location ~ ^/_cut/(\\d+)(/.*)$ {{
      content_by_lua_block {{{CUT_BODY_LUA}    }}
    }}
  }}
}}
"""


class ObjectServer:
    """nginx serving `directory` from a server namespace; clients run in `client_ns` (run_client)."""

    def __init__(self, directory: str, out: str, first_byte_ms: float = 20.0,
                 link_rate_bits_per_s: int = 200_000_000, conn_rate_bytes_per_s: int = 0, max_conns: int = 0,
                 req_rate: float = 0.0, rtt_ms: float = 0.0) -> None:
        if not os.path.isdir(directory):
            raise ValueError(f"{directory}: not a directory")
        if first_byte_ms < 0 or rtt_ms < 0 or link_rate_bits_per_s <= 0 or conn_rate_bytes_per_s < 0 or max_conns < 0 or req_rate < 0:
            raise ValueError("expected rtt_ms >= 0, link rate > 0, and conn rate, max conns, req rate >= 0")
        self.directory, self.out = directory, os.path.abspath(out)
        self.settings = {"first_byte_ms": first_byte_ms, "rtt_ms": rtt_ms, "link_rate_bits_per_s": link_rate_bits_per_s,
                         "conn_rate_bytes_per_s": conn_rate_bytes_per_s, "max_conns": max_conns,
                         "req_rate_per_s": req_rate}
        self.topo = Topology(1, link_rate_bits_per_s, rtt_ms / 4.0, f"{os.getpid()}", link_rate_bits_per_s)
        self.nginx: Optional[subprocess.Popen] = None
        self.url = f"http://{SERVER_ADDRESS}:{SERVER_PORT}"

    @property
    def client_ns(self) -> str:
        return self.topo.node_ns[0]

    def __enter__(self) -> "ObjectServer":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        if os.geteuid() != 0:
            raise PermissionError("the object server needs root (network namespaces, tc)")
        if not os.access(NGINX, os.X_OK):
            raise FileNotFoundError(f"{NGINX} not found: apt-get install nginx (scripts/setup.sh)")
        os.makedirs(os.path.join(self.out, "tmp"), exist_ok=True)
        remove_stale()
        self.topo.build()
        s = self.settings
        conf = os.path.join(self.out, "nginx.conf")
        with open(conf, "w") as f:
            f.write(nginx_conf(self.out, self.directory, s["conn_rate_bytes_per_s"], s["max_conns"],
                               s["req_rate_per_s"], s["first_byte_ms"] / 1e3))
        log = open(os.path.join(self.out, "nginx.stderr"), "w")
        self.nginx = subprocess.Popen(["ip", "netns", "exec", self.topo.server_ns, NGINX, "-c", conf, "-p", self.out],
                                      stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        probe = ["ip", "netns", "exec", self.client_ns, sys.executable, "-c",
                 f"import socket; socket.create_connection(('{SERVER_ADDRESS}', {SERVER_PORT}), 1).close()"]
        for _ in range(100):
            if self.nginx.poll() is not None:
                raise RuntimeError(f"nginx exited with {self.nginx.returncode} "
                                   f"(see {self.out}/nginx.stderr, {self.out}/error.log)")
            if subprocess.run(probe, capture_output=True).returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError("nginx did not accept connections within 10 s")

    def run_client(self, argv: List[str], env: Optional[Dict[str, str]] = None, timeout: Optional[float] = None,
                   **kw: object) -> subprocess.CompletedProcess:
        e = dict(os.environ if env is None else env, SIMREPLAY_OBJECT_URL=self.url)
        return subprocess.run(["ip", "netns", "exec", self.client_ns, *argv], env=e, timeout=timeout, **kw)

    def close(self) -> None:
        if self.nginx is not None and self.nginx.poll() is None:
            try:
                os.killpg(self.nginx.pid, signal.SIGTERM)
                self.nginx.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.nginx.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.nginx.wait()
        self.topo.close()

    def access_log(self) -> List[Dict[str, object]]:
        """The access log's records (what the server saw: status, bytes, request time, connection)."""
        rows = []
        path = os.path.join(self.out, "access.log")
        if not os.path.exists(path):
            return rows
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 10:
                    continue
                rows.append({"t": float(parts[0]), "status": int(parts[1]), "method": parts[2],
                             "uri": parts[3].strip('"'), "range": parts[4].strip('"'), "bytes_sent": int(parts[5]),
                             "body_bytes": int(parts[6]), "request_time_s": float(parts[7]),
                             "connection": int(parts[8]), "connection_requests": int(parts[9])})
        return rows


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="object_server.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, help="the directory to serve")
    ap.add_argument("--out", required=True, help="nginx's prefix: config, logs, pid")
    ap.add_argument("--first-byte-ms", type=float, default=20.0, help="server-side wait before each answer")
    ap.add_argument("--rtt-ms", type=float, default=0.0, help="network round trip (needs sch_netem)")
    ap.add_argument("--link-rate", type=parse_rate, default=parse_rate("200mbit"))
    ap.add_argument("--conn-rate", type=int, default=0, help="bytes/s per connection, paced; 0 = none")
    ap.add_argument("--max-conns", type=int, default=0, help="requests in progress at once (limit_conn); 0 = none")
    ap.add_argument("--req-rate", type=float, default=0.0, help="requests/s (limit_req); 0 = none")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("expected a command after --")
    if os.geteuid() != 0:
        print("object_server: needs root (network namespaces, tc); nothing was changed", file=sys.stderr)
        return EXIT_SKIP
    try:
        with ObjectServer(args.dir, args.out, args.first_byte_ms, args.link_rate, args.conn_rate, args.max_conns,
                          args.req_rate, args.rtt_ms) as srv:
            print(f"object_server: {srv.url} from namespace {srv.client_ns}", file=sys.stderr)
            return srv.run_client(cmd).returncode
    except (OSError, ValueError, RuntimeError) as e:
        print(f"object_server: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
