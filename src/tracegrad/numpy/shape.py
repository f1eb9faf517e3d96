"""Shape manipulation of tracegrad.numpy (as jax.numpy), built from the movement primitives.

Every function here is RESHAPE, BROADCAST, PERMUTE, PAD, SLICE, FLIP and CONCAT of its input (plus IOTA, GATHER,
CMPNE/SUB and one REDUCE_SUM where a function needs them); arguments that decide a shape must be static.
"""
from __future__ import annotations

import math
import operator
import numpy as np

from ..array import Array
from ..ir import Ops, UOp, broadcast_shapes as _bshapes, dtypes
from ..ir.dtypes import DType
from ..lax.ops import pad_constant
from .core import arraylike, normalize_axis, promote, sum_dtype

__all__ = ["reshape", "ravel", "transpose", "permute_dims", "swapaxes", "moveaxis", "expand_dims", "squeeze",
           "broadcast_to", "broadcast_arrays", "broadcast_shapes", "meshgrid", "concatenate", "concat", "stack", "hstack", "vstack",
           "dstack", "column_stack", "unstack", "split", "array_split", "hsplit", "vsplit", "dsplit", "flip", "fliplr",
           "flipud", "roll", "rot90", "tile", "repeat", "pad", "diagonal", "diag", "diagflat", "trace", "diff",
           "atleast_1d", "atleast_2d", "atleast_3d", "shape", "ndim", "size"]


# ---- helpers ----
def _w(x: Array, u: UOp) -> Array: return Array(u, x.weak_type)


def _static(v, fn: str, name: str):
  """A concrete Array or numpy array as a Python value; a traced Array is refused."""
  if isinstance(v, Array):
    if v.is_traced:
      raise TypeError(f"{fn}: {name} must be static (a Python int or sequence of ints), got a traced value "
                      f"{v.aval_str()}; it decides the result's shape, so it must be known when tracing")
    return v.tolist()
  if isinstance(v, np.ndarray): return v.tolist()
  return v


def _int(v, fn: str, name: str) -> int:
  v = _static(v, fn, name)
  if isinstance(v, bool) or isinstance(v, float):
    raise TypeError(f"{fn}: {name} must be an integer, got {type(v).__name__} {v!r}")
  try:
    return operator.index(v)
  except TypeError:
    raise TypeError(f"{fn}: {name} must be an integer, got {type(v).__name__}") from None


def _ints(v, fn: str, name: str) -> tuple[int, ...]:
  """An int or a sequence of ints as a tuple of ints."""
  v = _static(v, fn, name)
  if isinstance(v, (list, tuple)): return tuple(_int(e, fn, name) for e in v)
  return (_int(v, fn, name),)


def _axis(axis, ndim: int, fn: str, name: str = "axis") -> int:
  return normalize_axis(_int(axis, fn, name), ndim, fn, name)


def _axes(axis, ndim: int, fn: str, name: str = "axis") -> tuple[int, ...]:
  """None -> every axis; an int or sequence -> the distinct normalized axes, in the order given."""
  if axis is None: return tuple(range(ndim))
  out = tuple(normalize_axis(a, ndim, fn, name) for a in _ints(axis, fn, name))
  if len(set(out)) != len(out): raise ValueError(f"{fn}: repeated {name} in {axis}")
  return out


def _slice_axis(x: Array, axis: int, start: int, stop: int, step: int = 1) -> Array:
  arg = tuple((start, stop, step) if i == axis else (0, n, 1) for i, n in enumerate(x.shape))
  return _w(x, x.uop.slice(arg))


def _take_static(x: Array, ax: int, idx) -> Array:
  """x[..., idx, ...] along `ax` for a static index list, as slices of runs (step 1, -1 or 0) joined by CONCAT."""
  idx = [int(i) for i in idx]
  runs, i = [], 0
  while i < len(idx):
    j, step = i + 1, (idx[i + 1] - idx[i] if i + 1 < len(idx) else 1)
    if step not in (-1, 0, 1): step = 1
    while j < len(idx) and idx[j] - idx[j - 1] == step: j += 1
    runs.append((idx[i], step, j - i))
    i = j
  if len(runs) > 32: return _gather_axis(x, ax, UOp.buffer(np.asarray(idx, dtype=np.int32)))
  parts = []
  for start, step, k in runs:
    if step == 1: parts.append(_slice_axis(x, ax, start, start + k))
    elif step == -1: parts.append(_w(x, _slice_axis(x, ax, start - k + 1, start + 1).uop.flip((ax,))))
    else:
      one = _slice_axis(x, ax, start, start + 1)
      parts.append(_w(x, one.uop.broadcast(x.shape[:ax] + (k,) + x.shape[ax + 1:])))
  if not parts: return _slice_axis(x, ax, 0, 0)
  return _w(x, UOp.concat([p.uop for p in parts], ax))


def _gather_axis(x: Array, ax: int, idx: UOp) -> Array:
  """x taken along `ax` at the int32 indices of the 1-D `idx` (GATHER over the axis moved to the front)."""
  perm = (ax,) + tuple(i for i in range(x.ndim) if i != ax)
  g = x.uop.permute(perm).gather(idx.reshape(idx.shape + (1,)))
  inv = tuple(range(1, ax + 1)) + (0,) + tuple(range(ax + 1, x.ndim))
  return _w(x, g.permute(inv))


