"""The GPU-style path (lower/render_gpu.py): programs over every kind of kernel (elementwise in every dtype, plain
and work-group reductions, NaN-propagating extrema, a softmax's stores and epilogue, phases over rows, gathers,
sequential scatters, casts and bitcasts, control flow run from the host) on the opencl device (PoCL here) against the interp reference;
their CUDA rendering compiled to PTX by NVRTC (no GPU needed) and run on a GPU when there is one; errors naming the
device, or showing the source and the compiler's log."""
import subprocess
import sys

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax, run
from tracegrad.lower.render_gpu import render_program
from tracegrad.lower.schedule import schedule
from oracles import assert_ulps_close, ulps, x64

RNG = np.random.default_rng(0)
X = RNG.standard_normal((64, 48)).astype(np.float32)
W = RNG.standard_normal((48, 40)).astype(np.float32)
I = RNG.integers(-100, 100, (64, 48)).astype(np.int32)
IDX = RNG.integers(-3, 70, 20).astype(np.int32)
A, B = RNG.standard_normal((128, 96)).astype(np.float32), RNG.standard_normal((96, 192)).astype(np.float32)

PROGRAMS = {
  # name -> (f, args)
  "elementwise_float32": (lambda x: (tnp.exp(x) * tnp.sin(x) - tnp.log(tnp.abs(x) + 1) / tnp.sqrt(x * x + 2),
                                     tnp.maximum(x, 0.5), tnp.floor(x) % 3, x ** 3, tnp.arctan2(x, 1.5)), (X,)),
  "elementwise_float64": (lambda x: (tnp.exp(x) + tnp.cos(x) * tnp.tanh(x), x // 0.7), (X.astype(np.float64),)),
  "half_types": (lambda x: (x.astype(tnp.float16) * 3 + 1, (x.astype(tnp.bfloat16) / 7).astype(tnp.float32),
                            x.astype(tnp.float16).astype(tnp.int32)), (X * 100,)),
  "integers_and_bools": (lambda i: (i // 7, i % -5, i >> 2, (i < 3) & (i > -40), i.astype(tnp.uint8) * 3,
                                    tnp.int64(1 << 40) + i, i.astype(tnp.float32)), (I,)),
  "bitcast": (lambda x: (lax.bitcast_convert_type(x, tnp.int32) ^ 0x1234, lax.bitcast_convert_type(x.astype(tnp.float16), tnp.uint16)), (X,)),
  "matmul_and_plain_reductions": (lambda x, w: (x @ w, x.sum(1), x.max(0), tnp.prod(x[:8] / 2 + 1, 1), tnp.argmax(x, 1)), (X, W)),
  # big enough for register tiles staged through double-buffered local memory (opt.gpu_default)
  "staged_matmul": (lambda a, b: (a @ b, tnp.matmul(a.astype(tnp.float16), b.astype(tnp.float16),
                                                    preferred_element_type=tnp.float32)), (A, B)),
  "group_reductions": (lambda x: (x.sum(), x.min(), tnp.all(x > -10), tnp.mean(x * x)), (X,)),
  "nan_extrema": (lambda x: (tnp.where(x > 2, tnp.nan, x).max(1), tnp.where(x > 2, tnp.nan, x).min()), (X,)),
  "softmax": (lambda x: tg.nn.softmax(x, axis=1), (X,)),
  "row_phases": (lambda x: ((x - x.mean(1, keepdims=True)) / tnp.sqrt(x.var(1, keepdims=True) + 1e-5),
                            tnp.exp(x - x.max(1, keepdims=True)).sum(1) * x.sum(1)), (X,)),
  "gather_scatter": (lambda x, i: (x[i], x.at[i].add(1.0), x.at[i, 3].set(-2.0), x.at[i].max(x[:20])), (X, IDX)),
  "control_flow": (lambda x: (lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x),
                              lax.scan(lambda c, r: (c + r, c * r), tnp.zeros(48), x),
                              lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5), (0, x[0]))), (X,)),
}


X64 = {"elementwise_float64", "integers_and_bools"}   # programs of 64-bit types, traced with x64 on (as in JAX)


def _graph(name):
  f, args = PROGRAMS[name]
  with x64(name in X64):
    return tg.make_graph(f)(*args), [np.asarray(a) for a in args]


def _same(got, want):
  for g, w in zip(got, want):
    narrow = w.dtype != np.float32
    assert_ulps_close(g, w, rel=4 if narrow else 84, absolute=4 if narrow else 168)


def _opencl():
  from tracegrad.devices import opencl
  if opencl.missing(): pytest.skip(f"no OpenCL device: {opencl.missing()}")


@pytest.mark.parametrize("name", PROGRAMS)
def test_opencl_runs_every_kind_of_kernel(name):
  _opencl()
  g, args = _graph(name)
  ex = run.executable(g, "opencl")
  assert ex.program is not None and "__kernel" in ex.source
  _same(ex(args), run.executable(g, "interp")(args))


