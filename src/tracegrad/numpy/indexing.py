"""Indexing: x[key], x.at[key].set/add/..., take, take_along_axis, put_along_axis.

Every index expression is normalised once into a plan (`_Plan`): unit axes for None, SLICE/FLIP for slices and
(without arrays) static ints, and one GATHER for the advanced indices (integer arrays, boolean masks made concrete
with numpy, and static ints when arrays are present). `.at[...]` reuses the plan to build the indices of one SCATTER.

Unlike JAX, a static int out of bounds raises IndexError, and so does a concrete index array; traced index arrays
are clamped on reads (GATHER's semantics) and dropped on updates (SCATTER's semantics), after negative indices are
wrapped once.
"""
from __future__ import annotations

import operator

import numpy as np

from ..array import Array, to_array
from ..errors import NonConcreteBooleanIndexError
from ..ir import Ops, UOp, broadcast_shapes, dtypes
from ..ir.shapes import fmt
from .core import arraylike as _arr, elementwise, normalize_axis

__all__ = ["indexing_getitem", "indexing_at", "take", "take_along_axis", "put_along_axis"]

_I32 = dtypes.int32
_VALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays "
          "are valid indices")
_MODES = (None, "promise_in_bounds", "clip", "drop", "fill")


# ---- small UOp helpers ----
def _c(v, shape=(), dt=_I32) -> UOp: return UOp.const(dt, v, shape)


def _norm_traced(i: UOp, n: int, mode) -> UOp:
  """A traced index as int32 with negatives wrapped (i < 0 -> i + n); clamped for mode='clip'."""
  unsigned = i.dtype.is_unsigned
  i = i.cast(_I32)
  if not unsigned: i = i.alu(Ops.CMPLT, _c(0, i.shape)).where(i + _c(n, i.shape), i)
  if mode == "clip": i = i.alu(Ops.MAX, _c(0, i.shape)).alu(Ops.MIN, _c(max(n - 1, 0), i.shape))
  return i


def _norm_concrete(i: np.ndarray, n: int, axis: int, mode) -> np.ndarray:
  i = i.astype(np.int64)
  i = np.where(i < 0, i + n, i)
  if mode == "clip": return np.clip(i, 0, max(n - 1, 0))
  if mode in (None, "promise_in_bounds") and i.size and (i.min() < 0 or i.max() >= n):
    bad = i.ravel()[np.argmax(((i < 0) | (i >= n)).ravel())]
    raw = bad - n if bad < 0 else bad
    raise IndexError(f"index {int(raw)} is out of bounds for axis {axis} with size {n}")
  return i


def _fill_default(d):
  """JAX's fill for out-of-bounds reads: NaN (NaN + 0j), the smallest signed int, the largest unsigned int, True."""
  if d.is_float: return float("nan")
  if d.is_complex: return complex(float("nan"), 0.0)
  if d.is_bool: return True
  return dtypes.min_value(d) if not d.is_unsigned else dtypes.max_value(d)


