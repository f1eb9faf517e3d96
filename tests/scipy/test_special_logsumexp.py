"""scipy.special.logsumexp (also nn.logsumexp) and nn.selu against JAX: values, dtypes and gradients."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.scipy import special

jax = pytest.importorskip("jax")
jspecial = pytest.importorskip("jax.scipy.special")

rng = np.random.default_rng(0)
A = rng.normal(size=(3, 4)).astype(np.float32)
B = rng.normal(size=(3, 4)).astype(np.float32)
W = rng.random((3, 4)) > 0.3

KWARGS = [{}, {"axis": 1}, {"axis": (0, 1), "keepdims": True}, {"axis": [0]}, {"b": B}, {"b": np.abs(B), "axis": 0},
          {"b": B, "axis": 1, "return_sign": True}, {"where": W, "axis": 1}, {"b": 2.0, "keepdims": True}]


@pytest.mark.parametrize("kw", KWARGS, ids=range(len(KWARGS)))
def test_logsumexp_matches_jax(kw):
  ours, theirs = special.logsumexp(A, **kw), jspecial.logsumexp(A, **kw)
  for o, t in zip(tg.tree.leaves(ours), jax.tree.leaves(theirs)):
    assert np.shape(o) == np.shape(t) and np.asarray(o).dtype == np.asarray(t).dtype
    np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-5, atol=1e-6)


def test_logsumexp_edges_and_nn_alias():
  assert tg.nn.logsumexp is special.logsumexp
  for x in ([-np.inf, -np.inf], [np.inf, 1.0], [1, 2]):
    ours, theirs = special.logsumexp(np.asarray(x)), jspecial.logsumexp(np.asarray(x))
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


@pytest.mark.parametrize("kw", [{}, {"b": np.abs(B)}, {"axis": 0, "where": W}], ids=range(3))
def test_logsumexp_gradient_matches_jax(kw):
  ours = tg.grad(lambda x: tnp.sum(special.logsumexp(x, axis=kw.get("axis"), **{k: v for k, v in kw.items()
                                                                                 if k != "axis"})))(tnp.asarray(A))
  theirs = jax.grad(lambda x: jspecial.logsumexp(x, **kw).sum())(A)
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-6)


def test_logsumexp_under_jit():
  f = tg.jit(lambda x: special.logsumexp(x, axis=1, b=tnp.asarray(B), return_sign=True))
  for o, t in zip(f(tnp.asarray(A)), jspecial.logsumexp(A, axis=1, b=B, return_sign=True)):
    np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-5, atol=1e-6)


def test_selu_matches_jax():
  x = np.linspace(-5, 5, 11).astype(np.float32)
  np.testing.assert_allclose(np.asarray(tg.nn.selu(x)), np.asarray(jax.nn.selu(x)), rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(np.asarray(tg.vmap(tg.grad(tg.nn.selu))(tnp.asarray(x))),
                             np.asarray(jax.vmap(jax.grad(jax.nn.selu))(x)), rtol=1e-6)
