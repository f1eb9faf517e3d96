"""GPU kernel actions (lower/opt.py, rendered by lower/render_gpu.py): which are legal for which kernel, that every
one computes what the default does on the opencl device (PoCL here) and compiles to PTX, that an upcast tile loads
aligned runs as vectors, and that search on a GPU-style device keeps a valid set in its cache."""
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax, run
from tracegrad.devices.base import Program
from tracegrad.lower import opt, search
from tracegrad.lower.render_gpu import render_kernel, render_program
from tracegrad.lower.schedule import schedule
from oracles import assert_ulps_close

RNG = np.random.default_rng(0)
X = RNG.standard_normal((32, 48)).astype(np.float32)
W = RNG.standard_normal((48, 40)).astype(np.float32)
N = RNG.standard_normal((16, 5000)).astype(np.float32)   # rows longer than a sum block
I = RNG.integers(-50, 50, (24, 16)).astype(np.int32)

KERNELS = {
  # name -> (f, args): each program's kernels are checked under every action one step from the default
  "matmul": (lambda x, w: x @ w, (X, W)),
  "matmul_half": (lambda x, w: x.astype(tnp.float16) @ w.astype(tnp.float16), (X, W)),
  "elementwise": (lambda x: (tnp.exp(x) * 2 - x[:, ::-1], (x > 0) & (x < 1), x.astype(tnp.bfloat16) + 1), (X,)),
  "long_sums": (lambda n: (n.sum(1), tnp.where(n > 2, tnp.nan, n).max(1), n.T.sum(1)), (N,)),
  "softmax": (lambda x: tg.nn.softmax(x, axis=1), (X,)),
  "integers": (lambda i: (i.sum(0), i.max(1), tnp.prod(i % 3 + 1, 0), i.astype(tnp.int64) * 7), (I,)),
  "strided_windows": (lambda x: lax.reduce_window(x, -tnp.inf, lax.max, (2, 3), (2, 1), "VALID"), (X,)),
  "batched_matmul": (lambda x, w: tnp.einsum("bij,bjk->bik", x.reshape(4, 8, 48), tnp.stack([w[:, :32]] * 4)) - 1, (X, W)),
  "conv": (lambda x, w: lax.conv(x, w.reshape(-1)[:108].reshape(4, 3, 3, 3), (1, 1), "SAME"),
           (RNG.standard_normal((2, 3, 16, 16)).astype(np.float32), W)),
}
STAGED = ("matmul", "matmul_half", "batched_matmul")


def _opencl():
  from tracegrad.devices import opencl
  if opencl.missing(): pytest.skip(f"no OpenCL device: {opencl.missing()}")
  return tg.devices("opencl")[0]


def _case(name):
  f, args = KERNELS[name]
  g = tg.make_graph(f)(*args)
  return schedule(g), [np.asarray(a) for a in args], run.executable(g, "interp")([np.asarray(a) for a in args])


def _variants(prog: Program, pick) -> list[Program]:
  """prog with one kernel's actions set as `pick(kernel)` says, one program per kernel and action set."""
  out = []
  for j, k in enumerate(prog.kernels):
    if not hasattr(k, "bufs"): continue
    for o in pick(k):
      kernels = list(prog.kernels)
      kernels[j] = opt.apply(k, o, "opencl")
      out.append(dataclasses.replace(prog, kernels=kernels))
  return out


def _run_all(dev, variants: list[Program], args):
  """Each variant's outputs, all of them compiled as one source."""
  joint = Program([k for p in variants for k in p.kernels], [c for p in variants for c in p.calls],
                  variants[0].buffers, variants[0].inputs, variants[0].outputs)
  src = render_program(joint, "opencl")
  functions = dev.compile(src.source, [n for n, _ in src.launches.values()])
  return [dev.runner(p, functions, src.launches)(args) for p in variants]


def _same(got, want, what):
  """Equal to the reference within what another summation order can change: a few ulps of each output's own dtype
  for float16 and bfloat16 (rounded once from float32 sums), more for float32 sums of up to 5000 terms."""
  for g, w in zip(got, want):
    narrow = w.dtype != np.float32
    assert_ulps_close(g, w, rel=4 if narrow else 160, absolute=4 if narrow else 64, err=what)


TWO_STEPS = ("long_sums", "softmax")   # a tile of blocked sums, a tile with stores in its reduction and an epilogue


def _one_step(k):
  return [{}] + opt.neighbours(k, {}, "opencl")


