"""The VIZ page's server: a local HTTP server (127.0.0.1 only) over what viz/record.py keeps.

  /                      the page (viz/static/index.html, viz.js, viz.css: all served from the package)
  /api/programs          every program: id, name, its steps' names, kernel count, runs
  /api/program/<id>      one program whole: each step's nodes with their laid-out positions and the nodes the step
                         made, and the kernels with source, time per run, GFLOPS and GB/s
  /api/all.json          every program whole, as a download

Graphs are laid out in layers (Sugiyama's method, igraph's `layout_sugiyama`: inputs at the top, crossings reduced
by the barycenter heuristic), once per step, when the page first asks for it.

>>> s = serve(0); s.url.startswith("http://127.0.0.1:"); s.close()
True
"""
from __future__ import annotations

import http.server
import json
import sys
import threading
import webbrowser
from pathlib import Path
from urllib.parse import urlparse

from . import record

STATIC = Path(__file__).parent / "static"
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
X_GAP, Y_GAP = 190, 74   # pixels between neighbours in a layer, and between layers


def layout(step: dict) -> dict[int, list[float]]:
  """Each node's [x, y] in pixels (layers top-down, sources above their users); kept in the step."""
  if "layout" in step or "nodes" not in step: return step.get("layout", {})
  try:
    import igraph
  except ImportError:
    raise ImportError("tracegrad.viz: laying out graphs needs igraph; pip install 'tracegrad[viz]' "
                      "(or pip install igraph)") from None
  nodes = step["nodes"]
  index = {n["id"]: i for i, n in enumerate(nodes)}
  edges = [(index[s], i) for i, n in enumerate(nodes) for s in n["src"] if s in index]
  g = igraph.Graph(n=len(nodes), edges=edges, directed=True)
  layers = _layers(len(nodes), edges)
  coords = g.layout_sugiyama(layers=layers, maxiter=100).coords[:len(nodes)] if nodes else []
  xs = _compact([x for x, _ in coords], layers, edges)
  step["layout"] = {n["id"]: [round(x * X_GAP, 1), round(y * Y_GAP, 1)] for n, x, y in zip(nodes, xs, layers)}
  return step["layout"]


def _layers(n: int, edges: list[tuple[int, int]]) -> list[int]:
  """Each node's layer, as late as its users allow (nodes come in topological order): a constant or an input sits
  just above its first user, not at the top with a long edge down."""
  depth = [0] * n
  for s, d in sorted(edges, key=lambda e: e[1]): depth[d] = max(depth[d], depth[s] + 1)
  bottom = max(depth, default=0)
  users: list[list[int]] = [[] for _ in range(n)]
  for s, d in edges: users[s].append(d)
  layer = [0] * n
  for i in reversed(range(n)):
    layer[i] = min((layer[u] - 1 for u in users[i]), default=bottom)
  return layer


def _compact(xs: list[float], layers: list[int], edges: list[tuple[int, int]]) -> list[float]:
  """x positions keeping each layer's order (the crossing reduction's), one apart at least: layer by layer from the
  top, each node as near the mean of its sources' positions as that allows; then from the bottom, each node without
  sources (a constant, an input) as near its users'. The edges that span layers leave no gaps where their bends
  would have been."""
  srcs: list[list[int]] = [[] for _ in xs]
  users: list[list[int]] = [[] for _ in xs]
  for s, d in edges:
    srcs[d].append(s)
    users[s].append(d)
  rows: dict[int, list[int]] = {}
  for i, l in enumerate(layers): rows.setdefault(l, []).append(i)
  rows = {l: sorted(r, key=lambda i: xs[i]) for l, r in rows.items()}
  out = [0.0] * len(xs)
  mean = lambda js: sum(out[j] for j in js) / len(js)
  for l in sorted(rows):
    _place(rows[l], [mean(srcs[i]) if srcs[i] else None for i in rows[l]], out)
  for l in sorted(rows, reverse=True):
    if any(not srcs[i] and users[i] for i in rows[l]):
      _place(rows[l], [mean(users[i]) if not srcs[i] and users[i] else out[i] for i in rows[l]], out)
  low = min(out, default=0)
  return [x - low for x in out]


