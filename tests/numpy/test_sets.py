"""isin, union1d, intersect1d, setdiff1d, setxor1d against jax.numpy and numpy, eagerly and under jit with size=."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from jnp_oracle import check, jnp, same

A = np.array([3, 1, np.nan, 2, 2, np.nan, 5], np.float32)
B = np.array([2, 7, np.nan, 5, 5], np.float32)
AI, BI = np.array([5, 3, 3, 1, 9]), np.array([1, 9, 9, 4])


def test_isin():
  check("isin", AI.reshape(5, 1), BI, np_too=True, jit=True)
  check("isin", A, B, invert=True, np_too=True)
  check("isin", AI, np.array([], np.int32))


@pytest.mark.parametrize("name", ["union1d", "intersect1d", "setdiff1d", "setxor1d"])
def test_set_ops(name):
  check(name, A, B, np_too=True)
  check(name, AI, BI, np_too=True)
  for size in (2, 9):
    check(name, A, B, size=size, jit=True)
    check(name, AI, BI, size=size, fill_value=-1, jit=True)
  with pytest.raises(TypeError, match=name):
    tracegrad.jit(lambda x, y: getattr(tnp, name)(x, y))(AI, BI)


def test_intersect1d_indices():
  check("intersect1d", AI, BI, return_indices=True, np_too=True)
  same(tracegrad.jit(lambda x, y: tnp.intersect1d(x, y, return_indices=True, size=4))(AI, BI),
       jnp.intersect1d(AI, BI, return_indices=True, size=4))
