"""The exponential, sine and cosine, and Fresnel integrals, Dawson's and Spence's functions, comb and bernoulli against
jax.scipy.special: values (tolerances in units of the dtype's eps), dtypes, shapes and gradients, float32 and float64.
JAX's exponential integrals are called one point at a time: on an array they run every branch's loop to its end."""
import functools
import math

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.scipy import special

jax = pytest.importorskip("jax")
jspecial = pytest.importorskip("jax.scipy.special")

X = np.array([-30.0, -12.5, -5.5, -2.0, -1.0, -0.3, -1e-5, 0.0, 1e-5, 0.05, 0.3, 0.5, 0.9, 1.0, 1.7, 2.0, 2.5, 3.0,
              3.9, 4.2, 6.0, 9.5, 15.0, 33.0, 60.0, 85.0, 150.0, 500.0, 1e4, np.inf, -np.inf, np.nan])
POS = X[(X > 0) & (X <= 60)]
NS = [0, 1, 2, 3, 7]
# the points each function is compared at: JAX 0.10 returns NaN at exp1(inf) and expi(0, +-inf), where these
# return the limits (tested below), and documents fresnel as accurate on [-10, 10] only
DOMAIN = {"dawsn": X, "exp1": X[(X >= 0) & (X < np.inf)], "expi": X[(X != 0) & ~np.isinf(X)],
          "spence": X, "sici": X, "fresnel": X[~(np.abs(X) > 10) | np.isinf(X)]}
# (rtol, atol) in eps: atol covers the zeros of Ci (0.62, 3.38, ...) and Ei (0.37), where only absolute error is small
TOL = {"dawsn": (8, 0), "exp1": (16, 0), "expi": (16, 4), "spence": (8, 2), "sici": (8, 8), "fresnel": (8, 2)}


def _dtypes(dtype: str):
  """tracegrad's and JAX's 64-bit mode on for float64, off for float32."""
  wide = dtype == "float64"
  return tg.enable_x64(wide), jax.enable_x64(wide)


@functools.lru_cache(maxsize=None)
def _theirs(name: str, dtype: str) -> tuple[np.ndarray, ...]:
  x, f = DOMAIN[name].astype(dtype), getattr(jspecial, name)
  with jax.enable_x64(dtype == "float64"):
    if name in ("exp1", "expi"): return (np.array([np.asarray(f(v)) for v in x]),)
    out = f(x)
  return tuple(np.asarray(v) for v in (out if isinstance(out, tuple) else (out,)))


def _close(ours, theirs, dtype, rtol, atol):
  eps, tiny = float(np.finfo(dtype).eps), float(np.finfo(dtype).tiny)   # JAX flushes subnormal results to 0
  assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
  np.testing.assert_allclose(np.asarray(ours), theirs, rtol=rtol * eps, atol=atol * eps + tiny,
                             equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(DOMAIN))
def test_matches_jax(name, dtype):
  x = DOMAIN[name].astype(dtype)
  ours_x64, theirs_x64 = _dtypes(dtype)
  with ours_x64:
    ours = getattr(special, name)(x)
  ours = ours if isinstance(ours, tuple) else (ours,)
  for mine, theirs in zip(ours, _theirs(name, dtype)):
    _close(mine, theirs, dtype, *TOL[name])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_expn_matches_jax(dtype):
  n = np.repeat(np.asarray(NS, dtype), len(POS))
  x = np.tile(POS, len(NS)).astype(dtype)
  with jax.enable_x64(dtype == "float64"):
    theirs = np.array([np.asarray(jspecial.expn(a, b)) for a, b in zip(n, x)])
  with tg.enable_x64(dtype == "float64"):
    ours = special.expn(n, x)
  _close(ours, theirs, dtype, 32, 0)   # JAX's E_3(0.9) is 20 float64 eps off (scipy's and these are within 3)
  with tg.enable_x64(dtype == "float64"):
    grid = special.expn(np.asarray(NS, dtype)[:, None], POS[:4].astype(dtype))
  assert grid.shape == (len(NS), 4)
  np.testing.assert_array_equal(np.asarray(grid), np.asarray(ours).reshape(len(NS), -1)[:, :4])


