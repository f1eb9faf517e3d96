"""Shape manipulation of tracegrad.numpy, built from the movement primitives."""
from __future__ import annotations

import math
from typing import Sequence

from ..array import Array
from ..ir import Ops, UOp, broadcast_shapes as _bshapes, dtypes
from .core import asarray_, normalize_axes, normalize_axis, promote

__all__ = ["reshape", "transpose", "permute_dims", "swapaxes", "moveaxis", "expand_dims", "squeeze", "broadcast_to",
           "broadcast_arrays", "broadcast_shapes", "concatenate", "concat", "stack", "hstack", "vstack", "split", "flip",
           "roll", "tile", "repeat", "ravel", "pad", "diagonal", "trace", "diff", "atleast_1d", "atleast_2d",
           "atleast_3d", "shape", "ndim", "size"]


def _w(x: Array, u: UOp) -> Array: return Array(u, x.weak_type)


def reshape(a, shape, order: str = "C") -> Array:
  """>>> tnp.reshape(tnp.arange(6), (2, -1)).shape
  (2, 3)
  """
  x = asarray_(a, "reshape")
  if order != "C": raise ValueError(f"reshape: only order='C' is supported, got {order!r}")
  shape = (shape,) if isinstance(shape, int) else tuple(int(n) for n in shape)
  if shape.count(-1) > 1: raise ValueError(f"reshape: can only specify one unknown dimension, got {shape}")
  if -1 in shape:
    known = math.prod(n for n in shape if n != -1)
    if known == 0 or x.size % known:
      raise ValueError(f"reshape: cannot reshape an array of shape {x.shape} ({x.size} elements) into shape {shape}")
    shape = tuple(x.size // known if n == -1 else n for n in shape)
  if math.prod(shape) != x.size or any(n < 0 for n in shape):
    raise ValueError(f"reshape: cannot reshape an array of shape {x.shape} ({x.size} elements) into shape {shape}")
  return _w(x, x.uop.reshape(shape))


def ravel(a, order: str = "C") -> Array: return reshape(a, (-1,), order)
def shape(a): return asarray_(a, "shape").shape
def ndim(a): return asarray_(a, "ndim").ndim
def size(a): return asarray_(a, "size").size


def transpose(a, axes=None) -> Array:
  """>>> tnp.transpose(tnp.ones((2, 3))).shape
  (3, 2)
  """
  x = asarray_(a, "transpose")
  if axes is None: perm = tuple(range(x.ndim))[::-1]
  else:
    perm = tuple(normalize_axis(ax, x.ndim, "transpose", "axes") for ax in axes)
    if sorted(perm) != list(range(x.ndim)):
      raise ValueError(f"transpose: axes {tuple(axes)} are not a permutation of the axes of shape {x.shape}")
  return _w(x, x.uop.permute(perm))


permute_dims = transpose


def swapaxes(a, axis1: int, axis2: int) -> Array:
  x = asarray_(a, "swapaxes")
  i, j = normalize_axis(axis1, x.ndim, "swapaxes", "axis1"), normalize_axis(axis2, x.ndim, "swapaxes", "axis2")
  perm = list(range(x.ndim))
  perm[i], perm[j] = perm[j], perm[i]
  return _w(x, x.uop.permute(perm))


def moveaxis(a, source, destination) -> Array:
  x = asarray_(a, "moveaxis")
  src = [source] if isinstance(source, int) else list(source)
  dst = [destination] if isinstance(destination, int) else list(destination)
  if len(src) != len(dst): raise ValueError(f"moveaxis: source {source} and destination {destination} differ in length")
  src = [normalize_axis(s, x.ndim, "moveaxis", "source") for s in src]
  dst = [normalize_axis(d, x.ndim, "moveaxis", "destination") for d in dst]
  order = [n for n in range(x.ndim) if n not in src]
  for d, s in sorted(zip(dst, src)): order.insert(d, s)
  return _w(x, x.uop.permute(order))


def expand_dims(a, axis) -> Array:
  x = asarray_(a, "expand_dims")
  axes = (axis,) if isinstance(axis, int) else tuple(axis)
  nd = x.ndim + len(axes)
  axes = normalize_axes(axes, nd, "expand_dims")
  it = iter(x.shape)
  return _w(x, x.uop.reshape(tuple(1 if i in axes else next(it) for i in range(nd))))


def squeeze(a, axis=None) -> Array:
  x = asarray_(a, "squeeze")
  axes = tuple(i for i, n in enumerate(x.shape) if n == 1) if axis is None else normalize_axes(axis, x.ndim, "squeeze")
  for i in axes:
    if x.shape[i] != 1:
      raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size not equal to one "
                       f"(axis {i} of shape {x.shape})")
  return _w(x, x.uop.reshape(tuple(n for i, n in enumerate(x.shape) if i not in axes)))


