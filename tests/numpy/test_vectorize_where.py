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