def test_limits_jax_gets_wrong():
  """Where JAX 0.10 returns NaN or 1/n, these return the limits scipy does."""
  assert float(special.exp1(np.inf)) == 0 and float(special.exp1(0.0)) == np.inf
  assert float(special.expi(0.0)) == -np.inf and float(special.expi(-np.inf)) == 0
  assert float(special.expi(np.inf)) == np.inf
  np.testing.assert_array_equal(np.asarray(special.expn(np.array([0, 2, 3]), 0.0)), [np.inf, 1.0, 0.5])
  np.testing.assert_array_equal(np.asarray(special.expn(np.array([0, 2]), np.inf)), [0.0, 0.0])
  assert np.isnan(np.asarray(special.expn(np.array([-1, 1, 1, 1]), np.array([1.0, -1.0, np.nan, 0.5]))[:3])).all()
  assert np.isnan(float(special.expn(1.5, 0.5))) and np.isnan(float(special.exp1(-1.0)))
  # S(x) = 1/2 - cos(pi x^2 / 2) / (pi x) far out (x^2 = 1e10 is a multiple of 4), where JAX returns 1/2
  s, c = special.fresnel(np.float32(1e5))
  np.testing.assert_allclose([float(s), float(c)], [0.5 - 1 / (math.pi * 1e5), 0.5], rtol=2e-7)


def test_float64_tails():
  with tg.enable_x64(True):
    s, c = special.fresnel(np.array([1e5, 2e4 + 0.5]))
    # x^2 mod 4 is 0 and 1/4 + 0 (2e4 + 1/2)^2 = 4e8 + 2e4 + 1/4
    u = math.pi / 8
    np.testing.assert_allclose(np.asarray(s), [0.5 - 1 / (math.pi * 1e5), 0.5 - math.cos(u) / (math.pi * (2e4 + 0.5))],
                               rtol=1e-13)
    np.testing.assert_allclose(np.asarray(c), [0.5, 0.5 + math.sin(u) / (math.pi * (2e4 + 0.5))], rtol=1e-13)
    big = special.expi(np.array([700.0, 714.0]))
    np.testing.assert_allclose(np.asarray(big), [1.4509787360525609e301, 1.7106903509325412e307], rtol=64 * 2.2e-16)


def test_comb_matches_jax():
  n = np.array([0, 1, 5, 5, 10, 20, 30, 7.5, -1, 3, 4, 3], np.float32)
  k = np.array([0, 1, 2, 0, 3, 10, 15, 2.5, 2, 5, -1, 0], np.float32)
  # exp of log-gamma sums: relative error grows with their size, in JAX as here
  rtol = (8 + 4 * np.array([math.lgamma(v + 1) if v >= 0 else 0 for v in n])) * float(np.finfo(np.float32).eps)
  for rep in (False, True):
    ours, theirs = special.comb(n, k, repetition=rep), jspecial.comb(n, k, repetition=rep)
    assert ours.dtype == theirs.dtype
    assert np.all(np.abs(np.asarray(ours) - np.asarray(theirs)) <= rtol * 2 * np.abs(np.asarray(theirs)))
  assert special.comb(5, 2).dtype == tnp.float32
  with tg.enable_x64(True):
    assert special.comb(5, 2).dtype == tnp.float64 and special.comb(np.int32(5), 2).dtype == tnp.float32
    # the float32 rule in float64: an ulp of lgamma(51) ~ 148 is 2.8e-14 of the result (JAX's is 4.3e-14 off)
    rtol64 = (8 + 4 * math.lgamma(51)) * float(np.finfo(np.float64).eps)
    assert abs(float(special.comb(50.0, 25.0)) - math.comb(50, 25)) < rtol64 * math.comb(50, 25)
  with pytest.raises(NotImplementedError):
    special.comb(5, 2, exact=True)


