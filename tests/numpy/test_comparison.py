"""isclose, allclose, array_equal, array_equiv against jax.numpy and numpy."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from jnp_oracle import check

A = np.array([1.0, np.nan, np.inf, -np.inf, 2.0, 1e-9], np.float32)
B = np.array([1.0 + 1e-6, np.nan, np.inf, np.inf, 2.1, 0.0], np.float32)


@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_allclose(equal_nan):
  check("isclose", A, B, equal_nan=equal_nan, np_too=True, jit=True)
  check("isclose", A, B, rtol=0.1, atol=0.0)
  check("allclose", A, B, equal_nan=equal_nan, np_too=True)
  check("allclose", A[:1], B[:1], np_too=True, jit=True)
  check("isclose", np.arange(3), np.array([0, 1, 3]), np_too=True)


def test_array_equal_equiv():
  x = np.array([[1.0, np.nan], [2.0, 3.0]], np.float32)
  check("array_equal", x, x, np_too=True)
  check("array_equal", x, x, equal_nan=True, np_too=True)
  check("array_equal", x, x[0], np_too=True)
  check("array_equiv", np.array([1, 2]), np.array([[1, 2], [1, 2]]), np_too=True)
  assert not bool(tnp.array_equiv(np.ones((2, 3)), np.ones(4)))  # ranks differ: False, as jax.numpy
  with pytest.raises(TypeError, match="array_equiv"):  # one rank: jax.numpy raises TypeError
    tnp.array_equiv(np.array([1, 2]), np.array([1, 2, 3]))
  assert bool(tracegrad.jit(tnp.array_equal)(np.ones(3), np.ones(3)))
