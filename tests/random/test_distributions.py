"""tracegrad.random's distributions against jax.random: bit for bit where the draw is a fixed transform that
tracegrad rounds as XLA does, to a few ulp where XLA's tan, pow or fused reductions round otherwise, and in
distribution (moments, a Kolmogorov-Smirnov distance) for the gamma family and the matrix samplers."""
import math

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import random as tr

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _np(r): return jnp if r is jax.random else tnp


P3 = np.float32([0.2, 0.3, 0.5])
EXACT = {
  "laplace": lambda r, k: r.laplace(k, (301,)),
  "logistic": lambda r, k: r.logistic(k, (301,)),
  "rademacher": lambda r, k: r.rademacher(k, (64,)),
  "rayleigh": lambda r, k: r.rayleigh(k, 2.0, (301,)),
  "triangular": lambda r, k: r.triangular(k, -1.0, 0.3, 2.0, (301,)),
  "geometric": lambda r, k: r.geometric(k, 0.3, (301,)),
  "pareto": lambda r, k: r.pareto(k, 3.0, (301,)),
  "lognormal": lambda r, k: r.lognormal(k, 0.7, (301,)),
  "poisson": lambda r, k: r.poisson(k, 3.5, (101,)),
  "poisson_large": lambda r, k: r.poisson(k, 30.0, (101,)),
  "binomial": lambda r, k: r.binomial(k, 10.0, 0.3, (101,)),
  "binomial_btrs": lambda r, k: r.binomial(k, 100.0, 0.6, (101,)),
  "multinomial": lambda r, k: r.multinomial(k, 20.0, _np(r).asarray(P3), shape=(4, 3)),
}
CLOSE = {
  "cauchy": lambda r, k: r.cauchy(k, (301,)),
  "maxwell": lambda r, k: r.maxwell(k, (301,)),
  "double_sided_maxwell": lambda r, k: r.double_sided_maxwell(k, 1.0, 2.0, (301,)),
  "weibull_min": lambda r, k: r.weibull_min(k, 1.5, 2.5, (301,)),
  "wald": lambda r, k: r.wald(k, 1.7, (301,)),
  "multivariate_normal": lambda r, k: r.multivariate_normal(k, _np(r).zeros(2), _np(r).asarray([[2.0, .5], [.5, 1.]]),
                                                            (50,)),
  "dirichlet": lambda r, k: r.dirichlet(k, _np(r).asarray([0.5, 1.0, 2.0]), (20,)),
}


def _same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype and got.shape == want.shape
  if got.dtype.kind == "f": got, want = got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}")
  np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", EXACT)
def test_matches_jax_bit_for_bit(scheme, name):
  f = EXACT[name]
  _same(f(tr, tr.key(7)), f(jax.random, jax.random.PRNGKey(7)))


@pytest.mark.parametrize("name", CLOSE)
def test_matches_jax_to_a_few_ulp(name):
  f = CLOSE[name]
  got, want = np.asarray(f(tr, tr.key(7))), np.asarray(f(jax.random, jax.random.PRNGKey(7)))
  assert got.dtype == want.dtype and got.shape == want.shape
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def _ks(x, cdf) -> float:
  x = np.sort(np.asarray(x, np.float64))
  c = cdf(x)
  n = len(x)
  return max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n))


def _gamma_cdf(a):
  from scipy.special import gammainc
  return lambda x: gammainc(a, np.maximum(x, 0))


@pytest.mark.parametrize("a", [0.3, 2.5])
def test_gamma_and_loggamma_have_the_gamma_distribution(a):
  pytest.importorskip("scipy")
  g = np.asarray(tr.gamma(tr.key(1), a, (2000,)))
  lg = np.asarray(tr.loggamma(tr.key(1), a, (2000,)))
  assert g.dtype == np.float32 and g.shape == (2000,) and (g >= 0).all()
  assert _ks(g, _gamma_cdf(a)) < 0.04
  np.testing.assert_allclose(np.exp(lg), g, rtol=1e-4, atol=1e-30)


def test_gamma_is_close_to_jax_for_most_values():
  got = np.asarray(tr.gamma(tr.key(7), 2.5, (200,)))
  want = np.asarray(jax.random.gamma(jax.random.key(7), 2.5, (200,)))
  assert np.mean(np.isclose(got, want, rtol=1e-5)) > 0.9


