"""Indexing against numpy, eagerly and traced: x[key], x.at[key].op(v), take, take_along_axis, nonzero and errors."""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import tracegrad
import tracegrad.numpy as tnp
from oracles import ALL, FLOATS, INTS, arrays, assert_close, check, traced

NUMERIC = INTS + FLOATS


@st.composite
def index_exprs(draw, shape, masks=True, traced_arrays=True):
  """A random numpy index for `shape`: (build(arrays) -> key, index arrays passed as arguments).

  Keys mix ints, slices (any start/stop/step), None, one Ellipsis, integer arrays (broadcast together, some passed
  as arguments so they are traced) and boolean masks (concrete) and bool scalars.
  """
  batch = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)).copy()
  parts, args, left, ell = [], [], len(shape), False
  ax = 0
  for _ in range(draw(st.integers(0, len(shape) + 2))):
    kinds = ["none", "bool"] + (["ellipsis"] if not ell else [])
    if left: kinds += ["int", "slice", "slice", "array", "array"] + (["mask"] if masks else [])
    kind = draw(st.sampled_from(kinds))
    n = shape[ax] if left else 0
    if kind == "none": parts.append(("const", None))
    elif kind == "bool": parts.append(("const", draw(st.booleans())))
    elif kind == "ellipsis":
      ell = True
      parts.append(("const", Ellipsis))
      skip = draw(st.integers(0, left))
      ax, left = ax + skip, left - skip
    elif kind == "int":
      parts.append(("const", draw(st.integers(-n, n - 1))))
      ax, left = ax + 1, left - 1
    elif kind == "slice":
      b = st.none() | st.integers(-n - 2, n + 2)
      parts.append(("const", slice(draw(b), draw(b), draw(st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3])))))
      ax, left = ax + 1, left - 1
    elif kind == "array":
      ishape = tuple(d if draw(st.booleans()) else 1 for d in batch[draw(st.integers(0, len(batch))):])
      idx = np.asarray(draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(ishape, dtype=int)),
                                     max_size=int(np.prod(ishape, dtype=int)))), np.int32).reshape(ishape)
      if traced_arrays and draw(st.booleans()):
        parts.append(("arg", len(args)))
        args.append(idx)
      else:
        parts.append(("const", idx if draw(st.booleans()) else idx.tolist()))
      ax, left = ax + 1, left - 1
    else:
      k = draw(st.integers(1, min(2, left)))
      m = np.asarray(draw(st.lists(st.booleans(), min_size=int(np.prod(shape[ax:ax + k])),
                                   max_size=int(np.prod(shape[ax:ax + k]))))).reshape(shape[ax:ax + k])
      parts.append(("const", m))
      ax, left = ax + k, left - k
  if ell: parts += [("const", slice(None))] * left  # after an Ellipsis the indices must reach the last axis

  def build(arrs):
    return tuple(arrs[p] if kind == "arg" else p for kind, p in parts)
  return build, args


def _np_key(key):
  return tuple(np.asarray(k) if isinstance(k, (tracegrad.Array, list)) else k for k in key)


@given(st.data())
def test_getitem_random(data):
  dtype = data.draw(st.sampled_from(ALL))
  shape = data.draw(st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple))
  x = data.draw(arrays(dtype, shape))
  build, args = data.draw(index_exprs(shape))
  try:
    x[_np_key(build(args))]
  except IndexError:  # index arrays that do not broadcast (e.g. an all-False mask beside an array)
    with pytest.raises(IndexError): tnp.asarray(x)[build(args)]
    return
  check(lambda x, *ia: tnp.asarray(x)[build(ia)], lambda x, *ia: x[_np_key(build(ia))], x, *args)


