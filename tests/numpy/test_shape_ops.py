"""Shape functions against numpy, eagerly and traced."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tracegrad.numpy as tnp

from oracles import ALL, arrays, check, shapes


@given(data=st.data())
def test_reshape_transpose_and_friends(data):
  dt = data.draw(st.sampled_from(ALL))
  x = data.draw(arrays(dt, shapes(1, 4)))
  check(lambda a: tnp.reshape(a, (-1,)), lambda a: np.reshape(a, (-1,)), x)
  perm = tuple(data.draw(st.permutations(range(x.ndim))))
  check(lambda a: tnp.transpose(a, perm), lambda a: np.transpose(a, perm), x)
  check(tnp.transpose, np.transpose, x)
  i, j = data.draw(st.integers(-x.ndim, x.ndim - 1)), data.draw(st.integers(-x.ndim, x.ndim - 1))
  check(lambda a: tnp.swapaxes(a, i, j), lambda a: np.swapaxes(a, i, j), x)
  check(lambda a: tnp.moveaxis(a, i, j), lambda a: np.moveaxis(a, i, j), x)
  k = data.draw(st.integers(-x.ndim - 1, x.ndim))
  check(lambda a: tnp.expand_dims(a, k), lambda a: np.expand_dims(a, k), x)
  check(tnp.squeeze, np.squeeze, x)
  check(lambda a: tnp.flip(a, i), lambda a: np.flip(a, i), x)
  check(tnp.flip, np.flip, x)
  sh = data.draw(st.integers(-7, 7))
  check(lambda a: tnp.roll(a, sh, i), lambda a: np.roll(a, sh, i), x)
  check(lambda a: tnp.roll(a, sh), lambda a: np.roll(a, sh), x)
  check(tnp.ravel, np.ravel, x)
  check(tnp.atleast_3d, np.atleast_3d, x)


@given(data=st.data())
def test_joining_and_splitting(data):
  dt = data.draw(st.sampled_from(ALL))
  s = data.draw(shapes(1, 3))
  xs = [data.draw(arrays(dt, s)) for _ in range(data.draw(st.integers(1, 3)))]
  ax = data.draw(st.integers(-len(s), len(s) - 1))
  check(lambda *a: tnp.concatenate(a, ax), lambda *a: np.concatenate(a, ax), *xs)
  check(lambda *a: tnp.stack(a, ax), lambda *a: np.stack(a, ax), *xs)
  check(lambda *a: tnp.hstack(a), lambda *a: np.hstack(a), *xs)
  check(lambda *a: tnp.vstack(a), lambda *a: np.vstack(a), *xs)
  x = xs[0]
  cuts = sorted(data.draw(st.lists(st.integers(0, x.shape[ax]), max_size=3)))
  got, want = tnp.split(x, cuts, ax), np.split(x, cuts, ax)
  assert len(got) == len(want) and all(np.array_equal(np.asarray(g), w) for g, w in zip(got, want))


@given(data=st.data())
def test_tile_repeat_pad_diff(data):
  dt = data.draw(st.sampled_from(ALL))
  x = data.draw(arrays(dt, shapes(1, 3)))
  reps = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
  check(lambda a: tnp.tile(a, reps), lambda a: np.tile(a, reps), x)
  r, ax = data.draw(st.integers(0, 3)), data.draw(st.integers(-x.ndim, x.ndim - 1))
  check(lambda a: tnp.repeat(a, r, ax), lambda a: np.repeat(a, r, ax), x)
  check(lambda a: tnp.repeat(a, r), lambda a: np.repeat(a, r), x)
  pw = [(data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))) for _ in range(x.ndim)]
  modes = ["constant", "edge", "wrap", "symmetric"] + (["reflect"] if min(x.shape) > 1 else [])
  for mode in modes: check(lambda a: tnp.pad(a, pw, mode=mode), lambda a: np.pad(a, pw, mode=mode), x)
  if dt != "bool":
    check(lambda a: tnp.pad(a, pw, constant_values=3), lambda a: np.pad(a, pw, constant_values=np.array(3, a.dtype)), x)
  if dt not in ("bool",) and not dt.startswith("uint"):
    check(lambda a: tnp.diff(a, axis=ax), lambda a: np.diff(a, axis=ax), x)


@given(data=st.data())
def test_diagonal_and_trace(data):
  dt = data.draw(st.sampled_from(["int32", "float32", "int8"]))
  x = data.draw(arrays(dt, shapes(2, 3)))
  off = data.draw(st.integers(-3, 3))
  check(lambda a: tnp.diagonal(a, off), lambda a: np.diagonal(a, off), x)
  check(lambda a: tnp.diagonal(a, off, -1, 0), lambda a: np.diagonal(a, off, -1, 0), x)
  want_dt = "float32" if dt == "float32" else "int32"
  check(lambda a: tnp.trace(a, off), lambda a: np.trace(a, off), x, want_dtype=want_dt)


def test_broadcasting_helpers():
  check(lambda a: tnp.broadcast_to(a, (4, 2, 3)), lambda a: np.broadcast_to(a, (4, 2, 3)), np.ones((2, 1), np.float32))
  assert tnp.broadcast_shapes((2, 1), (3,)) == (2, 3)
  a, b = tnp.broadcast_arrays(tnp.ones((2, 1)), tnp.ones(3))
  assert a.shape == b.shape == (2, 3)


def test_shape_errors():
  with pytest.raises(ValueError, match=r"reshape.*\(2, 3\).*\(4,\)"): tnp.reshape(tnp.ones((2, 3)), (4,))
  with pytest.raises(ValueError, match="axis 3 is out of bounds.*dimension 2"): tnp.flip(tnp.ones((2, 3)), 3)
  with pytest.raises(ValueError, match="concatenate"): tnp.concatenate([tnp.ones((2, 3)), tnp.ones((3, 2))])
  with pytest.raises(ValueError, match="squeeze"): tnp.squeeze(tnp.ones((2, 3)), 0)
  with pytest.raises(ValueError, match="equal division"): tnp.split(tnp.ones(5), 2)
  with pytest.raises(ValueError, match="broadcast_to"): tnp.broadcast_to(tnp.ones(3), (2,))
  with pytest.raises(ValueError, match="stack"): tnp.stack([tnp.ones(2), tnp.ones(3)])
  with pytest.raises(ValueError, match="pad"): tnp.pad(tnp.ones(2), 1, mode="nope")