@pytest.mark.parametrize("name", PROGRAMS)
def test_cuda_source_compiles_to_ptx(name):
  pytest.importorskip("cuda.bindings.nvrtc")
  from tracegrad.devices.cuda import missing, ptx
  g, args = _graph(name)
  prog = schedule(g)
  src = render_program(prog, "cuda")
  code = ptx(src.source).decode()
  for fn, _ in src.launches.values(): assert f".entry {fn}(" in code
  if missing(): pytest.skip(f"compiled to PTX; running needs a GPU: {missing()}")
  _same(run.executable(g, "cuda")(args), run.executable(g, "interp")(args))


def test_cuda_source_compiles_to_an_h200_cubin():
  """What the cuda device loads: machine code for the GPU's generation (sm_90 for an H100 or H200)."""
  pytest.importorskip("cuda.bindings.nvrtc")
  from tracegrad.devices.cuda import cubin
  g, _ = _graph("matmul_and_plain_reductions")
  assert cubin(render_program(schedule(g), "cuda").source, "sm_90")[:4] == b"\x7fELF"


def test_reductions_over_few_points_run_as_work_groups():
  g = tg.make_graph(lambda x: (x.sum(), x.sum(0), x.sum(1)))(np.ones((2048, 3), np.float32))
  launches = sorted(size for _, size in render_program(schedule(g), "opencl").launches.values())
  # one group of 64 items for the total, one per column; one item per row for the short sums along rows
  assert launches == [((64,), (64,)), ((3 * 64,), (64,)), ((2048,), (64,))]


def test_jit_on_the_opencl_device_in_a_process_of_its_own():
  """TRACEGRAD_DEVICE=opencl makes it the default backend: jit compiles for it, eager work stays on interp."""
  _opencl()
  code = ("import numpy as np, tracegrad as tg, tracegrad.numpy as tnp\n"
          "f = tg.jit(lambda x: tnp.tanh(x) @ x.T)\n"
          "x = np.arange(12.0, dtype=np.float32).reshape(3, 4) / 10\n"
          "err = float(np.abs(np.asarray(f(x)) - np.tanh(x) @ x.T).max())\n"
          f"print(tg.default_backend(), tg.devices(), err < {ulps(84)})")
  out = subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, "TRACEGRAD_DEVICE": "opencl"},
                       capture_output=True, text=True, check=True).stdout
  assert out.split() == ["opencl", "[OpenclDevice(id=0)]", "True"]


def test_errors_name_the_device_or_show_the_source():
  code = "import tracegrad as tg, tracegrad.numpy as tnp; tg.jit(lambda x: x + 1)(tnp.ones(3))"
  from tracegrad.devices.cuda import missing
  if missing():
    r = subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, "TRACEGRAD_DEVICE": "cuda"},
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert f"TRACEGRAD_DEVICE='cuda': no cuda device here ({missing()}); available: interp" in r.stderr
  with pytest.raises(ValueError, match=r"devices: unknown backend 'tpu'; available: interp"):
    tg.devices("tpu")
  bad = "__kernel void k(__global float *b0) { b0[0] = undefined_name; }"
  _opencl()
  with pytest.raises(RuntimeError, match=r"(?s)opencl: the OpenCL C compiler failed:.*undefined_name.*source:\n   1  "
                                         r"__kernel void k"):
    tg.devices("opencl")[0].compile(bad, ["k"])
  pytest.importorskip("cuda.bindings.nvrtc")
  from tracegrad.devices.cuda import ptx
  with pytest.raises(RuntimeError, match=r"(?s)cuda: NVRTC failed to compile:.*undefined_name.*source:\n   1  "):
    ptx('extern "C" __global__ void k(float *b0) { b0[0] = undefined_name; }')


def test_a_runner_reuses_its_buffers_and_runs_concurrent_calls_apart():
  _opencl()
  from concurrent.futures import ThreadPoolExecutor
  g, _ = _graph("control_flow")
  ex, ref = run.executable(g, "opencl"), run.executable(g, "interp")
  inputs = [[(X * s).astype(np.float32)] for s in (1.0, -0.5, 2.0, 0.25, -3.0, 1.5)]
  with ThreadPoolExecutor(3) as pool:
    results = list(pool.map(ex, inputs))
  for got, args in zip(results, inputs): _same(got, ref(args))
  assert 1 <= len(ex._runner._free) <= 3   # one buffer set per call in flight at once, kept for the next calls
  sets = len(ex._runner._free)
  _same(ex(inputs[0]), ref(inputs[0]))
  assert len(ex._runner._free) == sets


