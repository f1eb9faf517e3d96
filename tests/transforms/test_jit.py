"""jit: caching by signature, lower/compile with the generated kernels, outputs, debug logging, devices."""
import subprocess
import sys

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from oracles import ulps
from tracegrad.ir.uop import Buffer

X = np.arange(12, dtype=np.float32).reshape(3, 4)


def test_decorator_forms_and_static_arguments():
  @tg.jit
  def f(x): return x * 2

  @tg.jit(static_argnums=1)
  def g(x, n): return x * n

  np.testing.assert_array_equal(np.asarray(f(X)), X * 2)
  np.testing.assert_array_equal(np.asarray(g(X, 3)), X * 3)
  with pytest.raises(TypeError, match="not hashable"):
    g(X, [3])


def test_traces_once_per_signature():
  traces = []

  @tg.jit
  def f(x, y):
    traces.append((x.shape, x.dtype.name))
    return x + y

  f(X, 1.0); f(X + 1, 2.0); f(X[:2], 1.0); f(X.astype(np.int32), 1)
  assert traces == [((3, 4), "float32"), ((2, 4), "float32"), ((3, 4), "int32")]


def test_repeated_calls_with_arrays_reuse_the_trace_and_give_fresh_results():
  traces = []

  @tg.jit
  def f(x, scale):
    traces.append(x.dtype.name)
    return x * scale + 1

  x = tnp.asarray(X)
  two = tnp.asarray(np.float32(2.0))
  outs = [f(x, two) for _ in range(3)]
  assert traces == ["float32"] and len({id(o) for o in outs}) == 3
  for o in outs: np.testing.assert_array_equal(np.asarray(o), X * 2 + 1)
  np.testing.assert_array_equal(np.asarray(f(x, 2.0)), X * 2 + 1)     # a weak scalar is another signature
  np.testing.assert_array_equal(np.asarray(f(x.astype(tnp.int32), 2)), X.astype(np.int32) * 2 + 1)
  assert traces == ["float32", "float32", "int32"]
  f.clear_cache()
  f(x, two)
  assert len(traces) == 4
  # after concrete calls, a call with traced arguments still inlines
  np.testing.assert_allclose(np.asarray(tg.grad(lambda s: f(x, s).sum())(two)), X.sum())


def test_calls_on_concrete_arrays_take_the_direct_path_and_match_the_general_one():
  traces = []

  @tg.jit
  def f(p, x):
    traces.append(x.shape)
    return {"y": p["w"] * x + p["b"], "x": x, "n": (x > 0).sum()}

  @tg.jit
  def g(x, y): return x * y

  rng = np.random.default_rng(0)
  w, b = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=4).astype(np.float32)
  p = {"w": tnp.asarray(w), "b": tnp.asarray(b)}
  strided = np.arange(24, dtype=np.float32).reshape(3, 8)[:, ::2]
  for x in (X, X[::-1] - 5, strided, np.stack([X, -X])):   # reversed and strided numpy arrays, then a new shape
    tx = tnp.asarray(x)
    for out in (f(p, tx), f(p, tx)):               # the first call traces, the second runs directly
      np.testing.assert_array_equal(np.asarray(out["y"]), w * x + b)
      np.testing.assert_array_equal(np.asarray(out["x"]), x)
      assert out["n"].dtype == tnp.int32 and int(out["n"]) == (x > 0).sum()
      assert not np.asarray(out["y"]).flags.writeable
  compiled = tg.default_backend() == "cpu"   # the reference device runs graphs, with no compiled program to call
  assert traces == [(3, 4), (2, 3, 4)] and len(f._direct) == (2 if compiled else 0)
  xs = tnp.asarray(X)
  for y, dtype, weak in ((tnp.asarray(np.float32(2)), tnp.float32, False), (tnp.asarray(2.0), tnp.float32, True),
                         (tnp.asarray(np.int32(2)), tnp.float32, False)):
    for _ in range(2):
      out = g(xs, tg.device_put(y) if weak else y)
      assert out.dtype == dtype and np.array_equal(np.asarray(out), X * 2)
  assert (len(g._direct) >= 2 or not compiled) and len(g.cache) >= 2
  g.clear_cache()
  assert not g._direct


