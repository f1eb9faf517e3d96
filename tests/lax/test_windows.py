"""lax.reduce_window (and pooling built on it) against a numpy sliding-window reference and jax.lax.reduce_window, in
value, in gradient (jax.grad, finite differences), under vmap and under jit."""
import math
import operator

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from numpy.lib.stride_tricks import sliding_window_view

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax
from oracles import check_grads, check_vmap, ulps

rng = np.random.default_rng(0)
COMPS = {"add": (lax.add, np.add, 0.0), "max": (lax.max, np.maximum, -np.inf), "min": (lax.min, np.minimum, np.inf),
         "mul": (lax.mul, np.multiply, 1.0)}


def pads_of(padding, shape, window, strides, wdil):
  if padding == "VALID": return [(0, 0)] * len(shape)
  if padding == "SAME":
    return [(t // 2, t - t // 2) for t in (max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
                                           for n, k, s, d in zip(shape, window, strides, wdil))]
  return list(padding)


def ref(x, name, init, window, strides=None, padding="VALID", base=None, wdil=None):
  """Each window's elements (padding and dilation holes left out) reduced by numpy, then combined with init."""
  nd, ufunc, ident = x.ndim, COMPS[name][1], COMPS[name][2]
  strides, base, wdil = strides or (1,) * nd, base or (1,) * nd, wdil or (1,) * nd
  pads = pads_of(padding, x.shape, window, strides, wdil)
  dil = np.full([(n - 1) * b + 1 for n, b in zip(x.shape, base)], ident)
  dil[tuple(slice(None, None, b) for b in base)] = x
  dil = dil[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(dil.shape, pads))]
  xp = np.pad(dil, [(max(lo, 0), max(hi, 0)) for lo, hi in pads], constant_values=ident)
  win = sliding_window_view(xp, [(k - 1) * d + 1 for k, d in zip(window, wdil)])
  win = win[tuple(slice(None, None, s) for s in strides) + tuple(slice(None, None, d) for d in wdil)]
  return ufunc(ufunc.reduce(win.reshape(win.shape[:nd] + (-1,)), axis=-1), init).astype(x.dtype)


CASES = [  # (shape, computation, init, window, strides, padding, base_dilation, window_dilation)
  ((9,), "max", -np.inf, (3,), (2,), "VALID", None, None),
  ((8,), "add", 0.0, (2,), None, "SAME", None, (2,)),
  ((6,), "mul", 1.0, (3,), None, "VALID", None, None),
  ((5, 6), "min", np.inf, (2, 3), (1, 2), ((1, 0), (0, 2)), None, None),
  ((5, 6), "add", 1.5, (2, 2), (2, 1), "SAME", (2, 1), None),
  ((4, 5), "max", 0.25, (3, 2), (1, 1), ((-1, 2), (1, 1)), (1, 2), (2, 1)),
  ((2, 3, 6, 8), "max", -np.inf, (1, 1, 2, 2), (1, 1, 2, 2), "VALID", None, None),  # NCHW max pool 2x2 / 2
  ((2, 3, 5, 5), "add", 0.0, (1, 1, 3, 3), None, "SAME", None, None),  # the sum of a 3x3 average pool
  ((1, 2, 7, 7), "max", -np.inf, (1, 1, 3, 3), (1, 1, 2, 2), "SAME", None, (1, 1, 2, 2)),
]


def call(case, x, jax_lax=None):
  shape, name, init, window, strides, padding, base, wdil = case
  comp = getattr(jax_lax, name) if jax_lax else COMPS[name][0]
  strides = strides or (1,) * len(shape)  # jax.lax's string padding needs them
  return (jax_lax or lax).reduce_window(x, init, comp, window, strides, padding, base_dilation=base,
                                        window_dilation=wdil)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_values_match_numpy_and_jax_eager_and_jit(i):
  case = CASES[i]
  x = rng.standard_normal(case[0]).astype(np.float32)
  want = ref(x, *case[1:])
  got = call(case, x)
  assert got.shape == want.shape and got.dtype == tnp.float32
  np.testing.assert_allclose(np.asarray(got), want, rtol=ulps(84), atol=ulps(84))
  np.testing.assert_allclose(np.asarray(tg.jit(lambda x: call(case, x))(x)), np.asarray(got), rtol=ulps(8),
                             atol=ulps(8))
  jax = pytest.importorskip("jax")
  np.testing.assert_allclose(np.asarray(call(case, x, jax.lax)), want, rtol=ulps(84), atol=ulps(84))


