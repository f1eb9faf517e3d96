"""Polynomials (numpy/polynomial.py) against jax.numpy: values, shapes, dtypes, jit, x64, gradients and errors."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tracegrad
import tracegrad.numpy as tnp
from jnp_oracle import check, jax, jnp, same
from oracles import x64, x64_both
from tracegrad.test_util import check_grads

RNG = np.random.default_rng(0)
F = RNG.standard_normal(5).astype(np.float32)
G = RNG.standard_normal(3).astype(np.float32)
I = np.array([3, -1, 2, 5])
J = np.array([1, 2])


@pytest.mark.parametrize("a,b", [(F, G), (G, F), (I, J), (I.astype(np.uint8), J.astype(np.uint8)), (F, I),
                                 (np.ones((3, 2), np.float32), np.ones((2, 2), np.float32))])
def test_add_sub(a, b):
  check("polyadd", a, b, np_too=a.ndim == 1 and a.dtype != np.uint8)
  check("polysub", a, b, np_too=a.ndim == 1 and a.dtype != np.uint8, jit=True)


@pytest.mark.parametrize("a,b", [(F, G), (I, J), (J.astype(np.int8), F)])
def test_mul_div(a, b):
  check("polymul", a, b, np_too=True, jit=True)
  check("polydiv", a, b, rtol=1e-4, atol=1e-5)
  check("polydiv", b, a)


def test_trimming_leading_zeros():
  z = np.array([0.0, 0.0, 1.0, 2.0], np.float32)
  check("polymul", z, np.array([0, 3.0], np.float32), trim_leading_zeros=True)
  check("polymul", np.zeros(2, np.float32), G, trim_leading_zeros=True)
  check("polymul", np.zeros(0, np.float32), J)
  check("polydiv", np.array([1.0, 2, 3, 4], np.float32), np.array([1.0, 1], np.float32), trim_leading_zeros=True)
  with pytest.raises(TypeError, match="polymul: trim_leading_zeros=True needs concrete"):
    tracegrad.jit(lambda a: tnp.polymul(a, a, trim_leading_zeros=True))(z)
  with pytest.raises(TypeError, match="polydiv: trim_leading_zeros"):
    tracegrad.jit(lambda a: tnp.polydiv(a, a[2:], trim_leading_zeros=True))(z)


@pytest.mark.parametrize("m", [0, 2, 7])
def test_der_int(m):
  check("polyder", F, m, np_too=True, rtol=1e-5, atol=1e-5)
  check("polyder", I, m, np_too=True)
  check("polyint", F, m, np_too=m > 0, rtol=1e-5)
  check("polyint", I, m, k=2.5)
  if m: check("polyint", F, m, k=np.arange(m, dtype=np.float32), np_too=True)
  same(tracegrad.jit(lambda p: tnp.polyint(p, m))(F), jnp.polyint(F, m))
  same(tnp.polyder(np.ones((3, 2), np.float32)), jnp.polyder(np.ones((3, 2), np.float32)))


def test_val():
  x = np.linspace(-2, 2, 7).astype(np.float32)
  check("polyval", F, x, np_too=True, jit=True)
  check("polyval", I, J, np_too=True)
  check("polyval", I, 2.0)
  check("polyval", F, np.float32(1.5), unroll=2)
  check("polyval", np.ones((3, 2), np.float32), x[:2])
  check("polyval", np.zeros(0, np.float32), x)
  check("polyval", np.array([True, False]), np.array([True, False]))
  same(tracegrad.vmap(lambda p: tnp.polyval(p, x))(np.stack([F, F * 2])), jax.vmap(lambda p: jnp.polyval(p, x))(
    np.stack([F, F * 2])))
  # past UNROLLED coefficients the steps run in chunks, the first padded with leading zeros
  long = np.random.default_rng(5).normal(size=(150, 2)).astype(np.float32) * 0.5
  for unroll in (1, 16, 64, 100, True, False):
    check("polyval", long, x[:2], unroll=unroll, jit=True)
  with pytest.raises(ValueError, match="polyval: unroll must be a positive int or a bool, got 0"):
    tnp.polyval(F, x, unroll=0)


def test_poly():
  check("poly", np.array([1.0, 2, 3], np.float32), np_too=True, jit=True)
  check("poly", np.array([1, -2], np.int8), np_too=True)
  check("poly", F, rtol=1e-5, atol=1e-5)
  check("poly", 2.0)
  check("poly", np.zeros(0, np.float32))
  check("poly", np.array([0.5, 2], np.float16))
  check("poly", np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), rtol=1e-5, atol=1e-5)   # of its eigenvalues


def test_x64():
  with x64_both():
    f64, i64 = F.astype(np.float64), I.astype(np.int64)
    for name, args in (("polyadd", (f64, G)), ("polymul", (i64, J)), ("polyval", (i64, f64)), ("polyder", (i64,)),
                       ("polyint", (F, 2)), ("poly", (i64,)), ("polydiv", (f64, G))):
      check(name, *args)


def test_gradients_match_jax():
  x = np.array([0.5, -1.0, 2.0], np.float32)
  for argnums in (0, 1):
    f = lambda lib: lambda p, x: (lib.polyval(p, x) ** 2).sum()  # noqa: E731
    same(tracegrad.grad(f(tnp), argnums)(F, x), jax.grad(f(jnp), argnums)(F, x), rtol=1e-5)
  g = lambda lib: lambda p: (lib.polymul(p, p) ** 2).sum() + (lib.polyint(lib.polyder(p), k=1.0) ** 2).sum()  # noqa
  same(tracegrad.grad(g(tnp))(G), jax.grad(g(jnp))(G), rtol=1e-5)
  h = lambda lib: lambda z: lib.poly(z).sum()  # noqa: E731
  same(tracegrad.grad(h(tnp))(G), jax.grad(h(jnp))(G), rtol=1e-5)


XS = np.linspace(-1, 2, 7).astype(np.float32)
YS = (XS ** 3 - XS + RNG.standard_normal(7) * 0.1).astype(np.float32)
WS = np.abs(RNG.standard_normal(7)).astype(np.float32) + 0.5


@pytest.mark.parametrize("kw", [{}, {"full": True, "rcond": 0.05}, {"cov": True, "w": WS}, {"cov": "unscaled"}],
                         ids=lambda kw: ",".join(kw) or "plain")
def test_fit(kw):
  for y in (YS, np.stack([YS, 2 * YS + 1], 1)):
    check("polyfit", XS, y, 3, rtol=2e-3, atol=2e-4, jit=not kw, **kw)
  if not kw:
    check("polyfit", XS, YS, 0, np_too=True, rtol=1e-4, atol=1e-5)
    check("polyfit", XS, YS, 2, w=WS, np_too=True, rtol=2e-3, atol=2e-4)
    same(tnp.polyfit(XS, YS, 3), np.polyfit(XS, YS, 3), rtol=2e-3, atol=2e-4, dtype=False)


def test_fit_x64_and_integers():
  with x64_both():
    check("polyfit", XS.astype(np.float64), YS.astype(np.float64), 4, full=True, rtol=1e-9, atol=1e-10)
  with pytest.raises(tracegrad.errors.ConcretizationTypeError, match="polyfit: deg must be a concrete"):
    tracegrad.jit(lambda d: tnp.polyfit(XS, YS, d))(2)
  # integer samples promote to float (jax.numpy raises there)
  same(tnp.polyfit(np.arange(4), np.array([1, 2, 5, 10]), 2), np.array([1.0, 0.0, 1.0]), atol=1e-4, dtype=False)


def test_fit_gradients_and_vmap():
  f = lambda lib: lambda y: (lib.polyfit(XS, y, 2) ** 2).sum() + lib.polyfit(XS, y, 1, w=WS)[0]  # noqa: E731
  same(tracegrad.grad(f(tnp))(YS), jax.jit(jax.grad(f(jnp)))(YS), rtol=2e-3, atol=2e-4)
  g = lambda x, y: (tnp.polyfit(x, y, 2) ** 2).sum() + tnp.polyfit(x, y, 1, w=WS)[0]  # noqa: E731
  with tracegrad.enable_x64(True):
    check_grads(g, ((XS + 3).astype(np.float64), YS.astype(np.float64)), order=1)
  ys = np.stack([YS, YS * 2, YS - 1])
  same(tracegrad.vmap(lambda y: tnp.polyfit(XS, y, 2))(ys), np.stack([np.polyfit(XS, y, 2) for y in ys]), rtol=2e-3,
       atol=2e-4, dtype=False)


@pytest.mark.parametrize("call,error,match", [
  (lambda: tnp.polyfit(XS, YS, -1), ValueError, "polyfit: deg must be >= 0"),
  (lambda: tnp.polyfit(XS[None], YS, 1), TypeError, "polyfit: x must be a non-empty 1-d"),
  (lambda: tnp.polyfit(XS[:0], YS[:0], 1), TypeError, "polyfit: x must be a non-empty 1-d"),
  (lambda: tnp.polyfit(XS, YS[None, None], 1), TypeError, "polyfit: y must be a 1-d or 2-d"),
  (lambda: tnp.polyfit(XS, YS[:3], 1), TypeError, "polyfit: x and y must have the same length"),
  (lambda: tnp.polyfit(XS, YS, 1, w=WS[:3]), TypeError, "polyfit: w must be a 1-d array as long as x"),
  (lambda: tnp.polyfit(XS[:3], YS[:3], 2, cov=True), ValueError, "polyfit: scaling the covariance needs more"),
])
def test_fit_errors_have_jax_types(call, error, match):
  with pytest.raises(error, match=match): call()
  as_jax = type(call)(call.__code__, dict(call.__globals__, tnp=jnp, tracegrad=jax))
  with pytest.raises(error): as_jax()


COEFFS = st.lists(st.integers(-4, 4), min_size=1, max_size=6)


def same_up_to_leading_zeros(got, want):
  """got equals want after zeros at its front, which numpy's polymul and polydiv trim."""
  got, k = np.asarray(got), np.asarray(want).shape[0]
  same(got[got.shape[0] - k:], want, rtol=1e-4, atol=1e-4, dtype=False)
  np.testing.assert_allclose(got[:got.shape[0] - k], 0, atol=1e-4)


