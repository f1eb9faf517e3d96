"""quantile and friends, cov, corrcoef, histograms, bincount, digitize, interp, gradient, trapezoid, ediff1d, unwrap
against jax.numpy (and numpy); a few under jit and grad."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from jnp_oracle import check, jnp, same

rng = np.random.default_rng(0)
X = rng.normal(size=(3, 4)).astype(np.float32)
XN = X.copy()
XN[0, 1] = np.nan
XN[2, :] = np.nan
XI = rng.integers(0, 5, size=(3, 4))


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("axis", [None, 1, (0, 1)])
def test_quantile(method, axis):
  for q in (0.3, np.array([0.0, 0.5, 1.0], np.float32)):
    check("quantile", X, q, axis=axis, method=method)
    check("quantile", XN, q, axis=axis, method=method, keepdims=True)
    check("nanquantile", XN, q, axis=axis, method=method)


def test_median_percentile():
  check("median", X, axis=0, np_too=True)
  check("median", XI, np_too=True)
  check("nanmedian", XN, axis=1, keepdims=True)
  check("percentile", X, 30.0, axis=1, np_too=True)
  check("nanpercentile", XN, np.array([10.0, 90.0], np.float32), axis=0)
  check("median", X, axis=1, jit=True)
  g = tracegrad.grad(lambda x: tnp.median(x))(X[0])
  same(g, jax.grad(jnp.median)(X[0]))


jax = pytest.importorskip("jax")


def test_cov_corrcoef():
  check("cov", X, np_too=True)
  check("cov", X, rowvar=False, ddof=0, np_too=True)
  check("cov", X[0], X[1], np_too=True)
  check("cov", X, fweights=np.array([1, 2, 1, 3]), aweights=np.array([0.5, 2, 1, 3], np.float32), np_too=True)
  check("cov", XI, np_too=True)
  check("corrcoef", X, np_too=True)
  check("corrcoef", X[0], X[1], rowvar=True, np_too=True)
  same(tracegrad.grad(lambda x: tnp.cov(x).sum())(X), jax.grad(lambda x: jnp.cov(x).sum())(X), rtol=1e-4, atol=1e-5)


def test_nanargmax_nanargmin():
  check("nanargmax", XN, axis=1, jit=True)
  check("nanargmin", XN, axis=0, keepdims=True)
  check("nanargmax", XI)


def test_bincount_digitize():
  x = np.array([0, 3, 3, 1])
  check("bincount", x, np_too=True)
  check("bincount", x, minlength=7, np_too=True)
  check("bincount", x, weights=np.array([1.0, 2, 3, 4], np.float32), np_too=True)
  check("bincount", x, length=3, jit=True)
  with pytest.raises(TypeError, match="length"): tracegrad.jit(tnp.bincount)(x)
  b = np.array([-1.0, 0, 1], np.float32)
  check("digitize", X, b, np_too=True, jit=True)
  check("digitize", X, b[::-1].copy(), right=True, np_too=True)


def test_histograms():
  b = np.array([-1.0, 0, 1], np.float32)
  check("histogram", X, np_too=True)
  check("histogram", X, bins=3, range=(-1, 1), jit=True)
  check("histogram", X, bins=b, density=True, np_too=True)
  check("histogram", X, weights=X * 2)
  check("histogram_bin_edges", X, 4, np_too=True)
  check("histogram2d", X[0], X[1], bins=3)
  check("histogram2d", X[0], X[1], bins=[2, 3], density=True)
  check("histogramdd", X.T[:, :3], bins=2)


def test_interp():
  xp, fp = np.array([0.0, 1, 3, 4], np.float32), np.array([1.0, 3, 2, 0], np.float32)
  t = np.linspace(-1, 5, 13).astype(np.float32)
  check("interp", t, xp, fp, np_too=True, jit=True)
  check("interp", t, xp, fp, left=-5.0, right=9.0, np_too=True)
  check("interp", t, xp, fp, left="extrapolate", right="extrapolate")
  check("interp", t, xp, fp, period=3.0, np_too=True)
  g = tracegrad.grad(lambda f: tnp.interp(t, xp, f).sum())(fp)
  same(g, jax.grad(lambda f: jnp.interp(t, xp, f).sum())(fp))


def test_gradient_trapezoid_ediff1d_unwrap():
  check("gradient", X, np_too=True)
  check("gradient", X, axis=1, np_too=True)
  check("gradient", X[0], np.array([0.0, 1, 3, 4], np.float32), np_too=True)
  check("gradient", XI, 2.0, np_too=True)
  check("trapezoid", X, np_too=True)
  check("trapezoid", X, x=np.array([0.0, 1, 3, 4], np.float32), np_too=True)
  check("trapezoid", X, dx=0.5, axis=0, np_too=True, jit=True)
  check("ediff1d", XI, to_end=np.array([9, 9]), to_begin=np.array(-1), np_too=True)
  ph = np.cumsum(rng.normal(size=10) * 3).astype(np.float32)
  check("unwrap", ph, np_too=True, rtol=1e-4, atol=1e-5)
  check("unwrap", XI, period=4)