def test_pooling_and_integers_match_jax():
  jax = pytest.importorskip("jax")
  x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
  avg = lambda m, x: m.reduce_window(x, 0.0, m.add, (1, 1, 3, 3), (1, 1, 1, 1), "SAME") / 9.0
  np.testing.assert_allclose(np.asarray(avg(lax, x)), avg(jax.lax, x), rtol=ulps(84), atol=ulps(8))
  # the average over the window's real elements only: divide by the count of ones
  counts = lambda m, x: m.reduce_window(m.add(x * 0, 1.0), 0.0, m.add, (1, 1, 3, 3), (1, 1, 2, 2), "SAME")
  np.testing.assert_allclose(np.asarray(counts(lax, x)), counts(jax.lax, x))
  xi = rng.integers(-50, 50, (7, 5)).astype(np.int32)
  for comp, init in (("max", -np.inf), ("min", np.inf), ("add", 0)):
    got = lax.reduce_window(xi, init, getattr(lax, comp), (2, 3), (2, 1), "SAME")
    assert got.dtype == tnp.int32
    np.testing.assert_array_equal(np.asarray(got), jax.lax.reduce_window(xi, init, getattr(jax.lax, comp), (2, 3),
                                                                         (2, 1), "SAME"))


GRAD_CASES = [i for i, c in enumerate(CASES) if c[1] != "mul" and c[2] in (0.0, -np.inf, np.inf)
              and (c[1] == "add" or c[7] is None)]  # jax has no max/min vjp with window dilation, nor a mul one


@pytest.mark.parametrize("i", GRAD_CASES)
def test_grad_matches_jax(i):
  jax = pytest.importorskip("jax")
  case = CASES[i]
  x = rng.standard_normal(case[0]).astype(np.float32)
  got = tg.grad(lambda x: (call(case, x) ** 2).sum())(x)
  want = jax.grad(lambda x: (call(case, x, jax.lax) ** 2).sum())(x)
  np.testing.assert_allclose(np.asarray(got), want, rtol=ulps(84), atol=ulps(84))
  t = rng.standard_normal(case[0]).astype(np.float32)
  _, got_t = tg.jvp(lambda x: call(case, x), (x,), (t,))
  _, want_t = jax.jvp(lambda x: call(case, x, jax.lax), (x,), (t,))
  np.testing.assert_allclose(np.asarray(got_t), want_t, rtol=ulps(84), atol=ulps(84))


def test_max_pool_ties_send_the_gradient_to_the_first_maximum_as_jax():
  jax = pytest.importorskip("jax")
  x = np.maximum(rng.standard_normal((1, 2, 5, 6)), 0).astype(np.float32)  # relu: windows full of zeros
  for comp in ("max", "min"):
    f = lambda m, x: m.reduce_window(-x if comp == "min" else x, np.inf if comp == "min" else -np.inf, getattr(m, comp),
                                     (1, 1, 3, 3), (1, 1, 1, 2), "SAME").sum()
    np.testing.assert_array_equal(np.asarray(tg.grad(lambda x: f(lax, x))(x)), jax.grad(lambda x: f(jax.lax, x))(x))


@pytest.mark.parametrize("i", [2, 5, 8])
def test_grads_match_finite_differences(i):
  case = CASES[i]
  x = rng.standard_normal(case[0]).astype(np.float32)
  check_grads(lambda x: call(case, x), (x,), modes=("fwd", "rev"), rtol=1e-4, atol=1e-4)


def test_gradient_with_respect_to_init_value():
  x = rng.standard_normal((6,)).astype(np.float32)
  check_grads(lambda x, init: lax.reduce_window(x, init, lax.max, (2,), (2,), "VALID"), (x, np.float32(0.1)),
              rtol=1e-4, atol=1e-4)


def test_vmap_matches_stacking_and_composes_with_grad():
  xs = rng.standard_normal((3, 2, 6, 5)).astype(np.float32)
  pool = lambda x: lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2), (1, 2, 2), "SAME")
  check_vmap(pool, (xs,))
  check_vmap(pool, (xs.transpose(1, 0, 2, 3),), in_axes=1, out_axes=2)
  check_vmap(tg.grad(lambda x: (pool(x) ** 2).sum()), (xs,))
  avg = tg.jit(tg.vmap(lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 3, 3), None, "SAME") / 9.0))
  want = np.stack([ref(x, "add", 0.0, (1, 3, 3), None, "SAME") / 9.0 for x in xs])
  np.testing.assert_allclose(np.asarray(avg(xs)), want, rtol=ulps(84), atol=ulps(8))


