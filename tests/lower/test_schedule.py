"""The scheduler's Programs compute what the graph does (checked with a numpy evaluator of the kernel IR), in few
kernels, never materialising a broadcast."""
import math

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax, run
from tracegrad.ir import Ops, toposort
from tracegrad.lower.kernel import Control
from tracegrad.lower.schedule import _written, prepare, schedule
from tracegrad.lower.symbolic import coefficient

from kernel_eval import run_program
from oracles import tol, ulps

rng = np.random.default_rng(0)
X = rng.normal(size=(4, 8)).astype(np.float32)
I = rng.integers(-5, 5, size=(3, 5)).astype(np.int32)


def _softmax(x):
  e = tnp.exp(x - x.max(1, keepdims=True))
  return e / e.sum(1, keepdims=True)


CASES = {
  "elementwise": (lambda x: tnp.tanh(1.5 * x + 0.5) * tnp.exp(-x * x) + x / (1 + tnp.abs(x)), (X,)),
  "reduce": (lambda x: tnp.exp(x * 2).sum(), (X,)),
  "reduce_axes": (lambda x: (x.max(0), x.min(1), x.prod(1), x.mean()), (X,)),
  "softmax": (_softmax, (X,)),
  "views": (lambda x: tnp.pad(x, ((1, 2), (0, 3)))[::2, ::-1].T.reshape(-1), (X,)),
  "concat": (lambda x: tnp.concatenate([x, x * 2, x[:, :3]], 1), (X,)),
  "matmul": (lambda x: x @ x.T, (X,)),
  "gather": (lambda x: x[tnp.asarray([3, 0, 1])] + tnp.arange(8.0), (X,)),
  "scatter": (lambda x: (x.at[tnp.asarray([0, 0, 2])].add(1.0), x.at[1, ::2].set(5.0), x.at[tnp.asarray([9, 1])].max(0.5, mode="drop")),
              (X,)),
  "sort": (lambda x: tnp.sort(x, axis=1), (X,)),
  "solve": (lambda x: tnp.linalg.solve(x[:, :4] + 4 * tnp.eye(4), x[:, 4:]), (X,)),
  "grad": (lambda x: tg.grad(lambda y: (tnp.tanh(y) * y).sum())(x), (X,)),
  "passthrough": (lambda x: (x, 3.0, x.reshape(8, 4)), (X,)),
  "ints": (lambda a: (a // 3, a % 4, a << 2, a >> 1, a & 6, -a, tnp.abs(a), a.sum(0), a.max()), (I,)),
  "bools": (lambda a: ((a > 0) & (a < 3), tnp.any(a > 3, axis=1), tnp.where(a > 0, a, 0)), (I,)),
  "casts": (lambda x: (x.astype(tnp.int32), x.astype(tnp.float16) * 3, x.astype(tnp.bfloat16).sum(1), x.astype(bool)), (X,)),
  "iota": (lambda x: x * tnp.arange(8) + tnp.eye(4, 8), (X,)),
  "zero_size": (lambda x: (x[:0] * 2, x[:, :0].sum(1)), (X,)),
  "scan": (lambda x: lax.scan(lambda c, r: (c * 0.5 + r, (c.sum(), r * 2)), x[0], x, reverse=True), (X,)),
  "scan_swaps_carries": (lambda x: lax.fori_loop(0, 3, lambda i, c: (c[1], c[0] + i), (x[0], x[1])), (X,)),
  "while": (lambda x: lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, tnp.sin(c[1])), (0, x)), (X,)),
  "cond": (lambda x: lax.cond(x.sum() > 0, lambda v: (v, v.max()), lambda v: (v * 2, v.min()), x), (X,)),
  "switch": (lambda a: [lax.switch(i, [lambda v: v + 1, lambda v: v * 3], a) for i in (-2, 0, 1, 7)], (I,)),
  "scan_empty": (lambda x: lax.scan(lambda c, r: (c + r, c * 2), x[0], x[:0]), (X,)),
  "scan_dtypes": (lambda x: lax.scan(lambda c, r: ((c[0] + r.astype(tnp.float16), ~c[1]), c[0] > 0), (x[0].astype(tnp.float16), x[0] > 0), x), (X,)),
  "while_never": (lambda x: lax.while_loop(lambda c: c.sum() > 1e9, lambda c: c * 2, x), (X,)),
  "while_in_scan": (lambda x: lax.scan(lambda c, r: (lax.while_loop(lambda d: d.max() < 10, lambda d: d * 2 + 1, c + r), None), tnp.abs(x[0]), tnp.abs(x)), (X,)),
  "nested": (lambda x: lax.scan(lambda c, r: (lax.fori_loop(0, 2, lambda i, d: d * r, c), c.sum()), x[0], x[:3]), (X,)),
}


@pytest.mark.parametrize("name", CASES)
def test_program_matches_interp(name):
  f, args = CASES[name]
  g = tg.make_graph(f)(*args)
  prog = schedule(g)
  got = run_program(prog, [np.asarray(a) for a in args])
  want = run.run_graph(g, [np.asarray(a) for a in args]) if run.default_backend() == "interp" else \
    run.Executable(g, "interp")([np.asarray(a) for a in args])
  compiled = run.Executable(g, "cpu")([np.asarray(a) for a in args]) if _has_cpu() else want
  assert len(got) == len(want) == len(compiled)
  for a, b, c in zip(got, want, compiled):
    assert a.shape == b.shape == c.shape and a.dtype == b.dtype == c.dtype
    t = tol(b.dtype) if str(b.dtype) in ("float16", "bfloat16") else tol("float32", 84, 8)   # narrow: a rounding apart
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), **t)
    np.testing.assert_allclose(c.astype(np.float64), b.astype(np.float64), **t)


def _has_cpu() -> bool:
  try:
    return bool(tg.devices("cpu"))
  except ValueError:
    return False


def test_fusion_counts():
  assert len(schedule(tg.make_graph(CASES["elementwise"][0])(X)).kernels) == 1
  assert len(schedule(tg.make_graph(lambda x: tnp.exp(x).sum())(X)).kernels) == 1
  assert len(schedule(tg.make_graph(lambda x: x @ x.T)(X)).kernels) == 1


def _layer_norm(x, g, b):
  m = x.mean(-1, keepdims=True)
  v = ((x - m) ** 2).mean(-1, keepdims=True)
  return (x - m) / tnp.sqrt(v + 1e-5) * g + b


def test_cheap_arithmetic_is_recomputed_rather_than_stored():
  x, g, b = rng.normal(size=(16, 32)).astype(np.float32), np.ones(32, np.float32), np.zeros(32, np.float32)
  fwd = schedule(tg.make_graph(_layer_norm)(x, g, b))
  # one pass over each row: the mean's sum; the variance's sum (x - mean recomputed in it), the output in its
  # epilogue (the reciprocal square root of the variance computed there)
  (k,) = fwd.kernels
  assert len(k.phases) == 1 and k.phases[0].reduce is not None and not k.phases[0].epilogue
  assert k.epilogue and Ops.SQRT in [u.op for u in k.stores[0].value.toposort()]
  # backward: the rows' statistics, output and input gradient in one pass; the scale's and shift's column sums
  both = schedule(tg.make_graph(tg.grad(lambda x, g, b: _layer_norm(x, g, b).sum(), (0, 1, 2)))(x, g, b))
  assert len(both.kernels) == 2
  sm = schedule(tg.make_graph(tg.grad(lambda x: (_softmax(x) * x).sum()))(X))
  assert len(sm.kernels) == 1
  for f, args in ((_layer_norm, (x, g, b)), (tg.grad(lambda x: (_softmax(x) * x).sum()), (X,))):
    want = [np.asarray(v) for v in tg.tree.leaves(f(*args))]
    got = run_program(schedule(tg.make_graph(f)(*args)), list(args))
    for w, o in zip(want, got): np.testing.assert_allclose(o.reshape(w.shape), w, **tol("float32", 16, 16))


def test_a_gelus_bit_operations_are_recomputed_rather_than_stored():
  """The tanh of a GELU reinterprets bits (its sign, |x|): a bitcast costs nothing, so where the activation is
  needed by two kernels (a contraction and the backward pass) each recomputes it from the input, as it does other
  cheap arithmetic, rather than one storing the bit patterns and magnitudes (5 MB a step of the GPT benchmark's)."""
  x, w = rng.normal(size=(64, 128)).astype(np.float32), rng.normal(size=(128, 32)).astype(np.float32)
  g = tg.grad(lambda x, w: (tg.nn.gelu(x, approximate=True) @ w).sum(), (0, 1))
  prog = schedule(tg.make_graph(g)(x, w))
  # the forward contraction; the activation (which the weight's gradient reads) and the input's gradient; that one
  assert [len(k.stores) for k in prog.kernels if not k.name.endswith("_pack")] == [1, 2, 1]
  for got, want in zip(run_program(prog, [x, w]), g(x, w)):
    np.testing.assert_allclose(got.reshape(want.shape), np.asarray(want), **tol("float32", 16, 16))