def _arrays(arrays, fn: str) -> list[Array]:
  """A sequence of array-likes (or an Array, split along its first axis) as a non-empty list of Arrays."""
  if isinstance(arrays, (Array, np.ndarray)):
    a = arraylike(arrays, fn)
    if a.ndim == 0: raise ValueError(f"{fn}: a 0-d array is not a sequence of arrays")
    return [_w(a, _slice_axis(a, 0, i, i + 1).uop.reshape(a.shape[1:])) for i in range(a.shape[0])]
  if not isinstance(arrays, (list, tuple)):
    raise TypeError(f"{fn}: arrays must be a sequence of arrays, got {type(arrays).__name__}")
  if not arrays: raise ValueError(f"{fn}: need at least one array")
  return [arraylike(a, fn, i) for i, a in enumerate(arrays)]


def _dtype_arg(dtype, fn: str) -> DType | None:
  return None if dtype is None else dtypes.canonicalize(dtypes.as_dtype(dtype, fn))


# ---- shape and size ----
def shape(a) -> tuple[int, ...]:
  """>>> tnp.shape([[1, 2, 3]])
  (1, 3)
  """
  return a.shape if isinstance(a, Array) else np.shape(a)


def ndim(a) -> int:
  """>>> tnp.ndim(tnp.ones((2, 3)))
  2
  """
  return len(shape(a))


def size(a, axis=None) -> int:
  """Number of elements (along `axis` if given).

  >>> tnp.size(tnp.ones((2, 3)))
  6
  """
  s = shape(a)
  if axis is None: return math.prod(s)
  return math.prod(s[i] for i in _axes(axis, len(s), "size"))