@pytest.mark.parametrize("key", [
  (1,), (-1, 2), (slice(None, None, -1),), (Ellipsis, slice(3, 0, -2)), ([1, 0],), (slice(None), [0, 2], [1, 3]),
  (0, slice(None), [1, 2]), ([[0], [1]], None, [0, 1, 2]), (True,), (False,), (1, Ellipsis, [0, -1]),
  (slice(None), [0, 1, 2], None, [0, 1, 2]), (slice(None), [0, 1, 2], Ellipsis, [0, 1, 2]), ([],),
  (slice(None), [0, 2], True), (None, 1, None), (slice(10, -10, -1),), (slice(-100, 100, 3),), (Ellipsis,), (),
])
def test_getitem_cases(key):
  x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
  check(lambda x: tnp.asarray(x)[key], lambda x: x[key], x)


def test_getitem_index_placement_distinct_sizes():
  x = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5).astype(np.int32)
  for key in [(slice(None), 0, slice(None), [0, 1]), (slice(None), [0, 1, 2], None, [0, 1, 2]),
              (slice(None), slice(None), [0, 1, 2], Ellipsis, [0, 1, 2]), (slice(None), [[0], [1]], [0, 1, 2]),
              ([1, 0], slice(1, 3), 0), (slice(None), [0, 2, 1], True, 0), (np.array(1), slice(None), [3, 1])]:
    check(lambda x: tnp.asarray(x)[key], lambda x: x[key], x)


def test_getitem_mask_and_array_indices():
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  m = x > 4.5
  check(lambda x: tnp.asarray(x)[m], lambda x: x[m], x)
  check(lambda x: tnp.asarray(x)[tnp.asarray(m)], lambda x: x[m], x)
  check(lambda x: tnp.asarray(x)[[True, False, True]], lambda x: x[[True, False, True]], x)
  check(lambda x: tnp.asarray(x)[1, m[1]], lambda x: x[1, m[1]], x)
  check(lambda x, i: tnp.asarray(x)[i, 1:], lambda x, i: x[i, 1:], x, np.array([[2, 0], [1, -1]], np.int32))
  check(lambda x: tnp.asarray(x)[tnp.array([2, -3])], lambda x: x[np.array([2, -3])], x)


def test_getitem_keeps_weak_type():
  y = tnp.asarray(np.arange(3.0, dtype=np.float32))
  assert not y[1].weak_type
  w = tracegrad.Array(tnp.asarray(1.0).uop.broadcast((3,)), True)
  assert w[0].weak_type


def test_traced_indices_clamped_and_negative_wrapped():
  x = np.arange(5, dtype=np.float32)
  out = traced(lambda x, i: x[i], tnp.asarray(x), tnp.asarray(np.array([-1, -5, 7, -9], np.int32)))
  np.testing.assert_array_equal(np.asarray(out), [4, 0, 4, 0])
  out = traced(lambda x, i: x[[i, 1, i]], tnp.asarray(x), tnp.asarray(np.int32(3)))
  np.testing.assert_array_equal(np.asarray(out), [3, 1, 3])
  out = traced(lambda x, i: x[i], tnp.asarray(x), tnp.asarray(np.array([4, 0], np.uint32)))
  np.testing.assert_array_equal(np.asarray(out), [4, 0])


# ---- errors ----
def test_errors():
  x = tnp.asarray(np.zeros((2, 3), np.float32))
  with pytest.raises(IndexError, match=r"index 3 is out of bounds for axis 1 with size 3"): x[0, 3]
  with pytest.raises(IndexError, match=r"index -3 is out of bounds for axis 0 with size 2"): x[-3]
  with pytest.raises(IndexError, match=r"index 5 is out of bounds for axis 1 with size 3"): x[:, [0, 5]]
  with pytest.raises(IndexError, match=r"index 2 is out of bounds"): x[tnp.array([2])]
  with pytest.raises(IndexError, match="valid indices"): x[1.5]
  with pytest.raises(IndexError, match="valid indices"): x["a"]
  with pytest.raises(IndexError, match="valid indices"): x[np.array([1.0])]
  with pytest.raises(IndexError, match="too many indices"): x[0, 0, 0]
  with pytest.raises(IndexError, match="single ellipsis"): x[..., 0, ...]
  with pytest.raises(IndexError, match="boolean index"): x[np.array([True, False, True])]
  with pytest.raises(IndexError, match="out of bounds"): x.at[5].set(1.0)
  with pytest.raises(tracegrad.errors.NonConcreteBooleanIndexError, match="concrete"):   # an IndexError, as JAX's
    tracegrad.make_graph(lambda x, m: x[m])(x, tnp.asarray(np.ones((2, 3), bool)))
  with pytest.raises(IndexError, match="concrete"):
    tracegrad.make_graph(lambda x, m: x.at[m].set(0.0))(x, tnp.asarray(np.ones((2, 3), bool)))
  with pytest.raises(ValueError, match="broadcast"): x.at[0].set(np.ones(4, np.float32))


