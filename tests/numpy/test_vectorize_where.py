"""vectorize with gufunc signatures, the one-argument where and array_equiv on shapes that do not broadcast, against
jax.numpy: values, shapes, dtypes, gradients and the exceptions JAX raises."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from jnp_oracle import same
from oracles import ulps

jax = pytest.importorskip("jax")
jnp = jax.numpy

rng = np.random.default_rng(0)


# ---- array_equiv ----

@pytest.mark.parametrize("s, t", [((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 3), (4,)), ((5, 2, 3), (4, 3)),
                                  ((2, 3), (5, 2, 4)), ((), (3,))])
def test_array_equiv_matches_jax(s, t):
  a, b = np.ones(s, np.float32), np.ones(t, np.float32)
  same(tnp.array_equiv(a, b), jnp.array_equiv(a, b))
  same(tracegrad.jit(tnp.array_equiv)(a, b), jnp.array_equiv(a, b))


@pytest.mark.parametrize("s, t", [((2,), (3,)), ((2, 3), (2, 4)), ((3, 1), (2, 4))])
def test_array_equiv_raises_as_jax_for_one_rank_that_does_not_broadcast(s, t):
  a, b = np.ones(s), np.ones(t)
  with pytest.raises(TypeError):
    jnp.array_equiv(a, b)
  with pytest.raises(TypeError, match=r"array_equiv: a1 of shape"):
    tnp.array_equiv(a, b)


# ---- where(condition) ----

@pytest.mark.parametrize("kw", [{}, dict(size=3), dict(size=5, fill_value=-1), dict(size=2, fill_value=(7, 8))])
def test_one_argument_where_is_nonzero(kw):
  c = np.array([[0, 1, 0], [2, 0, 3]], np.int32)
  same(tnp.where(c, **kw), jnp.where(c, **kw))
  same(tnp.where(c > 0, **kw), jnp.where(c > 0, **kw))
  if kw: same(tracegrad.jit(lambda c: tnp.where(c, **kw))(c), jnp.where(c, **kw))


def test_where_bad_arguments_raise_as_jax():
  c = np.array([True, False])
  for args, kw, err in [((c, 1), {}, TypeError), ((c, None, 2), {}, TypeError), ((c, 1, 2), dict(size=3), ValueError),
                        ((c, 1, 2), dict(fill_value=0), ValueError), ((np.array(1),), {}, ValueError),
                        (([0, 1],), {}, TypeError)]:
    with pytest.raises(err):
      jnp.where(*args, **kw)
    with pytest.raises(err, match="where"):
      tnp.where(*args, **kw)
  with pytest.raises(TypeError, match="size"):  # a traced condition needs size=, as in JAX
    tracegrad.jit(tnp.where)(c)