def broadcast_shapes(*shapes) -> tuple: return _bshapes(*(tuple(s) for s in shapes), fn="broadcast_shapes")


def broadcast_to(a, shape) -> Array:
  x = asarray_(a, "broadcast_to")
  shape = (shape,) if isinstance(shape, int) else tuple(shape)
  if _bshapes(x.shape, shape, fn="broadcast_to") != shape:
    raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to shape {shape}")
  return _w(x, x.uop.broadcast(shape))


def broadcast_arrays(*args) -> list[Array]:
  xs = [asarray_(a, "broadcast_arrays") for a in args]
  s = _bshapes(*(x.shape for x in xs), fn="broadcast_arrays")
  return [_w(x, x.uop.broadcast(s)) for x in xs]


def concatenate(arrays, axis: int | None = 0, dtype=None) -> Array:
  """>>> tnp.concatenate([tnp.ones(2), tnp.zeros(1)])
  Array([1., 1., 0.], dtype=float32)
  """
  if not isinstance(arrays, (list, tuple)) or not arrays:
    raise ValueError("concatenate: need a non-empty sequence of arrays")
  xs, dt, weak = promote("concatenate", *arrays)
  if dtype is not None:
    dt = dtypes.canonicalize(dtypes.as_dtype(dtype, "concatenate"))
    xs = [Array(x.uop.cast(dt)) for x in xs]
  if axis is None: xs, axis = [ravel(x) for x in xs], 0
  if any(x.ndim == 0 for x in xs): raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
  ax = normalize_axis(axis, xs[0].ndim, "concatenate")
  for x in xs:
    if x.ndim != xs[0].ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if i != ax):
      raise ValueError(f"concatenate: all input shapes must match except on axis {ax}, got "
                       f"{', '.join(str(y.shape) for y in xs)}")
  return Array(UOp.concat([x.uop for x in xs], ax), weak)


concat = concatenate


def stack(arrays, axis: int = 0, dtype=None) -> Array:
  xs = [asarray_(a, "stack") for a in arrays]
  if not xs: raise ValueError("stack: need at least one array")
  if len({x.shape for x in xs}) != 1:
    raise ValueError(f"stack: all input arrays must have the same shape, got {', '.join(str(x.shape) for x in xs)}")
  ax = normalize_axis(axis, xs[0].ndim + 1, "stack")
  return concatenate([expand_dims(x, ax) for x in xs], ax, dtype)


def hstack(tup) -> Array:
  xs = atleast_1d(*tup) if len(tup) > 1 else [atleast_1d(tup[0])]
  return concatenate(xs, 0 if xs[0].ndim == 1 else 1)


def vstack(tup) -> Array:
  xs = atleast_2d(*tup) if len(tup) > 1 else [atleast_2d(tup[0])]
  return concatenate(xs, 0)


def _slice_axis(x: Array, axis: int, start: int, stop: int, step: int = 1) -> Array:
  arg = tuple((start, stop, step) if i == axis else (0, n, 1) for i, n in enumerate(x.shape))
  return _w(x, x.uop.slice(arg))