def _two_steps(k):
  sets = {tuple(sorted(o2.items())) for o in _one_step(k) for o2 in [o, *opt.neighbours(k, o, "opencl")]}
  return [dict(o) for o in sorted(sets)]


@pytest.mark.parametrize("name", KERNELS)
def test_every_action_near_the_default_computes_the_same(name):
  """Every action set one step from the default (two steps for TWO_STEPS)."""
  dev = _opencl()
  prog, args, want = _case(name)
  variants = _variants(prog, _two_steps if name in TWO_STEPS else _one_step)
  assert len(variants) > len(prog.kernels)
  for p, got in zip(variants, _run_all(dev, variants, args)):
    _same(got, want, f"{name}: {[k.opts for k in p.kernels if hasattr(k, 'opts')]}")


def _staged(k):
  """Every legal staging of k's reduction over a few grids, group sizes and tiles."""
  out = []
  for local in (32, 64):
    for up in ({}, {"upcast": 2}, {"upcast": 4, "upcast_rows": 2}):
      for g in (4, 8, 16):
        o = {"local": local, "grid": g, **up}
        legal = opt.gpu_actions(k, o)
        if all(v in legal.get(a, ()) for a, v in o.items()):
          out += [{**o, "stage": c} for c in legal.get("stage", ())[1:]]
  return out


@pytest.mark.parametrize("name", STAGED)
def test_staged_reductions_compute_the_same(name):
  """Chunks of the rows and columns a group shares, copied to local memory, on several grids and tiles."""
  dev = _opencl()
  prog, args, want = _case(name)
  variants = _variants(prog, _staged)
  assert len(variants) >= 6
  for p, got in zip(variants, _run_all(dev, variants, args)):
    _same(got, want, f"{name}: {[k.opts for k in p.kernels if hasattr(k, 'opts')]}")


def test_long_float_sums_add_blocks_and_carry_their_error():
  """Every way a GPU item adds up a long float sum (alone, in a tile, in a work-group, staged) cuts it into blocks
  and adds their sums exactly but for a carried error: 0.1 added 2^17 times, which a running float32 sum gets
  thousands of ulps wrong, comes out within numpy's few; a matmul's blocks are longer (fewer extra operations), and
  its 4096 steps within 16 ulps (a running sum: 517)."""
  dev = _opencl()
  rows = np.full((4, 1 << 17), 0.1, np.float32)
  a, b = np.full((16, 4096), 0.1, np.float32), np.ones((4096, 16), np.float32)
  cases = [(lambda x: x.sum(1), (rows,), [{"group": 0}, {"group": 0, "upcast": 2}, {"group": 1}], 4),
           (lambda x, y: x @ y, (a, b), [{"group": 0, "grid": 8, "stage": 16}, {"group": 0, "upcast": 2}, {"group": 1}],
            16)]
  for f, args, sets, n in cases:
    prog = schedule(tg.make_graph(f)(*args))
    variants = [dataclasses.replace(prog, kernels=[opt.apply(prog.kernels[0], o, "opencl")]) for o in sets]
    exact = f(*(x.astype(np.float64) for x in args))
    for o, (got,) in zip(sets, _run_all(dev, variants, list(args))):
      assert np.abs(got - exact).max() <= n * np.spacing(np.float32(exact.max())), (o, got.ravel()[:4], exact.max())


@st.composite
def _action_sets(draw, k):
  """A legal action set of k, drawn one action at a time."""
  opts = {}
  for _ in range(draw(st.integers(0, 4))):
    cands = opt.neighbours(k, opts, "opencl")
    if not cands: break
    opts = draw(st.sampled_from(cands))
  return opts


@settings(max_examples=6, deadline=None)
@given(st.data())
def test_random_action_sets_compute_the_same_and_compile_to_ptx(data):
  dev = _opencl()
  name = data.draw(st.sampled_from(["matmul", "matmul_half", "long_sums", "softmax", "integers", "batched_matmul", "conv"]))
  prog, args, want = _case(name)
  variants = _variants(prog, lambda k: [data.draw(_action_sets(k)) for _ in range(3)])
  for p, got in zip(variants, _run_all(dev, variants, args)):
    _same(got, want, f"{name}: {[k.opts for k in p.kernels if hasattr(k, 'opts')]}")
  try:
    from tracegrad.devices.cuda import ptx
  except ImportError:
    return
  joint = Program([k for p in variants for k in p.kernels], [c for p in variants for c in p.calls],
                  prog.buffers, prog.inputs, prog.outputs)
  ptx(render_program(joint, "cuda").source)


