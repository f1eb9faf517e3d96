"""lax's special functions against jax.lax: values (tolerances in units of float32's eps), dtypes, edge values and
gradients, many points to one call."""
import math

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax
from oracles import x64

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
EPS = float(np.finfo(np.float32).eps)
EDGES = [0.0, -0.0, -1.0, -2.5, 1.0, 2.0, np.inf, -np.inf, np.nan, 1e-30, 0.5, 1e30]
rng = np.random.default_rng(0)


def _f32(*xs): return [np.asarray(x, np.float32) for x in xs]


def _check(name, args, ulps, atol=0.0):
  ours, theirs = getattr(lax, name)(*args), getattr(jax.lax, name)(*args)
  assert ours.dtype == tnp.float32 and ours.shape == theirs.shape
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=ulps * EPS, atol=atol, equal_nan=True)


UNARY = {"erf": (np.linspace(-5, 5, 201), 4, 0), "erfc": (np.linspace(-3, 9, 201), 16, 1e-20),
         "erf_inv": (np.linspace(-0.999, 0.999, 201), 6, 1e-7), "lgamma": (np.linspace(-9.7, 40, 301), 16, 1e-6),
         "digamma": (np.linspace(-9.7, 40, 301), 16, 2e-6), "bessel_i0e": (np.linspace(-60, 60, 301), 12, 0),
         "bessel_i1e": (np.linspace(-60, 60, 301), 12, 1e-9)}


@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_jax(name):
  pts, ulps, atol = UNARY[name]
  _check(name, _f32(np.concatenate([pts, EDGES])), ulps, atol)


def test_incomplete_gamma_matches_jax():
  a = rng.uniform(0.05, 60, 400)
  x = a * rng.uniform(0.01, 3, 400)
  a, x = _f32(np.concatenate([a, [1, 0, -1, 2, np.inf, 2, 1, np.nan, 3]]), np.concatenate([x, [1, 1, 1, 0, 1, np.inf,
                                                                                                  -1, 1, 1e-3]]))
  for name in ("igamma", "igammac"): _check(name, (a, x), 800, 1e-5)   # both lose ~400 ulp in x^a e^-x / Gamma(a)
  for name in ("igamma_grad_a", "random_gamma_grad"): _check(name, (a, x), 1000, 2e-5)


def test_betainc_zeta_polygamma_match_jax():
  a, b, x = _f32(rng.uniform(0.1, 20, 300), rng.uniform(0.1, 20, 300), rng.uniform(0, 1, 300))
  _check("betainc", (a, b, x), 800, 1e-5)
  s = _f32(np.concatenate([rng.uniform(1.01, 20, 200), [2, 1, 0.5, 2, 2, 2, 3]]))[0]
  q = _f32(np.concatenate([rng.uniform(0.1, 30, 200), [1, 1, 1, 0, -1, -1.5, -1.5]]))[0]
  _check("zeta", (s, q), 64, 1e-7)
  m = _f32(np.concatenate([rng.integers(0, 5, 200), [0, 1, 2, 1.5, -1]]))[0]
  x = _f32(np.concatenate([rng.uniform(0.1, 20, 200), [1, 1, 1, 1, 1]]))[0]
  _check("polygamma", (m, x), 128, 1e-6)


def _grads(name, args, argnum):
  ours = tg.grad(lambda *a: tnp.sum(getattr(lax, name)(*a)), argnum)(*args)
  theirs = jax.grad(lambda *a: jnp.sum(getattr(jax.lax, name)(*a)), argnum)(*args)
  return np.asarray(ours), np.asarray(theirs)


GRADS = [("erf", (np.linspace(-3, 3, 41),), 0, 1e-6), ("erfc", (np.linspace(-3, 3, 41),), 0, 1e-6),
         ("erf_inv", (np.linspace(-0.99, 0.99, 41),), 0, 1e-5), ("lgamma", (np.linspace(0.1, 9, 41),), 0, 1e-5),
         ("digamma", (np.linspace(0.1, 9, 41),), 0, 1e-4), ("bessel_i0e", (np.linspace(-9, 9, 40),), 0, 1e-5),
         ("bessel_i1e", (np.linspace(-9, 9, 41),), 0, 1e-5),
         ("igamma", (np.linspace(0.5, 9, 41), np.linspace(0.2, 12, 41)), 0, 1e-4),
         ("igamma", (np.linspace(0.5, 9, 41), np.linspace(0.2, 12, 41)), 1, 1e-5),
         ("igammac", (np.linspace(0.5, 9, 41), np.linspace(0.2, 12, 41)), 1, 1e-5),
         ("betainc", (np.full(41, 2.0), np.full(41, 3.5), np.linspace(0.01, 0.99, 41)), 2, 1e-5),
         ("polygamma", (np.full(41, 1.0), np.linspace(0.3, 9, 41)), 1, 1e-4)]


@pytest.mark.parametrize("case", GRADS, ids=[f"{g[0]}-{g[2]}" for g in GRADS])
def test_gradient_matches_jax(case):
  name, args, argnum, tol = case
  ours, theirs = _grads(name, _f32(*args), argnum)
  np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def test_second_derivative_of_lgamma_is_trigamma():
  x = _f32(np.linspace(0.2, 6, 13))[0]
  ours = tg.vmap(tg.grad(tg.grad(lambda v: lax.lgamma(v))))(x)
  np.testing.assert_allclose(np.asarray(ours), np.asarray(jax.lax.polygamma(np.float32(1), x)), rtol=1e-4)


def test_dtypes_and_no_promotion():
  assert lax.lgamma(tnp.ones(2, tnp.float16)).dtype == tnp.float16
  assert lax.erf(1.0).weak_type
  with pytest.raises(TypeError, match="lgamma does not accept dtype int32"):
    lax.lgamma(tnp.ones(2, tnp.int32))
  with pytest.raises(TypeError, match="same dtypes"):
    lax.igamma(tnp.ones(2, tnp.float32), tnp.ones(2, tnp.float16))


def test_float64_accuracy():
  with x64(True):
    x = np.linspace(0.05, 30, 97)
    np.testing.assert_allclose(np.asarray(lax.lgamma(x)), [math.lgamma(v) for v in x], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(np.asarray(lax.erf(x / 10)), [math.erf(v / 10) for v in x], rtol=1e-14)
    np.testing.assert_allclose(np.asarray(lax.erfc(x / 5)), [math.erfc(v / 5) for v in x], rtol=1e-13)
    mid = np.linspace(0.4, 4.2, 381)   # where 1 - erf(x) cancels: within 16 eps of the correctly rounded erfc
    np.testing.assert_allclose(np.asarray(lax.erfc(mid)), [math.erfc(v) for v in mid], rtol=16 * np.finfo(float).eps)
    u = np.linspace(-0.999999, 0.999999, 51)
    np.testing.assert_allclose(np.asarray(lax.erf(lax.erf_inv(u))), u, rtol=1e-15)