def test_a_gradient_step_is_stored_by_its_gradients_contraction():
  """p - lr * (x.T @ dy) reads its contraction through a scaling and a reshape that drops the reduced axis: the
  contraction's kernel stores the stepped parameter, and the gradient gets no buffer (a weight's update read and
  wrote a gradient as big as the weight again)."""
  x, dy = rng.normal(size=(64, 48)).astype(np.float32), rng.normal(size=(64, 32)).astype(np.float32)
  p, b = rng.normal(size=(48, 32)).astype(np.float32), rng.normal(size=(32,)).astype(np.float32)
  step = lambda p, b, x, dy: (p - 0.1 * (x.T @ dy), b - 0.1 * dy.sum(0))
  prog = schedule(tg.make_graph(step)(p, b, x, dy))
  assert [(k.name.split("_", 1)[1], k.reduce is not None) for k in prog.kernels] == [("sub", True)] * 2
  # a contraction that is also an output: the kernel stores both
  both = schedule(tg.make_graph(lambda p, x, dy: (p - 0.1 * (x.T @ dy), x.T @ dy))(p, x, dy))
  assert [len(k.stores) for k in both.kernels] == [2]
  for got, want in zip(run_program(prog, [p, b, x, dy]), step(p, b, x, dy)):
    np.testing.assert_allclose(got.reshape(want.shape), np.asarray(want), **tol("float32", 64, 64))
  for got, want in zip(tg.jit(step)(p, b, x, dy), step(p, b, x, dy)):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), **tol("float32", 64, 64))
  # a ReLU's backward: the gradient's contraction stores it masked by the forward contraction, another kernel's
  # output (which the forward's ReLU reads too), read from that kernel's buffer
  relu = lambda x, v, dy, w: (tnp.maximum(x @ v, 0.0), (dy @ w) * (x @ v > 0))
  v, w = rng.normal(size=(48, 32)).astype(np.float32), rng.normal(size=(48, 32)).astype(np.float32)
  dz = rng.normal(size=(64, 48)).astype(np.float32)
  masked = schedule(tg.make_graph(relu)(x, v, dz, w))
  assert [k.reduce is not None for k in masked.kernels] == [True, True]   # the forward's ReLU joins its contraction
  assert Ops.CMPLT in [u.op for u in masked.kernels[1].stores[0].value.toposort()]
  for got, want in zip(run_program(masked, [x, v, dz, w]), relu(x, v, dz, w)):
    np.testing.assert_allclose(got.reshape(want.shape), np.asarray(want), **tol("float32", 64, 64))


def test_a_row_reduction_reading_a_per_row_value_stays_a_row_reduction():
  x = rng.normal(size=(64, 256)).astype(np.float32)
  prog = schedule(tg.make_graph(lambda x: ((x - x.mean(-1, keepdims=True)) ** 2).sum(-1))(x))
  var = [k for k in prog.kernels if k.reduce is not None][-1]
  assert "accs[" not in var.source   # not interchanged: the per-row mean does not move along the reduction


def test_row_softmax_is_one_pass_with_the_division_in_the_sums_epilogue():
  prog = schedule(tg.make_graph(_softmax)(X))
  (k,) = prog.kernels
  assert [p.reduce.op for p in k.steps()] == [Ops.REDUCE_MAX, Ops.REDUCE_SUM] and k.epilogue
  assert max(b.size for b in prog.buffers) == X.size
  # exp(x - max) is computed once: kept in the output while summed, then divided there in the epilogue
  (kept,) = k.reduce.stores
  assert kept.buf is k.stores[0].buf
  assert sum(u.op is Ops.EXP2 for s in k.stores for u in s.value.toposort()) == 0
  np.testing.assert_allclose(run_program(prog, [X])[0].reshape(X.shape), np.asarray(_softmax(X)), **tol("float32", 8, 8))


def test_a_softmax_down_columns_sums_across_them_then_divides_in_a_kernel_of_its_own():
  """A softmax over a transposed view (and a batch norm's statistics over channels-last rows) would read a column a
  cache line a step in an epilogue kernel: its sums run across the columns instead, each a vector of them, and the
  division is an elementwise kernel of its own. numpy's values."""
  x = rng.normal(size=(64, 48)).astype(np.float32)
  soft = lambda x: tg.nn.softmax(x.T, axis=-1)
  prog = schedule(tg.make_graph(soft)(x))
  assert not any(isinstance(k, tg.lower.kernel.Kernel) and k.epilogue for k in prog.kernels)
  assert [k.reduce.op for k in prog.kernels if k.reduce is not None] == [Ops.REDUCE_MAX, Ops.REDUCE_SUM]
  e = np.exp(x.T.astype(np.float64) - x.T.max(1, keepdims=True))
  want = e / e.sum(1, keepdims=True)
  np.testing.assert_allclose(run_program(prog, [x])[0].reshape(want.shape), want, **tol("float32", 8, 8))
  np.testing.assert_allclose(np.asarray(tg.jit(soft)(x)), want, **tol("float32", 8, 8))
  assert any(k.epilogue for k in schedule(tg.make_graph(lambda x: tg.nn.softmax(x, axis=-1))(x)).kernels)   # rows: one pass
  h = rng.normal(size=(4, 6, 6, 32)).astype(np.float32)
  centre = lambda h: h - h.mean((0, 1, 2))
  prog = schedule(tg.make_graph(centre)(h))
  assert len(prog.kernels) == 2 and not any(k.epilogue for k in prog.kernels)
  want = h - h.astype(np.float64).mean((0, 1, 2))
  np.testing.assert_allclose(run_program(prog, [h])[0].reshape(h.shape), want, **tol("float32", 64, 64))


def test_reductions_over_the_same_rows_are_phases_of_one_pass():
  x = rng.normal(size=(16, 32)).astype(np.float32)
  f = lambda x: tnp.exp(x - x.max(1, keepdims=True)).sum(1) * x.sum(1)
  prog = schedule(tg.make_graph(f)(x))
  (k,) = prog.kernels
  assert len(k.phases) == 2 and [l.extent for l in k.loops] == [16]
  want = np.exp(x - x.max(1, keepdims=True)).sum(1) * x.sum(1)
  np.testing.assert_allclose(run_program(prog, [x])[0], want, **tol("float32", 64, 64))
  np.testing.assert_allclose(np.asarray(tg.jit(f)(x)), want, **tol("float32", 64, 64))
  # a row's phase reading another row's maximum would read it before that row computed it: two kernels
  g = lambda x: tnp.exp(x - x.max(1)[::-1, None]).sum(1)
  prog = schedule(tg.make_graph(g)(x))
  assert len(prog.kernels) == 2 and not any(k.phases for k in prog.kernels)
  want = np.exp(x - x.max(1)[::-1, None]).sum(1)
  np.testing.assert_allclose(np.asarray(tg.jit(g)(x)), want, **tol("float32", 64, 64))


def test_an_interleave_is_not_a_phase_of_another_kernel_over_its_rows():
  """Two arrays' elements interleaved along an axis, over the same rows as a softmax's sum: the interleave stays a
  kernel of its own, whose loop over the parts runs unrolled (each part a vectorised loop), rather than a phase of
  the sum's kernel picking among the parts at every element. numpy's values."""
  x, a, b = (rng.normal(size=s).astype(np.float32) for s in ((32, 10), (32, 16, 64), (32, 16, 64)))
  f = lambda x, a, b: (tnp.log(tnp.exp(x).sum(1)), tnp.stack([a * 2.0, b * 3.0], axis=2).reshape(32, 32, 64))
  prog = schedule(tg.make_graph(f)(x, a, b))
  assert len(prog.kernels) == 2 and not any(k.phases for k in prog.kernels)
  got = tg.jit(f)(x, a, b)
  np.testing.assert_allclose(np.asarray(got[0]), np.log(np.exp(x).sum(1)), **tol("float32", 16, 16))
  np.testing.assert_array_equal(np.asarray(got[1]), np.stack([a * 2, b * 3], 2).reshape(32, 32, 64))


def test_a_broadcast_is_never_materialised():
  g = tg.make_graph(lambda x: (tnp.broadcast_to(x, (2 ** 20, 4, 8)) * 2.0).sum())(X)
  prog = schedule(g)
  assert max(b.size for b in prog.buffers) == X.size
  np.testing.assert_allclose(run_program(prog, [X])[0], X.sum() * 2 ** 21, rtol=ulps(840))


def test_a_reduction_over_a_broadcast_loops_over_its_source_only():
  # sum and max over the copies a broadcast makes: over the source, the sum times the count (in int32, 2**32 + 1
  # threes sum to 3, as adding them would)
  f = lambda x: ((tnp.broadcast_to(x, (2 ** 30, 4, 8)) * 2.0).sum(0) + tnp.full((2 ** 32 + 1,), 3, tnp.int32).sum()
                 + tnp.broadcast_to(x.max(1), (2 ** 40, 4)).max(0)[:, None])
  prog = schedule(tg.make_graph(f)(X))
  extents = [l.extent for k in prog.kernels for l in (*k.loops, *(k.reduce.loops if k.reduce else ()))]
  assert max(extents) == X.shape[1]
  want = X * 2.0 * 2 ** 30 + 3 + X.max(1, keepdims=True)
  np.testing.assert_allclose(run_program(prog, [X])[0], want, rtol=ulps(8))


def test_a_broadcast_read_by_two_kernels_keeps_its_source_in_a_buffer():
  def f(h, w):  # the backward pass of a matmul reads the broadcast activations again
    return tg.grad(lambda h: (tnp.maximum(h, 0) @ w).sum())(h)
  w = rng.normal(size=(8, 6)).astype(np.float32)
  prog = schedule(tg.make_graph(f)(X, w))
  assert max(b.size for b in prog.buffers) <= max(X.size, w.size)


def test_elementwise_work_a_broadcast_repeats_into_a_contraction_is_stored_once():
  h, g, w = (rng.normal(size=s).astype(np.float32) for s in ((64, 32), (64, 32), (32, 16)))
  f = lambda h, g, w: (tnp.where(h > 0, g, 0.0) * 3.0 + 1.0) @ w
  prog = schedule(tg.make_graph(f)(h, g, w))
  (contraction,) = [k for k in prog.kernels if k.reduce is not None]
  assert Ops.CMPLT not in [u.op for u in contraction.reduce.value.toposort()]
  assert len(prog.kernels) == 2
  want = (np.where(h > 0, g, 0) * 3 + 1) @ w
  np.testing.assert_allclose(run_program(prog, [h, g, w])[0].reshape(want.shape), want, **tol("float32", 64, 64))
  # one step (a bias) stays in the contraction
  assert len(schedule(tg.make_graph(lambda h, w: (h + 1.0) @ w)(h, w)).kernels) == 1


def test_an_optimization_barrier_is_stored_and_nothing_fuses_across_it():
  prog = schedule(tg.make_graph(lambda x: (lax.optimization_barrier(tnp.exp(x)) * 2.0).sum(1))(X))
  (k,) = prog.kernels   # a row's exponentials stored, then summed from the buffer: phases of one pass
  first, second = k.steps()
  assert any(u.op is Ops.EXP2 for st in first.stores for u in st.value.toposort())
  assert not any(u.op is Ops.EXP2 for u in second.reduce.value.toposort())
  np.testing.assert_allclose(run_program(prog, [X])[0], (np.exp(X) * 2).sum(1), **tol("float32", 16, 16))


