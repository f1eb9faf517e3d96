"""tracegrad.scipy.stats against jax.scipy.stats: values, shapes and dtypes of every function on a grid of points
(tails included), and gradients of the main densities."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.scipy import stats

jax = pytest.importorskip("jax")
jstats = pytest.importorskip("jax.scipy.stats")

X = np.linspace(-6, 6, 13).astype(np.float32)
POS = np.array([0.0, 0.1, 0.5, 1.0, 2.5, 7.0, 15.0], np.float32)
UNIT = np.array([0.0, 0.01, 0.2, 0.5, 0.8, 0.99, 1.0], np.float32)
K = np.array([-1, 0, 1, 2, 3, 7], np.int32)

# (module, function, args): each arg broadcasts against the others
CASES = [
  *[("norm", f, (X, 0.5, 2.0)) for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")],
  ("norm", "logcdf", (np.float32([-30.0, -12.0, 8.0]),)), ("norm", "ppf", (UNIT, 1.0, 3.0)), ("norm", "isf", (UNIT,)),
  *[("logistic", f, (X, 0.5, 2.0)) for f in ("logpdf", "pdf", "cdf", "sf")],
  ("logistic", "ppf", (UNIT[1:-1], 0.5, 2.0)), ("logistic", "isf", (UNIT[1:-1],)),
  *[("laplace", f, (X, 0.5, 2.0)) for f in ("logpdf", "pdf", "cdf")],
  *[("cauchy", f, (X, 0.5, 2.0)) for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")],
  ("cauchy", "ppf", (UNIT[1:-1], 0.5, 2.0)), ("cauchy", "isf", (UNIT[1:-1],)),
  *[("expon", f, (X, -1.0, 2.0)) for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")],
  ("expon", "ppf", (UNIT[:-1], 0.5, 2.0)),
  *[("uniform", f, (X, -2.0, 5.0)) for f in ("logpdf", "pdf", "cdf")], ("uniform", "ppf", (UNIT, -2.0, 5.0)),
  *[("t", f, (X, np.float32([[1.0], [3.5]]), 0.5, 2.0)) for f in ("logpdf", "pdf")],
  *[("chi2", f, (POS[1:], np.float32([[1.0], [4.0]]))) for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")],
  *[("gamma", f, (POS[1:], np.float32([[0.5], [2.0], [9.0]]), 0.0, 1.5))
    for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")],
  *[("beta", f, (UNIT[1:-1], np.float32([[0.5], [2.0]]), np.float32([[3.0], [1.5]])))
    for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")],
  *[("bernoulli", f, (K, 0.3)) for f in ("logpmf", "pmf", "cdf")], ("bernoulli", "ppf", (UNIT, 0.3)),
  *[("poisson", f, (K, np.float32([[0.5], [4.0]]))) for f in ("logpmf", "pmf", "cdf")],
  *[("geom", f, (K, 0.3)) for f in ("logpmf", "pmf")],
  *[("truncnorm", f, (X / 2, -1.0, 2.0)) for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")],
  *[("truncnorm", f, (X / 2 + 3, 2.0, 5.0)) for f in ("logpdf", "cdf", "logsf")],
]


def compare(ours, theirs, rtol=2e-4, atol=2e-5):
  ours, theirs = np.asarray(ours), np.asarray(theirs)
  assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
  np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


@pytest.mark.parametrize("mod,fn,args", CASES, ids=[f"{m}.{f}-{i}" for i, (m, f, _) in enumerate(CASES)])
def test_matches_jax(mod, fn, args):
  compare(getattr(getattr(stats, mod), fn)(*args), getattr(getattr(jstats, mod), fn)(*args))


def test_multivariate_normal_matches_jax():
  rng = np.random.default_rng(0)
  a = rng.normal(size=(3, 3)).astype(np.float32)
  cov = a @ a.T + np.eye(3, dtype=np.float32)
  x, mean = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32)
  mvn, jmvn = stats.multivariate_normal, jstats.multivariate_normal
  compare(mvn.logpdf(x, mean, cov), jmvn.logpdf(x, mean, cov))
  compare(mvn.pdf(x, mean, cov), jmvn.pdf(x, mean, cov))
  compare(mvn.logpdf(x, mean, np.float32(2.0)), jmvn.logpdf(x, mean, np.float32(2.0)))
  compare(mvn.logpdf(x[:, 0], mean[0], np.float32(2.0)), jmvn.logpdf(x[:, 0], mean[0], np.float32(2.0)))
  with pytest.raises(ValueError, match="multivariate_normal.logpdf: cov must be"):
    mvn.logpdf(x, mean, np.eye(2, dtype=np.float32))


def test_integer_arguments_promote_to_float32():
  compare(stats.norm.logpdf(np.arange(3)), jstats.norm.logpdf(np.arange(3)))
  compare(stats.poisson.logpmf(np.arange(3), 2), jstats.poisson.logpmf(np.arange(3), 2))


GRADS = [("norm", "logpdf", 0.5), ("norm", "logcdf", -2.0), ("logistic", "logpdf", 0.7), ("cauchy", "logpdf", 1.5),
         ("t", "logpdf", 0.4, 3.0), ("gamma", "logpdf", 1.3, 2.5), ("beta", "logpdf", 0.3, 2.0, 3.0),
         ("laplace", "logpdf", 0.8), ("truncnorm", "logpdf", 0.5, -1.0, 2.0), ("chi2", "cdf", 1.5, 3.0),
         ("expon", "logsf", 1.2)]


@pytest.mark.parametrize("case", GRADS, ids=[f"{m}.{f}" for m, f, *_ in GRADS])
def test_gradients_match_jax(case):
  mod, fn, x, *rest = case
  ours = tg.grad(lambda v: getattr(getattr(stats, mod), fn)(v, *rest))(tnp.asarray(np.float32(x)))
  theirs = jax.grad(lambda v: getattr(getattr(jstats, mod), fn)(v, *rest))(np.float32(x))
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-3, atol=1e-5)


def test_jit_matches_eager():
  f = tg.jit(lambda x: stats.norm.logcdf(x) + stats.gamma.cdf(tnp.abs(x) + 0.1, 2.0))
  x = tnp.asarray(X)
  eager = stats.norm.logcdf(x) + stats.gamma.cdf(tnp.abs(x) + 0.1, 2.0)
  np.testing.assert_allclose(np.asarray(f(x)), np.asarray(eager), rtol=1e-5, atol=1e-6)
