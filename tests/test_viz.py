"""VIZ: recording (only while on), the server's HTML and JSON on a free port, and the page drawn by headless Chromium."""
import json
import shutil
import subprocess
import urllib.request

import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from tracegrad.viz import record

pytest.importorskip("igraph")
COMPILED = tracegrad.default_backend() != "interp"   # the interp device runs graphs as they are: no kernels


def _get(url: str):
  with urllib.request.urlopen(url, timeout=30) as r:
    return r.status, r.headers, r.read()


def _loss(w, x):
  return tnp.tanh(x @ w).sum()


@pytest.fixture
def server():
  record.clear()
  s = tracegrad.viz.serve(0)
  try:
    yield s
  finally:
    s.close()
    record.clear()


def test_nothing_is_recorded_while_off():
  record.clear()
  assert not record.on()
  f = tracegrad.jit(tracegrad.grad(_loss))
  f(tnp.ones((3, 4)), tnp.ones((2, 3)))
  tracegrad.vmap(tnp.sin)(tnp.ones(3))
  assert record.programs() == []


def test_steps_kernels_and_times(server):
  w, x = tnp.ones((3, 4)), tnp.ones((2, 3))
  f = tracegrad.jit(tracegrad.grad(_loss))
  for _ in range(3): f(w, x)
  progs = record.programs()
  assert [p["name"] for p in progs] == ["jit(grad(_loss))"]
  p = progs[0]
  names = [s["name"] for s in p["steps"]]
  assert names[:3] == ["trace vjp _loss", "grad _loss", "trace jit(grad(_loss))"], names
  assert any(n.startswith("lower:") for n in names) is COMPILED
  grad_step = p["steps"][1]
  assert grad_step["changed"] and set(grad_step["changed"]) <= set(grad_step["ids"])
  ops = {n["op"] for n in grad_step["nodes"]}
  assert {"param", "dot_general"} & ops or "reduce_sum" in ops
  # the trace of jit reuses the grad step's nodes: their numbers carry over, so few are new
  jit_step = p["steps"][2]
  assert len(jit_step["changed"]) < len(jit_step["ids"])
  assert (p["runs"], bool(p["kernels"])) == ((3, True) if COMPILED else (0, False))
  for k in p["kernels"]:
    assert k["source"].strip() and k["ns"] >= 0
  if COMPILED:   # the schedule: each node with the kernel that stores it, or computes it where it is read
    last = p["steps"][-1]
    assert last["name"] == f"schedule: {len(p['kernels'])} kernels"
    owners = {n["kernel"] for n in last["nodes"] if "kernel" in n}
    assert owners == {k["name"] for k in p["kernels"]}


def test_a_control_flow_body_lowers_inside_its_program_unrecorded(server):
  tracegrad.jit(lambda x: tracegrad.lax.scan(lambda c, v: (c + v.sum(), c), 0.0, x))(tnp.ones((5, 3)))
  names = [s["name"] for s in record.programs()[0]["steps"]]
  assert len(names) == len(set(names)), names


def test_transforms_outside_jit_are_programs_of_their_own(server):
  tracegrad.vmap(lambda v: v * 2)(tnp.ones((4, 3)))
  tracegrad.jvp(tnp.sin, (1.0,), (1.0,))
  names = [[s["name"] for s in p["steps"]] for p in record.programs()]
  assert ["trace vmap(<lambda>)"] in names and ["vmap(<lambda>)"] in names
  assert any(n[0].startswith("jvp") for n in names), names


def test_server_html_and_json(server):
  f = tracegrad.jit(lambda a, b: tnp.exp(a) @ b)
  f(tnp.ones((4, 4)), tnp.ones((4, 2)))
  status, headers, body = _get(server.url)
  assert status == 200 and headers["Content-Type"].startswith("text/html")
  assert b'<svg id="graph"' in body and b"viz.js" in body
  for name in ("viz.js", "viz.css"):
    assert _get(server.url + name)[0] == 200
  listing = json.loads(_get(server.url + "api/programs")[2])
  assert [p["name"] for p in listing] == ["jit(<lambda>)"]
  prog = json.loads(_get(server.url + f"api/program/{listing[0]['id']}")[2])
  for s in prog["steps"]:
    pos = s["layout"]
    assert set(pos) == {str(n["id"]) for n in s["nodes"]}
    for n in s["nodes"]:   # sources above their users
      assert all(pos[str(src)][1] < pos[str(n["id"])][1] for src in n["src"])
  assert bool(prog["kernels"]) is COMPILED and all(k["us"] >= 0 and "gflops" in k and "gbps" in k for k in prog["kernels"])
  status, headers, body = _get(server.url + "api/all.json")
  assert "attachment" in headers["Content-Disposition"] and json.loads(body)[0]["name"] == "jit(<lambda>)"
  for bad in ("api/program/999", "api/program/x", "../pyproject.toml", "nothing.html"):
    with pytest.raises(urllib.error.HTTPError, match="404"): _get(server.url + bad)