# ---- reshaping ----
def reshape(a, shape=None, order: str = "C", *, newshape=None, copy=None) -> Array:
  """`a` with a new shape of the same size; one entry may be -1.

  >>> tnp.reshape(tnp.arange(6), (2, -1)).shape
  (2, 3)
  """
  x = arraylike(a, "reshape")
  if shape is None: shape = newshape
  if shape is None: raise TypeError("reshape: missing the shape argument")
  if order != "C": raise ValueError(f"reshape: only order='C' is supported, got order={order!r}")
  shape = _ints(shape, "reshape", "shape")
  bad = ValueError(f"reshape: cannot reshape an array of shape {x.shape} ({x.size} elements) into shape {shape}")
  if shape.count(-1) > 1: raise ValueError(f"reshape: can only specify one unknown dimension (-1), got shape {shape}")
  if any(n < -1 for n in shape): raise ValueError(f"reshape: negative dimensions are not allowed, got shape {shape}")
  if -1 in shape:
    known = math.prod(n for n in shape if n != -1)
    if known == 0 or x.size % known: raise bad
    shape = tuple(x.size // known if n == -1 else n for n in shape)
  if math.prod(shape) != x.size: raise bad
  return _w(x, x.uop.reshape(shape))


def ravel(a, order: str = "C") -> Array:
  """`a` flattened to one dimension.

  >>> tnp.ravel(tnp.ones((2, 3))).shape
  (6,)
  """
  if order != "C": raise ValueError(f"ravel: only order='C' is supported, got order={order!r}")
  return reshape(arraylike(a, "ravel"), (-1,))


def expand_dims(a, axis) -> Array:
  """`a` with new axes of size 1 inserted at `axis` (an int or a tuple, positions in the result).

  >>> tnp.expand_dims(tnp.ones((2, 3)), (0, -1)).shape
  (1, 2, 3, 1)
  """
  x = arraylike(a, "expand_dims")
  axes = _ints(axis, "expand_dims", "axis")
  nd = x.ndim + len(axes)
  axes = set(_axes(axes, nd, "expand_dims"))
  it = iter(x.shape)
  return _w(x, x.uop.reshape(tuple(1 if i in axes else next(it) for i in range(nd))))


def squeeze(a, axis=None) -> Array:
  """`a` without its axes of size 1 (or only those in `axis`, which must have size 1).

  >>> tnp.squeeze(tnp.ones((1, 3, 1))).shape
  (3,)
  """
  x = arraylike(a, "squeeze")
  if axis is None: axes = tuple(i for i, n in enumerate(x.shape) if n == 1)
  else: axes = _axes(axis, x.ndim, "squeeze")
  for i in axes:
    if x.shape[i] != 1:
      raise ValueError(f"squeeze: cannot squeeze axis {i} of an array of shape {x.shape}: its size is {x.shape[i]}, "
                       f"not 1")
  return _w(x, x.uop.reshape(tuple(n for i, n in enumerate(x.shape) if i not in axes)))


# ---- axis order ----
def transpose(a, axes=None) -> Array:
  """`a` with its axes permuted (reversed when `axes` is None).

  >>> tnp.transpose(tnp.ones((2, 3, 4)), (1, 0, 2)).shape
  (3, 2, 4)
  """
  x = arraylike(a, "transpose")
  if axes is None: return _w(x, x.uop.permute(tuple(range(x.ndim))[::-1]))
  given = _ints(axes, "transpose", "axes")
  if len(given) != x.ndim:
    raise ValueError(f"transpose: axes {given} don't match an array of shape {x.shape} ({x.ndim} axes)")
  perm = tuple(normalize_axis(ax, x.ndim, "transpose", "axes") for ax in given)
  if sorted(perm) != list(range(x.ndim)):
    raise ValueError(f"transpose: axes {given} are not a permutation of the axes of an array of shape {x.shape}")
  return _w(x, x.uop.permute(perm))


def permute_dims(a, /, axes) -> Array:
  """The Array API's transpose: `axes` is required.

  >>> tnp.permute_dims(tnp.ones((2, 3)), (1, 0)).shape
  (3, 2)
  """
  return transpose(arraylike(a, "permute_dims"), axes)


def swapaxes(a, axis1: int, axis2: int) -> Array:
  """`a` with two axes exchanged.

  >>> tnp.swapaxes(tnp.ones((2, 3, 4)), 0, -1).shape
  (4, 3, 2)
  """
  x = arraylike(a, "swapaxes")
  i, j = _axis(axis1, x.ndim, "swapaxes", "axis1"), _axis(axis2, x.ndim, "swapaxes", "axis2")
  perm = list(range(x.ndim))
  perm[i], perm[j] = perm[j], perm[i]
  return _w(x, x.uop.permute(perm))


def moveaxis(a, source, destination) -> Array:
  """`a` with the axes `source` moved to positions `destination` (ints or sequences), the others in order.

  >>> tnp.moveaxis(tnp.ones((2, 3, 4)), 0, -1).shape
  (3, 4, 2)
  """
  x = arraylike(a, "moveaxis")
  src, dst = _ints(source, "moveaxis", "source"), _ints(destination, "moveaxis", "destination")
  if len(src) != len(dst):
    raise ValueError(f"moveaxis: source {source} and destination {destination} must have the same number of elements")
  src, dst = _axes(src, x.ndim, "moveaxis", "source"), _axes(dst, x.ndim, "moveaxis", "destination")
  order = [n for n in range(x.ndim) if n not in src]
  for d, s in sorted(zip(dst, src)): order.insert(d, s)
  return _w(x, x.uop.permute(order))


# ---- broadcasting ----
def broadcast_shapes(*shapes) -> tuple[int, ...]:
  """The shape that arrays of `shapes` broadcast to.

  >>> tnp.broadcast_shapes((2, 1), (3,))
  (2, 3)
  """
  return _bshapes(*(_ints(s, "broadcast_shapes", "shape") for s in shapes), fn="broadcast_shapes")


def broadcast_to(a, shape) -> Array:
  """`a` broadcast to `shape` by numpy's rules.

  >>> tnp.broadcast_to(tnp.arange(3), (2, 3)).shape
  (2, 3)
  """
  x = arraylike(a, "broadcast_to")
  shape = _ints(shape, "broadcast_to", "shape")
  if any(n < 0 for n in shape): raise ValueError(f"broadcast_to: negative dimensions are not allowed, got {shape}")
  if len(shape) < x.ndim or any(s != 1 and s != t for s, t in zip(x.shape[::-1], shape[::-1])):
    raise ValueError(f"broadcast_to: cannot broadcast an array of shape {x.shape} to shape {shape}")
  return _w(x, x.uop.broadcast(shape))


def broadcast_arrays(*args) -> list[Array]:
  """The arguments broadcast to their common shape.

  >>> [x.shape for x in tnp.broadcast_arrays(tnp.ones((2, 1)), tnp.ones(3))]
  [(2, 3), (2, 3)]
  """
  xs = [arraylike(a, "broadcast_arrays") for a in args]
  s = _bshapes(*(x.shape for x in xs), fn="broadcast_arrays")
  return [_w(x, x.uop.broadcast(s)) for x in xs]


def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list[Array]:
  """Coordinate arrays of the grid the 1-D arrays xi span: with indexing 'xy' the first two axes are swapped (as
  for images), with 'ij' axis k runs along xi[k]; sparse=True leaves the other axes of each of length 1.

  >>> [g.shape for g in tnp.meshgrid(tnp.ones(2), tnp.ones(3))]
  [(3, 2), (3, 2)]
  """
  if indexing not in ("xy", "ij"): raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
  xs = [arraylike(x, "meshgrid") for x in xi]
  for k, x in enumerate(xs):
    if x.ndim != 1: raise ValueError(f"meshgrid: every input must be 1-D, argument {k} has shape {x.shape}")
  shape = [x.shape[0] for x in xs]
  axes = list(range(len(xs)))
  if indexing == "xy" and len(xs) > 1:
    shape[0], shape[1], axes[0], axes[1] = shape[1], shape[0], 1, 0
  out = []
  for x, ax in zip(xs, axes):
    u = x.uop.reshape(tuple(n if i == ax else 1 for i, n in enumerate(shape)))
    out.append(_w(x, u if sparse else u.broadcast(tuple(shape))))
  return out


# ---- joining ----
def concatenate(arrays, axis: int | None = 0, dtype=None) -> Array:
  """The arrays joined along an existing axis (flattened first when `axis` is None), dtypes promoted as JAX.

  >>> tnp.concatenate([tnp.ones(2), tnp.zeros(1)])
  Array([1., 1., 0.], dtype=float32)
  """
  xs = _arrays(arrays, "concatenate")
  xs, dt, weak = promote("concatenate", *xs)
  d = _dtype_arg(dtype, "concatenate")
  if d is not None: xs, weak = [Array(x.uop.cast(d)) for x in xs], False
  if axis is None: xs, axis = [ravel(x) for x in xs], 0
  if any(x.ndim == 0 for x in xs): raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
  ax = _axis(axis, xs[0].ndim, "concatenate")
  for x in xs:
    if x.ndim != xs[0].ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if i != ax):
      raise ValueError(f"concatenate: all input shapes must match except on axis {ax}, got "
                       f"{', '.join(str(y.shape) for y in xs)}")
  return Array(UOp.concat([x.uop for x in xs], ax), weak)


