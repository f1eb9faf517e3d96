"""The rest of scipy.special against jax.scipy.special: values (tolerances in units of float32's eps), dtypes and
gradients, many points to one call."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.scipy import special

jax = pytest.importorskip("jax")
jspecial = pytest.importorskip("jax.scipy.special")
EPS = float(np.finfo(np.float32).eps)
rng = np.random.default_rng(1)
X = np.concatenate([np.linspace(-6.7, 12, 81), [0.0, -1.0, -2.0, np.inf, -np.inf, np.nan, 0.5, 30.0]]).astype(
  np.float32)
P = np.concatenate([rng.uniform(0, 1, 40), [0.0, 1.0, -0.5, 2.0, np.nan]]).astype(np.float32)
Q = np.concatenate([rng.uniform(0, 1, 40), [1.0, 0.0, 1.0, 1.0, 1.0]]).astype(np.float32)

CASES = {"gamma": ((X,), 2000, 1e-6), "gammasgn": ((X,), 0, 0), "loggamma": ((X,), 16, 1e-6),
         "digamma": ((X,), 16, 2e-6), "polygamma": ((np.full(89, 2), X), 64, 1e-5),
         "zeta": ((X + 9, np.full(89, 1.5, np.float32)), 400, 1e-7),
         "beta": ((np.abs(X) + 0.1, X[::-1] + 0.2), 64, 1e-7),
         "poch": ((np.abs(X) + 0.1, np.linspace(0, 3, 89).astype(np.float32)), 400, 1e-6),
         "factorial": ((np.linspace(-2, 20, 89).astype(np.float32),), 400, 0),
         "erfinv": ((np.linspace(-1.1, 1.1, 89).astype(np.float32),), 8, 1e-7),
         "erfcx": ((np.delete(X, 68),), 400, 1e-7),   # JAX's erfcx(9.195) is 0
         "i0": ((X,), 16, 0), "i0e": ((X,), 16, 0), "i1": ((X,), 16, 0), "i1e": ((X,), 16, 0),
         "expit": ((X,), 4, 0), "logit": ((P,), 4, 1e-7), "entr": ((P,), 4, 1e-7), "rel_entr": ((P, Q), 8, 1e-7),
         "kl_div": ((P, Q), 8, 1e-7), "boxcox": ((np.abs(X) + 0.1, np.full(89, 0.5, np.float32)), 8, 1e-6),
         "boxcox1p": ((np.abs(X), np.full(89, 0.0, np.float32)), 8, 1e-6)}


@pytest.mark.parametrize("name", CASES)
def test_matches_jax(name):
  args, ulps, atol = CASES[name]
  ours, theirs = getattr(special, name)(*args), getattr(jspecial, name)(*args)
  assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=ulps * EPS, atol=atol, equal_nan=True)


def test_softmax_multigammaln_and_promotion():
  a = rng.normal(size=(3, 5)).astype(np.float32)
  for axis in (-1, 0):
    np.testing.assert_allclose(special.softmax(a, axis=axis), jspecial.softmax(a, axis=axis), rtol=4 * EPS)
    np.testing.assert_allclose(special.log_softmax(a, axis=axis), jspecial.log_softmax(a, axis=axis), rtol=8 * EPS,
                               atol=1e-6)
  v = np.linspace(2, 9, 8).astype(np.float32)
  np.testing.assert_allclose(special.multigammaln(v, 3), jspecial.multigammaln(v, 3), rtol=16 * EPS)
  assert special.gamma(np.arange(1, 4)).dtype == tnp.float32
  assert special.digamma(np.float16(1.5)).dtype == tnp.float16


@pytest.mark.parametrize("name", ["gamma", "digamma", "loggamma", "erfinv", "i0", "i1", "expit", "logit"])
def test_gradient_matches_jax(name):
  x = np.linspace(0.1, 0.9, 9).astype(np.float32)
  ours = tg.grad(lambda v: tnp.sum(getattr(special, name)(v)))(x)
  theirs = jax.grad(lambda v: jax.numpy.sum(getattr(jspecial, name)(v)))(x)
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-4, atol=1e-5)


def test_integer_arguments_promote_as_jax_under_x64():
  js = pytest.importorskip("jax.scipy.special")
  jnp = jax.numpy
  with tg.enable_x64(True), jax.enable_x64(True):
    for name, arg in [("erf", 1), ("erf", np.int32(1)), ("erf", np.int8(1)), ("gammaln", np.arange(3)),
                      ("erf", np.float32(1.0)), ("gammaln", np.int64(2))]:
      mine, theirs = getattr(special, name)(arg), getattr(js, name)(arg if not isinstance(arg, np.ndarray) else
                                                                       jnp.asarray(arg))
      assert mine.dtype.name == theirs.dtype.name, (name, arg, mine.dtype, theirs.dtype)
