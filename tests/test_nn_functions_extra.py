"""The jax.nn activations added beside the first ones: values, shapes, dtypes and gradients as JAX's."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp

jax = pytest.importorskip("jax")
jnp = jax.numpy

X = np.array([-3.0, -1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 2.5], np.float32)
POS = np.array([0.01, 0.3, 0.6931472, 1.0, 5.0, 30.0], np.float32)

CASES = [("celu", X, {}), ("celu", X, {"alpha": 0.5}), ("hard_sigmoid", X, {}), ("hard_silu", X, {}),
         ("hard_swish", X, {}), ("identity", X, {}), ("mish", X, {}), ("soft_sign", X, {}),
         ("sparse_plus", X, {}), ("sparse_sigmoid", X, {}), ("squareplus", X, {}), ("squareplus", X, {"b": 2.0}),
         ("tanh", X, {}), ("log1mexp", POS, {})]


def _check(ours, theirs, rtol=1e-5, atol=1e-6):
  assert ours.shape == theirs.shape and str(ours.dtype) == str(theirs.dtype)
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name,x,kw", CASES)
def test_value_and_gradient_match_jax(name, x, kw):
  ours, theirs = getattr(tracegrad.nn, name), getattr(jax.nn, name)
  _check(ours(tnp.asarray(x), **kw), theirs(jnp.asarray(x), **kw))
  g = tracegrad.grad(lambda v: ours(v, **kw).sum())(tnp.asarray(x))
  _check(g, jax.grad(lambda v: theirs(v, **kw).sum())(jnp.asarray(x)), rtol=1e-4, atol=1e-5)


def test_scalar_and_integer_inputs_take_jax_dtypes():
  for name in ("hard_sigmoid", "sparse_sigmoid", "soft_sign", "celu", "log1mexp", "mish"):
    ours, theirs = getattr(tracegrad.nn, name)(2), getattr(jax.nn, name)(2)
    assert ours.shape == theirs.shape == () and str(ours.dtype) == str(theirs.dtype), name
  assert tracegrad.nn.identity(3).dtype == tnp.int32


def test_glu_matches_jax_and_rejects_odd_axis():
  x = np.arange(24, dtype=np.float32).reshape(2, 6, 2) / 10 - 1
  for axis in (-1, 1):
    _check(tracegrad.nn.glu(tnp.asarray(x), axis), jax.nn.glu(jnp.asarray(x), axis))
  g = tracegrad.grad(lambda v: tracegrad.nn.glu(v, 1).sum())(tnp.asarray(x))
  _check(g, jax.grad(lambda v: jax.nn.glu(v, 1).sum())(jnp.asarray(x)))
  with pytest.raises(AssertionError, match="glu"):
    tracegrad.nn.glu(tnp.ones((2, 3)))


@pytest.mark.parametrize("axis,keepdims,masked", [(None, False, False), (1, False, False), ((0, 1), True, False),
                                                  (1, True, True), (None, False, True)])
def test_logmeanexp_matches_jax(axis, keepdims, masked):
  x = np.linspace(-2, 3, 12, dtype=np.float32).reshape(3, 4)
  where = (np.arange(12).reshape(3, 4) % 3 != 0) if masked else None
  ours = tracegrad.nn.logmeanexp(tnp.asarray(x), axis=axis, keepdims=keepdims,
                                 where=None if where is None else tnp.asarray(where))
  _check(ours, jax.nn.logmeanexp(jnp.asarray(x), axis=axis, keepdims=keepdims, where=where))
  g = tracegrad.grad(lambda v: tracegrad.nn.logmeanexp(v, axis=axis, keepdims=keepdims).sum())(tnp.asarray(x))
  _check(g, jax.grad(lambda v: jax.nn.logmeanexp(v, axis=axis, keepdims=keepdims).sum())(jnp.asarray(x)))


def test_under_jit_and_vmap():
  f = tracegrad.jit(tracegrad.vmap(lambda v: tracegrad.nn.mish(v) + tracegrad.nn.log1mexp(v * v + 1)))
  x = X.reshape(2, 4)
  _check(f(tnp.asarray(x)), jax.jit(jax.vmap(lambda v: jax.nn.mish(v) + jax.nn.log1mexp(v * v + 1)))(x))


@pytest.mark.parametrize("shape,column_axis", [((3, 5), -1), ((6, 4), -1), ((2, 3, 4), -1), ((4, 3, 2), 0)])
def test_orthogonal_initializer_matches_jax_to_rounding(shape, column_axis):
  ours = tracegrad.nn.initializers.orthogonal(2.0, column_axis)(tracegrad.random.key(1), shape)
  _check(ours, jax.nn.initializers.orthogonal(2.0, column_axis)(jax.random.key(1), shape), atol=2e-6)


def test_delta_orthogonal_matches_jax_and_checks_shapes():
  ours = tracegrad.nn.initializers.delta_orthogonal()(tracegrad.random.key(3), (3, 3, 2, 4))
  _check(ours, jax.nn.initializers.delta_orthogonal()(jax.random.key(3), (3, 3, 2, 4)), atol=2e-6)
  with pytest.raises(ValueError, match="delta_orthogonal.*3D, 4D or 5D"):
    tracegrad.nn.initializers.delta_orthogonal()(tracegrad.random.key(0), (3, 3))
  with pytest.raises(ValueError, match="orthogonal.*2 or more"):
    tracegrad.nn.initializers.orthogonal()(tracegrad.random.key(0), (3,))
  init: tracegrad.nn.initializers.Initializer = tracegrad.nn.initializers.zeros
  assert init(None, (2,)).shape == (2,)