def concat(arrays, /, *, axis: int | None = 0) -> Array:
  """The Array API's concatenate.

  >>> tnp.concat([tnp.ones((1, 2)), tnp.ones((1, 2))], axis=1).shape
  (1, 4)
  """
  return concatenate(arrays, axis)


def stack(arrays, axis: int = 0, out=None, dtype=None) -> Array:
  """The arrays (all of one shape) joined along a new axis.

  >>> tnp.stack([tnp.ones(2), tnp.zeros(2)], axis=1).shape
  (2, 2)
  """
  if out is not None: raise NotImplementedError("stack: the 'out' argument is not supported (arrays are immutable)")
  xs = _arrays(arrays, "stack")
  if len({x.shape for x in xs}) != 1:
    raise ValueError(f"stack: all input arrays must have the same shape, got {', '.join(str(x.shape) for x in xs)}")
  ax = _axis(axis, xs[0].ndim + 1, "stack")
  return concatenate([expand_dims(x, ax) for x in xs], ax, dtype)


def hstack(tup, dtype=None) -> Array:
  """The arrays joined along the second axis (the first for 1-D arrays).

  >>> tnp.hstack([tnp.ones(2), tnp.zeros(1)]).shape
  (3,)
  """
  xs = [atleast_1d(x) for x in _arrays(tup, "hstack")]
  return concatenate(xs, 0 if xs[0].ndim == 1 else 1, dtype)


def vstack(tup, dtype=None) -> Array:
  """The arrays (1-D ones as rows) joined along the first axis.

  >>> tnp.vstack([tnp.ones(2), tnp.zeros(2)]).shape
  (2, 2)
  """
  return concatenate([atleast_2d(x) for x in _arrays(tup, "vstack")], 0, dtype)


def dstack(tup, dtype=None) -> Array:
  """The arrays (made at least 3-D) joined along the third axis.

  >>> tnp.dstack([tnp.ones(2), tnp.zeros(2)]).shape
  (1, 2, 2)
  """
  return concatenate([atleast_3d(x) for x in _arrays(tup, "dstack")], 2, dtype)


def column_stack(tup) -> Array:
  """The arrays joined as columns (1-D arrays become columns of a 2-D array).

  >>> tnp.column_stack([tnp.ones(2), tnp.zeros(2)]).shape
  (2, 2)
  """
  xs = [x if x.ndim >= 2 else reshape(x, (-1, 1)) for x in _arrays(tup, "column_stack")]
  return concatenate(xs, 1)


def unstack(x, /, *, axis: int = 0) -> tuple[Array, ...]:
  """The slices of `x` along `axis`, as a tuple.

  >>> len(tnp.unstack(tnp.ones((3, 2))))
  3
  """
  x = arraylike(x, "unstack")
  if x.ndim == 0: raise ValueError("unstack: the input must have at least one dimension")
  ax = _axis(axis, x.ndim, "unstack")
  rest = x.shape[:ax] + x.shape[ax + 1:]
  return tuple(_w(x, _slice_axis(x, ax, i, i + 1).uop.reshape(rest)) for i in range(x.shape[ax]))