def _place(row: list[int], want: list[float | None], out: list[float]) -> None:
  """Positions for the row in its order, one apart at least, as near the wishes (None: anywhere) as that allows."""
  if all(w is None for w in want): want = [float(k) for k in range(len(row))]
  first = next(k for k, w in enumerate(want) if w is not None)
  want = [want[first] - (first - k) if k < first else w for k, w in enumerate(want)]
  for k in range(first + 1, len(want)):
    if want[k] is None: want[k] = want[k - 1] + 1
  pos: list[float] = []
  for w in want: pos.append(w if not pos else max(w, pos[-1] + 1))
  shift = sum(w - p for w, p in zip(want, pos)) / len(pos)
  for i, p in zip(row, pos): out[i] = p + shift


def program_json(pid: int) -> dict | None:
  """A program whole, laid out, with each kernel's time per run, GFLOPS and GB/s."""
  p = record.program(pid)
  if p is None: return None
  with record._lock:
    data = p.as_dict()
    for s in data["steps"]: layout(s)
    data = json.loads(json.dumps(data))   # a snapshot: runs may add times while it is sent
  runs = max(data["runs"], 1)
  for k in data["kernels"]:
    ns = k["ns"] / runs
    k["us"] = ns / 1e3
    k["gflops"] = k["flops"] / ns if ns else None
    k["gbps"] = k["bytes"] / ns if ns else None
  return data


def summary() -> list[dict]:
  return [{"id": p["id"], "name": p["name"], "steps": [s["name"] for s in p["steps"]], "kernels": len(p["kernels"]),
           "runs": p["runs"]} for p in record.programs()]


class _Handler(http.server.BaseHTTPRequestHandler):
  def do_GET(self):   # noqa: N802 (http.server's name)
    path = urlparse(self.path).path
    if path == "/": path = "/index.html"
    if path == "/api/programs": return self._json(summary())
    if path == "/api/all.json":
      return self._json([program_json(p["id"]) for p in record.programs()], download="tracegrad-viz.json")
    if path.startswith("/api/program/"):
      try:
        data = program_json(int(path.rsplit("/", 1)[1]))
      except ValueError:
        data = None
      return self._json(data) if data is not None else self.send_error(404, "no such program")
    f = STATIC / path.lstrip("/")
    if "/" in path.lstrip("/") or f.suffix not in TYPES or not f.is_file(): return self.send_error(404)
    self._send(f.read_bytes(), TYPES[f.suffix])

  def _json(self, data, download: str | None = None):
    self._send(json.dumps(data).encode(), "application/json", download)

  def _send(self, body: bytes, ctype: str, download: str | None = None):
    self.send_response(200)
    self.send_header("Content-Type", ctype)
    self.send_header("Content-Length", str(len(body)))
    self.send_header("Cache-Control", "no-store")
    if download: self.send_header("Content-Disposition", f'attachment; filename="{download}"')
    self.end_headers()
    self.wfile.write(body)

  def log_message(self, *args): pass


class Server:
  """A running VIZ server: `url`, `port`, `close()` (recording stops with it)."""

  def __init__(self, port: int):
    self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    self._httpd.daemon_threads = True
    self.port = self._httpd.server_address[1]
    self.url = f"http://127.0.0.1:{self.port}/"
    self._thread = threading.Thread(target=self._httpd.serve_forever, name="tracegrad-viz", daemon=True)
    self._thread.start()

  def close(self) -> None:
    record.stop()
    self._httpd.shutdown()
    self._httpd.server_close()

  def __enter__(self): return self
  def __exit__(self, *exc): self.close()


def serve(port: int = 0, *, open_browser: bool = False) -> Server:
  """Start recording and serve the page on 127.0.0.1:port (0: a free port)."""
  if not isinstance(port, int) or not 0 <= port < 65536:
    raise ValueError(f"viz.serve: port must be an int in [0, 65535], got {port!r}")
  try:
    server = Server(port)
  except OSError as e:
    raise OSError(f"viz.serve: cannot listen on 127.0.0.1:{port} ({e.strerror}); pick another port, or 0 for a free "
                  f"one") from None
  record.start()
  print(f"tracegrad VIZ at {server.url}", file=sys.stderr, flush=True)
  if open_browser: webbrowser.open(server.url)
  return server