# ---- x.at[key] ----
_AT = {"add": np.add.at, "multiply": np.multiply.at, "min": np.minimum.at, "max": np.maximum.at}


def _np_set(x, key, v):
  y = x.copy()
  y[key] = v
  return y


def _np_at(op):
  def f(x, key, v):
    y = x.copy()
    _AT[op](y, key, np.broadcast_to(v, x[key].shape).astype(x.dtype))
    return y
  return f


@given(st.data())
def test_at_random(data):
  op = data.draw(st.sampled_from(["set", "add", "multiply", "min", "max"]))
  dtype = data.draw(st.sampled_from(ALL if op == "set" else NUMERIC))
  shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
  x = data.draw(arrays(dtype, shape, low=-3, high=3))
  build, args = data.draw(index_exprs(shape))
  nkey = _np_key(build(args))
  try:
    ishape = x[nkey].shape
  except IndexError:
    assume(False)
  if op == "set":  # with repeated positions which write wins is unspecified
    pos = np.arange(x.size).reshape(x.shape)[nkey]
    assume(len(np.unique(pos)) == pos.size)
  vshape = ishape[data.draw(st.integers(0, len(ishape))):]
  v = data.draw(arrays(dtype, vshape, low=-3, high=3))
  ref = _np_set if op == "set" else _np_at(op)
  check(lambda x, v, *ia: getattr(tnp.asarray(x).at[build(ia)], op)(v),
        lambda x, v, *ia: ref(x, _np_key(build(ia)), v), x, v, *args)


def test_at_cases():
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  check(lambda x: tnp.asarray(x).at[[0, 0, 2], 1].add(1.0), lambda x: _np_at("add")(x, ([0, 0, 2], 1), 1.0), x)
  check(lambda x: tnp.asarray(x).at[::-1, 1::2].set(-1.0),
        lambda x: _np_set(x, (slice(None, None, -1), slice(1, None, 2)), -1), x)
  m = x > 5
  check(lambda x: tnp.asarray(x).at[m].set(0.0), lambda x: _np_set(x, m, 0), x)
  check(lambda x: tnp.asarray(x).at[1].multiply(2), lambda x: _np_at("multiply")(x, 1, 2), x)
  check(lambda x: tnp.asarray(x).at[:, 0].divide(4.0), lambda x: np.concatenate([x[:, :1] / 4, x[:, 1:]], 1), x)
  check(lambda x: tnp.asarray(x).at[0].power(2.0), lambda x: np.concatenate([x[:1] ** 2, x[1:]], 0), x)
  check(lambda x: tnp.asarray(x).at[0].subtract(1.0), lambda x: np.concatenate([x[:1] - 1, x[1:]], 0), x)
  check(lambda x: tnp.asarray(x).at[1:, [3, 0]].get(), lambda x: x[1:, [3, 0]], x)
  check(lambda x: tnp.asarray(x).at[::-2].apply(tnp.sort),
        lambda x: _np_set(x, slice(None, None, -2), np.sort(x[::-2])), x)
  xi = np.arange(6, dtype=np.int32)
  check(lambda x: tnp.asarray(x).at[[1, 1]].set(np.float32(2.7)), lambda x: _np_set(x, [1, 1], 2), xi)
  s = np.float32(3.0)
  check(lambda x: tnp.asarray(x).at[()].set(5.0), lambda x: np.float32(5.0), s)
  check(lambda x: tnp.asarray(x).at[()].add(5.0), lambda x: x + np.float32(5.0), s)