def test_an_optimization_barriers_one_stored_elementwise_user_computes_it_where_it_reads_it():
  """A barrier whose only user is an elementwise node with a buffer of its own is computed in that node's kernel
  (each element once, as before), not stored by one kernel for the next to read back; with two users it stays
  stored."""
  once = schedule(tg.make_graph(lambda x: lax.optimization_barrier(tnp.exp(x)) * 2.0)(X))
  (k,) = once.kernels
  assert len(once.buffers) == 2 and any(u.op is Ops.EXP2 for st in k.stores for u in st.value.toposort())
  np.testing.assert_allclose(run_program(once, [X])[0], np.exp(X) * 2, **tol("float32", 8, 8))
  twice = schedule(tg.make_graph(lambda x: (lambda b: (b * 2.0, b + 1.0))(lax.optimization_barrier(tnp.exp(x))))(X))
  assert len(twice.buffers) == 4   # the input, the barrier's and the two outputs
  # a strided convolution's input gradient (a barrier) and the ReLU's mask in front of it: one pass
  x, w = rng.normal(size=(2, 3, 9, 9)).astype(np.float32), rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
  conv = lambda h, w: lax.conv_general_dilated(h, w, (2, 2), "SAME")
  dx = lambda x, w: tg.grad(lambda x: (conv(tg.nn.relu(x), w) ** 2).sum())(x)
  prog = schedule(tg.make_graph(dx)(x, w))
  # the windows, the forward pass, every tap's cotangent, then the input's gradient: four kernels storing one array each
  assert [len(k.stores) for k in prog.kernels] == [1, 1, 1, 1]
  want = np.asarray(tg.jit(dx)(x, w))
  np.testing.assert_allclose(run_program(prog, [x, w])[0].reshape(want.shape), want, **tol("float32", 64, 64))


def test_a_convolution_is_its_windows_stored_once_and_one_contraction_without_index_division():
  x, w = rng.normal(size=(2, 3, 9, 9)).astype(np.float32), rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
  prog = schedule(tg.make_graph(lambda x, w: lax.conv_general_dilated(x, w, (2, 2), "SAME"))(x, w))
  assert [k.reduce is not None for k in prog.kernels] == [False, True]
  stores = [st for k in prog.kernels for st in (*k.stores, *(k.reduce.stores if k.reduce else ()))]
  roots = [v for st in stores for v in (st.index, st.value, st.valid)]
  ops = [u.op for v in roots + [prog.kernels[1].reduce.value] if v is not None for u in v.toposort()]
  assert Ops.IDIV not in ops and Ops.MOD not in ops
  xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
  want = np.einsum("ncyxhw,ochw->noyx", np.stack([np.stack([xp[:, :, i:i + 9:2, j:j + 9:2] for j in range(3)], -1)
                                                  for i in range(3)], -2), w)
  np.testing.assert_allclose(run_program(prog, [x, w])[0].reshape(want.shape), want, **tol("float32", 64, 64))


@pytest.mark.parametrize("size,padded", [(32, True), (28, False)])
def test_stored_windows_whose_rows_share_cache_sets_are_stored_with_longer_rows(size, padded):
  """A stride-2 convolution's windows over 16 x 16 positions are rows 1 KB apart, whose lines fall in 4 of the L1
  cache's sets: a contraction summing across 72 of them in place has them evict each other (with 64 output channels
  or more it copied them with longer rows first, a copy the size of the windows). They are stored with rows
  PAD_BYTES longer instead, with no copy, and read in place by the forward pass and the filter gradient; 14 x 14
  positions (784 bytes apart) are stored as they are. numpy's values for both."""
  from tracegrad.lower.schedule import PAD_BYTES
  x, w = rng.normal(size=(2, 8, size, size)).astype(np.float32), rng.normal(size=(16, 8, 3, 3)).astype(np.float32)
  conv = lambda x, w: lax.conv_general_dilated(x, w, (2, 2), "SAME")
  f = lambda w, x: (conv(x, w), tg.grad(lambda w: (conv(x, w) ** 2).sum() / 2)(w))
  prog = schedule(tg.make_graph(f)(w, x))
  m = (size // 2) ** 2
  row = m + PAD_BYTES // 4 if padded else m
  assert [k.name for k in prog.kernels if k.name.endswith("_pack")] == []
  (copy,) = [k for k in prog.kernels if k.reduce is None and "optimization_barrier" in k.name]
  assert math.prod(l.extent for l in copy.loops) == 2 * 72 * row
  # the longer rows as one more row of 16 positions: the copy's loops stay the positions' rows, with no division
  assert [l.extent for l in copy.loops][-2:] == ([17, 16] if padded else [14, 14])
  assert not {Ops.IDIV, Ops.MOD} & {u.op for st in copy.stores for u in st.index.toposort()}
  xp = np.pad(x, [(0, 0), (0, 0), (0, 1), (0, 1)])   # SAME: one row and column past the end
  cols = np.stack([xp[:, :, i:i + size:2, j:j + size:2] for i in range(3) for j in range(3)], 2)   # n c t y x
  out = np.einsum("nctyx,oct->noyx", cols.astype(np.float64), w.reshape(16, 8, 9))
  dw = np.einsum("noyx,nctyx->oct", out, cols).reshape(w.shape)
  got = run_program(prog, [w, x])
  np.testing.assert_allclose(got[0].reshape(out.shape), out, **tol("float32", 72, 72))
  np.testing.assert_allclose(got[1].reshape(dw.shape), dw, **tol("float32", 72 * 2 * m, 72 * 2 * m))


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_a_channels_last_filter_gradient_is_summed_in_the_layout_its_update_reads(strides):
  """A convolution in NHWC / HWIO: its filter's gradient, read only through the transpose back to HWIO (by an SGD
  update), is summed in HWIO order (where the convolution reads the input in place, as OIHW, the sum's permute and
  its reshape splitting O and I*taps moved onto the summand; where its windows are stored, channels-last, HWIO
  flattened to (taps * I, O)): output channels last, along which the NHWC output gradient is contiguous, so the
  contraction is register-blocked and its kernel stores the update, rather than a scalar sum at a stride and a
  transposing pass."""
  from tracegrad.lower.render_c import dot_blocked, interchanged
  x, w = rng.normal(size=(4, 12, 12, 8)).astype(np.float32), rng.normal(size=(3, 3, 8, 16)).astype(np.float32)
  dn = ("NHWC", "HWIO", "NHWC")
  conv = lambda lax, x, w: lax.conv_general_dilated(x, w, strides, "SAME", dimension_numbers=dn)
  step = lambda w, x: w - 0.1 * tg.grad(lambda w: (conv(lax, x, w) ** 2).sum())(w)
  prog = schedule(tg.make_graph(step)(w, x))
  (k,) = [k for k in prog.kernels if k.reduce is not None and k.loops[-1].extent == 16 and
           math.prod(l.extent for l in k.loops) == 3 * 3 * 8 * 16]
  assert [l.extent for l in k.loops] in ([3, 3, 8, 16], [72, 16]) and k.stores and (interchanged(k) or dot_blocked(k))
  want = np.asarray(tg.jit(step)(w, x))
  close = dict(rtol=ulps(1024), atol=ulps(1024) * np.abs(want).max())   # sums of 576 terms, which cancel
  np.testing.assert_allclose(run_program(prog, [w, x])[0].reshape(want.shape), want, **close)
  jax = pytest.importorskip("jax")
  np.testing.assert_allclose(want, w - 0.1 * np.asarray(jax.grad(lambda w: (conv(jax.lax, x, w) ** 2).sum())(w)),
                             **close)


def test_a_first_layers_channels_last_filter_gradient_runs_its_taps_and_channels_as_one_loop_of_rows():
  """The filter gradient of a channels-last convolution of 3 input channels (an RGB image's first layer) runs as
  register blocks along its output channels, but its rows loop (3 input channels) is shorter than any target's block
  of rows: merged with the taps' loops outside it, it is one loop of 27 rows (_merged_rows), so each step of the sum
  serves a block of 8. Per-example filter gradients merge the same loops and keep the examples' loop, which the
  output gradients (the columns' operand) read, apart. JAX's values for both."""
  from tracegrad.lower.render_c import interchanged
  x, w = rng.normal(size=(4, 12, 12, 3)).astype(np.float32), rng.normal(size=(3, 3, 3, 16)).astype(np.float32)
  dy = rng.normal(size=(4, 12, 12, 16)).astype(np.float32)   # the next layer's channels-last input gradient
  dn = ("NHWC", "HWIO", "NHWC")
  conv = lambda lax, x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
  loss = lambda lax, w, x, dy: (conv(lax, x, w) * dy).sum()
  step = lambda w, x, dy: w - 0.1 * tg.grad(loss, argnums=1)(lax, w, x, dy)
  prog = schedule(tg.make_graph(step)(w, x, dy))
  (k,) = [k for k in prog.kernels if k.reduce is not None and k.loops[-1].extent == 16]
  assert [l.extent for l in k.loops] == [27, 16] and interchanged(k)
  want = np.asarray(tg.jit(step)(w, x, dy))
  close = dict(rtol=ulps(1024), atol=ulps(1024) * np.abs(want).max())   # sums of 576 terms
  np.testing.assert_allclose(run_program(prog, [w, x, dy])[0].reshape(want.shape), want, **close)
  per = lambda w, x, dy: tg.vmap(lambda x, dy: tg.grad(loss, argnums=1)(lax, w, x[None], dy[None]))(x, dy)
  prog = schedule(tg.make_graph(per)(w, x, dy))
  (k,) = [k for k in prog.kernels if k.reduce is not None and k.loops[-1].extent == 16]
  assert [l.extent for l in k.loops] == [4, 27, 16] and interchanged(k)
  got = run_program(prog, [w, x, dy])[0].reshape(4, 3, 3, 3, 16)
  jax = pytest.importorskip("jax")
  jgrad = lambda w, x, dy: jax.grad(loss, argnums=1)(jax.lax, w, x, dy)
  np.testing.assert_allclose(want, w - 0.1 * np.asarray(jgrad(w, x, dy)), **close)
  jper = jax.vmap(lambda x, dy: jgrad(w, x[None], dy[None]))(x, dy)
  np.testing.assert_allclose(got, jper, rtol=ulps(256), atol=ulps(256) * np.abs(got).max())


def test_a_sum_over_a_few_points_is_written_out_in_its_elementwise_kernel():
  """Squared distances of points in 3 dimensions (a Gaussian process's kernel matrix): a sum over 3 points per
  output runs as three additions in an elementwise kernel, vectorised along its outputs, with the same additions in
  the same order as the loop it replaces (bit for bit); so does a product, and an integer sum. A sum over more
  points, or one the register blocks take (a matmul by 3 rows of weights), stays a reduction."""
  x = rng.normal(size=(64, 3)).astype(np.float32)
  squared = lambda x: ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
  dist = lambda np_, x: np_.exp(-0.5 * squared(x))
  prog = schedule(tg.make_graph(lambda x: dist(tnp, x))(x))
  assert [k.reduce for k in prog.kernels] == [None]
  d = ((x[:, None, :] - x[None, :, :]) ** 2)
  sq = (np.float32(0) + d[..., 0] + d[..., 1] + d[..., 2])   # the loop's additions, in its order
  np.testing.assert_array_equal(run_program(schedule(tg.make_graph(squared)(x)), [x])[0].reshape(64, 64), sq)
  np.testing.assert_array_equal(np.asarray(tg.jit(squared)(x)), sq)   # compiled, vectorised along the outputs
  jax = pytest.importorskip("jax")
  np.testing.assert_allclose(run_program(prog, [x])[0].reshape(64, 64), dist(jax.numpy, x), rtol=ulps(16))
  i = rng.integers(-9, 9, size=(32, 4)).astype(np.int32)
  for f, want in ((lambda x: tnp.prod(x, axis=1), np.prod(x, axis=1)), (lambda i: i.sum(1), i.sum(1))):
    arg = x if want.dtype == np.float32 else i
    prog = schedule(tg.make_graph(f)(arg))
    assert all(k.reduce is None for k in prog.kernels)
    got = run_program(prog, [arg])[0].reshape(want.shape)
    np.testing.assert_array_equal(got, want) if want.dtype != np.float32 else \
      np.testing.assert_allclose(got, want, rtol=ulps(4))
  long = schedule(tg.make_graph(lambda x: (x[:, None, :] * x[None, :, :]).sum(-1))(np.ones((64, 9), np.float32)))
  w = np.ones((3, 32), np.float32)
  dense = schedule(tg.make_graph(lambda x, w: x @ w)(x, w))
  assert any(k.reduce is not None for k in long.kernels) and any(k.reduce is not None for k in dense.kernels)


def test_a_long_chain_of_cheap_steps_that_two_kernels_read_is_computed_once():
  """Cheap steps (adds, compares, shifts) that several kernels read are recomputed in each, but not a chain of more
  than CHEAP_CHAIN of them: normal draws (the random bits' rounds and the inverse error function's multiply-adds,
  some 400 steps) read by a sum and by an elementwise output are computed once, into a buffer, rather than in both
  kernels; and the random bits' rotations (shifts) are recomputed, not stored round by round. JAX's values (the draws
  match bit for bit)."""
  from tracegrad.lower.schedule import CHEAP_CHAIN
  w = rng.normal(size=(64, 64)).astype(np.float32)
  both = lambda lib, key, w: (lambda eps: ((eps * w).sum(), eps * 2.0 + 1.0))(lib.random.normal(key, (64, 64)))
  size = lambda prog: sum(len(toposort([x for st in k.stores for x in (st.index, st.value)] +
                                       ([k.reduce.value] if k.reduce else []))) for k in prog.kernels)
  one = schedule(tg.make_graph(lambda key: tg.random.normal(key, (64, 64)))(tg.random.key(0)))
  prog = schedule(tg.make_graph(lambda key, w: both(tg, key, w))(tg.random.key(0), w))
  assert size(one) > 5 * CHEAP_CHAIN and size(prog) < 1.25 * size(one)   # not twice the draws
  jax = pytest.importorskip("jax")
  got, want = tg.jit(lambda w: both(tg, tg.random.key(0), w))(w), both(jax, jax.random.key(0), w)
  np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))
  np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=ulps(4096), atol=ulps(4096) * 64)
  uniform = lambda key, w: (lambda u: ((u * w).sum(), u + 1.0))(tg.random.uniform(key, (64, 64)))
  prog = schedule(tg.make_graph(uniform)(tg.random.key(0), w))
  assert len(prog.kernels) <= 3 and sum(b.size for b in prog.buffers) < 8 * 64 * 64   # no bits stored per round