# ---- parsing an index expression ----
def _as_index(item, fn: str):
  """One entry of a key as ('new'|'ellipsis'|'slice'|'int'|'bool'|'mask'|'array', payload)."""
  if item is None: return ("new", None)
  if item is Ellipsis: return ("ellipsis", None)
  if isinstance(item, slice):
    try:
      return ("slice", slice(*(None if v is None else operator.index(v) for v in (item.start, item.stop, item.step))))
    except TypeError:
      raise TypeError(f"{fn}: slice bounds must be static integers or None, got {item!r}; for a traced start use "
                      f"tracegrad.lax.dynamic_slice") from None
  if isinstance(item, (bool, np.bool_)): return ("bool", bool(item))
  if isinstance(item, (int, np.integer)): return ("int", int(item))
  if isinstance(item, Array):
    if item.dtype.is_bool:
      if item.is_traced:
        raise NonConcreteBooleanIndexError(
          f"{fn}: boolean indices need concrete values, but this mask ({item.aval_str()}) is traced, so the result's "
          f"shape is not known. Use tracegrad.numpy.where(mask, x, fill) to keep the shape, or nonzero(mask, size=...) "
          f"for a fixed number of positions.")
      return _as_index(np.asarray(item), fn)
    if not item.dtype.is_int: raise IndexError(f"{fn}: {_VALID}, got an Array of dtype {item.dtype}")
    if item.is_traced: return ("array", item.uop)
    return _as_index(np.asarray(item), fn)
  if isinstance(item, (list, tuple)):
    if any(isinstance(e, Array) and e.is_traced for e in item):
      if not all(isinstance(e, (int, np.integer)) or (isinstance(e, Array) and e.ndim == 0 and e.dtype.is_int)
                 for e in item):
        raise TypeError(f"{fn}: a list index holding traced Arrays must be a flat list of integer scalars; "
                        f"stack the index arrays into one Array instead")
      return ("array", UOp.concat([to_array(e).uop.cast(_I32).reshape((1,)) for e in item], 0))
    try:
      a = np.asarray(item)
    except (ValueError, TypeError) as e:
      raise IndexError(f"{fn}: {_VALID}; the sequence {item!r} is not a rectangular array of integers ({e})") from None
    if a.size == 0 and a.dtype.kind == "f": a = a.astype(np.intp)
    item = a
  if isinstance(item, np.ndarray):
    if item.dtype == np.bool_: return ("bool", bool(item)) if item.ndim == 0 else ("mask", item)
    if item.dtype.kind not in "iu": raise IndexError(f"{fn}: {_VALID}, got an array of dtype {item.dtype}")
    return ("int", int(item)) if item.ndim == 0 else ("array", item)
  raise IndexError(f"{fn}: {_VALID}, got {type(item).__name__} {item!r}")