def test_moments_of_the_gamma_family():
  n = 4000
  cases = [(tr.chisquare(tr.key(2), 3.0, (n,)), 3.0, 6.0), (tr.beta(tr.key(3), 2.0, 3.0, (n,)), 0.4, 0.04),
           (tr.f(tr.key(4), 5.0, 10.0, (n,)), 10 / 8, 2 * 100 * 13 / (5 * 64 * 6)),
           (tr.t(tr.key(5), 5.0, (n,)), 0.0, 5 / 3),
           (tr.generalized_normal(tr.key(6), 2.0, (n,)), 0.0, 0.5)]
  for x, mean, var in cases:
    x = np.asarray(x, np.float64)
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / n) + 1e-3
    assert abs(x.var() / var - 1) < 0.25


def test_ball_and_orthogonal():
  b = np.asarray(tr.ball(tr.key(0), 3, shape=(500,)))
  r = np.linalg.norm(b, axis=-1)
  assert b.shape == (500, 3) and (r <= 1 + 1e-6).all() and abs(np.mean(r ** 3) - 0.5) < 0.06
  q = np.asarray(tr.orthogonal(tr.key(0), 4, (3,)))
  assert q.shape == (3, 4, 4)
  np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), (3, 4, 4)), atol=1e-5)
  w = np.asarray(tr.orthogonal(tr.key(1), 2, m=5))
  assert w.shape == (2, 5)
  np.testing.assert_allclose(w @ w.T, np.eye(2), atol=1e-5)
  q = np.asarray(tr.orthogonal(tr.key(2), 2, (2000,)))
  assert abs(np.mean(q[:, 0, 0])) < 0.05 and abs(np.mean(q[:, 0, 0] ** 2) - 0.5) < 0.05


def test_keys():
  k = tr.key(3)
  _same(tr.wrap_key_data(tr.key_data(k)), k)
  assert tr.key_impl(k) == "threefry2x32" and tr.key_dtype() == tnp.uint32
  _same(tr.uniform(tr.clone(k), (3,)), tr.uniform(k, (3,)))
  with pytest.raises(ValueError, match="wrap_key_data"):
    tr.wrap_key_data(tr.key_data(k), impl="rbg")
  with pytest.raises(TypeError, match="wrap_key_data"):
    tr.wrap_key_data(tnp.zeros(3, tnp.uint32))


def test_bad_input():
  with pytest.raises(ValueError, match="laplace: dtype"):
    tr.laplace(tr.key(0), (2,), tnp.int32)
  with pytest.raises(ValueError, match="poisson: dtype"):
    tr.poisson(tr.key(0), 1.0, (2,), tnp.float32)
  with pytest.raises(ValueError, match="pareto: parameter shapes"):
    tr.pareto(tr.key(0), tnp.ones(3), (2,))
  with pytest.raises(ValueError, match="multivariate_normal: cov.shape"):
    tr.multivariate_normal(tr.key(0), tnp.zeros(2), tnp.eye(3))


def test_dtypes_and_shapes():
  k = tr.key(0)
  assert tr.laplace(k, (2, 3), tnp.float16).dtype == tnp.float16
  assert tr.gamma(k, tnp.ones((2, 3))).shape == (2, 3)
  assert tr.rademacher(k, (5,), tnp.float32).dtype == tnp.float32
  assert tr.double_sided_maxwell(k, tnp.zeros(2), 1.0, (3,)).shape == (3, 2)
  assert tr.dirichlet(k, tnp.ones((2, 4))).shape == (2, 4)
  np.testing.assert_allclose(np.asarray(tr.dirichlet(k, tnp.ones(4), (5,))).sum(-1), 1, rtol=1e-6)


def test_jit_and_vmap_match_eager():
  keys = tr.split(tr.key(5), 3)
  for f in (lambda k: tr.logistic(k, (7,)), lambda k: tr.poisson(k, 4.0, (7,)), lambda k: tr.gamma(k, 1.5, (4,)),
            lambda k: tr.binomial(k, 30.0, 0.5, (5,))):
    eager = np.stack([np.asarray(f(k)) for k in keys])
    _same(tg.jit(f)(keys[1]), eager[1])
    _same(tg.vmap(f)(keys), eager)


@pytest.mark.parametrize("name,f", [
  ("gamma", lambda r, k, a: r.gamma(k, a).sum()), ("loggamma", lambda r, k, a: r.loggamma(k, a).sum()),
  ("dirichlet", lambda r, k, a: r.dirichlet(k, a)[0])])
def test_gamma_family_gradients_are_jaxs_implicit_reparameterisation(name, f):
  jax = pytest.importorskip("jax")
  a = np.array([0.5, 2.0, 5.0], np.float32)
  mine = tg.grad(lambda v: f(tr, tr.key(0), v))(a)
  theirs = jax.grad(lambda v: f(jax.random, jax.random.key(0), v))(a)
  np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=5e-5)