# ---- splitting ----
def _split(fn: str, ary, indices_or_sections, axis, equal: bool) -> list[Array]:
  x = arraylike(ary, fn)
  if x.ndim == 0: raise ValueError(f"{fn}: cannot split a 0-d array")
  ax = _axis(axis, x.ndim, fn)
  n = x.shape[ax]
  ios = _static(indices_or_sections, fn, "indices_or_sections")
  if isinstance(ios, (list, tuple)):
    cuts = []
    for c in ios:
      c = _int(c, fn, "indices_or_sections")
      cuts.append(min(max(c + n if c < 0 else c, 0), n))
    bounds = [0] + cuts + [n]
  else:
    k = _int(ios, fn, "indices_or_sections")
    if k <= 0: raise ValueError(f"{fn}: number of sections must be larger than 0, got {k}")
    if equal and n % k:
      raise ValueError(f"{fn}: array split does not result in an equal division: an axis of size {n} into {k} "
                       f"sections (use array_split for unequal sections)")
    each, extra = divmod(n, k)
    sizes = [each + 1] * extra + [each] * (k - extra)
    bounds = [0] + [int(b) for b in np.cumsum(sizes)]
  return [_slice_axis(x, ax, lo, max(lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]


def split(ary, indices_or_sections, axis: int = 0) -> list[Array]:
  """`ary` split into equal sections (an int) or at the given indices along `axis`.

  >>> [p.shape for p in tnp.split(tnp.arange(6), [2, 5])]
  [(2,), (3,), (1,)]
  """
  return _split("split", ary, indices_or_sections, axis, True)


def array_split(ary, indices_or_sections, axis: int = 0) -> list[Array]:
  """As split, but an int need not divide the axis: the first sections get one element more.

  >>> [p.shape for p in tnp.array_split(tnp.arange(5), 3)]
  [(2,), (2,), (1,)]
  """
  return _split("array_split", ary, indices_or_sections, axis, False)


def hsplit(ary, indices_or_sections) -> list[Array]:
  """split along the second axis (the first for 1-D arrays).

  >>> len(tnp.hsplit(tnp.ones((2, 4)), 2))
  2
  """
  x = arraylike(ary, "hsplit")
  if x.ndim == 0: raise ValueError("hsplit: only works on arrays of 1 or more dimensions")
  return _split("hsplit", x, indices_or_sections, 1 if x.ndim > 1 else 0, True)


def vsplit(ary, indices_or_sections) -> list[Array]:
  """split along the first axis of an array of 2 or more dimensions.

  >>> len(tnp.vsplit(tnp.ones((4, 2)), 2))
  2
  """
  x = arraylike(ary, "vsplit")
  if x.ndim < 2: raise ValueError(f"vsplit: only works on arrays of 2 or more dimensions, got shape {x.shape}")
  return _split("vsplit", x, indices_or_sections, 0, True)


def dsplit(ary, indices_or_sections) -> list[Array]:
  """split along the third axis of an array of 3 or more dimensions.

  >>> len(tnp.dsplit(tnp.ones((1, 1, 4)), 2))
  2
  """
  x = arraylike(ary, "dsplit")
  if x.ndim < 3: raise ValueError(f"dsplit: only works on arrays of 3 or more dimensions, got shape {x.shape}")
  return _split("dsplit", x, indices_or_sections, 2, True)


# ---- reordering ----
def flip(m, axis=None) -> Array:
  """`m` with the order of elements reversed along `axis` (every axis when None).

  >>> tnp.flip(tnp.arange(3))
  Array([2, 1, 0], dtype=int32)
  """
  x = arraylike(m, "flip")
  return _w(x, x.uop.flip(tuple(sorted(_axes(axis, x.ndim, "flip")))))


def fliplr(m) -> Array:
  """`m` flipped along its second axis.

  >>> tnp.fliplr(tnp.array([[1, 2]]))
  Array([[2, 1]], dtype=int32)
  """
  x = arraylike(m, "fliplr")
  if x.ndim < 2: raise ValueError(f"fliplr: the input must have at least 2 dimensions, got shape {x.shape}")
  return flip(x, 1)


def flipud(m) -> Array:
  """`m` flipped along its first axis.

  >>> tnp.flipud(tnp.array([1, 2]))
  Array([2, 1], dtype=int32)
  """
  x = arraylike(m, "flipud")
  if x.ndim < 1: raise ValueError("flipud: the input must have at least 1 dimension, got a 0-d array")
  return flip(x, 0)


def _roll_traced(x: Array, s: Array, ax: int) -> Array:
  """x rolled by a traced scalar shift along `ax`: a GATHER at (i - s) mod n."""
  n = x.shape[ax]
  s = s.uop
  if s.dtype.is_bool or not s.dtype.is_int: raise TypeError(f"roll: shift must be an integer, got {s.dtype}")
  s = s.cast(dtypes.int32).reshape(()).broadcast((n,))
  nn = UOp.const(dtypes.int32, n, (n,))
  i = UOp.iota((n,), 0, dtypes.int32) - s
  return _gather_axis(x, ax, i.alu(Ops.MOD, nn).alu(Ops.ADD, nn).alu(Ops.MOD, nn))


def roll(a, shift, axis=None) -> Array:
  """`a` with elements shifted cyclically by `shift` along `axis` (the flattened array when None).

  >>> tnp.roll(tnp.arange(4), 1)
  Array([3, 0, 1, 2], dtype=int32)
  """
  x = arraylike(a, "roll")
  if axis is None: return reshape(roll(ravel(x), shift, 0), x.shape)
  if isinstance(shift, Array) and shift.is_traced:
    if shift.ndim > 1: raise ValueError(f"roll: shift must be a scalar or 1-D, got shape {shift.shape}")
    shifts = [shift] if shift.ndim == 0 else list(unstack(shift))
  else:
    shifts = list(_ints(shift, "roll", "shift"))
  axes = _ints(axis, "roll", "axis")
  if len(shifts) == 1: shifts = shifts * len(axes)
  if len(axes) == 1: axes = axes * len(shifts)
  if len(shifts) != len(axes):
    raise ValueError(f"roll: shift {shift} and axis {axis} must have the same length (or one of them length 1)")
  for s, ax in zip(shifts, axes):
    ax = normalize_axis(ax, x.ndim, "roll")
    n = x.shape[ax]
    if n == 0: continue
    if isinstance(s, Array):
      x = _roll_traced(x, s, ax)
      continue
    s = s % n
    if s: x = _w(x, UOp.concat([_slice_axis(x, ax, n - s, n).uop, _slice_axis(x, ax, 0, n - s).uop], ax))
  return x


def rot90(m, k: int = 1, axes=(0, 1)) -> Array:
  """`m` rotated by 90 degrees `k` times in the plane of `axes` (from the first axis towards the second).

  >>> tnp.rot90(tnp.array([[1, 2], [3, 4]]))
  Array([[2, 4],
         [1, 3]], dtype=int32)
  """
  x = arraylike(m, "rot90")
  k = _int(k, "rot90", "k") % 4
  axes = _ints(axes, "rot90", "axes")
  if len(axes) != 2: raise ValueError(f"rot90: axes must be two axes, got {axes}")
  if x.ndim < 2: raise ValueError(f"rot90: the input must have at least 2 dimensions, got shape {x.shape}")
  a0, a1 = (normalize_axis(ax, x.ndim, "rot90", "axes") for ax in axes)
  if a0 == a1: raise ValueError(f"rot90: axes must be different, got {axes}")
  if k == 0: return x
  if k == 2: return _w(x, x.uop.flip(tuple(sorted((a0, a1)))))
  perm = list(range(x.ndim))
  perm[a0], perm[a1] = perm[a1], perm[a0]
  if k == 1: return _w(x, x.uop.flip((a1,)).permute(perm))
  return _w(x, x.uop.permute(perm).flip((a1,)))


# ---- repetition ----
def tile(A, reps) -> Array:
  """`A` repeated `reps` times along each axis.

  >>> tnp.tile(tnp.array([1, 2]), 2)
  Array([1, 2, 1, 2], dtype=int32)
  """
  x = arraylike(A, "tile")
  reps = _ints(reps, "tile", "reps")
  if any(r < 0 for r in reps): raise ValueError(f"tile: reps must be non-negative, got {reps}")
  nd = max(x.ndim, len(reps))
  reps = (1,) * (nd - len(reps)) + reps
  s = (1,) * (nd - x.ndim) + x.shape
  # (1, n0, 1, n1, ...) broadcast to (r0, n0, r1, n1, ...), then merged
  inter = tuple(v for n in s for v in (1, n))
  big = tuple(v for r, n in zip(reps, s) for v in (r, n))
  return _w(x, x.uop.reshape(inter).broadcast(big).reshape(tuple(r * n for r, n in zip(reps, s))))


def repeat(a, repeats, axis=None, *, total_repeat_length=None) -> Array:
  """Each element of `a` repeated `repeats` times (an int, or one count per element) along `axis`.

  >>> tnp.repeat(tnp.array([1, 2]), [1, 2])
  Array([1, 2, 2], dtype=int32)
  """
  x = arraylike(a, "repeat")
  if isinstance(repeats, Array) and repeats.is_traced:
    raise TypeError(f"repeat: repeats must be static (a Python int or a sequence of ints), got a traced value "
                    f"{repeats.aval_str()}: the result's length depends on it. Pass concrete repeats, or mark the "
                    f"argument static (jit(f, static_argnums=...))")
  if axis is None: x, axis = ravel(x), 0
  ax = _axis(axis, x.ndim, "repeat")
  n = x.shape[ax]
  reps = _ints(repeats, "repeat", "repeats")
  if any(r < 0 for r in reps): raise ValueError(f"repeat: repeats must be non-negative, got {repeats}")
  if len(reps) == 1 and total_repeat_length is None:
    r, s = reps[0], x.shape
    u = x.uop.reshape(s[:ax + 1] + (1,) + s[ax + 1:]).broadcast(s[:ax + 1] + (r,) + s[ax + 1:])
    return _w(x, u.reshape(s[:ax] + (n * r,) + s[ax + 1:]))
  if len(reps) == 1: reps = reps * n
  if len(reps) != n:
    raise ValueError(f"repeat: got {len(reps)} repeats for an axis of size {n}; give one per element or a single int")
  idx = np.repeat(np.arange(n), reps)
  if total_repeat_length is not None:
    t = _int(total_repeat_length, "repeat", "total_repeat_length")
    if t < 0: raise ValueError(f"repeat: total_repeat_length must be non-negative, got {t}")
    if t > len(idx):
      if n == 0: raise ValueError(f"repeat: cannot fill total_repeat_length={t} from an empty axis")
      idx = np.concatenate([idx, np.full(t - len(idx), idx[-1] if len(idx) else n - 1)])
    idx = idx[:t]
  return _take_static(x, ax, idx)


# ---- padding ----
_PAD_MODES = ("constant", "empty", "edge", "reflect", "symmetric", "wrap")


def _pad_widths(pad_width, nd: int) -> list[tuple[int, int]]:
  pw = _static(pad_width, "pad", "pad_width")
  try:
    arr = np.asarray(pw)
  except ValueError:
    raise ValueError(f"pad: pad_width {pad_width!r} must be an int, a (before, after) pair or one pair per "
                     f"axis") from None
  if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
    raise TypeError(f"pad: pad_width must be integers, got {pad_width!r}")
  try:
    return [(int(lo), int(hi)) for lo, hi in np.broadcast_to(arr.astype(np.int64), (nd, 2)).tolist()]
  except ValueError:
    raise ValueError(f"pad: pad_width {pad_width!r} does not fit an array of {nd} dimensions (give an int, a "
                     f"(before, after) pair or {nd} pairs)") from None


def _constant_values(cv, x: Array) -> list[tuple[UOp, UOp]] | None:
  """Per axis (before, after) 0-d constants in x's dtype; None when every one is a static zero."""
  if isinstance(cv, Array):
    if cv.ndim == 0:
      u = cv.uop.cast(x.dtype)
      return [(u, u)] * x.ndim
    if cv.is_traced: raise TypeError("pad: a traced constant_values must be a scalar")
  v = np.asarray(cv)
  if v.dtype == dtypes.bfloat16.np: v = v.astype(np.float32)
  if v.dtype.kind not in "biuf": raise TypeError(f"pad: constant_values must be numbers, got {cv!r}")
  if not v.any(): return None
  try:
    pairs = np.broadcast_to(v, (x.ndim, 2)).tolist() if v.ndim else [(v.item(), v.item())] * x.ndim
  except ValueError:
    raise ValueError(f"pad: constant_values {cv!r} does not fit an array of {x.ndim} dimensions") from None
  c = lambda e: arraylike(e, "pad").uop.cast(x.dtype)
  return [(c(lo), c(hi)) for lo, hi in pairs]


def pad(array, pad_width, mode: str = "constant", *, constant_values=0, **kwargs) -> Array:
  """`array` padded by `pad_width` (an int, a pair, or a pair per axis) in a numpy `mode`: constant (with
  `constant_values`, a scalar or pairs), edge, reflect, symmetric or wrap. Negative constant widths crop.

  >>> tnp.pad(tnp.array([1, 2]), 1, mode="edge")
  Array([1, 1, 2, 2], dtype=int32)
  """
  x = arraylike(array, "pad")
  if not isinstance(mode, str): raise TypeError(f"pad: mode must be a string, got {type(mode).__name__}")
  if mode not in _PAD_MODES:
    raise ValueError(f"pad: unsupported mode {mode!r}; use one of {', '.join(_PAD_MODES)}")
  if kwargs.get("reflect_type", "even") != "even":
    raise NotImplementedError("pad: only reflect_type='even' is supported")
  unknown = set(kwargs) - {"reflect_type"}
  if unknown: raise TypeError(f"pad: unexpected keyword arguments {sorted(unknown)}")
  pw = _pad_widths(pad_width, x.ndim)
  if any(lo < 0 or hi < 0 for lo, hi in pw):
    raise ValueError(f"pad: pad_width must be non-negative, got {pad_width!r}; slice the array to crop it")
  if mode in ("constant", "empty"):
    cv = None if mode == "empty" else _constant_values(constant_values, x)
    return _w(x, pad_constant(x.uop, pw, cv))
  for ax, (lo, hi) in enumerate(pw):
    if lo == hi == 0: continue
    n = x.shape[ax]
    if n == 0:
      raise ValueError(f"pad: cannot extend the empty axis {ax} of shape {x.shape} with mode {mode!r}; "
                       f"use mode 'constant'")
    x = _take_static(x, ax, np.pad(np.arange(n), (lo, hi), mode=mode))
  return x


# ---- diagonals ----
def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
  """The diagonal of `a` in the plane of axis1 and axis2 (offset above it when positive), as the last axis.

  >>> tnp.diagonal(tnp.array([[1, 2], [3, 4]]))
  Array([1, 4], dtype=int32)
  """
  x = arraylike(a, "diagonal")
  offset = _int(offset, "diagonal", "offset")
  if x.ndim < 2: raise ValueError(f"diagonal: the input must have at least 2 dimensions, got shape {x.shape}")
  i, j = _axis(axis1, x.ndim, "diagonal", "axis1"), _axis(axis2, x.ndim, "diagonal", "axis2")
  if i == j: raise ValueError(f"diagonal: axis1 and axis2 must be different, got {axis1} and {axis2}")
  x = moveaxis(x, (i, j), (-2, -1))
  n, m = x.shape[-2:]
  k = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
  if k == 0: return _w(x, _slice_axis(reshape(x, x.shape[:-2] + (n * m,)), x.ndim - 2, 0, 0).uop)
  r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
  # in the flattened (n*m) plane the diagonal is a strided slice with step m + 1
  flat = reshape(x, x.shape[:-2] + (n * m,))
  start = r0 * m + c0
  return _slice_axis(flat, flat.ndim - 1, start, start + (k - 1) * (m + 1) + 1, m + 1)


def diag(v, k: int = 0) -> Array:
  """The k-th diagonal of a 2-D array, or a 2-D array with the 1-D `v` on its k-th diagonal.

  >>> tnp.diag(tnp.array([1, 2]))
  Array([[1, 0],
         [0, 2]], dtype=int32)
  """
  x = arraylike(v, "diag")
  k = _int(k, "diag", "k")
  if x.ndim == 2: return diagonal(x, k)
  if x.ndim != 1: raise ValueError(f"diag: the input must be 1-D or 2-D, got shape {x.shape}")
  n = x.shape[0]
  # rows [v_i, 0, ..., 0] of length n + 1, flattened and cut to n * n, put v_i at (i, i)
  u = x.uop.reshape((n, 1)).pad(((0, 0), (0, n))).reshape((n * (n + 1),)).slice(((0, n * n, 1),)).reshape((n, n))
  a = abs(k)
  return _w(x, u.pad(((0, a), (a, 0)) if k >= 0 else ((a, 0), (0, a))))


def diagflat(v, k: int = 0) -> Array:
  """A 2-D array with the flattened `v` on its k-th diagonal.

  >>> tnp.diagflat(tnp.array([[1, 2]])).shape
  (2, 2)
  """
  return diag(ravel(arraylike(v, "diagflat")), k)




def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None) -> Array:
  """The sum along a diagonal (in JAX's sum dtype: int32 for bool and narrow ints).

  >>> tnp.trace(tnp.array([[1, 2], [3, 4]]))
  Array(5, dtype=int32)
  """
  if out is not None: raise NotImplementedError("trace: the 'out' argument is not supported (arrays are immutable)")
  x = arraylike(a, "trace")
  dg = diagonal(x, offset, axis1, axis2)
  d = _dtype_arg(dtype, "trace")
  out_dt = d if d is not None else sum_dtype(x.dtype)
  u, keep = dg.uop, dg.shape[:-1]
  if out_dt.is_bool:  # a boolean sum is `or`
    nz = u if u.dtype.is_bool else u.alu(Ops.CMPNE, UOp.const(u.dtype, 0, u.shape))
    return Array(nz.cast(dtypes.int32).reduce(Ops.REDUCE_MAX, (dg.ndim - 1,)).reshape(keep).cast(dtypes.bool_))
  comp = dtypes.float32 if out_dt in (dtypes.float16, dtypes.bfloat16) else out_dt
  r = u.cast(comp).reduce(Ops.REDUCE_SUM, (dg.ndim - 1,)).reshape(keep).cast(out_dt)
  return Array(r, x.weak_type and d is None and out_dt is x.dtype)


# ---- differences ----
def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None) -> Array:
  """The n-th discrete difference along `axis` (not_equal for bool), after joining prepend and append.

  >>> tnp.diff(tnp.array([1, 4, 9]))
  Array([3, 5], dtype=int32)
  """
  x = arraylike(a, "diff")
  n = _int(n, "diff", "n")
  if n < 0: raise ValueError(f"diff: order n must be non-negative, got {n}")
  if x.ndim == 0: raise ValueError("diff: the input must be at least 1-D, got a 0-d array")
  ax = _axis(axis, x.ndim, "diff")
  if n == 0: return x
  if prepend is not None or append is not None:
    def edge(v):
      e = arraylike(v, "diff")
      return _w(e, e.uop.broadcast(x.shape[:ax] + (1,) + x.shape[ax + 1:])) if e.ndim == 0 else e
    parts = ([edge(prepend)] if prepend is not None else []) + [x] + ([edge(append)] if append is not None else [])
    x = concatenate(parts, ax)
  for _ in range(n):
    m = x.shape[ax]
    hi, lo = _slice_axis(x, ax, min(1, m), m).uop, _slice_axis(x, ax, 0, max(m - 1, 0)).uop
    x = _w(x, hi.alu(Ops.CMPNE, lo) if x.dtype.is_bool else hi.alu(Ops.SUB, lo))
  return x


# ---- at least k dimensions ----
def _atleast(fn: str, arys, new_shape):
  out = []
  for a in arys:
    x = arraylike(a, fn)
    out.append(_w(x, x.uop.reshape(new_shape(x.shape))))
  return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
  """Each argument with at least one dimension (a list for several arguments).

  >>> tnp.atleast_1d(1).shape
  (1,)
  """
  return _atleast("atleast_1d", arys, lambda s: s if len(s) >= 1 else (1,))


def atleast_2d(*arys):
  """Each argument with at least two dimensions, new ones in front (a list for several arguments).

  >>> tnp.atleast_2d(tnp.ones(3)).shape
  (1, 3)
  """
  return _atleast("atleast_2d", arys, lambda s: s if len(s) >= 2 else (1,) * (2 - len(s)) + s)


def atleast_3d(*arys):
  """Each argument with at least three dimensions: (n,) -> (1, n, 1), (m, n) -> (m, n, 1).

  >>> tnp.atleast_3d(tnp.ones(3)).shape
  (1, 3, 1)
  """
  return _atleast("atleast_3d", arys, lambda s: {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}.get(len(s), s))