def test_lazy_and_constant_arguments_take_the_direct_path_from_the_second_call():
  """An optimizer state as its init makes it (lazy zeros, broadcasts of a constant, and a 0-d constant step): the
  first call computes those leaves, the second runs directly; a leaf held as a view of other memory (a broadcast's
  zero strides) is copied into one contiguous run once, not at every call. The general path's values."""
  f = tg.jit(lambda s, x: ({"m": s["m"] * 0.9 + x, "v": s["v"] + x * x, "t": s["t"] + 1}, (s["m"] + x).sum()))
  compiled = tg.default_backend() == "cpu"
  x = tnp.asarray(X[0])
  state = {"m": tnp.zeros(X.shape[1]), "v": tnp.full(X.shape[1], 0.5), "t": tnp.asarray(0)}
  outs = [f(state, x) for _ in range(3)]
  assert len(f._direct) == (1 if compiled else 0) and not f._undirect
  for new, total in outs:
    np.testing.assert_array_equal(np.asarray(new["m"]), X[0])
    np.testing.assert_array_equal(np.asarray(new["v"]), 0.5 + X[0] * X[0])
    assert int(new["t"]) == 1 and float(total) == X[0].sum()
  if compiled:
    held = state["v"]._u.arg
    assert held.data.flags.c_contiguous and held.contiguous() is held.data
  wide = Buffer(np.broadcast_to(np.float32(2), (3, 4)))
  assert not wide.data.flags.c_contiguous
  got = wide.contiguous()
  assert got.flags.c_contiguous and not got.flags.writeable and wide.data is got and (got == 2).all()


def test_direct_calls_on_containers_of_arrays_keep_the_pytree_order():
  """A dict, tuple or list of Arrays goes straight to the program, its leaves in pytree order (a dict's keys sorted);
  anything else (nested, non-str keys) takes the flattening path; each gives the traced function's values."""
  f = tg.jit(lambda p, q: p["b"] - 2 * p["a"] + q[0] * q[1])
  a, b, c, d = (tnp.asarray(np.full(3, v, np.float32)) for v in (1.0, 10.0, 2.0, 3.0))
  compiled = tg.default_backend() == "cpu"
  for args in (({"b": b, "a": a}, (c, d)), ({"a": a, "b": b}, [c, d]), ({"a": a, "b": b}, (c, d))):
    for _ in range(2): np.testing.assert_array_equal(np.asarray(f(*args)), np.full(3, 14.0, np.float32))
  assert len(f._direct) == (2 if compiled else 0)   # the tuple and the list; dict order does not matter
  g = tg.jit(lambda p: p[1]["x"] + p[2])
  for _ in range(2): np.testing.assert_array_equal(np.asarray(g({1: {"x": a}, 2: b})), np.full(3, 11.0, np.float32))
  assert len(g._direct) == (1 if compiled else 0)