def test_outputs_stay_on_the_device_and_come_back_without_a_copy(monkeypatch):
  _opencl()
  from tracegrad.devices.gpu import Resident
  from tracegrad.ir import Buffer
  g = tg.make_graph(lambda w, x: (w - 0.1 * (x @ w), (x @ w).sum(), w))(W[:40], X[:40, :40])
  ex, ref = run.executable(g, "opencl"), run.executable(g, "interp")
  assert ex.resident and not run.executable(g, "interp").resident
  ins = [Buffer(W[:40].copy()), Buffer(X[:40, :40].copy())]
  outs = ex.run_buffers(ins)
  assert all(isinstance(b.resident, Resident) and b._data is None for b in outs[:2]) and outs[2] is ins[0]
  uploads = []
  real = ex._runner.queue.upload
  monkeypatch.setattr(ex._runner.queue, "upload", lambda buf, a: (uploads.append(a.shape), real(buf, a)))
  again = ex.run_buffers([outs[0], ins[1]])   # the new weights are read where they are; x is copied in
  assert uploads == [(X[:40, :40].size,)]
  want = ref([ref([W[:40], X[:40, :40]])[0], X[:40, :40]])
  for b, w in zip(again, want): assert_ulps_close(b.data, w, rel=84, absolute=84)
  assert again[2] is outs[0] and outs[1]._data is None   # the loss never left the device
  outs[1].wait()
  uploads.clear()
  x = tg.device_put(X[:40, :40], tg.devices("opencl")[0])   # put into the device's memory once, readable on the host
  assert uploads == [(1600,)]
  uploads.clear()
  assert isinstance(x._uop.arg.resident, Resident) and np.array_equal(np.asarray(x), X[:40, :40])
  for b, w in zip(ex.run_buffers([outs[0], x._uop.arg]), want): assert_ulps_close(b.data, w, rel=84, absolute=84)
  assert uploads == []


def test_a_jitted_step_keeps_its_state_on_the_opencl_device_in_a_process_of_its_own():
  _opencl()
  code = ("import numpy as np, tracegrad as tg, tracegrad.numpy as tnp\n"
          "step = tg.jit(lambda w, x: (w - 0.1 * (x @ w), (x @ w).sum()))\n"
          "x = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float32) / 8\n"
          "w, ref = tnp.ones((32, 32)), np.ones((32, 32), np.float32)\n"
          "for _ in range(4): w, loss = step(w, x); ref = ref - 0.1 * (x @ ref)\n"
          f"print(w.block_until_ready()._uop.arg._data is None, float(np.abs(np.asarray(w) - ref).max()) < {ulps(84)})")
  out = subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, "TRACEGRAD_DEVICE": "opencl"},
                       capture_output=True, text=True, check=True).stdout
  assert out.split() == ["True", "True"]


def test_a_runner_names_an_input_of_the_wrong_size_or_count():
  _opencl()
  from tracegrad.ir import Buffer
  g = tg.make_graph(lambda x: x * 2)(X)
  ex = run.executable(g, "opencl")
  with pytest.raises(ValueError, match=r"run_program: input buffer 0 holds 3072 elements, got shape \(5,\)"):
    ex.run_buffers([Buffer(np.zeros(5, np.float32))])
  with pytest.raises(ValueError, match=r"run_program: the program takes 1 inputs, got 2"):
    ex.run_buffers([Buffer(X), Buffer(X)])
  np.testing.assert_array_equal(ex.run_buffers([Buffer(X.copy())])[0].data, X * 2)   # the pool survives the errors


def test_a_program_called_again_on_the_same_buffers_replays_one_capture(monkeypatch):
  """A queue that captures (CUDA's graphs) records a program of kernels once its buffer addresses come round again,
  then replays it instead of launching kernel by kernel; here a recording queue over PoCL stands in for the graph."""
  _opencl()
  events = []
  dev = tg.devices("opencl")[0]
  dev._context()
  base = type(dev._queue)

  class Recording(base):
    captures = True
    def address(self, buf): return buf.int_ptr

    def launch(self, function, args, size):
      events.append("launch")
      base.launch(self, function, args, size)

    def capture(self, launches):
      events.append("capture")
      return list(launches)

    def replay(self, captured):
      events.append("replay")
      for f, a, size in captured: base.launch(self, f, a, size)

  monkeypatch.setattr(dev._queue, "__class__", Recording)
  g, args = _graph("softmax")
  ex, want = run.executable(g, "opencl"), run.executable(g, "interp")(args)
  n = len(ex.program.kernels)
  for call in range(4):
    events.clear()
    _same(ex._runner(args), want)
    assert events == (["launch"] * n if call == 0 else ["capture", "replay"] if call == 1 else ["replay"]), (call, events)
  control, cargs = _graph("control_flow")   # control flow runs from the host: never captured
  cx = run.executable(control, "opencl")
  for _ in range(3):
    events.clear()
    _same(cx._runner(cargs), run.executable(control, "interp")(cargs))
    assert "capture" not in events and "replay" not in events