class _Plan:
  """An index expression normalised against a shape: how to reshape, slice, flip and gather."""

  def __init__(self, shape, key, mode=None, fn: str = "getitem", fill_value=None):
    if mode not in _MODES: raise ValueError(f"{fn}: mode must be one of {_MODES}, got {mode!r}")
    self.shape, self.mode, self.fill = tuple(shape), mode, fill_value
    items = [_as_index(k, fn) for k in (key if isinstance(key, tuple) else (key,))]
    ell = [i for i, (k, _) in enumerate(items) if k == "ellipsis"]
    if len(ell) > 1: raise IndexError(f"{fn}: an index can only have a single ellipsis ('...')")
    used = sum(p.ndim if k == "mask" else 1 for k, p in items if k in ("slice", "int", "array", "mask"))
    if used > len(shape):
      raise IndexError(f"{fn}: too many indices for array: array is {len(shape)}-dimensional, but {used} were indexed")
    rest = [("slice", slice(None))] * (len(shape) - used)
    pos = ell[0] if ell else len(items)
    # each entry: (kind, payload, term position in the key, axis of x or None for a new unit axis)
    terms = [(k, p, t) for t, (k, p) in enumerate(items[:pos])] + [(k, p, pos) for k, p in rest] + \
            [(k, p, t) for t, (k, p) in enumerate(items[pos + 1:] if ell else [], pos + 1)]
    self.ext: list[tuple] = []   # one per axis of the extended array (x with unit axes for None and bools)
    ax = 0
    for kind, p, t in terms:
      if kind == "new": self.ext.append(("slice", slice(None), t, None))
      elif kind == "bool": self.ext.append(("array", np.zeros(int(p), np.int64), t, None))
      elif kind == "slice": self.ext.append(("slice", p, t, ax)); ax += 1
      elif kind == "int":
        n = shape[ax]
        if not -n <= p < n:
          if mode not in ("fill", "clip"):
            raise IndexError(f"{fn}: index {p} is out of bounds for axis {ax} with size {n}")
          self.ext.append(("array", np.array(p), t, ax))   # read as the mode says, as an index array would be
        else:
          self.ext.append(("int", p % n, t, ax))
        ax += 1
      elif kind == "array": self.ext.append(("array", p, t, ax)); ax += 1
      else:  # a boolean mask covers mask.ndim axes
        want = tuple(shape[ax:ax + p.ndim])
        if p.shape != want:
          raise IndexError(f"{fn}: boolean index of shape {fmt(p.shape)} does not match the indexed array's axes "
                           f"{ax}..{ax + p.ndim - 1} of shape {fmt(want)}")
        for c in np.nonzero(p): self.ext.append(("array", c, t, ax)); ax += 1
    if any(e[0] == "array" for e in self.ext):  # with arrays present, static ints are advanced indices too
      self.ext = [("array", np.array(e[1]), *e[2:]) if e[0] == "int" else e for e in self.ext]
    self.ext_shape = tuple(1 if e[3] is None else shape[e[3]] for e in self.ext)
    self._advanced(fn)

  def _advanced(self, fn: str):
    """Normalise the index arrays, find the batch shape and where numpy places it."""
    adv = [i for i, e in enumerate(self.ext) if e[0] == "array"]
    self.adv, self.idx, self.valid = adv, [], None
    if not adv: return
    shapes = [np.shape(self.ext[i][1]) if isinstance(self.ext[i][1], np.ndarray) else self.ext[i][1].shape for i in adv]
    try:
      self.batch = broadcast_shapes(*shapes, fn=fn)
    except ValueError:
      raise IndexError(f"{fn}: shape mismatch: indexing arrays could not be broadcast together with shapes "
                       f"{' '.join(map(fmt, shapes))}") from None
    valid = []
    for i in adv:
      _, p, _, ax = self.ext[i]
      n = self.ext_shape[i]
      if isinstance(p, np.ndarray):
        v = _norm_concrete(p, n, ax if ax is not None else i, self.mode)
        if self.mode == "fill": valid.append(UOp.buffer(np.broadcast_to((v >= 0) & (v < n), self.batch).copy()))
        self.idx.append(UOp.buffer(np.broadcast_to(v, self.batch).astype(np.int32)))
      else:
        v = _norm_traced(p, n, self.mode).broadcast(self.batch)
        if self.mode == "fill":
          valid.append(v.alu(Ops.CMPLT, _c(n, v.shape)).alu(Ops.AND, _c(-1, v.shape).alu(Ops.CMPLT, v)))
        self.idx.append(v)
    if valid:
      m = valid[0]
      for v in valid[1:]: m = m.alu(Ops.AND, v)
      self.valid = m
    terms = sorted({self.ext[i][2] for i in adv})
    adjacent = terms == list(range(terms[0], terms[-1] + 1))
    self.kept = [i for i, e in enumerate(self.ext) if e[0] == "slice"]
    self.place = sum(1 for i in self.kept if i < adv[0]) if adjacent else 0

  def _basic(self, u: UOp) -> UOp:
    """Unit axes, slices and flips; static ints (without arrays) sliced and dropped."""
    u = u.reshape(self.ext_shape)
    flips, sl, out = [], [], []
    for i, (kind, p, _, _) in enumerate(self.ext):
      n = self.ext_shape[i]
      if kind == "slice":
        start, stop, step = p.indices(n)
        cnt = len(range(start, stop, step))
        if step < 0: flips.append(i); start, step = n - 1 - start, -step
        sl.append((start, start + (cnt - 1) * step + 1, step) if cnt else (0, 0, 1))
        out.append(cnt)
      elif kind == "int": sl.append((p, p + 1, 1))
      else: sl.append((0, n, 1)); out.append(n)
    u = u.flip(tuple(flips)).slice(sl)
    return u.reshape(tuple(out))

  @property
  def result_shape(self) -> tuple:
    if not self.adv: return self._basic_shape()
    rest = [d for i, d in zip(self._rest_axes(), self._basic_shape()) if i in self.kept]
    return tuple(rest[:self.place]) + self.batch + tuple(rest[self.place:])

  def _rest_axes(self): return [i for i, e in enumerate(self.ext) if e[0] != "int"]

  def _basic_shape(self):
    out = []
    for i, (kind, p, _, _) in enumerate(self.ext):
      if kind == "slice": out.append(len(range(*p.indices(self.ext_shape[i]))))
      elif kind == "array": out.append(self.ext_shape[i])
    return tuple(out)

  def apply(self, u: UOp) -> UOp:
    """u[key] for a UOp of the planned shape."""
    u = self._basic(u)
    if not self.adv: return u
    axes = self._rest_axes()  # ext axes still present, in order
    first = [axes.index(i) for i in self.adv]
    rest = [j for j in range(len(axes)) if j not in first]
    u = u.permute(first + rest)
    idx = UOp.concat([i.reshape(self.batch + (1,)) for i in self.idx], axis=len(self.batch))
    g = u.gather(idx)
    nb, p = len(self.batch), self.place
    if p:
      perm = list(range(nb, nb + p)) + list(range(nb)) + list(range(nb + p, g.ndim))
      g = g.permute(perm)
    if self.valid is not None:
      m = self._batch_to_result(self.valid, g.shape)
      fv = _fill_default(g.dtype) if self.fill is None else self.fill
      g = m.where(g, to_array(fv, g.dtype).uop.broadcast(g.shape))
    return g

  def _batch_to_result(self, b: UOp, shape) -> UOp:
    """A batch-shaped UOp laid out (and broadcast) as the result."""
    nb, p = len(self.batch), self.place
    return b.reshape((1,) * p + self.batch + (1,) * (len(shape) - nb - p)).broadcast(shape)

  def scatter_indices(self) -> UOp:
    """Indices (*result_shape, ndim) into x of every element of x[key] (unclamped, for SCATTER)."""
    shape = self.result_shape
    cols = []
    adv_axis = {self.ext[i][3]: k for k, i in enumerate(self.adv) if self.ext[i][3] is not None}
    for ax in range(len(self.shape)):
      if ax in adv_axis: col = self._batch_to_result(self.idx[adv_axis[ax]], shape)
      else: col = self.apply(UOp.iota(self.shape, ax, _I32)).reshape(shape)
      cols.append(col.reshape(shape + (1,)))
    return UOp.concat(cols, axis=len(shape))