def test_actions_are_legal_only_where_they_fit():
  mm = schedule(tg.make_graph(lambda x, w: x @ w)(X, W)).kernels[0]   # 32 x 40 outputs, 48 steps
  acts = opt.gpu_actions(mm, {})
  assert acts["upcast"] == (1, 2, 4, 8) and acts["upcast_rows"] == (1, 2, 4, 8) and "group" in acts
  odd = schedule(tg.make_graph(lambda x: x * 2)(np.zeros((6, 14), np.float32))).kernels[0]
  assert opt.gpu_actions(odd, {})["upcast"] == (1, 2) and opt.gpu_actions(odd, {})["upcast_rows"] == (1, 2)
  assert opt.gpu_actions(odd, {"local": 16})["grid"] == (0, 4, 8)   # a 2-d group no wider than the group
  assert opt.gpu_actions(mm, {"group": 1}) == {"group": (0, 1), "local": (32, 64, 128, 256)}
  assert opt.shape(mm, "opencl") == "items" and opt.shape(mm, "c") == "rows_by_width"
  total = schedule(tg.make_graph(lambda x: x.sum())(N)).kernels[0]
  assert opt.shape(total, "cuda") == "group"
  with pytest.raises(ValueError, match=r"upcast=4 is not an action for kernel .* \(items on opencl\); its actions: .*"
                                       r"upcast in \(1, 2\)"):
    opt.apply(odd, {"upcast": 4}, "opencl")
  with pytest.raises(ValueError, match="grid=32 is not an action"):
    opt.apply(odd, {"local": 16, "grid": 32}, "opencl")
  square = schedule(tg.make_graph(lambda x, w: x @ w.T)(X, X)).kernels[0]   # 32 x 32 outputs
  for k in (mm, square):
    for start in ({}, {"upcast": 4}, {"grid": 32, "local": 64}, {"grid": 8, "stage": 16}):
      for o in opt.neighbours(k, start, "cuda"):
        opt.apply(k, o, "cuda")   # every neighbour is legal, whichever action changes