def test_at_traced_out_of_bounds_dropped():
  x = tnp.asarray(np.zeros(4, np.float32))
  i = tnp.asarray(np.array([1, 9, -1, -7], np.int32))
  out = traced(lambda x, i: x.at[i].add(1.0), x, i)
  np.testing.assert_array_equal(np.asarray(out), [0, 1, 0, 1])
  out = traced(lambda x, i: x.at[i].set(5.0, mode="clip"), x, i)
  np.testing.assert_array_equal(np.asarray(out), [5, 5, 0, 5])
  out = traced(lambda x, i: x.at[i].get(mode="fill", fill_value=-2.0), x, i)
  np.testing.assert_array_equal(np.asarray(out), [0, -2, 0, -2])


# ---- take, take_along_axis, put_along_axis ----
@given(st.data())
def test_take_random(data):
  dtype = data.draw(st.sampled_from(ALL))
  shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
  x = data.draw(arrays(dtype, shape))
  axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
  n = x.size if axis is None else shape[axis]
  mode = data.draw(st.sampled_from([None, "wrap", "clip"]))
  lo, hi = (-n, n - 1) if mode is None else (-2 * n, 2 * n)
  idx = np.asarray(data.draw(st.lists(st.integers(lo, hi), min_size=0, max_size=5)), np.int32)
  if mode is None:
    check(lambda x: tnp.take(x, idx, axis=axis), lambda x: np.take(x, idx, axis=axis), x)
  else:
    check(lambda x, i: tnp.take(x, i, axis=axis, mode=mode), lambda x, i: np.take(x, i, axis=axis, mode=mode), x, idx)


def test_take_fill_and_errors():
  x = np.arange(4, dtype=np.float32)
  out = traced(lambda x, i: tnp.take(x, i), tnp.asarray(x), tnp.asarray(np.array([0, 4, -1], np.int32)))
  np.testing.assert_array_equal(np.asarray(out), [0, np.nan, 3])
  out = traced(lambda x, i: tnp.take(x, i, fill_value=-1.0), tnp.asarray(x), tnp.asarray(np.array([5, 1], np.int32)))
  np.testing.assert_array_equal(np.asarray(out), [-1, 1])
  with pytest.raises(IndexError, match="out of bounds"): tnp.take(tnp.asarray(x), [4])


@given(st.data())
def test_take_along_axis_random(data):
  dtype = data.draw(st.sampled_from(ALL))
  shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
  x = data.draw(arrays(dtype, shape))
  axis = data.draw(st.integers(-len(shape), len(shape) - 1))
  ishape = list(shape)
  ishape[axis] = data.draw(st.integers(0, 5))
  ishape = [d if i == axis % len(shape) or data.draw(st.booleans()) else 1 for i, d in enumerate(ishape)]
  idx = data.draw(arrays("int32", tuple(ishape), low=-shape[axis], high=shape[axis] - 1))
  check(lambda x, i: tnp.take_along_axis(x, i, axis=axis), lambda x, i: np.take_along_axis(x, i, axis=axis), x, idx)


def test_take_along_axis_argsort_and_put():
  x = np.array([[3, 1, 2], [0, 5, 4]], np.int32)
  check(lambda x: tnp.take_along_axis(x, tnp.argsort(x, axis=1), axis=1), lambda x: np.sort(x, axis=1), x)
  check(lambda x: tnp.take_along_axis(x, np.array([2, 0]), axis=None), lambda x: x.ravel()[[2, 0]], x)
  i = np.array([[0], [2]])

  def ref(x):
    y = x.copy()
    np.put_along_axis(y, i, 9, axis=1)
    return y
  check(lambda x: tnp.put_along_axis(x, i, 9, axis=1, inplace=False), ref, x)
  with pytest.raises(ValueError, match="inplace"): tnp.put_along_axis(tnp.asarray(x), i, 9, axis=1)


