"""sort, argsort, searchsorted and unique against numpy, eagerly and traced: NaN last, stable ties, every dtype."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tracegrad
import tracegrad.numpy as tnp
from oracles import ALL, FLOATS, arrays, assert_close, check, np_dtype, traced

SPECIAL = [-2.0, -1.0, -0.0, 0.0, 1.0, 2.0, np.inf, -np.inf, np.nan]


def with_ties(dtype: str, shape):
  """Arrays with many repeated values (and NaN, +-inf, -0.0 for floats)."""
  if dtype in FLOATS:
    return hnp.arrays(np.float32, shape, elements=st.sampled_from(SPECIAL)).map(lambda a: a.astype(np_dtype(dtype)))
  return arrays(dtype, shape, low=-2, high=2)


def _wide(x: np.ndarray) -> np.ndarray:
  """A numpy dtype np.sort orders exactly like x (bfloat16 through float32)."""
  return x.astype(np.float32) if x.dtype.kind == "V" or str(x.dtype) == "bfloat16" else x


def np_sort(x, axis=-1, descending=False):
  out = np.sort(_wide(x), axis=axis).astype(x.dtype)
  return np.flip(out, axis=0 if axis is None else axis) if descending else out


def np_argsort(x, axis=-1, descending=False):
  w = _wide(x)
  if not descending: return np.argsort(w, axis=axis, kind="stable")
  if axis is None: w, axis = w.ravel(), 0
  n = w.shape[axis]
  return n - 1 - np.flip(np.argsort(np.flip(w, axis), axis=axis, kind="stable"), axis)


@st.composite
def sort_case(draw):
  dtype = draw(st.sampled_from(ALL))
  shape = draw(st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple))
  x = draw(with_ties(dtype, shape) if draw(st.booleans()) else arrays(dtype, shape))
  axis = draw(st.none() | st.integers(-len(shape), len(shape) - 1))
  return x, axis, draw(st.booleans())


@given(sort_case())
def test_sort(case):
  x, axis, desc = case
  check(lambda x: tnp.sort(x, axis=axis, descending=desc), lambda x: np_sort(x, axis, desc), x)


@given(sort_case())
def test_argsort(case):
  x, axis, desc = case
  check(lambda x: tnp.argsort(x, axis=axis, descending=desc), lambda x: np_argsort(x, axis, desc), x,
        want_dtype="int32")


@pytest.mark.parametrize("n", [2, 3, 5, 16, 17, 33, 100])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "bool", "bfloat16"])
def test_sort_lengths(n, dtype):
  rng = np.random.default_rng(n)
  x = rng.integers(-3, 4, n).astype(np_dtype(dtype)) if dtype != "bfloat16" else \
    rng.normal(size=n).astype(np.float32).astype(np_dtype(dtype))
  if dtype == "float32": x[rng.integers(0, n, max(n // 4, 1))] = np.nan
  check(tnp.sort, np_sort, x)
  check(tnp.argsort, np_argsort, x, want_dtype="int32")


def test_sort_examples():
  x = np.array([3.0, np.nan, 1.0, -np.inf, np.inf, np.nan, 1.0], np.float32)
  check(tnp.sort, np.sort, x)
  check(tnp.argsort, lambda x: np.argsort(x, kind="stable"), x, want_dtype="int32")
  np.testing.assert_array_equal(np.asarray(tnp.argsort(np.array([2, 1, 2, 0]), descending=True)), [0, 2, 1, 3])
  np.testing.assert_array_equal(np.asarray(tnp.sort(np.array([True, False, True]))), [False, True, True])
  assert tnp.sort(np.float32(1.0), axis=None).shape == (1,)
  assert tnp.argsort(np.zeros((3, 0), np.float32)).shape == (3, 0)
  assert tnp.sort(np.zeros((0, 4), np.float32), axis=0).shape == (0, 4)
  with pytest.raises(ValueError, match="axis"): tnp.sort(np.zeros(3, np.float32), axis=1)
  ui = np.array([4000000000, 1, 3000000000, 0], np.uint32)
  check(tnp.sort, np.sort, ui)
  check(tnp.argsort, np.argsort, ui, want_dtype="int32")


@given(st.data())
def test_searchsorted(data):
  dtype = data.draw(st.sampled_from(["int32", "float32", "uint8"]))
  a = np.sort(data.draw(with_ties(dtype, st.integers(1, 8))))
  v = data.draw(with_ties(dtype, st.tuples(st.integers(0, 4))))
  side = data.draw(st.sampled_from(["left", "right"]))
  check(lambda a, v: tnp.searchsorted(a, v, side=side), lambda a, v: np.searchsorted(a, v, side=side), a, v,
        want_dtype="int32")


def test_searchsorted_sorter():
  a = np.array([3, 1, 2], np.int32)
  s = np.argsort(a)
  check(lambda a: tnp.searchsorted(a, np.array([2, 4], np.int32), sorter=s),
        lambda a: np.searchsorted(a, np.array([2, 4]), sorter=s), a, want_dtype="int32")


def test_unique():
  x = np.array([3, 1, 3, 2, 1, 1], np.int32)
  assert_close(tnp.unique(x), np.unique(x))
  got = tnp.unique(x, return_index=True, return_inverse=True, return_counts=True)
  for g, w in zip(got, np.unique(x, return_index=True, return_inverse=True, return_counts=True), strict=True):
    assert_close(g, w.astype(g.dtype.np))
  assert_close(tnp.unique(x, size=5, fill_value=0), np.array([1, 2, 3, 0, 0], np.int32))
  assert_close(tnp.unique(x, size=2), np.array([1, 2], np.int32))
  with pytest.raises(TypeError, match="traced"): tracegrad.make_graph(tnp.unique)(tnp.asarray(x))


def test_argsort_traced_nan_and_ties():
  out = traced(tnp.argsort, tnp.asarray(np.array([2.0, np.nan, 1.0, 1.0, -1.0], np.float32)))
  np.testing.assert_array_equal(np.asarray(out), [4, 2, 3, 0, 1])
