"""Index helpers against jax.numpy and numpy."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from jnp_oracle import check, jnp, same


def test_unravel_ravel():
  check("unravel_index", np.array([0, 5, 11, 13, -1, -30]), (3, 4), jit=True)
  check("unravel_index", np.array([0, 5, 11]), (3, 4), np_too=True)
  idx = (np.array([0, 2, 1]), np.array([3, 0, 1]))
  check("ravel_multi_index", idx, (3, 4), np_too=True)
  check("ravel_multi_index", idx, (3, 4), order="F", np_too=True)
  for mode in ("clip", "wrap"):
    bad = (np.array([0, 5, -1]), np.array([3, 0, 9]))
    same(tracegrad.jit(lambda a, b: tnp.ravel_multi_index((a, b), (3, 4), mode=mode))(*bad),
         jnp.ravel_multi_index(bad, (3, 4), mode=mode))
  with pytest.raises(ValueError, match="ravel_multi_index"): tnp.ravel_multi_index((np.array([5]),), (3,))


def test_indices_ix():
  check("indices", (2, 3), np_too=True)
  check("indices", (2, 3), sparse=True, np_too=True)
  check("ix_", np.array([0, 2]), np.array([1, 0, 3]), np_too=True)


def test_tri_diag_mask_indices():
  check("diag_indices", 3, 3, np_too=True)
  check("diag_indices_from", np.zeros((2, 2)), np_too=True)
  for k in (-1, 0, 2):
    check("tril_indices", 3, k, 4, np_too=True)
    check("triu_indices", 4, k, np_too=True)
    check("tril_indices_from", np.zeros((3, 4)), k, np_too=True)
    check("triu_indices_from", np.zeros((4, 3)), k, np_too=True)
  same(tnp.mask_indices(3, tnp.triu, 1), np.mask_indices(3, np.triu, 1), dtype=False)


def test_fill_diagonal():
  a = np.zeros((3, 4), np.float32)
  same(tnp.fill_diagonal(a, 5.0, inplace=False), jnp.fill_diagonal(a, 5.0, inplace=False))
  same(tnp.fill_diagonal(a, np.array([1.0, 2.0]), inplace=False), jnp.fill_diagonal(a, np.array([1.0, 2.0]),
                                                                                    inplace=False))
  with pytest.raises(NotImplementedError, match="inplace=False"): tnp.fill_diagonal(a, 1.0)


def test_index_objects():
  assert tnp.s_[1:2, ::3] == np.s_[1:2, ::3] and tnp.index_exp[1] == np.index_exp[1]
  same(tnp.r_[0:3, 5, np.array([7, 8])], jnp.r_[0:3, 5, np.array([7, 8])])
  same(tnp.r_[-1:1:5j, np.array([2.0])], jnp.r_[-1:1:5j, np.array([2.0])])
  same(tnp.r_["0,2", np.array([1, 2]), np.array([3, 4])], jnp.r_["0,2", np.array([1, 2]), np.array([3, 4])])
  same(tnp.c_[np.array([1, 2]), np.array([3, 4])], jnp.c_[np.array([1, 2]), np.array([3, 4])])
  same(tnp.mgrid[0:2, 0:3], jnp.mgrid[0:2, 0:3])
  same(tnp.mgrid[0:1:4j], jnp.mgrid[0:1:4j])
  same(tnp.ogrid[0:2, 0:1:3j], jnp.ogrid[0:2, 0:1:3j])
