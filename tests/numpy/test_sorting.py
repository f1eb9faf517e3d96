"""sort, argsort, searchsorted and unique against numpy, eagerly and traced: NaN last, stable ties, every dtype."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tracegrad
import tracegrad.numpy as tnp
from tracegrad.ir import toposort
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


def test_a_sorts_graph_is_one_loop_whatever_the_length():
  """The network is a scan over its steps, so the graph (and what is compiled) does not grow with the length: a
  thousand entries once took 40 s to schedule and compile as one kernel per step."""
  sizes = {len(toposort(list(tracegrad.make_graph(f)(np.zeros(n, dtype)).outputs)))
           for f, dtype in [(tnp.sort, np.float32), (tnp.sort, np.int32), (tnp.argsort, np.float32)]
           for n in (100, 65537)}
  assert len(sizes) == 3 and max(sizes) < 60, sizes
  x = np.random.default_rng(0).normal(size=(3, 5000)).astype(np.float32)
  check(lambda x: tnp.sort(x, axis=1), lambda x: np.sort(x, axis=1), x)


@pytest.mark.parametrize("n", [8, 9, 4096, 4097])
def test_network_steps_read_partners_turned_lanes_first_or_gathered(n):
  """Rows up to TURN_MAX entries turn lanes-first for the steps whose partners are near; longer ones gather them."""
  from tracegrad.lax.sorting import TURN_MAX
  assert TURN_MAX == 4096
  x = np.random.default_rng(n).integers(-50, 50, (3, n)).astype(np.int32)
  check(tnp.sort, np.sort, x)
  check(tnp.argsort, lambda x: np.argsort(x, kind="stable"), x, want_dtype="int32")


def test_sorting_differentiates_and_batches_as_jax():
  jax = pytest.importorskip("jax")
  from oracles import close_to_jax
  x = np.random.default_rng(1).normal(size=(3, 40)).astype(np.float32)
  x[0, 2], x[1, 3:6], x[2, 7] = np.nan, 0.5, -0.0
  w = np.arange(x.size, dtype=np.float32).reshape(x.shape)
  cases = [
    lambda m, lax, x: (m.sort(x, axis=1) * w).sum(),
    lambda m, lax, x: (m.sort(x, axis=0, descending=True) * w).sum(),
    lambda m, lax, x: (lax.sort((x, x * w), num_keys=1)[1] * w).sum(),
    lambda m, lax, x: (lax.top_k(m.nan_to_num(x), 20)[0] ** 2).sum(),
  ]
  for f in cases:
    mine = [tracegrad.grad(lambda x: f(tnp, tracegrad.lax, x))(x),
            tracegrad.jvp(lambda x: f(tnp, tracegrad.lax, x), (x,), (w,))[1]]
    theirs = [jax.grad(lambda x: f(jax.numpy, jax.lax, x))(x),
              jax.jvp(lambda x: f(jax.numpy, jax.lax, x), (x,), (w,))[1]]
    close_to_jax(mine, theirs)
  for f in (tnp.sort, tnp.argsort, lambda r: tracegrad.lax.sort_key_val(r, -r)):
    want = tracegrad.tree.map(lambda *rows: np.stack([np.asarray(r) for r in rows]), *[f(r) for r in x])
    for got, row in zip(tracegrad.tree.leaves(tracegrad.vmap(f)(x)), tracegrad.tree.leaves(want), strict=True):
      np.testing.assert_array_equal(np.asarray(got), row)


@given(st.data())
def test_searchsorted(data):
  dtype = data.draw(st.sampled_from(["int32", "float32", "uint8"]))
  a = np.sort(data.draw(with_ties(dtype, st.integers(1, 8))))
  v = data.draw(with_ties(dtype, st.tuples(st.integers(0, 4))))
  side = data.draw(st.sampled_from(["left", "right"]))
  method = data.draw(st.sampled_from(["scan", "compare_all"]))
  check(lambda a, v: tnp.searchsorted(a, v, side=side, method=method), lambda a, v: np.searchsorted(a, v, side=side),
        a, v, want_dtype="int32")


@pytest.mark.parametrize("n", [0, 1, 2, 7, 8, 9, 1000])
def test_searchsorted_by_binary_search_at_every_length(n):
  """The binary search takes a power of two at a time: lengths at and beside powers of two, values below, between,
  equal to and above the entries, NaN among both."""
  rng = np.random.default_rng(n)
  a = np.sort(np.concatenate([rng.integers(-5, 5, n - n // 4), np.full(n // 4, np.nan)])).astype(np.float32)
  v = np.concatenate([np.arange(-6.0, 6.0, 0.5), [np.nan, -np.inf, np.inf]]).astype(np.float32)
  for side in ("left", "right"):
    check(lambda a, v: tnp.searchsorted(a, v, side=side), lambda a, v: np.searchsorted(a, v, side=side), a, v,
          want_dtype="int32")
  with pytest.raises(ValueError, match="searchsorted: method must be one of"): tnp.searchsorted(a, v, method="bisect")


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
  with pytest.raises(TypeError, match="traced.*pass size="): tracegrad.make_graph(tnp.unique)(tnp.asarray(x))


def test_unique_with_size_runs_traced_as_jax():
  """size= fixes the result's length, so unique (and unique_all, _counts, _inverse, _values) run under jit and vmap:
  cut or padded with fill_value (default the smallest value), padded indices the first one's, padded counts 0; NaNs
  one value or (equal_nan=False, the Array API's) each its own; -0.0 and 0.0 one value. JAX's values and dtypes."""
  jax = pytest.importorskip("jax")
  rng = np.random.default_rng(3)
  x = rng.choice(SPECIAL, (3, 8)).astype(np.float32)
  parts = dict(return_index=True, return_inverse=True, return_counts=True)
  calls = [("unique", dict(size=5, **parts)), ("unique", dict(size=30, fill_value=1, equal_nan=False, **parts)),
           ("unique_all", dict(size=25)), ("unique_values", dict(size=2))]
  for name, kw in calls:
    for top, m in ((tracegrad, tnp), (jax, jax.numpy)):
      got = top.tree.leaves(top.jit(lambda x: getattr(m, name)(x, **kw))(x))
      if name == "unique": got += top.tree.leaves(top.vmap(lambda r: getattr(m, name)(r, **kw))(x))
      if top is tracegrad: mine = got
    theirs = got
    for a, b in zip(mine, theirs, strict=True):
      a, b = np.asarray(a), np.asarray(b)
      assert a.dtype == b.dtype and a.shape == b.shape, (name, kw, a, b)
      np.testing.assert_array_equal(a, b, err_msg=f"{name} {kw}")
  with pytest.raises(ValueError, match="unique: for an empty array with size=3, pass fill_value"):
    tnp.unique(np.zeros(0, np.float32), size=3)
  assert tnp.unique(np.zeros(0, np.float32), size=3, fill_value=2)[2] == 2
  with pytest.raises(ValueError, match="unique_values: size must be >= 0, got -1"): tnp.unique_values(x, size=-1)
  empty = tnp.unique(np.zeros(0, np.float32), size=0, return_counts=True)   # nothing to pad: no fill_value needed
  assert [(e.shape, e.dtype) for e in empty] == [((0,), tnp.float32), ((0,), tnp.int32)]
  ints = np.array([3, 1, 3, 2, 1, 1], np.uint8)
  counts = tracegrad.jit(lambda x: tnp.unique_counts(x, size=4, fill_value=0))(ints)
  np.testing.assert_array_equal(np.asarray(counts.values), [1, 2, 3, 0])
  np.testing.assert_array_equal(np.asarray(counts.counts), [3, 1, 2, 0])


def test_argsort_traced_nan_and_ties():
  out = traced(tnp.argsort, tnp.asarray(np.array([2.0, np.nan, 1.0, 1.0, -1.0], np.float32)))
  np.testing.assert_array_equal(np.asarray(out), [4, 2, 3, 0, 1])