def _getitem(x: Array, key, mode=None, fn: str = "getitem", fill_value=None) -> Array:
  if isinstance(key, tuple) and not key: return x
  plan = _Plan(x.shape, key, mode, fn, fill_value)
  return Array(plan.apply(x.uop), x.weak_type)


def indexing_getitem(x: Array, key) -> Array:
  """x[key] with numpy's rules (basic and advanced indexing); what Array.__getitem__ calls.

  >>> tnp.arange(5)[::-2], tnp.arange(5)[tnp.array([0, -1])]
  (Array([4, 2, 0], dtype=int32), Array([0, 4], dtype=int32))
  """
  return _getitem(x, key)


# ---- x.at[key] ----
class _IndexUpdateHelper:
  __slots__ = ("array",)

  def __init__(self, array: Array): self.array = array
  def __getitem__(self, key) -> "_IndexUpdateRef": return _IndexUpdateRef(self.array, key)
  def __repr__(self) -> str: return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
  """x.at[key]: functional updates, each returning a new Array (as JAX's x.at[key].set(v))."""
  __slots__ = ("array", "key")

  def __init__(self, array: Array, key): self.array, self.key = array, key
  def __repr__(self) -> str: return f"_IndexUpdateRef({self.array!r}, {self.key!r})"

  def get(self, *, mode=None, fill_value=None, indices_are_sorted=False, unique_indices=False) -> Array:
    """x[key]; mode='fill' reads fill_value (NaN for floats) out of bounds."""
    return _getitem(self.array, self.key, mode, "at[].get", fill_value)

  def _scatter(self, values, smode: str, base: UOp | None = None, mode=None, fn: str = "at[].set") -> UOp:
    x = self.array
    if mode not in (None, "promise_in_bounds", "clip", "drop", "fill"):
      raise ValueError(f"{fn}: mode must be one of None, 'promise_in_bounds', 'clip', 'drop', 'fill', got {mode!r}")
    base = x.uop if base is None else base
    v = to_array(values, fn=fn)
    scalar = x.ndim == 0
    if scalar: base = base.reshape((1,))
    plan = _Plan(x.shape, self.key, "drop" if mode == "fill" else mode, fn)
    shape = plan.result_shape
    u = v.uop.cast(x.dtype)
    while u.ndim > len(shape) and u.shape[0] == 1: u = u.reshape(u.shape[1:])
    if broadcast_shapes(u.shape, shape, fn=fn) != shape:
      raise ValueError(f"{fn}: updates of shape {fmt(v.shape)} do not broadcast to the indexed shape {fmt(shape)}")
    u = u.broadcast(shape)
    idx = _c(0, shape + (1,)) if scalar else plan.scatter_indices()
    out = base.scatter(idx, u, smode)
    return out.reshape(()) if scalar else out

  def set(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
    """x with x[key] = values.

    >>> tnp.zeros(3).at[1].set(5.0)
    Array([0., 5., 0.], dtype=float32)
    """
    return Array(self._scatter(values, "set", mode=mode, fn="at[].set"), self.array.weak_type)

  def add(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
    """x with values added at key; repeated indices accumulate (as np.add.at).

    >>> tnp.zeros(3).at[[0, 0, 2]].add(1.0)
    Array([2., 0., 1.], dtype=float32)
    """
    return Array(self._scatter(values, "add", mode=mode, fn="at[].add"), self.array.weak_type)

  def subtract(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
    """x with values subtracted at key (repeated indices accumulate)."""
    if self.array.dtype.is_bool: raise TypeError("at[].subtract: not defined for bool arrays")
    neg = to_array(values, fn="at[].subtract").uop.cast(self.array.dtype)
    return Array(self._scatter(Array(neg.alu(Ops.NEG)), "add", mode=mode, fn="at[].subtract"), self.array.weak_type)

  def multiply(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
    """x with x[key] multiplied by values (repeated indices accumulate)."""
    return Array(self._scatter(values, "mul", mode=mode, fn="at[].multiply"), self.array.weak_type)

  mul = multiply

  def divide(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
    """x with x[key] divided by values (integers give floats, as true division).

    >>> tnp.ones(2).at[0].divide(4.0)
    Array([0.25, 1.  ], dtype=float32)
    """
    x = self.array
    ones = UOp.const(x.dtype, 1, x.shape)
    den = Array(self._scatter(values, "mul", base=ones, mode=mode, fn="at[].divide"), x.weak_type)
    return elementwise(Ops.DIV, *_floats(x, den), fn="at[].divide")

  def power(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
    """x with x[key] raised to values (floats only)."""
    x = self.array
    if not x.dtype.is_float: raise TypeError(f"at[].power: needs a float array, got {x.dtype}; cast it first")
    ones = UOp.const(x.dtype, 1, x.shape)
    ex = Array(self._scatter(values, "mul", base=ones, mode=mode, fn="at[].power"), x.weak_type)
    return elementwise(Ops.POW, x, ex, fn="at[].power")

  def min(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
    """x with x[key] = minimum(x[key], values).

    >>> tnp.array([1, 5]).at[:].min(3)
    Array([1, 3], dtype=int32)
    """
    return Array(self._scatter(values, "min", mode=mode, fn="at[].min"), self.array.weak_type)

  def max(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
    """x with x[key] = maximum(x[key], values)."""
    return Array(self._scatter(values, "max", mode=mode, fn="at[].max"), self.array.weak_type)

  def apply(self, func, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
    """x with x[key] replaced by func(x[key]) (each distinct position once)."""
    return self.set(func(self.get(mode=mode)), mode=mode)


def _floats(*xs: Array) -> list[Array]:
  return [x if x.dtype.is_float else Array(x.uop.cast(dtypes.default_float()), x.weak_type) for x in xs]


def indexing_at(x: Array) -> _IndexUpdateHelper:
  """x.at: the helper behind x.at[key].set(v), .add, .multiply, .divide, .power, .min, .max, .get, .apply."""
  return _IndexUpdateHelper(x)


# ---- take and friends ----
def _index_arg(indices, fn: str):
  """Indices as a numpy int array (concrete) or a traced int Array."""
  if isinstance(indices, Array):
    if not indices.dtype.is_int:
      raise TypeError(f"{fn}: indices must be integers, got {indices.dtype}")
    return indices if indices.is_traced else np.asarray(indices)
  a = np.asarray(indices)
  if a.size == 0 and a.dtype.kind == "f": a = a.astype(np.int64)
  if a.dtype.kind not in "iu": raise TypeError(f"{fn}: indices must be integers, got {a.dtype}")
  return a


def _wrap_clip(idx, n: int, mode):
  """numpy's take modes applied to the raw indices: wrap -> i mod n, clip -> clamp (no negative indexing)."""
  if mode == "wrap":
    if isinstance(idx, np.ndarray): return np.mod(idx.astype(np.int64), n) if n else idx
    u = idx.uop.cast(_I32)
    nn = _c(n, u.shape)
    return Array(u.alu(Ops.MOD, nn).alu(Ops.ADD, nn).alu(Ops.MOD, nn))
  if mode == "clip":
    if isinstance(idx, np.ndarray): return np.clip(idx.astype(np.int64), 0, max(n - 1, 0))
    u = idx.uop.cast(_I32)
    return Array(u.alu(Ops.MAX, _c(0, u.shape)).alu(Ops.MIN, _c(max(n - 1, 0), u.shape)))
  return idx


def _take_mode(mode, idx, fn: str):
  if mode not in (None, "raise", "wrap", "clip", "fill", "promise_in_bounds"):
    raise ValueError(f"{fn}: mode must be one of 'raise', 'wrap', 'clip', 'fill', 'promise_in_bounds', got {mode!r}")
  if mode in ("wrap", "clip"): return None
  if mode == "raise" and isinstance(idx, Array):
    raise TypeError(f"{fn}: mode='raise' needs concrete indices; use mode='fill' or 'clip' with traced ones")
  if mode is None and isinstance(idx, Array): return "fill"  # JAX's default for traced indices
  return None if mode == "raise" else mode


def take(a, indices, axis: int | None = None, out=None, mode=None, unique_indices=False, indices_are_sorted=False,
         fill_value=None) -> Array:
  """Elements of `a` at `indices` along `axis` (the flattened array when axis is None).

  Concrete out-of-bounds indices raise IndexError (mode=None or 'raise'); traced ones read fill_value
  (NaN for floats) as JAX does; mode='wrap' and 'clip' follow numpy.

  >>> tnp.take(tnp.array([4, 5, 6]), [2, 0])
  Array([6, 4], dtype=int32)
  """
  if out is not None: raise NotImplementedError("take: the 'out' argument is not supported (arrays are immutable)")
  x = _arr(a, "take")
  if axis is None: x, axis = Array(x.uop.reshape((x.size,)), x.weak_type), 0
  axis = normalize_axis(axis, x.ndim, "take")
  idx = _index_arg(indices, "take")
  pmode = _take_mode(mode, idx, "take")
  idx = _wrap_clip(idx, x.shape[axis], mode)
  return _getitem(x, (slice(None),) * axis + (idx,), pmode, "take", fill_value)


def _along_key(arr: Array, idx, axis: int, fn: str):
  """arr broadcast against indices on every axis but `axis`, and the all-advanced key that indexes it."""
  ishape = np.shape(idx) if isinstance(idx, np.ndarray) else idx.shape
  if len(ishape) != arr.ndim:
    raise ValueError(f"{fn}: indices and arr must have the same number of dimensions, got {fmt(ishape)} and "
                     f"{fmt(arr.shape)}")
  other = broadcast_shapes(*(tuple(s[:axis] + s[axis + 1:]) for s in (arr.shape, ishape)), fn=fn)
  bshape = other[:axis] + (ishape[axis],) + other[axis:]
  ashape = other[:axis] + (arr.shape[axis],) + other[axis:]
  arr = Array(arr.uop.broadcast(ashape), arr.weak_type)
  key = []
  for d in range(arr.ndim):
    if d == axis: key.append(idx)
    else: key.append(np.arange(bshape[d]).reshape([-1 if j == d else 1 for j in range(arr.ndim)]))
  return arr, tuple(key)


def take_along_axis(arr, indices, axis: int | None, mode=None, fill_value=None) -> Array:
  """arr[..., indices, ...] matched element by element along `axis` (as np.take_along_axis).

  >>> x = tnp.array([[3, 1, 2]])
  >>> tnp.take_along_axis(x, tnp.argsort(x, axis=1), axis=1)
  Array([[1, 2, 3]], dtype=int32)
  """
  x = _arr(arr, "take_along_axis")
  idx = _index_arg(indices, "take_along_axis")
  if axis is None:
    if len(np.shape(idx) if isinstance(idx, np.ndarray) else idx.shape) != 1:
      raise ValueError("take_along_axis: with axis=None, indices must be 1-dimensional")
    x, axis = Array(x.uop.reshape((x.size,)), x.weak_type), 0
  axis = normalize_axis(axis, x.ndim, "take_along_axis")
  pmode = _take_mode(mode, idx, "take_along_axis")
  idx = _wrap_clip(idx, x.shape[axis], mode)
  x, key = _along_key(x, idx, axis, "take_along_axis")
  return _getitem(x, key, pmode, "take_along_axis", fill_value)


def put_along_axis(arr, indices, values, axis: int | None, inplace: bool = True, mode=None) -> Array:
  """arr with values written at indices along axis (as np.put_along_axis, but functional: pass inplace=False).

  >>> tnp.put_along_axis(tnp.zeros((1, 3)), tnp.array([[2]]), 9.0, axis=1, inplace=False)
  Array([[0., 0., 9.]], dtype=float32)
  """
  if inplace:
    raise ValueError("put_along_axis: tracegrad arrays are immutable; pass inplace=False and use the returned array")
  x = _arr(arr, "put_along_axis")
  idx = _index_arg(indices, "put_along_axis")
  flat = axis is None
  y = Array(x.uop.reshape((x.size,)), x.weak_type) if flat else x
  ax = 0 if flat else normalize_axis(axis, x.ndim, "put_along_axis")
  ishape = np.shape(idx) if isinstance(idx, np.ndarray) else idx.shape
  if len(ishape) != y.ndim:
    raise ValueError(f"put_along_axis: indices and arr must have the same number of dimensions, got {fmt(ishape)} "
                     f"and {fmt(y.shape)}")
  other = broadcast_shapes(*(tuple(s[:ax] + s[ax + 1:]) for s in (y.shape, ishape)), fn="put_along_axis")
  if other != y.shape[:ax] + y.shape[ax + 1:]:
    raise ValueError(f"put_along_axis: indices of shape {fmt(ishape)} do not fit arr of shape {fmt(y.shape)}")
  _, key = _along_key(y, idx, ax, "put_along_axis")
  out = _IndexUpdateRef(y, key).set(values, mode=mode)
  return Array(out.uop.reshape(x.shape), x.weak_type) if flat else out