@pytest.mark.parametrize("per,stored", [((64, 8, 32, 32), True), ((8, 8, 32, 32), False)])
def test_cheap_steps_that_read_many_big_buffers_are_stored_for_the_kernels_that_read_them(per, stored):
  """A batch norm's backward through a residual ReLU: the masked cotangent reads five arrays, and two sums over each
  channel and an elementwise output read it. Recomputed, every pass over a channel would read the five again from
  memory; at WIDE_BYTES (2 MB each) it is stored once, by the kernel that stores the output, and the sums' kernel
  reads it and one other array. Smaller (256 KB), it is recomputed in one kernel of three passes. numpy's values."""
  from tracegrad.lower.schedule import WIDE_BYTES, WIDE_LOADS
  args = [rng.normal(size=per).astype(np.float32) for _ in range(5)]
  assert (args[0].nbytes >= WIDE_BYTES) == stored and WIDE_LOADS <= 5

  def f(a, b, c, d, e):
    g = tnp.where(a + b > 0, c + d, 0.0) + e
    return (g * a).sum((0, 2, 3)), g.sum((0, 2, 3)), g * 2.0 - a
  prog = schedule(tg.make_graph(f)(*args))
  big = lambda k: sum(p.arg[1][0] == args[0].size for p in k.bufs)   # its big buffers, read or written
  if stored:
    assert [(k.reduce is None, big(k)) for k in prog.kernels] == [(True, 7), (False, 2)]
  else:
    assert [(big(k), len(k.phases)) for k in prog.kernels] == [(6, 2)]   # two sums' phases, then the output
  a, b, c, d, e = (x.astype(np.float64) for x in args)
  g = np.where(a + b > 0, c + d, 0.0) + e
  got = run_program(prog, args)
  np.testing.assert_allclose(got[0], (g * a).sum((0, 2, 3)), **tol("float32", a.size // 16, a.size // 16))
  np.testing.assert_allclose(got[1], g.sum((0, 2, 3)), **tol("float32", a.size // 16, a.size // 16))
  np.testing.assert_allclose(got[2].reshape(per), g * 2.0 - a, **tol("float32", 4, 4))


def test_sums_whose_order_defeats_their_loads_run_in_another():
  """A transposed convolution's filter gradient in NHWC / HWIO, per phase of its strides, is a sum that no register
  block takes in the order OIHW inside gives it: with its output channels last, along which the NHWC cotangent
  runs, it is one (_blocked_order). A mean over a channels-last view of a channels-first array sums along the
  axis it reads contiguously (_contiguous_inner). JAX's and numpy's values."""
  from tracegrad.lower.render_c import dot_blocked, interchanged
  x, w = rng.normal(size=(2, 8, 8, 16)).astype(np.float32), rng.normal(size=(4, 4, 16, 8)).astype(np.float32)
  dn = ("NHWC", "HWIO", "NHWC")
  up = lambda lax, x, w: lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=dn)
  dw = lambda w, x: tg.grad(lambda w: (up(lax, x, w) ** 2).sum())(w)
  prog = schedule(tg.make_graph(dw)(w, x))
  sums = [k for k in prog.kernels if k.reduce is not None and k.reduce.value.op is Ops.MUL and k.cost()[0] > 1e5]
  assert len(sums) >= 4 and all(interchanged(k) or dot_blocked(k) for k in sums), [k.name for k in sums]
  want = np.asarray(tg.jit(dw)(w, x))
  close = dict(rtol=ulps(1024), atol=ulps(1024) * np.abs(want).max())
  np.testing.assert_allclose(run_program(prog, [w, x])[0].reshape(want.shape), want, **close)
  jax = pytest.importorskip("jax")
  np.testing.assert_allclose(want, jax.grad(lambda w: (up(jax.lax, x, w) ** 2).sum())(w), **close)
  y = rng.normal(size=(4, 16, 8, 32)).astype(np.float32)
  mean = schedule(tg.make_graph(lambda y: tnp.mean(tnp.transpose(y, (0, 2, 3, 1)) ** 2))(y))
  (k,) = mean.kernels
  (load,) = {u for u in k.reduce.value.toposort() if u.op is Ops.GATHER}
  assert coefficient(load.src[1].src[0], k.reduce.loops[-1].var) == 1
  np.testing.assert_allclose(run_program(mean, [y])[0].reshape(()), np.mean(y.astype(np.float64) ** 2), rtol=ulps(64))


@pytest.mark.parametrize("groups", [1, 4])
def test_a_pointwise_convolution_is_one_contraction_of_its_input_in_place(groups):
  """A 1 x 1 convolution by unit strides without padding (a depthwise-separable block's pointwise half) contracts
  the channels of its channels-last input where they lie, with no copy of the input behind a barrier: one kernel
  without groups.
  numpy's values, with feature groups too; JAX's gradient."""
  x, w = rng.normal(size=(2, 8, 8, 16)).astype(np.float32), rng.normal(size=(1, 1, 16 // groups, 24)).astype(np.float32)
  dn = ("NHWC", "HWIO", "NHWC")
  conv = lambda lax, x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn,
                                                    feature_group_count=groups)
  prog = schedule(tg.make_graph(lambda x, w: conv(lax, x, w))(x, w))
  assert not any("barrier" in k.name for k in prog.kernels), [k.name for k in prog.kernels]
  assert groups > 1 or len(prog.kernels) == 1, [k.name for k in prog.kernels]   # grouped: summed, then permuted
  xg, wg = x.reshape(2, 8, 8, groups, 16 // groups), w.reshape(16 // groups, groups, 24 // groups)
  want = np.einsum("nhwgc,cgo->nhwgo", xg.astype(np.float64), wg).reshape(2, 8, 8, 24)
  np.testing.assert_allclose(run_program(prog, [x, w])[0].reshape(want.shape), want, **tol("float32", 64, 64))
  np.testing.assert_allclose(np.asarray(conv(lax, x, w)), want, **tol("float32", 64, 64))
  jax = pytest.importorskip("jax")
  loss = lambda lax: lambda x, w: (conv(lax, x, w) ** 2).sum()
  for got, exp in zip(tg.grad(loss(lax), (0, 1))(x, w), jax.grad(loss(jax.lax), (0, 1))(x, w)):
    np.testing.assert_allclose(np.asarray(got), np.asarray(exp), rtol=ulps(1024), atol=ulps(1024) * np.abs(exp).max())


def test_a_convolutions_input_gradient_is_one_scatter_shared_out_over_batch_and_channels():
  x, w = rng.normal(size=(4, 8, 9, 9)).astype(np.float32), rng.normal(size=(5, 8, 3, 3)).astype(np.float32)
  ct = rng.normal(size=(4, 5, 5, 5)).astype(np.float32)
  # under vmap, which leaves the convolution's transpose rule behind: the gradient of its body
  conv = tg.vmap(lambda x, w: lax.conv_general_dilated(x[None], w, (2, 2), "SAME")[0], (0, None))
  f = lambda x, w: tg.grad(lambda x: (conv(x, w) * ct).sum())(x)
  prog = schedule(tg.make_graph(f)(x, w))
  (scatter,) = [k for k in prog.kernels if k.stores[0].mode == "add"]
  assert [l.extent for l in scatter.loops][:2] == [4, 8] and scatter.parallel
  xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
  want = np.zeros_like(xp)
  for i in range(3):
    for j in range(3):
      want[:, :, i:i + 9:2, j:j + 9:2] += np.einsum("nopq,oc->ncpq", ct, w[:, :, i, j])
  got = run_program(prog, [x, w])[0].reshape(x.shape)
  np.testing.assert_allclose(got, want[:, :, 1:-1, 1:-1], **tol("float32", 64, 64))


def test_a_scatters_indices_are_read_in_place_and_its_gradients_bounds_test_written_out():
  """Rows scattered at an input's indices (a segment sum) and the gradient reading them back: the coordinates are
  index arithmetic on the input, computed where each kernel reads them rather than stored (20000 x 64 x 2 of them),
  and the gradient's test that both coordinates are in bounds is two steps, not a reduction per element. np.add.at's
  values (JAX's too)."""
  x, idx = rng.normal(size=(300, 16)).astype(np.float32), rng.integers(-2, 40, 300).astype(np.int32)
  f = lambda x, idx: tg.grad(lambda x: (tnp.zeros((37, 16)).at[idx].add(x, mode="drop") ** 2).sum())(x)
  prog = schedule(tg.make_graph(f)(x, idx))
  assert not any(b.dtype is tg.ir.dtypes.int32 and b.data is None for b in prog.buffers[2:]), prog.buffers
  assert all(k.reduce is None for k in prog.kernels), [k.name for k in prog.kernels]
  out, at = np.zeros((37, 16)), np.where(idx < 0, idx + 37, idx)   # negative indices count from the end
  ok = at < 37
  np.add.at(out, at[ok], x[ok])
  want = np.where(ok[:, None], 2 * out[np.minimum(at, 36)], 0)
  np.testing.assert_allclose(run_program(prog, [x, idx])[0].reshape(want.shape), want, **tol("float32", 64, 64))
  np.testing.assert_allclose(np.asarray(tg.jit(f)(x, idx)), want, **tol("float32", 64, 64))


def test_a_histograms_searched_bins_are_found_before_its_scatter_adds_them_up():
  """A scatter adds its updates in order; the bins a histogram's values fall in are found by a binary search over
  the edges (lookups), which would run in that order too. They are stored first, by a kernel of their own, and the
  scatter reads them. numpy's counts, on values of its own generator: which values the module's generator gives
  depends on the tests run before in the same worker, and one within an ulp of an edge falls in the next bin, as in
  JAX (their float32 edges are not numpy's float64 ones)."""
  x = np.random.default_rng(0).normal(size=5000).astype(np.float32)
  x[:3] = 3.0, -3.0, np.nan
  f = lambda x: tnp.histogram(x, bins=50, range=(-3, 3))[0]
  prog = schedule(tg.make_graph(f)(x))
  (scatter,) = [k for k in prog.kernels if any(st.mode == "add" for st in k.stores)]
  work = toposort([v for st in scatter.stores for v in (st.index, st.value, st.valid) if v is not None])
  assert not [u for u in work if u.op is Ops.CMPLT and u.src[0].dtype.is_float]   # reads its bins, compares no value
  want = np.histogram(x, bins=50, range=(-3, 3))[0]
  np.testing.assert_array_equal(run_program(prog, [x])[0], want)
  np.testing.assert_array_equal(np.asarray(tg.jit(f)(x)), want)


def test_a_table_of_sines_repeated_over_batch_and_heads_is_computed_once():
  """A rotary embedding's cosines and sines of positions times frequencies, broadcast over batch and heads into
  the rotated halves: one small kernel stores the tables, and the kernel over the activations reads them rather
  than calling cos and sin for each of its elements; the aranges themselves stay index arithmetic. numpy's
  values."""
  x = rng.normal(size=(4, 3, 16, 8)).astype(np.float32)
  def rope(x, m=tnp):
    angle = m.arange(16.0)[:, None] * m.arange(4.0) / 4
    c, s = m.cos(angle), m.sin(angle)
    return m.concatenate([x[..., :4] * c - x[..., 4:] * s, x[..., 4:] * c + x[..., :4] * s], -1)
  prog = schedule(tg.make_graph(rope)(x))
  assert len(prog.kernels) == 2, [k.name for k in prog.kernels]
  big = max(prog.kernels, key=lambda k: math.prod(l.extent for l in k.loops))
  assert not any(u.op in (Ops.SIN, Ops.COS) for st in big.stores for u in st.value.toposort())
  want = rope(x.astype(np.float64), np)
  np.testing.assert_allclose(run_program(prog, [x])[0].reshape(want.shape), want, **tol("float32", 8, 8))
  np.testing.assert_allclose(np.asarray(tg.jit(rope)(x)), want, **tol("float32", 8, 8))


@pytest.mark.parametrize("scan", ["cummax", "cumlogsumexp"])
def test_a_running_scans_gradient_stores_levels_its_kernels_would_recompute_exponentially(scan):
  """A running maximum's (log-sum-exp's) gradient over 512 points goes back through nine levels, each reading the
  one after it at two offsets: fused, the first level's work would be done 2^9 times for each element (seconds
  per call at 1024). Work that a kernel would compute at more than INDEX_MAPS index maps (two, where it calls exp or log)
  is stored once, so the kernels' expressions stay small. The gradients' values in float64."""
  from tracegrad.lower.kernel import Kernel
  x = rng.normal(size=(2, 512)).astype(np.float32)
  f = lambda lax: lambda x: tg.grad(lambda x: (getattr(lax, scan)(x, axis=1) * np.arange(512.0)).sum())(x)
  prog = schedule(tg.make_graph(f(lax))(x))
  steps = sum(len(st.value.toposort()) for k in prog.kernels if isinstance(k, Kernel) for p in k.steps()
              for st in p.stores)
  assert steps < 3000, steps
  got = run_program(prog, [x])[0].reshape(x.shape)
  np.testing.assert_allclose(np.asarray(tg.jit(f(lax))(x)), got, rtol=ulps(64), atol=ulps(64) * 512)
  x64, w = x.astype(np.float64), np.arange(512.0)
  if scan == "cummax":   # each running maximum's weight goes to the point it came from
    want = np.stack([np.bincount(np.maximum.accumulate(np.where(r == np.maximum.accumulate(r), np.arange(512), 0)),
                                 w, 512) for r in x64])
  else:   # d y_i / d x_j = exp(x_j - y_i) for j <= i
    y = np.logaddexp.accumulate(x64, axis=1)
    want = np.exp(x64) * np.cumsum((w * np.exp(-y))[:, ::-1], axis=1)[:, ::-1]
  np.testing.assert_allclose(got, want, rtol=ulps(1024), atol=ulps(1024) * np.abs(want).max())


def test_an_optimizers_updates_of_one_parameter_are_one_kernel():
  p, g, m, v = (rng.normal(size=(64, 32)).astype(np.float32) for _ in range(4))
  v = np.abs(v)

  def adam(p, g, m, v):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    return p - 0.01 * m / (tnp.sqrt(v) + 1e-8), m, v
  prog = schedule(tg.make_graph(adam)(p, g, m, v))
  (k,) = prog.kernels
  assert len(k.stores) == 3
  m2, v2 = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
  for got, want in zip(run_program(prog, [p, g, m, v]), (p - 0.01 * m2 / (np.sqrt(v2) + 1e-8), m2, v2)):
    np.testing.assert_allclose(got.reshape(want.shape), want, **tol("float32", 16, 16))
  # a kernel reading another's output at another index (a transpose) stays apart
  prog = schedule(tg.make_graph(lambda a: (tnp.exp(a), tnp.exp(a).T + 1.0))(p[:32]))
  assert len(prog.kernels) == 2


def test_attention_scores_block_rows_over_the_queries_not_the_heads():
  # a head width of 16: 8 or fewer are written out in an elementwise kernel (_unrolled_sum)
  q, k = rng.normal(size=(2, 16, 4, 16)).astype(np.float32), rng.normal(size=(2, 24, 4, 16)).astype(np.float32)
  prog = schedule(tg.make_graph(lambda q, k: tnp.einsum("bqhd,bkhd->bqhk", q, k))(q, k))
  (scores,) = [kern for kern in prog.kernels if kern.reduce is not None]
  assert [l.extent for l in scores.loops] == [2, 4, 16, 24]   # the heads outside, the queries as rows
  got = run_program(prog, [q, k])[0].reshape(2, 16, 4, 24)
  np.testing.assert_allclose(got, np.einsum("bqhd,bkhd->bqhk", q, k), **tol("float32", 16, 16))


def test_a_strided_convolutions_taps_cotangent_runs_channels_and_taps_as_one_loop_of_rows():
  """The input gradient of a stride-2 convolution first gives every tap's cotangent, a sum over the output channels
  for each input channel and tap (16 x 9) at each position. Both loops are read by the filter alone and as one run,
  so they join into one loop of 144 rows (_joined_rows), in whole blocks that share each step's cotangent loads; a
  dense layer over a batch of sequences runs its batch and positions as one loop the same way. JAX's values."""
  x, w = rng.normal(size=(2, 16, 12, 12)).astype(np.float32), rng.normal(size=(24, 16, 3, 3)).astype(np.float32)
  dy = rng.normal(size=(2, 24, 6, 6)).astype(np.float32)
  loss = lambda lax, x, w, dy: (lax.conv_general_dilated(x, w, (2, 2), "SAME") * dy).sum()
  prog = schedule(tg.make_graph(lambda x, w, dy: tg.grad(loss, argnums=1)(lax, x, w, dy))(x, w, dy))
  (k,) = [k for k in prog.kernels if k.reduce is not None and [l.extent for l in k.reduce.loops] == [24]]
  assert [l.extent for l in k.loops] == [2, 144, 36]
  got = run_program(prog, [x, w, dy])[0].reshape(x.shape)
  xs, h = rng.normal(size=(4, 8, 32)).astype(np.float32), rng.normal(size=(32, 48)).astype(np.float32)
  (dense,) = schedule(tg.make_graph(lambda xs, h: xs @ h)(xs, h)).kernels
  assert [l.extent for l in dense.loops] == [32, 48]
  jax = pytest.importorskip("jax")
  want = np.asarray(jax.grad(loss, argnums=1)(jax.lax, x, w, dy))
  np.testing.assert_allclose(got, want, rtol=ulps(256), atol=ulps(256) * np.abs(want).max())


def test_a_channels_last_strided_convolutions_taps_cotangent_runs_its_taps_and_channels_as_one_loop_of_columns():
  """Channels-last, the taps' cotangent of a stride-2 convolution is a matmul of the cotangent's positions by the
  filter, whose columns are the taps and input channels (3 x 3 x 32). The horizontal taps and the channels (96) are
  not a whole number of the widest register block (64), so the vertical taps join them too: one loop of 288
  columns (_fuse_outer_loops), with the positions (2 x 8 x 8) as one loop of rows. JAX's values."""
  x, w = rng.normal(size=(2, 16, 16, 32)).astype(np.float32), rng.normal(size=(3, 3, 32, 24)).astype(np.float32)
  dy = rng.normal(size=(2, 8, 8, 24)).astype(np.float32)
  dn = ("NHWC", "HWIO", "NHWC")
  loss = lambda lax, x, w, dy: (lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=dn) * dy).sum()
  prog = schedule(tg.make_graph(lambda x, w, dy: tg.grad(loss, argnums=1)(lax, x, w, dy))(x, w, dy))
  (k,) = [k for k in prog.kernels if k.reduce is not None and [l.extent for l in k.reduce.loops] == [24]]
  assert [l.extent for l in k.loops] == [128, 288]
  got = run_program(prog, [x, w, dy])[0].reshape(x.shape)
  jax = pytest.importorskip("jax")
  want = np.asarray(jax.grad(loss, argnums=1)(jax.lax, x, w, dy))
  np.testing.assert_allclose(got, want, rtol=ulps(256), atol=ulps(256) * np.abs(want).max())


def test_scalar_work_is_one_kernel():
  """An optimizer's bias corrections from its step count, and a loss with its negation, each run as one kernel."""
  x = rng.normal(size=(32,)).astype(np.float32)
  count = np.float32(3)

  def corrections(count):
    t = count + 1
    return t, 1 - 0.9 ** t, 1 - 0.999 ** t
  prog = schedule(tg.make_graph(corrections)(count))
  (k,) = prog.kernels
  assert len(k.stores) == 3
  for got, want in zip(run_program(prog, [count]), corrections(np.float32(3))):
    np.testing.assert_allclose(got.reshape(()), want, **tol("float32", 4, 4))
  prog = schedule(tg.make_graph(lambda x: (x.sum(), -x.sum()))(x))
  (k,) = prog.kernels
  got = run_program(prog, [x])
  np.testing.assert_allclose([g.reshape(()) for g in got], [x.sum(), -x.sum()], **tol("float32", 32, 32))


@pytest.mark.parametrize("case", ["diag", "grad_diagonal", "cholesky_logdet"])
def test_a_diagonal_in_a_flat_plane_is_read_without_division(case):
  """A diagonal padded into the flat plane (diag(v); diagonal's gradient) tests (i * n + j) % (n + 1) == 0, which
  becomes j - i == 0, and reads its element at (i * n + j) // (n + 1), which under that test is i."""
  rng = np.random.default_rng(0)
  v, x = rng.uniform(1, 2, 48).astype(np.float32), rng.uniform(1, 2, (48, 48)).astype(np.float32)
  spd = (x @ x.T / 48 + np.eye(48)).astype(np.float32)
  f, args, want = {
    "diag": (lambda v, x: tnp.diag(v) * x, (v, x), np.diag(v) * x),
    "grad_diagonal": (tg.grad(lambda x: tnp.log(tnp.diagonal(x)).sum()), (x,), np.diag(1 / np.diag(x))),
    "cholesky_logdet": (tg.grad(lambda a: tnp.log(tnp.diagonal(tnp.linalg.cholesky(a))).sum()), (spd,),
                        np.linalg.inv(spd.astype(np.float64)) / 2)}[case]
  prog = schedule(tg.make_graph(f)(*args))
  ops = [u.op for k in prog.kernels if not isinstance(k, Control) for st in k.stores
         for u in toposort([st.index, st.value])]
  assert Ops.IDIV not in ops and Ops.MOD not in ops
  got = run_program(prog, list(args))[0]
  if case == "cholesky_logdet": got = (got + got.T) / 2   # the gradient of a function of the lower triangle
  np.testing.assert_allclose(got, want, **tol("float32", 4096, 4096))


def test_index_arithmetic_is_simplified():
  prog = schedule(tg.make_graph(lambda x: x.reshape(4, 2, 4).transpose(0, 1, 2).reshape(4, 8)[::-1] + 1.0)(X))
  (k,) = prog.kernels
  ops = [u.op for st in k.stores for u in st.value.toposort()]
  assert ops.count(Ops.IDIV) + ops.count(Ops.MOD) == 0


def test_control_flow_is_a_program_item_with_sub_programs():
  prog = schedule(tg.make_graph(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2, x))(X))
  (c,) = [k for k in prog.kernels if isinstance(k, Control)]
  assert c.op is Ops.SCAN and len(c.bodies) == 1 and c.bodies[0].buffers is prog.buffers
  body_in = set(c.bodies[0].inputs)
  assert all(n not in body_in for n, _ in c.bodies[0].outputs)   # copies out never overlap the inputs


def test_an_rnns_backward_scan_reads_the_stacked_states_and_stacks_no_unread_cotangents():
  """grad(loss)(p, xs) of an RNN: each backward step reads the tanh the forward step stacked (its derivative needs
  nothing else), so it recomputes neither matmul of the forward step; nor does it compute the cotangent of xs, which
  the gradient drops. Left are one elementwise kernel and the three contractions of the step's gradient."""
  rng = np.random.default_rng(0)
  xs, wx, wh = (rng.normal(size=s).astype(np.float32) for s in ((6, 4, 8), (8, 16), (16, 16)))

  def loss(p, xs):
    h, hs = lax.scan(lambda h, x: (tnp.tanh(x @ p[0] + h @ p[1]),) * 2, tnp.zeros((4, 16)), xs)
    return (hs ** 2).mean() + h.sum()
  g = tg.make_graph(lambda wx, wh, xs: tg.grad(loss)((wx, wh), xs))(wx, wh, xs)
  prog = schedule(g)
  scans = [k for k in prog.kernels if isinstance(k, Control)]
  assert len(scans) == 2
  body = scans[1].bodies[0]
  sums = [k for k in body.kernels if not isinstance(k, Control) and k.reduce is not None]
  assert sorted(tuple(l.extent for l in k.loops) for k in sums) == [(4, 16), (8, 16), (16, 16)]
  assert len(body.outputs) == 3   # the carried cotangent and the two weights' sums, no stacked cotangent of xs
  hs, h = [], np.zeros((4, 16))
  for x in xs.astype(np.float64): hs.append(h := np.tanh(x @ wx + h @ wh))
  dwx, dwh, carry = np.zeros(wx.shape), np.zeros(wh.shape), np.zeros((4, 16))
  for t in reversed(range(6)):
    dz = (2 * hs[t] / (6 * 4 * 16) + (t == 5) + carry) * (1 - hs[t] ** 2)
    dwx, dwh, carry = dwx + xs[t].T @ dz, dwh + (hs[t - 1] if t else np.zeros((4, 16))).T @ dz, dz @ wh.T
  for got in (run_program(prog, [wx, wh, xs]), tg.grad(loss)((wx, wh), xs)):
    for a, b in zip(got, (dwx, dwh)): np.testing.assert_allclose(np.asarray(a), b, **tol("float32", 256, 256))


@pytest.mark.parametrize("shape", [(40, 40), (3, 6, 6)])
def test_decompositions_compute_no_factors_that_nothing_reads(shape):
  """eigvalsh (eigh's eigenvalues) and svd's singular values alone: LAPACK is asked for no vectors; where the vectors
  are read too they are still computed."""
  a = np.random.default_rng(1).normal(size=shape).astype(np.float32)
  a = a + np.swapaxes(a, -1, -2)
  cases = {"eigh": (lambda a: tnp.linalg.eigvalsh(a), np.linalg.eigvalsh, ("vectors", False)),
           "svd": (lambda a: tnp.linalg.svd(a)[1], lambda a: np.linalg.svd(a, compute_uv=False), ("compute_uv", False)),
           "both": (lambda a: tnp.linalg.eigh(a)[1][..., 0] ** 2 + tnp.linalg.eigh(a)[0], None, None)}
  for name, (f, ref, param) in cases.items():
    g = prepare(tg.make_graph(f)(a))
    (la,) = [u for u in toposort(g.outputs) if u.op is Ops.LINALG]
    assert (param in la.arg[1]) if param else not any(v is False for _, v in la.arg[1])
    if ref is not None:
      np.testing.assert_allclose(run_program(schedule(g, prepared=True), [a])[0], ref(a.astype(np.float64)),
                                 **tol("float32", 64 * a.shape[-1], 64 * a.shape[-1]))


@pytest.mark.parametrize("shape", [(7, 4), (4, 7), (2, 5, 5)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_qr_computes_no_q_when_only_r_is_read(shape, mode, dtype):
  """Where only r is read, LAPACK is asked for r alone (no q formed): the same r, bit for bit, as the factorization
  that forms q, in every shape and mode."""
  rng = np.random.default_rng(2)
  a = rng.normal(size=shape).astype(dtype)
  if dtype == "complex64": a = a + 1j * rng.normal(size=shape).astype(np.float32)
  f = lambda a: tnp.linalg.qr(a, mode=mode) if mode == "r" else tnp.linalg.qr(a, mode=mode)[1]
  if dtype == "float32":   # (a complex one is a call on pairs of reals after prepare)
    (la,) = [u for u in toposort(prepare(tg.make_graph(f)(a)).outputs) if u.op is Ops.LINALG]
    assert ("q", False) in la.arg[1]
  both = tg.jit(lambda a: tnp.linalg.qr(a, mode="complete" if mode == "complete" else "reduced"))(a)
  np.testing.assert_array_equal(np.asarray(tg.jit(f)(a)), np.asarray(both[1]))
  np.testing.assert_allclose(np.asarray(both[0]) @ np.asarray(both[1]), a, **tol("float32", 64, 64))


@pytest.mark.parametrize("transposed", [False, True])
def test_matmul_kernels_run_in_register_blocks(transposed):
  """x @ y reads y along the output row: blocks of rows by a vector width of columns; x @ y.T with y much larger than
  the output reads both along the reduction: blocks of dot products. Both with whole blocks and cut edges (20 = 2 * 8
  + 4, 130 = 2 * 64 + 2)."""
  if not _has_cpu(): pytest.skip("no C compiler")
  a = rng.normal(size=(20, 100)).astype(np.float32)
  b = rng.normal(size=(130, 100) if transposed else (100, 130)).astype(np.float32)
  g = tg.make_graph(lambda x, y: x @ (y.T if transposed else y))(a, b)
  exe = run.Executable(g, "cpu")
  (got,) = exe([a, b])
  np.testing.assert_allclose(got, a @ (b.T if transposed else b), rtol=ulps(840), atol=ulps(840))
  assert ("accs[q][c]" if transposed else "accs[q][j]") in exe.source and "TG_ROWS" in exe.source


def test_a_transposed_weight_smaller_than_the_output_is_packed_for_register_blocks():
  """x @ w.T with more rows of x than of w: w is copied once with the output's columns contiguous (a packed panel),
  and the sum runs as blocks of rows by a vector of columns rather than as dot products."""
  a, w = rng.normal(size=(520, 100)).astype(np.float32), rng.normal(size=(130, 100)).astype(np.float32)
  prog = schedule(tg.make_graph(lambda x, w: x @ w.T)(a, w))
  pack, dot = prog.kernels
  assert pack.name.endswith("_pack") and pack.reduce is None and dot.reduce is not None
  np.testing.assert_allclose(run_program(prog, [a, w])[0].reshape(520, 130), a @ w.T, **tol("float32", 840, 840))
  if not _has_cpu(): return
  exe = run.Executable(tg.make_graph(lambda x, w: x @ w.T)(a, w), "cpu")
  np.testing.assert_allclose(exe([a, w])[0], a @ w.T, rtol=ulps(840), atol=ulps(840))
  assert "accs[q][j]" in exe.source and "accs[q][c]" not in exe.source
  # extents of whole tiles: the copy runs in 16 x 16 tiles
  w = rng.normal(size=(128, 96)).astype(np.float32)
  x = rng.normal(size=(520, 96)).astype(np.float32)
  prog = schedule(tg.make_graph(lambda x, w: x @ w.T)(x, w))
  assert [l.extent for l in prog.kernels[0].loops] == [6, 8, 16, 16]
  np.testing.assert_allclose(run_program(prog, [x, w])[0].reshape(520, 128), x @ w.T, **tol("float32", 840, 840))


def test_a_packing_copy_runs_just_before_its_contraction():
  """Attention's gradient packs operands of the forward pass for its backward contractions: each copy stays beside
  the contraction that reads it (at most joined to the kernel just before), not moved up into the forward pass,
  where its panel would go cold before it is read."""
  q, k, v = (rng.normal(size=(2, 4, 32, 16)).astype(np.float32) for _ in range(3))

  def loss(q, k, v):
    s = q @ k.swapaxes(-1, -2)
    p = tnp.exp(s - s.max(-1, keepdims=True))
    return (((p / p.sum(-1, keepdims=True)) @ v) ** 2).sum()
  g = tg.make_graph(tg.grad(loss, argnums=(0, 1, 2)))(q, k, v)
  prog = schedule(g)
  packs = [i for i, k in enumerate(prog.kernels) if k.name.endswith("_pack")]
  assert packs
  for i in packs:
    for panel in _written(prog.kernels[i], prog.calls[i]):
      assert any(panel in prog.calls[j] for j in (i + 1, i + 2)), [k.name for k in prog.kernels]
  want = [np.asarray(a) for a in run.Executable(g, "interp").run([q, k, v])]
  for got, w in zip(run_program(prog, [q, k, v]), want):
    np.testing.assert_allclose(got.reshape(w.shape), w, **tol("float32", 840, 840))


def test_a_sum_read_only_transposed_is_computed_transposed():
  from tracegrad.lower.schedule import prepare
  rng = np.random.default_rng(3)
  w, x, dy = (rng.normal(size=s).astype(np.float32) for s in ((6, 5), (4, 6), (4, 5)))
  update = lambda w, x, dy: w - 0.1 * (dy.T @ x).T   # the transposed weight gradient a matmul's VJP gives
  g = prepare(tg.make_graph(update)(w, x, dy))
  nodes = g.outputs[0].toposort()
  assert not any(u.op is Ops.PERMUTE and u.src[0].op is Ops.RESHAPE and u.src[0].src[0].op is Ops.REDUCE_SUM
                 for u in nodes)
  np.testing.assert_allclose(np.asarray(tg.jit(update)(w, x, dy)), w - 0.1 * (dy.T @ x).T, rtol=ulps(8), atol=ulps(8))
  both = lambda x, dy: ((dy.T @ x).T, dy.T @ x)   # a sum with another reader is computed once, in its own order
  g = prepare(tg.make_graph(both)(x, dy))
  assert sum(u.op is Ops.REDUCE_SUM for u in tg.ir.toposort(list(g.outputs))) == 1


def test_a_transpose_whose_reads_leave_the_l1_cache_runs_in_tiles():
  """A + A.T over rows 1 KB apart reads a cache line a step along its inner loop: it runs in TILE x TILE tiles, each
  line used whole. A transpose of 32 x 32 blocks (4 KB) stays in L1 cache untiled. Both match numpy."""
  from tracegrad.lower.schedule import TILE
  a, b = rng.normal(size=(256, 256)).astype(np.float32), rng.normal(size=(4, 32, 32)).astype(np.float32)
  sym = lambda a: 0.5 * (a + a.T)
  (k,) = schedule(tg.make_graph(sym)(a)).kernels
  assert [l.extent for l in k.loops] == [256 // TILE, 256 // TILE, TILE, TILE]
  want = 0.5 * (a.astype(np.float64) + a.T)
  np.testing.assert_allclose(run_program(schedule(tg.make_graph(sym)(a)), [a])[0].reshape(want.shape), want, rtol=ulps(2))
  np.testing.assert_allclose(np.asarray(tg.jit(sym)(a)), want, rtol=ulps(2))
  swap = lambda b: tnp.exp(tnp.swapaxes(b, 1, 2))
  (k,) = schedule(tg.make_graph(swap)(b)).kernels
  assert [l.extent for l in k.loops][-2:] == [32, 32]
  np.testing.assert_allclose(np.asarray(tg.jit(swap)(b)), np.exp(np.swapaxes(b, 1, 2)), **tol("float32"))


def test_a_padded_transpose_runs_in_tiles_half_as_wide():
  """A channels-last input padded and transposed channels-first (a dilated 1-d convolution's: 64 channels by 512 + 8
  positions, rows 256 bytes apart) runs in tiles of TILE // 2, which divide its padded rows where TILE does not; the
  convolution matches numpy's."""
  from tracegrad.lower.schedule import TILE
  x = rng.normal(size=(4, 512, 64)).astype(np.float32)
  w = (rng.normal(size=(5, 64, 16)) * 0.1).astype(np.float32)
  conv = lambda x, w: lax.conv_general_dilated(x, w, (1,), "SAME", rhs_dilation=(2,),
                                               dimension_numbers=("NWC", "WIO", "NWC"))
  copy = next(k for k in schedule(tg.make_graph(conv)(x, w)).kernels if k.reduce is None)
  assert [l.extent for l in copy.loops][-4:] == [64 // (TILE // 2), 520 // (TILE // 2), TILE // 2, TILE // 2]
  xp = np.pad(x.astype(np.float64), ((0, 0), (4, 4), (0, 0)))
  want = sum(np.einsum("nwc,co->nwo", xp[:, 2 * t:2 * t + 512], w[t]) for t in range(5))
  np.testing.assert_allclose(np.asarray(tg.jit(conv)(x, w)), want, **tol("float32", 320, 320))


def _reduce_loops(f, *args):
  return [[l.extent for l in k.reduce.loops] for k in schedule(tg.make_graph(f)(*args)).kernels if k.reduce is not None]


def test_reduction_loops_reading_one_run_are_one_loop():
  """A batch norm's sum per channel over (batch, height, width) runs over (batch, height * width): the inner loop as
  long as the contiguous run it reads. Loops that read memory otherwise stay apart: a slice's rows, an iota's use."""
  x = rng.normal(size=(6, 4, 16, 16)).astype(np.float32)
  stats = lambda x: x.sum((0, 2, 3))
  assert _reduce_loops(stats, x) == [[6, 256]]
  np.testing.assert_allclose(np.asarray(tg.jit(stats)(x)), x.astype(np.float64).sum((0, 2, 3)), rtol=ulps(64), atol=ulps(64))
  y = x[0, 0]
  sliced = lambda y: y[:, :5].sum()   # rows 16 apart, 5 long: two loops
  assert _reduce_loops(sliced, y) == [[16, 5]]
  weighted = lambda y: (y * tnp.arange(16.0)).sum()   # the column is a value too
  assert _reduce_loops(weighted, y) == [[16, 16]]
  strided = lambda y: y[:, ::2].sum()   # every other element of every row: one progression of step 2
  assert _reduce_loops(strided, y) == [[128]]
  y64 = y.astype(np.float64)
  for f, want in ((sliced, y64[:, :5].sum()), (weighted, (y64 * np.arange(16)).sum()), (strided, y64[:, ::2].sum())):
    np.testing.assert_allclose(float(tg.jit(f)(y)), want, rtol=ulps(64), atol=ulps(64) * 16)


def test_a_normalisation_over_fused_loops_matches_numpy():
  """The statistics' loops and the epilogue's storing the normalised values are fused alike, and agree with numpy."""
  x = rng.normal(size=(4, 3, 8, 8)).astype(np.float32)
  def norm(x):
    m = x.mean((0, 2, 3), keepdims=True)
    return (x - m) / tnp.sqrt(((x - m) ** 2).mean((0, 2, 3), keepdims=True) + 1e-5)
  x64 = x.astype(np.float64)
  m = x64.mean((0, 2, 3), keepdims=True)
  want = (x64 - m) / np.sqrt(((x64 - m) ** 2).mean((0, 2, 3), keepdims=True) + 1e-5)
  assert any(64 in loops for loops in _reduce_loops(norm, x))
  np.testing.assert_allclose(np.asarray(tg.jit(norm)(x)), want, **tol("float32"))
  np.testing.assert_allclose(run_program(schedule(tg.make_graph(norm)(x)), [x])[0], want, **tol("float32"))


def test_a_convolutions_input_gradient_adds_inside_the_input_unclamped():
  """The scatter-add of the windows' taps skips the padding's masked points instead of adding zeros at clamped indices,
  so each point adds to its own element (a loop that vectorises); the gradient is unchanged."""
  x = rng.normal(size=(2, 3, 8, 8)).astype(np.float32)
  w = rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
  conv = tg.vmap(lambda x, w: lax.conv_general_dilated(x[None], w, (2, 2), "SAME")[0], (0, None))   # the body's gradient
  dx = lambda x, w: tg.grad(lambda x: (conv(x, w) ** 2).sum())(x)
  prog = schedule(tg.make_graph(dx)(x, w))
  (sc,) = [k for k in prog.kernels if any(s.mode == "add" for s in k.stores)]
  (st,) = sc.stores
  assert st.valid is not None and not {Ops.MIN, Ops.MAX} & {u.op for u in st.index.toposort()}
  y = np.zeros((2, 4, 4, 4))
  xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (0, 1), (0, 1)))   # SAME by stride 2: one row and column after
  for i in range(3):
    for j in range(3): y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 8:2, j:j + 8:2], w[:, :, i, j])
  want = np.zeros_like(xp)
  for i in range(3):
    for j in range(3): want[:, :, i:i + 8:2, j:j + 8:2] += np.einsum("nohw,oc->nchw", 2 * y, w[:, :, i, j])
  want = want[:, :, :-1, :-1]
  np.testing.assert_allclose(np.asarray(tg.jit(dx)(x, w)), want, rtol=ulps(256), atol=ulps(256) * np.abs(want).max())
  np.testing.assert_allclose(run_program(prog, [x, w])[0], want, rtol=ulps(256), atol=ulps(256) * np.abs(want).max())


def _calls(monkeypatch, method: str) -> list:
  """A list that gains an item at each call of the scheduler's `method` (which still runs)."""
  from tracegrad.lower import schedule as sched
  calls, real = [], getattr(sched._Scheduler, method)
  monkeypatch.setattr(sched._Scheduler, method, lambda self, *a: calls.append(1) or real(self, *a))
  return calls


def test_a_deep_residual_gradient_is_scheduled_in_few_passes(monkeypatch):
  """The residual stream's cotangent, a chain of adds as long as the network is deep, is cut into stored pieces in one
  pass over the graph, not one pass for each add past the longest chain recomputed (80 layers: 39 passes); the
  gradient is the numpy one."""
  passes = _calls(monkeypatch, "_recomputed")
  ws = [rng.normal(scale=0.1, size=(8, 8)).astype(np.float32) for _ in range(80)]
  x = rng.normal(size=(4, 8)).astype(np.float32)

  def loss(ws, x):
    for w in ws: x = tnp.tanh(x @ w) + x
    return (x * x).sum()
  prog = schedule(tg.make_graph(tg.grad(loss, argnums=1))(ws, x))
  assert len(passes) <= 3, len(passes)
  hs, h = [], x.astype(np.float64)
  for w in ws:
    hs.append(h)
    h = np.tanh(h @ w) + h
  g = 2 * h
  for w, h in zip(reversed(ws), reversed(hs)):
    g = g + ((1 - np.tanh(h @ w) ** 2) * g) @ w.T
  np.testing.assert_allclose(run_program(prog, [*ws, x])[0], g, rtol=1e-4, atol=1e-4 * np.abs(g).max())


def test_a_residual_stream_is_stored_before_its_recomputing_reads_many_buffers():
  """h = h + tanh(standardize(h) @ w) over 12 layers: h is a sum of every layer's output so far, cheap to recompute
  but, by the last layers, from a dozen arrays that each of its consumers (the statistics, the next sum) would read
  again, as many more at each layer. It is stored once it reads MANY_LOADS of them; the values are numpy's."""
  from tracegrad.lower.schedule import MANY_BYTES, MANY_LOADS
  ws = [rng.normal(scale=0.05, size=(128, 128)).astype(np.float32) for _ in range(12)]
  x = rng.normal(size=(128, 128)).astype(np.float32)
  assert x.nbytes >= MANY_BYTES and MANY_LOADS + 2 < 12

  def net(ws, x):
    for w in ws: x = x + tnp.tanh(tg.nn.standardize(x, axis=-1) @ w)
    return x
  prog = schedule(tg.make_graph(net)(ws, x))
  reads = [sum(p.arg[1][0] == x.size for p in k.bufs) - 1 for k in prog.kernels]   # its activations, less its own
  assert max(reads) <= MANY_LOADS + 2, reads
  want = x.astype(np.float64)
  for w in ws:
    z = (want - want.mean(-1, keepdims=True)) / np.sqrt(want.var(-1, keepdims=True) + 1e-5)
    want = want + np.tanh(z @ w)
  np.testing.assert_allclose(run_program(prog, [*ws, x])[0], want, **tol("float32", 128, 128))


def test_alike_layers_are_scheduled_once_and_run_as_when_scheduled_each(monkeypatch):
  """A 6-layer residual MLP's training step with SGD: each layer's kernels after the first are those of the first
  (its region of the graph has the same structure, _region) on the layer's buffers, the program kernel for kernel
  and call for call the one scheduled afresh, with numpy's values. A momentum update of four parameters of one
  shape: its alike kernels, which hold the same parameter nodes, joined into one (merge_elementwise) with numpy's
  values."""
  from tracegrad.lower import schedule as sched
  again = _calls(monkeypatch, "_again")
  ws = [rng.normal(scale=0.2, size=(16, 16)).astype(np.float32) for _ in range(6)]
  x = rng.normal(size=(8, 16)).astype(np.float32)

  def step(ws, x):
    def loss(ws):
      h = x
      for w in ws: h = h + tnp.tanh(h @ w)
      return (h * h).sum()
    return [w - 0.01 * g for w, g in zip(ws, tg.grad(loss)(ws))]
  graph = tg.make_graph(step)(ws, x)
  monkeypatch.setattr(sched, "REUSE_ALIKE", False)
  fresh = schedule(graph)
  monkeypatch.setattr(sched, "REUSE_ALIKE", True)
  prog = schedule(graph)
  assert len(again) >= 5, len(again)
  assert [(k.name, k.structure(), c) for k, c in zip(prog.kernels, prog.calls)] == \
      [(k.name, k.structure(), c) for k, c in zip(fresh.kernels, fresh.calls)]
  hs, h = [], x.astype(np.float64)
  for w in ws:
    hs.append(h)
    h = h + np.tanh(h @ w)
  g, want = 2 * h, [None] * len(ws)
  for i in reversed(range(len(ws))):
    d = (1 - np.tanh(hs[i] @ ws[i]) ** 2) * g
    want[i] = ws[i] - 0.01 * (hs[i].T @ d)
    g = g + d @ ws[i].T
  for got, w in zip(run_program(prog, [*ws, x]), want):
    np.testing.assert_allclose(got.reshape(w.shape), w, rtol=1e-4, atol=1e-4 * np.abs(w).max())

  ps, gs, ms = ([rng.normal(size=(16, 16)).astype(np.float32) for _ in range(4)] for _ in range(3))

  def update(ps, gs, ms):
    ms = [0.9 * m + g for m, g in zip(ms, gs)]
    return [p - 0.1 * m for p, m in zip(ps, ms)], ms
  del again[:]
  prog = schedule(tg.make_graph(update)(ps, gs, ms))
  assert len(again) >= 3 and len(prog.kernels) == 1 and len(prog.kernels[0].stores) == 8, prog.kernels
  assert len(set(prog.kernels[0].bufs)) == len(prog.kernels[0].bufs)
  got = run_program(prog, [*ps, *gs, *ms])
  for j, (p, g, m) in enumerate(zip(ps, gs, ms)):
    m2 = 0.9 * m.astype(np.float64) + g
    np.testing.assert_allclose(got[j].reshape(p.shape), p - 0.1 * m2, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[4 + j].reshape(p.shape), m2, rtol=1e-6, atol=1e-6)