def test_layout_of_hundreds_of_nodes(server):
  def deep(x):
    for i in range(60): x = tnp.sin(x) * (i + 1) + tnp.cos(x)
    return x.sum()
  tracegrad.jit(tracegrad.grad(deep))(tnp.ones(8))
  prog = tracegrad.viz.server.program_json(record.programs()[0]["id"])
  big = max(prog["steps"], key=lambda s: s["size"])
  assert big["size"] >= 300
  pos = np.array(list(big["layout"].values()))
  rows = {}
  for x, y in pos: rows.setdefault(y, []).append(x)
  for xs in rows.values():   # no two nodes of a layer overlap
    xs = np.sort(xs)
    assert np.all(np.diff(xs) >= tracegrad.viz.server.X_GAP - 1e-6)
  width = pos[:, 0].max() - pos[:, 0].min()
  assert width <= tracegrad.viz.server.X_GAP * 4 * max(len(r) for r in rows.values())


def test_serve_rejects_a_bad_port():
  with pytest.raises(ValueError, match="viz.serve: port"): tracegrad.viz.serve(-1)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (Debian's package) to open the page with")
def test_page_draws_the_graph_in_chromium(server, tmp_path):
  tracegrad.jit(tracegrad.grad(_loss))(tnp.ones((3, 4)), tnp.ones((2, 3)))
  pid = record.programs()[0]["id"]
  url = f"{server.url}?program={pid}&step=1"
  flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
           "--virtual-time-budget=10000", f"--user-data-dir={tmp_path / 'profile'}"]
  out = subprocess.run(flags + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
  dom = out.stdout
  nodes = record.programs()[0]["steps"][1]["nodes"]
  assert dom.count('class="node') == len(nodes), out.stderr[-2000:]
  assert dom.count('class="edge"') >= len(nodes) - 4
  assert "changed" in dom and "grad _loss" in dom and ("k0_" in dom) is COMPILED
  shot = tmp_path / "viz.png"
  subprocess.run(flags + [f"--screenshot={shot}", url], capture_output=True, timeout=120)
  assert shot.exists() and shot.stat().st_size > 10_000


def test_environment_variable_serves_from_the_start(tmp_path):
  import os
  import sys
  script = tmp_path / "run.py"
  script.write_text("import json, urllib.request, tracegrad, tracegrad.numpy as tnp\n"
                    "tracegrad.jit(lambda x: x * 2)(tnp.ones(3))\n"
                    "from tracegrad.viz import record\n"
                    "print(json.dumps([p['name'] for p in record.programs()]))\n")
  env = {**os.environ, "TRACEGRAD_VIZ": "0", "TRACEGRAD_DEVICE": "interp"}
  out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
  assert json.loads(out.stdout) == ["jit(<lambda>)"], out.stderr[-2000:]
  assert "tracegrad VIZ at http://127.0.0.1:" in out.stderr
  env["TRACEGRAD_VIZ"] = "port"
  out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
  assert out.returncode != 0 and "TRACEGRAD_VIZ must be a port number" in out.stderr


def test_shard_is_a_step(server):
  mesh = tracegrad.sharding.Mesh(tracegrad.devices()[:1], ("i",))
  spec = tracegrad.sharding.NamedSharding(mesh, tracegrad.sharding.PartitionSpec("i"))
  tracegrad.jit(lambda x: (x * 2).sum(0), in_shardings=spec)(tnp.ones((4, 2)))
  names = [s["name"] for s in record.programs()[0]["steps"]]
  assert any(n.startswith("shard over") for n in names), names