@given(COEFFS, COEFFS, st.sampled_from(["float32", "int32"]))
def test_random_lengths_match_numpy(a, b, dt):
  a, b = np.array(a, dt), np.array(b, dt)
  b[0] = b[0] or 1
  for name in ("polyadd", "polysub", "polymul", "polyval"):
    same_up_to_leading_zeros(getattr(tnp, name)(a, b), np.atleast_1d(getattr(np, name)(a, b)))
  for got, want in zip(tnp.polydiv(a, b), np.polydiv(a, b)): same_up_to_leading_zeros(got, want)


@pytest.mark.parametrize("call,error,match", [
  (lambda: tnp.polyadd(1.0, F), IndexError, "polyadd: a1 .*scalar"),
  (lambda: tnp.polysub(F, np.float32(2)), IndexError, "polysub: a2 .*scalar"),
  (lambda: tnp.polyval(2.0, F), IndexError, "polyval: p .*scalar"),
  (lambda: tnp.polyder(2.0), TypeError, "polyder: p .*scalar"),
  (lambda: tnp.polyint(2.0), TypeError, "polyint: p .*scalar"),
  (lambda: tnp.polymul(2.0, F), TypeError, "polymul: a1 .*scalar"),
  (lambda: tnp.polydiv(F, 2.0), TypeError, "polydiv: v .*scalar"),
  (lambda: tnp.polyadd([1.0], F), TypeError, "polyadd requires ndarray"),
  (lambda: tnp.polyadd(np.array([True]), np.array([False])), TypeError, "polyadd: .*bool"),
  (lambda: tnp.polysub(np.array([True]), np.array([False])), TypeError, "polysub: .*bool"),
  (lambda: tnp.polyadd(np.zeros(0), F), ValueError, "polyadd: an empty polynomial"),
  (lambda: tnp.polyder(F, -1), ValueError, "polyder: .*m must be non-negative"),
  (lambda: tnp.polyder(F, 1.5), TypeError, "polyder: m must be an integer"),
  (lambda: tnp.polyint(F, -1), ValueError, "polyint: .*m must be non-negative"),
  (lambda: tnp.polyint(F, 2, k=np.ones(3)), ValueError, "polyint: k must be"),
  (lambda: tnp.polymul(np.ones((2, 2)), F), ValueError, "convolve: only 1-dimensional"),
  (lambda: tnp.polyval(np.ones((3, 2)), F), ValueError, "polyval: p's shape"),
  (lambda: tnp.poly(np.ones((2, 3))), ValueError, "poly: seq_of_zeros must be"),
  (lambda: tnp.poly(np.ones((2, 2, 2))), ValueError, "poly: seq_of_zeros must be"),
])
def test_errors_have_jax_types(call, error, match):
  with pytest.raises(error, match=match): call()
  as_jax = type(call)(call.__code__, dict(call.__globals__, tnp=jnp))   # the same call on jax.numpy
  with pytest.raises(error): as_jax()