# ---- nonzero, argwhere, flatnonzero ----
@given(st.data())
def test_nonzero_family(data):
  dtype = data.draw(st.sampled_from(["bool", "int32", "float32"]))
  shape = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple))
  x = data.draw(arrays(dtype, shape, low=-1, high=1))
  got = tnp.nonzero(tnp.asarray(x))
  for g, w in zip(got, np.nonzero(x), strict=True): assert_close(g, w.astype(np.int32))
  assert_close(tnp.flatnonzero(tnp.asarray(x)), np.flatnonzero(x).astype(np.int32))
  assert_close(tnp.argwhere(tnp.asarray(x)), np.argwhere(x).astype(np.int32))
  size = data.draw(st.integers(0, 6))
  cols = [np.concatenate([c[:size], np.full(max(size - len(c), 0), -1)]).astype(np.int32) for c in np.nonzero(x)]
  for g, w in zip(traced(lambda x: tnp.nonzero(x, size=size, fill_value=-1), tnp.asarray(x)), cols, strict=True):
    assert_close(g, w)
  for g, w in zip(tnp.nonzero(tnp.asarray(x), size=size, fill_value=-1), cols, strict=True): assert_close(g, w)
  assert_close(traced(lambda x: tnp.argwhere(x, size=size, fill_value=-1), tnp.asarray(x)),
               np.stack(cols, 1).reshape(size, len(shape)))
  flat = np.flatnonzero(x)
  assert_close(traced(lambda x: tnp.flatnonzero(x, size=size), tnp.asarray(x)),
               np.concatenate([flat[:size], np.zeros(max(size - len(flat), 0))]).astype(np.int32))


def test_nonzero_with_size_places_elements_by_a_running_count():
  """Traced, each nonzero element's place is a running count of those before it (no sort: 1e5 elements took 37 ms
  as an argsort); the places past size are dropped."""
  x = np.random.default_rng(0).normal(size=(200, 500)).astype(np.float32)
  f = lambda x: tnp.nonzero(x > 1.0, size=20000, fill_value=-1)
  ops = {u.op for u in tracegrad.ir.toposort(list(tracegrad.make_graph(f)(x).outputs))}
  assert tracegrad.ir.Ops.SCAN not in ops and tracegrad.ir.Ops.SCATTER in ops
  for g, w in zip(tracegrad.jit(f)(x), np.nonzero(x > 1.0), strict=True):
    w = np.concatenate([w[:20000], np.full(max(20000 - len(w), 0), -1)])
    np.testing.assert_array_equal(np.asarray(g), w)


def test_nonzero_traced_without_size():
  with pytest.raises(TypeError, match="size"): tracegrad.make_graph(tnp.nonzero)(tnp.ones(3))


@pytest.mark.parametrize("key", [(1, 7), (-3, 2), (1, -7), 7, (5, slice(None)), (0, slice(1, 3))])
@pytest.mark.parametrize("mode", ["fill", "clip"])
def test_static_out_of_range_ints_read_as_the_mode_says_as_in_jax(key, mode):
  jnp = pytest.importorskip("jax.numpy")
  x = np.arange(10.0, dtype=np.float32).reshape(2, 5)
  got = tnp.asarray(x).at[key].get(mode=mode, fill_value=-1.0)
  want = jnp.asarray(x).at[key].get(mode=mode, fill_value=-1.0)
  assert got.shape == want.shape and got.dtype == tnp.float32
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  if key != (0, slice(1, 3)):
    with pytest.raises(IndexError, match="out of bounds"):   # plain indexing keeps numpy's error
      tnp.asarray(x)[key]