def test_outputs_fed_back_into_a_compiled_call_never_become_graph_nodes():
  """A compiled call's outputs hold their arrays until something reads them as nodes: a training loop passing its
  state back runs without making any, and each output still reads as a value (read-only), a shape, a dtype, an
  operand of eager code and of a trace, with the values of the loop run eagerly."""
  step = tg.jit(lambda p, x: ({"w": p["w"] - 0.1 * x * p["w"], "n": p["n"] + 1}, (p["w"] * x).sum()))
  p0 = {"w": tnp.asarray(X), "n": tnp.asarray(np.int32(0))}
  p, want = p0, {"w": X.astype(np.float64), "n": 0}
  for _ in range(4):
    p, loss = step(p, tnp.asarray(X))
    want_loss = (want["w"] * X).sum()
    want = {"w": want["w"] - 0.1 * X * want["w"], "n": want["n"] + 1}
  compiled = tg.default_backend() == "cpu"
  assert all((a._u is None) == compiled for a in (p["w"], p["n"], loss))
  assert p["w"].shape == X.shape and p["w"].dtype == tnp.float32 and p["n"].dtype == tnp.int32
  assert p["w"].block_until_ready() is p["w"] and p["w"].is_traced is False
  np.testing.assert_allclose(np.asarray(p["w"]), want["w"], rtol=ulps(8))
  assert not np.asarray(p["w"]).flags.writeable and int(p["n"]) == 4 and p["w"]._u is not None
  np.testing.assert_allclose(np.asarray(loss * 2), 2 * want_loss, rtol=ulps(64), atol=ulps(64) * np.abs(X).sum())
  np.testing.assert_allclose(np.asarray(tg.grad(lambda w: (w * p["w"]).sum())(tnp.ones_like(p["w"]))),
                             np.asarray(p["w"]))

def test_lower_and_compile_expose_the_graph_and_kernels():
  f = tg.jit(lambda x: tnp.exp(x - x.max(1, keepdims=True)) / tnp.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True))
  lowered = f.lower(X)
  assert "reduce_max" in lowered.as_text()
  compiled = lowered.compile()
  out = compiled(X)
  e = np.exp(X - X.max(1, keepdims=True))
  np.testing.assert_allclose(np.asarray(out), e / e.sum(1, keepdims=True), rtol=ulps(8))
  if tg.default_backend() == "cpu":
    # the maximum, then the sum and the quotients: two phases of one kernel over the rows
    (k,) = compiled.kernels
    assert len(k.phases) == 1 and "for (int64_t" in k.source
    assert "tg_run" in compiled.as_text()
  with pytest.raises(TypeError, match="signature"):
    compiled(X[:2])


def test_outputs_are_concrete_arrays():
  out = tg.jit(lambda x: (x.sum(), {"y": x * 2}))(X)
  assert out[0].block_until_ready() is out[0] and not out[0].is_traced
  assert float(out[0]) == X.sum() and out[1]["y"].shape == (3, 4)


def test_inside_other_transforms_jit_inlines():
  f = tg.jit(lambda x: (tnp.sin(x) * x).sum())
  np.testing.assert_allclose(np.asarray(tg.grad(f)(X)), np.sin(X) + X * np.cos(X), rtol=ulps(84))
  np.testing.assert_allclose(np.asarray(tg.vmap(f)(X)), (np.sin(X) * X).sum(1), rtol=ulps(84))


def test_debug_logs_traces_with_the_reason_for_a_retrace():
  code = ("import numpy as np, tracegrad as tg\n"
          "f = tg.jit(lambda x: x + 1)\n"
          "f(np.ones(3, np.float32)); f(np.ones(4, np.float32))\n")
  out = subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, "TRACEGRAD_DEBUG": "2"},
                       capture_output=True, text=True, check=True).stdout
  assert "first call" in out and "changed from float32[3] to float32[4]" in out
  if "compile:" in out: assert "run:" in out and "GFLOPS" in out and "GB/s" in out


@pytest.mark.parametrize("level", [4, 5])
def test_debug_4_prints_the_kernels_and_5_the_prelude_too(level):
  code = "import numpy as np, tracegrad as tg\ntg.jit(lambda x: (x * 2).sum())(np.ones(8, np.float32))\n"
  out = subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, "TRACEGRAD_DEBUG": str(level)},
                       capture_output=True, text=True, check=True).stdout
  if "compile:" not in out: pytest.skip("no compiled backend")
  assert "reduce_sum" in out and "void tg_run" in out
  assert ("tg_h2f" in out) == (level == 5) and ("TRACEGRAD_DEBUG=5 prints them" in out) == (level == 4)


