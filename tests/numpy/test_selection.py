"""select, piecewise, choose, compress, extract, place, put against jax.numpy (and numpy)."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from jnp_oracle import check, jnp, same

X = np.linspace(-2, 2, 9).astype(np.float32)


def test_select():
  check("select", [X < -1, X > 1], [X * 2, X ** 2], -5.0, np_too=True)
  check("select", [X < 0], [np.arange(9)], np_too=True)
  f = tracegrad.jit(lambda x: tnp.select([x < 0, x < 1], [x, -x], 9.0))
  same(f(X), jnp.select([X < 0, X < 1], [X, -X], 9.0))
  g = tracegrad.grad(lambda x: tnp.select([x < 0], [x * x], x * 3).sum())(X)
  same(g, np.where(X < 0, 2 * X, 3).astype(np.float32))
  with pytest.raises(ValueError, match="select"): tnp.select([X < 0], [])


def test_piecewise():
  conds = [X < 0, X > 1]
  funcs = [lambda v: -v, lambda v: v * 3, 0.5]
  same(tnp.piecewise(X, conds, funcs), jnp.piecewise(X, conds, funcs))
  same(tnp.piecewise(np.arange(5), [np.arange(5) > 2], [7]), jnp.piecewise(np.arange(5), [np.arange(5) > 2], [7]))
  same(tracegrad.jit(lambda x: tnp.piecewise(x, [x < 0], [lambda v: v * v, lambda v: v]))(X),
       jnp.piecewise(X, [X < 0], [lambda v: v * v, lambda v: v]))


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_choose(mode):
  idx = np.array([[0, 1, 2], [2, 1, 0]]) if mode == "raise" else np.array([[0, 4, -1], [2, 1, 0]])
  choices = [np.arange(3), np.full((2, 3), 10), np.array([[7], [8]])]
  check("choose", idx, choices, mode=mode, np_too=True)
  if mode != "raise":
    same(tracegrad.jit(lambda i: tnp.choose(i, choices, mode=mode))(idx), jnp.choose(idx, choices, mode=mode))


def test_compress_extract():
  a = np.arange(12).reshape(3, 4)
  check("compress", np.array([True, False, True]), a, axis=0, np_too=True)
  check("compress", np.array([0, 1, 1, 0, 1]), a, np_too=True)
  check("compress", np.array([True, False, True, True]), a, axis=1, size=2, fill_value=-1)
  check("extract", a % 3 == 0, a, np_too=True)
  check("extract", a % 3 == 0, a, size=6, fill_value=99, jit=True)
  with pytest.raises(TypeError, match="size"): tracegrad.jit(lambda c: tnp.compress(c, a, axis=0))(a[:, 0] > 2)


def test_place_put():
  a = np.zeros((2, 3), np.int32)
  mask = np.array([[1, 0, 1], [0, 1, 1]], bool)
  same(tnp.place(a, mask, np.array([5, 6]), inplace=False), jnp.place(a, mask, np.array([5, 6]), inplace=False))
  for mode in [None, "clip", "wrap"]:
    same(tnp.put(a, np.array([0, 4, 9]), np.array([7, 8]), mode=mode, inplace=False),
         jnp.put(a, np.array([0, 4, 9]), np.array([7, 8]), mode=mode, inplace=False))
  with pytest.raises(ValueError, match="inplace=False"): tnp.place(a, mask, 1)
  with pytest.raises(ValueError, match="inplace=False"): tnp.put(a, [0], 1)
