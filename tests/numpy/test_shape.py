"""Shape functions against numpy, eagerly and traced, in value, shape and dtype; and their errors."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tracegrad
import tracegrad.numpy as tnp
from oracles import ALL, FLOATS, INTS, arrays, assert_close, check, np_dtype, shapes, traced


@st.composite
def arr(draw, min_dims=0, max_dims=3, min_side=1, max_side=4, dtypes=ALL):
  dtype = draw(st.sampled_from(dtypes))
  return draw(arrays(dtype, shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)))


def axis_of(draw, ndim: int) -> int: return draw(st.integers(-ndim, ndim - 1))


def check_many(tfn, nfn, *args):
  """As oracles.check for functions returning a list of arrays."""
  want = nfn(*args)
  for got in (tfn(*args), traced(tfn, *[tnp.asarray(a) for a in args])):
    assert len(got) == len(want)
    for g, w in zip(got, want): assert_close(g, np.asarray(w))


# ---- reshaping ----
@given(arr(), st.data())
def test_reshape(a, data):
  shape = list(data.draw(st.permutations(a.shape))) + [1] * data.draw(st.integers(0, 2))
  if shape and data.draw(st.booleans()): shape[data.draw(st.integers(0, len(shape) - 1))] = -1
  check(lambda x: tnp.reshape(x, shape), lambda x: np.reshape(x, shape), a)
  check(tnp.ravel, np.ravel, a)
  check(lambda x: x.reshape(*shape) if shape else x.reshape(()), lambda x: x.reshape(shape), a)


@given(arr(max_dims=3), st.data())
def test_expand_squeeze(a, data):
  k = data.draw(st.integers(1, 2))
  ax = tuple(data.draw(st.lists(st.integers(-(a.ndim + k), a.ndim + k - 1), min_size=k, max_size=k,
                                unique_by=lambda v: v % (a.ndim + k))))
  check(lambda x: tnp.expand_dims(x, ax), lambda x: np.expand_dims(x, ax), a)
  one = data.draw(st.integers(-a.ndim - 1, a.ndim))
  check(lambda x: tnp.expand_dims(x, one), lambda x: np.expand_dims(x, one), a)
  b = np.expand_dims(a, ax)
  check(tnp.squeeze, np.squeeze, b)
  check(lambda x: tnp.squeeze(x, ax), lambda x: np.squeeze(x, ax), b)


# ---- axis order ----
@given(arr(), st.data())
def test_transpose_family(a, data):
  nd = a.ndim
  perm = tuple(p - nd * data.draw(st.booleans()) for p in data.draw(st.permutations(range(nd))))
  check(tnp.transpose, np.transpose, a)
  check(lambda x: tnp.transpose(x, perm), lambda x: np.transpose(x, perm), a)
  check(lambda x: tnp.permute_dims(x, perm), lambda x: np.transpose(x, perm), a)
  if nd:
    i, j = axis_of(data.draw, nd), axis_of(data.draw, nd)
    check(lambda x: tnp.swapaxes(x, i, j), lambda x: np.swapaxes(x, i, j), a)
    check(lambda x: tnp.moveaxis(x, i, j), lambda x: np.moveaxis(x, i, j), a)
    k = data.draw(st.integers(1, nd))
    src = data.draw(st.lists(st.integers(0, nd - 1), min_size=k, max_size=k, unique=True))
    dst = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=k, max_size=k, unique_by=lambda v: v % nd))
    check(lambda x: tnp.moveaxis(x, src, dst), lambda x: np.moveaxis(x, src, dst), a)


# ---- broadcasting ----
@given(arr(max_dims=2), st.data())
def test_broadcast(a, data):
  extra = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
  target = extra + tuple(data.draw(st.integers(0, 3)) if n == 1 else n for n in a.shape)
  check(lambda x: tnp.broadcast_to(x, target), lambda x: np.broadcast_to(x, target), a)
  b = np.ones(target[-1:] if target else (), np.int8)
  check_many(lambda x, y: tnp.broadcast_arrays(x, y), lambda x, y: np.broadcast_arrays(x, y), a, b)
  assert tnp.broadcast_shapes(a.shape, b.shape, ()) == np.broadcast_shapes(a.shape, b.shape, ())


# ---- joining ----
@given(st.data())
def test_concatenate_promotes(data):
  nd = data.draw(st.integers(1, 3))
  base = data.draw(shapes(min_dims=nd, max_dims=nd, min_side=0, max_side=3))
  ax = axis_of(data.draw, nd)
  parts = []
  for _ in range(data.draw(st.integers(1, 3))):
    s = list(base)
    s[ax] = data.draw(st.integers(0, 3))
    parts.append(data.draw(arrays(data.draw(st.sampled_from(ALL)), tuple(s))))
  want_dt = str(tnp.result_type(*[p.dtype for p in parts]))
  check(lambda *xs: tnp.concatenate(list(xs), axis=ax), lambda *xs: np.concatenate(xs, axis=ax), *parts,
        want_dtype=want_dt)
  check(lambda *xs: tnp.concatenate(xs, axis=None), lambda *xs: np.concatenate(xs, axis=None), *parts,
        want_dtype=want_dt)
  check(lambda *xs: tnp.concat(list(xs), axis=ax), lambda *xs: np.concatenate(xs, axis=ax), *parts, want_dtype=want_dt)


def test_concatenate_python_scalars_stay_weak():
  out = tnp.concatenate([np.ones(2, np.int8), np.array([3, 4], np.int32)])
  assert out.dtype == tnp.int32
  with pytest.raises(TypeError, match="concatenate requires ndarray or scalar arguments, got list at position 1"):
    tnp.concatenate([np.ones(2, np.int8), [3, 4]])   # a list is not an array, as in JAX
  out = tnp.concatenate([np.ones(2, np.float16), tnp.asarray(np.ones(1, np.float16))])
  assert out.dtype == tnp.float16


@given(arr(max_dims=2, min_side=0), st.data())
def test_stacks(a, data):
  n = data.draw(st.integers(1, 3))
  xs = [a] + [data.draw(arrays(str(a.dtype) if a.dtype != np.bool_ else "bool", a.shape)) for _ in range(n - 1)]
  ax = axis_of(data.draw, a.ndim + 1)
  for tf, nf in ((lambda *v: tnp.stack(v, axis=ax), lambda *v: np.stack(v, axis=ax)), (tnp.hstack, np.hstack),
                 (tnp.vstack, np.vstack), (tnp.dstack, np.dstack), (tnp.column_stack, np.column_stack)):
    if tf in (tnp.hstack, tnp.vstack, tnp.dstack, tnp.column_stack):
      t, f = (lambda tf: lambda *v: tf(list(v)))(tf), (lambda nf: lambda *v: nf(list(v)))(nf)
    else: t, f = tf, nf
    check(t, f, *xs)
  assert [u.shape for u in tnp.unstack(tnp.asarray(np.stack(xs)), axis=0)] == [x.shape for x in xs]


# ---- splitting ----
@given(arr(min_dims=1, min_side=0, max_side=6), st.data())
def test_split(a, data):
  ax = axis_of(data.draw, a.ndim)
  n = a.shape[ax]
  divisors = [k for k in range(1, 7) if n % k == 0]
  k = data.draw(st.sampled_from(divisors))
  check_many(lambda x: tnp.split(x, k, axis=ax), lambda x: np.split(x, k, axis=ax), a)
  idx = data.draw(st.lists(st.integers(-n - 2, n + 2), max_size=3))
  check_many(lambda x: tnp.split(x, idx, axis=ax), lambda x: np.split(x, idx, axis=ax), a)
  m = data.draw(st.integers(1, 7))
  check_many(lambda x: tnp.array_split(x, m, axis=ax), lambda x: np.array_split(x, m, axis=ax), a)
  assert all(type(n) is int for p in tnp.array_split(a, m, axis=ax) for n in p.shape)
  check_many(lambda x: tnp.hsplit(x, idx), lambda x: np.hsplit(x, idx), a)
  if a.ndim >= 2: check_many(lambda x: tnp.vsplit(x, idx), lambda x: np.vsplit(x, idx), a)
  if a.ndim >= 3: check_many(lambda x: tnp.dsplit(x, idx), lambda x: np.dsplit(x, idx), a)


# ---- reordering ----
@given(arr(min_side=0), st.data())
def test_flip_roll(a, data):
  nd = a.ndim
  axes = tuple(data.draw(st.lists(st.integers(-nd, nd - 1), max_size=nd, unique_by=lambda v: v % nd))) if nd else ()
  check(tnp.flip, np.flip, a)
  check(lambda x: tnp.flip(x, axes), lambda x: np.flip(x, axes), a)
  if nd >= 1: check(tnp.flipud, np.flipud, a)
  if nd >= 2: check(tnp.fliplr, np.fliplr, a)
  shift = data.draw(st.integers(-7, 7))
  check(lambda x: tnp.roll(x, shift), lambda x: np.roll(x, shift), a)
  if nd:
    shifts = tuple(data.draw(st.integers(-7, 7)) for _ in axes)
    check(lambda x: tnp.roll(x, shifts, axes), lambda x: np.roll(x, shifts, axes), a)
    check(lambda x: tnp.roll(x, shift, axes), lambda x: np.roll(x, shift, axes), a)
    ax = axis_of(data.draw, nd)
    check(lambda x, s: tnp.roll(x, s, ax), lambda x, s: np.roll(x, int(s), ax), a, np.array(shift, np.int32))


@given(arr(min_dims=2, min_side=0), st.integers(-5, 5), st.data())
def test_rot90(a, k, data):
  i, j = data.draw(st.lists(st.integers(0, a.ndim - 1), min_size=2, max_size=2, unique=True))
  axes = (i - a.ndim * data.draw(st.booleans()), j)
  check(lambda x: tnp.rot90(x, k, axes), lambda x: np.rot90(x, k, axes), a)


# ---- repetition ----
@given(arr(min_side=0), st.data())
def test_tile_repeat(a, data):
  reps = tuple(data.draw(st.lists(st.integers(0, 3), max_size=4)))
  check(lambda x: tnp.tile(x, reps), lambda x: np.tile(x, reps), a)
  r = data.draw(st.integers(0, 3))
  check(lambda x: tnp.tile(x, r), lambda x: np.tile(x, r), a)
  check(lambda x: tnp.repeat(x, r), lambda x: np.repeat(x, r), a)
  if a.ndim:
    ax = axis_of(data.draw, a.ndim)
    check(lambda x: tnp.repeat(x, r, axis=ax), lambda x: np.repeat(x, r, axis=ax), a)
    per = data.draw(st.lists(st.integers(0, 3), min_size=a.shape[ax], max_size=a.shape[ax]))
    check(lambda x: tnp.repeat(x, per, axis=ax), lambda x: np.repeat(x, per, axis=ax), a)
    check(lambda x: tnp.repeat(x, np.array(per), axis=ax), lambda x: np.repeat(x, per, axis=ax), a)
  per = data.draw(st.lists(st.integers(0, 3), min_size=a.size, max_size=a.size))
  check(lambda x: tnp.repeat(x, per), lambda x: np.repeat(x, per), a)


def test_repeat_total_length():
  x = np.array([1, 2, 3], np.int32)
  assert_close(tnp.repeat(x, [1, 2, 0], total_repeat_length=5), np.array([1, 2, 2, 2, 2], np.int32))
  assert_close(tnp.repeat(x, 2, total_repeat_length=3), np.array([1, 1, 2], np.int32))


def test_repeat_many_runs_uses_gather():
  x = np.arange(50, dtype=np.float32)
  per = [i % 3 for i in range(50)]
  check(lambda v: tnp.repeat(v, per), lambda v: np.repeat(v, per), x)


# ---- padding ----
@st.composite
def pad_widths(draw, ndim, low=0, high=5):
  kind = draw(st.sampled_from(["int", "pair", "pairs"] if ndim else ["int", "pair"]))
  if kind == "int": return draw(st.integers(low, high))
  if kind == "pair": return tuple(draw(st.integers(low, high)) for _ in range(2))
  return tuple(tuple(draw(st.integers(low, high)) for _ in range(2)) for _ in range(ndim))


@given(arr(max_dims=3), st.data())
def test_pad_modes(a, data):
  pw = data.draw(pad_widths(a.ndim, high=6))
  for mode in ("constant", "edge", "reflect", "symmetric", "wrap"):
    check(lambda x: tnp.pad(x, pw, mode=mode), lambda x: np.pad(x, pw, mode=mode), a)


@given(arr(max_dims=3, min_side=0), st.data())
def test_pad_constant_values(a, data):
  pw = data.draw(pad_widths(a.ndim))
  hi = 1 if a.dtype == np.bool_ else 9
  lo = 0 if a.dtype == np.bool_ or a.dtype.kind == "u" else -9
  pair = st.tuples(st.integers(lo, hi), st.integers(lo, hi))
  opts = [st.integers(lo, hi), pair] + ([st.tuples(*[pair] * a.ndim)] if a.ndim else [])
  cv = data.draw(st.one_of(*opts))
  check(lambda x: tnp.pad(x, pw, constant_values=cv), lambda x: np.pad(x, pw, constant_values=cv), a)
  # a traced scalar constant
  c = np.array(cv if isinstance(cv, int) else 3, a.dtype)
  check(lambda x, v: tnp.pad(x, pw, constant_values=v), lambda x, v: np.pad(x, pw, constant_values=v), a, c)


def test_pad_negative_widths_raise_as_numpy():
  with raises(ValueError, "pad", "non-negative"): tnp.pad(tnp.ones((3, 3)), ((-1, 0), (0, 0)))


# ---- diagonals ----
@given(arr(min_dims=2, max_dims=4, min_side=0), st.integers(-5, 5), st.data())
def test_diagonal_trace(a, offset, data):
  i, j = data.draw(st.lists(st.integers(-a.ndim, a.ndim - 1), min_size=2, max_size=2, unique_by=lambda v: v % a.ndim))
  check(lambda x: tnp.diagonal(x, offset, i, j), lambda x: np.diagonal(x, offset, i, j), a)
  name = str(a.dtype)
  want = {"bool": "int32", "int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32"}.get(name, name)
  wide = a.astype(np.float64 if name in FLOATS else np.int64)
  check(lambda x: tnp.trace(x, offset, i, j), lambda x: np.trace(wide, offset, i, j), a, want_dtype=want)
  check(lambda x: tnp.trace(x, offset, i, j, dtype="float32"), lambda x: np.trace(wide, offset, i, j), a,
        want_dtype="float32")


@given(arr(min_dims=1, max_dims=2, min_side=0), st.integers(-4, 4))
def test_diag(a, k):
  check(lambda x: tnp.diag(x, k), lambda x: np.diag(x, k), a)
  check(lambda x: tnp.diagflat(x, k), lambda x: np.diagflat(x, k), a)


# ---- differences ----
@given(arr(min_dims=1, min_side=0, max_side=5, dtypes=["bool"] + INTS + ["float32"]), st.integers(0, 3), st.data())
def test_diff(a, n, data):
  ax = axis_of(data.draw, a.ndim)
  check(lambda x: tnp.diff(x, n, ax), lambda x: np.diff(x, n, ax), a)
  edge = np.ones(a.shape[:ax % a.ndim] + (2,) + a.shape[ax % a.ndim + 1:], a.dtype)
  check(lambda x, e: tnp.diff(x, n, ax, prepend=e, append=e), lambda x, e: np.diff(x, n, ax, prepend=e, append=e),
        a, edge)
  v = True if a.dtype == np.bool_ else 1
  check(lambda x: tnp.diff(x, n, ax, prepend=v), lambda x: np.diff(x, n, ax, prepend=np.array(v, a.dtype)), a)


def test_diff_small_ints_wrap():
  check(tnp.diff, np.diff, np.array([0, 200, 3], np.uint8))
  check(tnp.diff, np.diff, np.array([-128, 127], np.int8))
  check(tnp.diff, np.diff, np.array([1.5, 0.25, 3.0], np.float16))


# ---- at least k dimensions, shape queries ----
@given(arr(max_dims=4))
def test_atleast(a):
  for t, n in ((tnp.atleast_1d, np.atleast_1d), (tnp.atleast_2d, np.atleast_2d), (tnp.atleast_3d, np.atleast_3d)):
    check(t, n, a)
    check_many(lambda x: t(x, x), lambda x: n(x, x), a)
  assert tnp.shape(a) == a.shape and tnp.ndim(a) == a.ndim and tnp.size(a) == a.size


def test_accepts_scalars_and_numpy_arrays_and_rejects_lists_as_jax():
  assert_close(tnp.reshape(np.array([1, 2, 3, 4]), (2, 2)), np.array([[1, 2], [3, 4]], np.int32))
  assert_close(tnp.stack([1.0, 2.0]), np.array([1.0, 2.0], np.float32))   # a sequence of scalars
  assert_close(tnp.atleast_1d(3), np.array([3], np.int32))
  assert tnp.shape([[1, 2, 3]]) == (1, 3) and tnp.size(5) == 1 and tnp.size(np.ones((2, 3)), 1) == 3
  assert tnp.expand_dims(2.0, 0).weak_type  # a Python scalar stays weakly typed through movement
  assert_close(tnp.pad(np.array([1, 2]), 1, mode="edge"), np.array([1, 1, 2, 2], np.int32))
  for f in (lambda: tnp.reshape([1, 2], (2, 1)), lambda: tnp.pad([1, 2], 1), lambda: tnp.stack([[1.0], [2.0]]),
            lambda: tnp.sum([1.0, 2.0]), lambda: tnp.sin([1.0]), lambda: tnp.arange(2) + [1, 2]):
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments, got list"):
      f()


def test_bfloat16_float16_preserved():
  for d in ("bfloat16", "float16"):
    x = np.arange(6, dtype=np.float32).astype(np_dtype(d)).reshape(2, 3)
    check(lambda v: tnp.pad(tnp.roll(v, 1, 1), 1, mode="reflect"),
          lambda v: np.pad(np.roll(v, 1, 1), 1, mode="reflect"), x)


# ---- errors ----
def raises(exc, *words):
  """pytest.raises for `exc` whose message contains every word."""
  class Ctx:
    def __enter__(self):
      self.cm = pytest.raises(exc)
      self.info = self.cm.__enter__()
    def __exit__(self, *e):
      r = self.cm.__exit__(*e)
      for w in words: assert w in str(self.info.value), f"{w!r} not in {self.info.value}"
      return r
  return Ctx()


def test_errors():
  x = np.zeros((2, 3), np.float32)
  with raises(ValueError, "reshape", "(2, 3)", "(4, 2)"): tnp.reshape(x, (4, 2))
  with raises(ValueError, "reshape", "(4, -1)"): tnp.reshape(x, (4, -1))
  with raises(ValueError, "reshape"): tnp.reshape(x, (-1, -1))
  with raises(ValueError, "order"): tnp.reshape(x, (6,), order="F")
  with raises(TypeError, "reshape", "shape"): tnp.reshape(x, "ab")
  with raises(TypeError, "reshape", "shape"): tnp.reshape(x, (2.0, 3))
  with raises(ValueError, "transpose"): tnp.transpose(x, (0, 0))
  with raises(ValueError, "transpose"): tnp.transpose(x, (0,))
  with raises(ValueError, "swapaxes", "axis2", "2", "dimension 2"): tnp.swapaxes(x, 0, 2)
  with raises(ValueError, "moveaxis", "-3"): tnp.moveaxis(x, -3, 0)
  with raises(ValueError, "moveaxis"): tnp.moveaxis(x, (0, 1), (0,))
  with raises(ValueError, "expand_dims", "3"): tnp.expand_dims(x, 3)
  with raises(ValueError, "squeeze", "axis 1", "(2, 3)"): tnp.squeeze(x, 1)
  with raises(ValueError, "squeeze", "2"): tnp.squeeze(x[None], 2)
  with raises(TypeError, "squeeze", "axis"): tnp.squeeze(x, 1.0)
  with raises(ValueError, "broadcast_to", "(2, 3)", "(3, 3, 2)"): tnp.broadcast_to(x, (3, 3, 2))
  with raises(ValueError, "broadcast_to"): tnp.broadcast_to(x, (3,))
  with raises(ValueError, "broadcast_arrays"): tnp.broadcast_arrays(x, np.ones(4))
  with raises(ValueError, "concatenate", "(2, 3)", "(3, 4)"): tnp.concatenate([x, np.ones((3, 4))])
  with raises(ValueError, "concatenate", "axis 2", "dimension 2"): tnp.concatenate([x, x], axis=2)
  with raises(ValueError, "concatenate", "zero-dimensional"): tnp.concatenate([1, 2])
  with raises(ValueError, "concatenate"): tnp.concatenate([])
  with raises(TypeError, "concatenate", "arrays"): tnp.concatenate(5)
  with raises(ValueError, "stack", "(2, 3)", "(3, 2)"): tnp.stack([x, x.T])
  with raises(ValueError, "split", "equal division"): tnp.split(x, 2, axis=1)
  with raises(ValueError, "split"): tnp.split(x, 0)
  with raises(TypeError, "split", "indices_or_sections"): tnp.split(x, 1.5)
  with raises(ValueError, "array_split"): tnp.array_split(x, -1)
  with raises(ValueError, "vsplit"): tnp.vsplit(np.ones(4), 2)
  with raises(ValueError, "flip", "axis 2"): tnp.flip(x, 2)
  with raises(ValueError, "fliplr"): tnp.fliplr(np.ones(3))
  with raises(ValueError, "roll", "axis 5"): tnp.roll(x, 1, 5)
  with raises(ValueError, "roll"): tnp.roll(x, (1, 2, 3), (0, 1))
  with raises(TypeError, "roll", "shift"): tnp.roll(x, 1.5, 0)
  with raises(ValueError, "rot90"): tnp.rot90(x, 1, (0, 0))
  with raises(ValueError, "rot90"): tnp.rot90(np.ones(3))
  with raises(ValueError, "tile"): tnp.tile(x, -1)
  with raises(TypeError, "tile", "reps"): tnp.tile(x, 1.5)
  with raises(ValueError, "repeat"): tnp.repeat(x, [1, 2], axis=1)
  with raises(ValueError, "repeat"): tnp.repeat(x, -1)
  with raises(ValueError, "repeat", "axis"): tnp.repeat(x, 2, axis=2)
  with raises(ValueError, "pad", "mode"): tnp.pad(x, 1, mode="bogus")
  with raises(TypeError, "pad", "pad_width"): tnp.pad(x, 1.5)
  with raises(ValueError, "pad", "pad_width"): tnp.pad(x, ((1, 2), (3, 4), (5, 6)))
  with raises(ValueError, "pad", "non-negative"): tnp.pad(x, -1, mode="edge")
  with raises(ValueError, "pad", "empty"): tnp.pad(np.zeros((0, 2)), 1, mode="wrap")
  with raises(ValueError, "diagonal", "axis1", "axis2"): tnp.diagonal(x, 0, 1, 1)
  with raises(ValueError, "diagonal"): tnp.diagonal(np.ones(3))
  with raises(ValueError, "diag", "1-D or 2-D"): tnp.diag(np.ones((2, 2, 2)))
  with raises(ValueError, "diff"): tnp.diff(x, -1)
  with raises(ValueError, "diff"): tnp.diff(np.float32(1))
  with raises(ValueError, "diff", "axis"): tnp.diff(x, 1, axis=2)
  with raises(TypeError, "ravel"): tnp.ravel({"a": 1})


def test_traced_static_arguments_are_refused():
  x = np.arange(4, dtype=np.float32)
  with raises(TypeError, "repeat", "repeats", "static"):
    tracegrad.make_graph(lambda v, r: tnp.repeat(v, r))(x, np.array([1, 1, 1, 1], np.int32))
  with raises(TypeError, "split", "static"):
    tracegrad.make_graph(lambda v, r: tnp.split(v, r))(x, np.array([1], np.int32))
  with raises(TypeError, "reshape", "static"):
    tracegrad.make_graph(lambda v, r: tnp.reshape(v, r))(x, np.array([4], np.int32))