def test_device_put_and_devices():
  d = tg.devices()[0]
  a = tg.device_put(np.arange(3.0), d)
  assert isinstance(a, tg.Array) and a.device is d
  assert tg.device_put({"a": 1.0})["a"].weak_type
  with pytest.raises(ValueError, match="devices"):
    tg.device_put(1.0, object())


def test_control_flow_compiles_into_one_program():
  from tracegrad import lax

  def rnn(w, xs):
    h, hs = lax.scan(lambda h, x: (tnp.tanh(h @ w + x), h.sum()), tnp.zeros(4), xs)
    return h.sum() + hs.sum() + lax.cond(h.sum() > 0, lambda v: v.max(), lambda v: v.min(), h)

  w = np.eye(4, dtype=np.float32) * 0.5
  xs = np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4)
  want = tg.value_and_grad(rnn)(w, xs)
  got = tg.jit(tg.value_and_grad(rnn))(w, xs)
  np.testing.assert_allclose(float(got[0]), float(want[0]), rtol=ulps(84))
  np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), rtol=ulps(84), atol=ulps(8))
  f = tg.jit(lambda x: lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2), (0, x))[1])
  np.testing.assert_array_equal(np.asarray(f(np.ones(3, np.float32))), [32, 32, 32])
  if tg.default_backend() == "cpu":   # one foreign call: the loops are C loops in the program's entry
    src = tg.jit(tg.value_and_grad(rnn)).lower(w, xs).compile().as_text()
    assert "/* c" in src and "_scan */" in src and "_cond */" in src and "switch (" in src
    assert "for (;;)" in f.lower(np.ones(3, np.float32)).compile().as_text()


@pytest.mark.parametrize("lib", ["tracegrad", "jax"])
def test_static_arguments_by_name_or_position_methods_and_shared_caches_behave_as_in_jax(lib):
  import functools
  if lib == "jax":
    jax = pytest.importorskip("jax")
    jit = jax.jit
  else:
    jit = tg.jit
  traces = []

  def g(a, n):
    traces.append(n)
    return a * n

  f = jit(g, static_argnames=["n"])
  assert [int(f(10, 20)), int(f(10, 20)), int(f(10, n=3))] == [200, 200, 30]
  assert traces[0] == 20 and traces.count(20) == 1 and 3 in traces   # static by position too: traced once per value
  k = jit(g, static_argnums=1)
  assert int(k(2, n=5)) == 10 and traces[-1] == 5                     # numbered static, passed by name

  class Scale:
    def __init__(self, s): self.s = s

    @functools.partial(jit, static_argnums=0)
    def __call__(self, x): return x * self.s

  assert float(Scale(3.0)(2.0)) == 6.0 and float(Scale.__call__(Scale(4.0), 2.0)) == 8.0

  traces.clear()
  h1, h2 = jit(g, static_argnums=1), jit(g, static_argnums=1)
  h1(1.0, 2)
  h2(1.0, 2)
  assert traces == [2]                                                  # two jits of one function share a cache
  jit(g, static_argnums=1)(1.0, 7)
  assert traces == [2, 7]


def test_a_change_of_x64_or_of_the_random_bits_scheme_traces_again():
  f = tg.jit(lambda k: tg.random.normal(k, (3,)))
  k = tg.random.key(0)
  new = np.asarray(f(k))
  tg.config.update("jax_threefry_partitionable", False)
  try:
    old = np.asarray(f(k))
  finally:
    tg.config.update("jax_threefry_partitionable", True)
  assert not np.array_equal(new, old) and np.array_equal(np.asarray(f(k)), new)
  from oracles import x64
  g = tg.jit(lambda x: x + 1.0)
  assert g(np.float64(1.0)).dtype == tnp.float32
  with x64():
    assert g(np.float64(1.0)).dtype == tnp.float64