def test_numpy_and_operator_computations_and_empty_windows():
  x = rng.standard_normal((7,)).astype(np.float32)
  for comp, name in ((tnp.maximum, "max"), (tnp.minimum, "min"), (tnp.add, "add"), (operator.add, "add"),
                     (tnp.multiply, "mul"), (operator.mul, "mul")):
    np.testing.assert_allclose(np.asarray(lax.reduce_window(x, COMPS[name][2], comp, (3,))),
                               ref(x, name, COMPS[name][2], (3,)), rtol=ulps(84))
  assert lax.reduce_window(x, 0.0, lax.add, (9,)).shape == (0,)  # the window does not fit: no output, as JAX
  x[2] = np.nan  # nan wins max and min, as numpy's maximum and minimum
  for name in ("max", "min"):
    np.testing.assert_array_equal(np.asarray(lax.reduce_window(x, COMPS[name][2], COMPS[name][0], (2,))),
                                  ref(x, name, COMPS[name][2], (2,)))


def test_errors_name_the_function_and_argument():
  x = np.ones((4, 4), np.float32)
  with pytest.raises(ValueError, match=r"reduce_window: window_dimensions .*\(4, 4\)"):
    lax.reduce_window(x, 0.0, lax.add, (2,))
  with pytest.raises(ValueError, match="reduce_window: window_strides"):
    lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1, 1))
  with pytest.raises(ValueError, match="reduce_window: window_dilation must be positive"):
    lax.reduce_window(x, 0.0, lax.add, (2, 2), window_dilation=(0, 1))
  with pytest.raises(ValueError, match="reduce_window: padding"):
    lax.reduce_window(x, 0.0, lax.add, (2, 2), padding="FULL")
  with pytest.raises(ValueError, match="reduce_window: padding"):
    lax.reduce_window(x, 0.0, lax.add, (2, 2), padding=[(1, 1)])
  with pytest.raises(TypeError, match="reduce_window: computation .* lax.add, lax.max, lax.min or lax.mul"):
    lax.reduce_window(x, 0.0, lambda a, b: a + b, (2, 2))
  with pytest.raises(TypeError, match="reduce_window: pytrees"):
    lax.reduce_window((x, x), (0.0, 0.0), lax.add, (2, 2))
  with pytest.raises(TypeError, match="reduce_window: init_value's dtype"):
    lax.reduce_window(x.astype(np.int32), 0.5, lax.add, (2, 2))
  with pytest.raises(ValueError, match="reduce_window: init_value must be a scalar"):
    lax.reduce_window(x, np.zeros(2, np.float32), lax.add, (2, 2))


@st.composite
def window_problems(draw):
  nd = draw(st.integers(1, 3))
  shape = tuple(draw(st.lists(st.integers(1, 6), min_size=nd, max_size=nd)))
  window = tuple(draw(st.lists(st.integers(1, 3), min_size=nd, max_size=nd)))
  strides = tuple(draw(st.lists(st.integers(1, 2), min_size=nd, max_size=nd)))
  wdil = tuple(draw(st.lists(st.integers(1, 2), min_size=nd, max_size=nd)))
  padding = draw(st.sampled_from(["VALID", "SAME", "pairs"]))
  if padding == "pairs": padding = tuple(draw(st.tuples(st.integers(0, 2), st.integers(0, 2))) for _ in range(nd))
  return shape, draw(st.sampled_from(["add", "max", "min"])), window, strides, padding, wdil, draw(st.integers(0, 99))


@given(window_problems())
def test_random_windows_match_the_reference(problem):
  shape, name, window, strides, padding, wdil, seed = problem
  pads = pads_of(padding, shape, window, strides, wdil)
  assume(all(n + lo + hi >= (k - 1) * d + 1 for n, (lo, hi), k, d in zip(shape, pads, window, wdil)))
  x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
  init = COMPS[name][2]
  f = lambda x: lax.reduce_window(x, init, COMPS[name][0], window, strides, padding, window_dilation=wdil)
  np.testing.assert_allclose(np.asarray(f(x)), ref(x, name, init, window, strides, padding, None, wdil),
                             rtol=ulps(84), atol=ulps(84))
  # the derivative of a sum counts the windows each element belongs to (add) or wins (max, min; not those all padding)
  g = np.asarray(tg.grad(lambda x: f(x).sum())(x))
  out = np.asarray(f(x))
  want = ref(np.ones(shape, np.float32), "add", 0.0, window, strides, padding, None, wdil).sum() if name == "add" else \
    np.isfinite(out).sum()
  assert g.shape == shape and np.all(g >= 0) and g.sum() == pytest.approx(want, rel=ulps(8))