def test_a_big_matmul_runs_in_register_tiles_by_default():
  mm = lambda m, n: schedule(tg.make_graph(lambda x, w: x @ w)(np.zeros((m, 64), np.float32),
                                                               np.zeros((64, n), np.float32))).kernels[0]
  big, ragged = mm(128, 128), mm(256, 80)   # 80 columns: no whole groups of 16 x 4 columns to stage
  tile = {"upcast": 4, "upcast_rows": 4}
  assert opt.gpu_default(ragged) == tile
  src, launch = render_kernel(ragged, "cuda")
  assert "acc15" in src and launch == ((256 * 80 // 16,), (64,))
  assert {"upcast": 1, "upcast_rows": 4} in opt.neighbours(ragged, {}, "cuda")   # search starts from the tile
  assert opt.gpu_default(big) == {**tile, "local": 256, "grid": 16, "stage": 16}
  src, launch = render_kernel(big, "cuda")   # staged through double-buffered shared memory, read as vectors
  assert launch == ((32, 32), (16, 16)) and src.count("__syncthreads();") == 2 and "__shared__ float sh1[2048]" in src
  assert "(1 - sel) * 1024 + e] = pf1[q]" in src and "*(const float4 *)(sh1 + " in src
  assert {**tile, "local": 256, "grid": 16, "stage": 8} in opt.neighbours(big, {}, "cuda")
  small = schedule(tg.make_graph(lambda x, w: x @ w)(X, W)).kernels[0]
  assert opt.gpu_default(small) == {} and "acc1" not in render_kernel(small, "opencl")[0]


def test_an_upcast_tile_loads_and_stores_aligned_runs_as_vectors():
  mm = schedule(tg.make_graph(lambda x, w: x @ w)(X, W)).kernels[0]
  src, launch = render_kernel(opt.apply(mm, {"upcast": 4, "upcast_rows": 2, "grid": 8}, "opencl"), "opencl")
  assert "vload4(0, b1 + " in src and src.count("acc7 = ") and launch == ((8 * 2, 16 // 8 * 8), (8, 8))
  cuda, _ = render_kernel(opt.apply(mm, {"upcast": 4}, "cuda"), "cuda")
  assert "*(const float4 *)(b1 + " in cuda
  # rows of 42 elements: a run of 4 is not aligned for every row, a run of 2 is
  odd = schedule(tg.make_graph(lambda x: x * 2)(np.zeros((6, 42), np.float32))).kernels[0]
  src, _ = render_kernel(opt.apply(odd, {"upcast": 2}, "opencl"), "opencl")
  assert "vload2" in src and "vload4" not in src
  half = schedule(tg.make_graph(lambda x: x + 1)(np.zeros((8, 64), np.float16))).kernels[0]
  src, _ = render_kernel(opt.apply(half, {"upcast": 8}, "cuda"), "cuda")
  assert src.count("*(const ushort4 *)") == 2 and "tg_h2f(v" in src and src.count("*(ushort4 *)(b1 + ") == 2
  src, _ = render_kernel(opt.apply(mm, {"upcast": 4, "upcast_rows": 2}, "opencl"), "opencl")
  assert src.count("vstore4((float4)(acc") == 2   # the tile's rows, each stored as one vector


@pytest.fixture
def gpu_space(monkeypatch, tmp_path):
  monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))
  monkeypatch.setattr(opt, "GPU_AMOUNTS", {"local": (32, 64), "group": (0, 1), "upcast": (1, 4), "upcast_rows": (1, 4),
                                           "grid": (0, 8), "stage": (0, 16)})
  monkeypatch.setattr(search, "MAX_ROUNDS", 2)
  monkeypatch.setattr(search, "MIN_KERNEL_TIME", 0.0)
  monkeypatch.setattr(search, "MIN_TIME", 0.002)
  return _opencl()


def test_search_on_opencl_keeps_a_valid_set_and_caches_it(gpu_space, monkeypatch):
  prog, args, want = _case("matmul")
  k = prog.kernels[0]
  best = search.best_opts(k, 2, gpu_space)
  opt.apply(k, best, "opencl")
  assert search.Cache(gpu_space).get(search.kernel_key(k, gpu_space)) == best
  assert str(search.Cache(gpu_space).path).endswith("opencl/search.sqlite")
  monkeypatch.setattr(search, "_time", lambda *a: pytest.fail("a cache hit times nothing"))
  assert search.best_opts(k, 2, gpu_space) == best
  g = tg.make_graph(KERNELS["matmul"][0])(*args)
  ex = run.executable(g, "opencl", search=2)
  assert ex.program.kernels[0].opts == tuple(sorted(best.items()))
  _same(ex(args), want, "searched")


def test_search_drops_a_candidate_that_computes_another_result(gpu_space, monkeypatch):
  prog, args, _ = _case("matmul")
  k = prog.kernels[0]
  real = search._time

  def wrong_when_upcast(built, arrays, stored, device):
    res = real(built, arrays, stored, device)
    if res is not None and dict(built.prog.kernels[0].opts).get("upcast") == 4:
      return 0.0, [o + 1 for o in res[1]]   # the quickest, and wrong
    return res

  monkeypatch.setattr(search, "_time", wrong_when_upcast)
  assert search.best_opts(k, 2, gpu_space).get("upcast") != 4


def test_a_staged_reduction_shares_chunks_through_local_memory():
  mm = schedule(tg.make_graph(lambda x, w: x @ w)(X, W)).kernels[0]   # 32 x 40 outputs, 48 steps
  o = {"grid": 4, "local": 32, "stage": 16, "upcast": 2, "upcast_rows": 2}
  assert opt.gpu_actions(mm, {"grid": 4, "local": 32})["stage"] == (0, 8, 16)   # chunks that divide 48 steps
  assert opt.stage_shape(mm, o, opt.stage_loads(mm)[0]) in ((16, 16), (16, 8))
  src, launch = render_kernel(opt.apply(mm, o, "opencl"), "opencl")
  assert "__local float sh0[" in src and "__local float sh1[" in src and src.count("barrier(") == 2
  assert launch == ((20 // 4 * 4, 16), (4, 8))
  cuda, _ = render_kernel(opt.apply(mm, o, "cuda"), "cuda")
  assert "__shared__ float sh0[" in cuda and cuda.count("__syncthreads();") == 2
  # a group with items past the edge would skip the barriers: no staging where the grid does not divide the loops
  assert "stage" not in opt.gpu_actions(mm, {"grid": 16, "local": 64}) and "stage" in opt.gpu_actions(mm, {"grid": 8})
  pytest.importorskip("cuda.bindings.nvrtc")
  from tracegrad.devices.cuda import ptx
  ptx(render_program(Program([opt.apply(mm, o, "cuda")], [(0, 1, 2)], [], [], []), "cuda").source)