def test_bernoulli():
  for n in (2, 62):
    ours, theirs = special.bernoulli(n), jspecial.bernoulli(n)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape == (n + 1,)
    # JAX's B_4 is off by 2.8e-6 (its zeta sum stops at 49^-4): 24 float32 eps
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=32 * float(np.finfo(np.float32).eps))
  # B_64 = -2.09e38 fits in float32 (JAX's running product overflows first); B_66 does not
  assert np.isclose(float(special.bernoulli(66)[64]), -2.0938005911346378e38, rtol=1e-7)
  assert [float(special.bernoulli(k)[k]) for k in (0, 1, 66)] == [1.0, -0.5, np.inf]
  with tg.enable_x64(True):
    b = special.bernoulli(300)
  assert b.dtype == tnp.float64
  assert float(b[4]) == -1 / 30 and float(b[60]) == -2.1399949257225335e+34
  assert np.isinf(float(b[260])) and np.isneginf(float(b[280])) and float(b[279]) == 0
  with pytest.raises(ValueError):
    special.bernoulli(-1)


def test_dtypes_and_promotion():
  assert special.dawsn(1).dtype == tnp.float32 and special.expn(1, 2).dtype == tnp.float32
  assert special.dawsn(np.float16(1.5)).dtype == tnp.float16
  assert [v.dtype for v in special.fresnel(tnp.ones(3, tnp.bfloat16))] == [tnp.bfloat16] * 2
  with tg.enable_x64(True), jax.enable_x64(True):
    for arg in (1, np.int32(1), np.int8(1), np.int64(2), np.float32(1.0), np.arange(3)):
      for name in ("dawsn", "exp1", "expi", "sici", "fresnel"):
        mine, theirs = getattr(special, name)(arg), jax.eval_shape(getattr(jspecial, name), arg)
        mine, theirs = (mine[0], theirs[0]) if isinstance(mine, tuple) else (mine, theirs)
        assert mine.dtype.name == theirs.dtype.name, (name, arg)
  with pytest.raises(TypeError, match="spence"):
    special.spence(np.arange(3))
  with pytest.raises(TypeError, match="spence"):
    special.spence(np.float16(1.0))


GRAD_X = np.array([0.15, 0.6, 1.3, 2.2, 3.7, 5.1], np.float32)
GRADS = {"dawsn": lambda s: s.dawsn, "expi": lambda s: s.expi, "exp1": lambda s: s.exp1, "spence": lambda s: s.spence,
         "si": lambda s: lambda v: s.sici(v)[0], "ci": lambda s: lambda v: s.sici(v)[1],
         "fresnel_s": lambda s: lambda v: s.fresnel(v)[0], "fresnel_c": lambda s: lambda v: s.fresnel(v)[1],
         "expn": lambda s: lambda v: s.expn(3, v)}


@pytest.mark.parametrize("name", list(GRADS))
def test_gradient_matches_jax(name):
  f, g = GRADS[name](special), GRADS[name](jspecial)
  x = GRAD_X[GRAD_X != 1.3] if name == "spence" else GRAD_X   # JAX's derivative of spence is NaN at 1.3
  ours = tg.grad(lambda v: tnp.sum(f(v)))(x)
  theirs = jax.grad(lambda v: jax.numpy.sum(g(v)))(x)
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=64 * float(np.finfo(np.float32).eps),
                             atol=4 * float(np.finfo(np.float32).eps))


def test_second_derivative_and_jit():
  x = np.array([0.4, 1.5, 6.0])
  with tg.enable_x64(True):
    d2 = tg.vmap(tg.grad(tg.grad(special.dawsn)))(x)
    y = np.asarray(special.dawsn(x))
    np.testing.assert_allclose(np.asarray(d2), -2 * y - 2 * x * (1 - 2 * x * y), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tg.jit(special.expi)(x)), np.asarray(special.expi(x)), rtol=1e-15)