def split(ary, indices_or_sections, axis: int = 0) -> list[Array]:
  x = asarray_(ary, "split")
  ax = normalize_axis(axis, x.ndim, "split")
  n = x.shape[ax]
  if isinstance(indices_or_sections, int):
    k = indices_or_sections
    if k <= 0 or n % k: raise ValueError(f"split: array split does not result in an equal division ({n} into {k})")
    cuts = [i * (n // k) for i in range(1, k)]
  else:
    cuts = [min(max(int(c) + (n if int(c) < 0 else 0), 0), n) for c in indices_or_sections]
  bounds = [0] + cuts + [n]
  return [_slice_axis(x, ax, lo, max(lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]


def flip(m, axis=None) -> Array:
  x = asarray_(m, "flip")
  return _w(x, x.uop.flip(normalize_axes(axis, x.ndim, "flip")))


def roll(a, shift, axis=None) -> Array:
  x = asarray_(a, "roll")
  if axis is None: return reshape(roll(ravel(x), shift, 0), x.shape)
  shifts = (shift,) if isinstance(shift, int) else tuple(shift)
  axes = (axis,) if isinstance(axis, int) else tuple(axis)
  if len(shifts) == 1: shifts = shifts * len(axes)
  for s, ax in zip(shifts, axes):
    ax = normalize_axis(ax, x.ndim, "roll")
    n = x.shape[ax]
    if n == 0: continue
    s = int(s) % n
    if s: x = concatenate([_slice_axis(x, ax, n - s, n), _slice_axis(x, ax, 0, n - s)], ax)
  return x


def tile(A, reps) -> Array:
  x = asarray_(A, "tile")
  reps = (reps,) if isinstance(reps, int) else tuple(reps)
  nd = max(x.ndim, len(reps))
  reps = (1,) * (nd - len(reps)) + reps
  x = reshape(x, (1,) * (nd - x.ndim) + x.shape)
  # (r0, n0, r1, n1, ...) broadcast, then merged
  inter = tuple(v for r, n in zip(reps, x.shape) for v in (1, n))
  big = tuple(v for r, n in zip(reps, x.shape) for v in (r, n))
  return _w(x, x.uop.reshape(inter).broadcast(big).reshape(tuple(r * n for r, n in zip(reps, x.shape))))


def repeat(a, repeats, axis=None, total_repeat_length=None) -> Array:
  x = asarray_(a, "repeat")
  if axis is None: x, axis = ravel(x), 0
  ax = normalize_axis(axis, x.ndim, "repeat")
  if isinstance(repeats, Array):
    if repeats.is_traced: raise TypeError("repeat: repeats must be concrete (a Python int or sequence), got a traced value")
    repeats = repeats.tolist()
  if isinstance(repeats, int):
    if repeats < 0: raise ValueError(f"repeat: repeats must be non-negative, got {repeats}")
    s = x.shape
    u = x.uop.reshape(s[:ax + 1] + (1,) + s[ax + 1:]).broadcast(s[:ax + 1] + (repeats,) + s[ax + 1:])
    return _w(x, u.reshape(s[:ax] + (s[ax] * repeats,) + s[ax + 1:]))
  reps = list(repeats)
  if len(reps) != x.shape[ax]:
    raise ValueError(f"repeat: {len(reps)} repeats for an axis of size {x.shape[ax]}")
  parts = [repeat(_slice_axis(x, ax, i, i + 1), int(r), ax) for i, r in enumerate(reps)]
  return concatenate(parts, ax)


def pad(array, pad_width, mode: str = "constant", constant_values=0) -> Array:
  """>>> tnp.pad(tnp.ones(2), 1)
  Array([0., 1., 1., 0.], dtype=float32)
  """
  x = asarray_(array, "pad")
  import numpy as np
  pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2)).tolist()
  if any(v < 0 for p in pw for v in p): raise ValueError(f"pad: pad widths must be non-negative, got {pad_width}")
  if mode == "constant":
    out = x.uop.pad(pw)
    if not (isinstance(constant_values, (int, float)) and constant_values == 0):
      from .elementwise import where
      mask = UOp.const(dtypes.bool_, True, x.shape).pad(pw)
      return where(Array(mask), Array(out, x.weak_type), asarray_(constant_values, "pad").astype(x.dtype))
    return _w(x, out)
  if mode in ("edge", "wrap", "reflect", "symmetric"):
    for ax, (lo, hi) in enumerate(pw):
      n = x.shape[ax]
      parts = []
      for side, k in (("lo", lo), ("hi", hi)):
        if k == 0: parts.append(None); continue
        if mode == "edge": p = repeat(_slice_axis(x, ax, 0, 1) if side == "lo" else _slice_axis(x, ax, n - 1, n), k, ax)
        elif mode == "wrap": p = _take_cyclic(x, ax, k, side)
        else: p = _reflect(x, ax, k, side, mode == "symmetric")
        parts.append(p)
      x = concatenate([p for p in (parts[0], x, parts[1]) if p is not None], ax)
    return x
  raise ValueError(f"pad: unsupported mode {mode!r}; use constant, edge, reflect, symmetric or wrap")


def _take_cyclic(x, ax, k, side):
  n = x.shape[ax]
  idx = [(i % n) for i in range(-k, 0)] if side == "lo" else [i % n for i in range(k)]
  return concatenate([_slice_axis(x, ax, i, i + 1) for i in idx], ax)


def _reflect(x, ax, k, side, symmetric):
  n = x.shape[ax]
  period = 2 * n if symmetric else 2 * (n - 1)
  pos = range(-k, 0) if side == "lo" else range(n, n + k)
  def sym(i):
    if period == 0: return 0
    m = i % period
    if symmetric: return m if m < n else period - 1 - m
    return m if m < n else period - m
  return concatenate([_slice_axis(x, ax, sym(i), sym(i) + 1) for i in pos], ax)


def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
  x = asarray_(a, "diagonal")
  if x.ndim < 2: raise ValueError(f"diagonal: needs at least 2 dimensions, got shape {x.shape}")
  i, j = normalize_axis(axis1, x.ndim, "diagonal", "axis1"), normalize_axis(axis2, x.ndim, "diagonal", "axis2")
  if i == j: raise ValueError("diagonal: axis1 and axis2 cannot be the same")
  x = moveaxis(x, (i, j), (-2, -1))
  n, m = x.shape[-2:]
  k = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
  r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
  if k == 0: return Array(UOp.const(x.dtype, 0, x.shape[:-2] + (0,)), x.weak_type)
  flat = reshape(x, x.shape[:-2] + (n * m,))
  start = r0 * m + c0
  return _slice_axis(flat, flat.ndim - 1, start, start + (k - 1) * (m + 1) + 1, m + 1)


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None) -> Array:
  from .reductions import sum as _sum
  return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None) -> Array:
  from .elementwise import not_equal, subtract
  x = asarray_(a, "diff")
  ax = normalize_axis(axis, x.ndim, "diff")
  if prepend is not None or append is not None:
    parts = []
    def edge(v):
      e = asarray_(v, "diff")
      return broadcast_to(e, x.shape[:ax] + (1,) + x.shape[ax + 1:]) if e.ndim == 0 else e
    x = concatenate(([edge(prepend)] if prepend is not None else []) + [x] + ([edge(append)] if append is not None else []), ax)
  for _ in range(n):
    m = x.shape[ax]
    hi, lo = _slice_axis(x, ax, 1, max(m, 1)), _slice_axis(x, ax, 0, max(m - 1, 0))
    x = not_equal(hi, lo) if x.dtype.is_bool else subtract(hi, lo)
  return x


def _atleast(k, fn, arys):
  out = []
  for a in arys:
    x = asarray_(a, fn)
    if x.ndim < k:
      s = {1: (1,) * (1 - x.ndim) + x.shape, 2: (1,) * (2 - x.ndim) + x.shape}.get(k)
      if k == 3: s = {0: (1, 1, 1), 1: (1,) + x.shape + (1,), 2: x.shape + (1,)}[x.ndim]
      x = reshape(x, s)
    out.append(x)
  return out[0] if len(out) == 1 else out


def atleast_1d(*arys): return _atleast(1, "atleast_1d", arys)
def atleast_2d(*arys): return _atleast(2, "atleast_2d", arys)
def atleast_3d(*arys): return _atleast(3, "atleast_3d", arys)
