"""XLA's gather and scatter, as jax.lax.gather and jax.lax.scatter (set, add, sub, mul, min, max, apply), with their
dimension numbers and GatherScatterMode. Each becomes one GATHER or SCATTER primitive at a full index array: for
every element read or written, its index along each operand axis (a window's start from start_indices, clamped or
masked by the mode, plus the element's offset in the window).

>>> dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
>>> lax.gather(tnp.arange(10.0), tnp.array([[2], [7]]), dn, (1,))
Array([2., 7.], dtype=float32)
"""
from __future__ import annotations

import enum
from typing import Callable, NamedTuple, Sequence

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from ..ir.shapes import fmt
from . import float_math as fm
from .ops import _ints, _like, _weak_scalar

__all__ = ["GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode", "gather", "scatter",
           "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max", "scatter_apply"]

_I32 = dtypes.int32


class GatherDimensionNumbers(NamedTuple):
  """How lax.gather reads: the output axes of a slice's (offset_dims), the slice axes of size 1 left out
  (collapsed_slice_dims), the operand axis each index column addresses (start_index_map), and batch axes shared by
  operand and indices, as jax.lax.GatherDimensionNumbers."""
  offset_dims: tuple[int, ...]
  collapsed_slice_dims: tuple[int, ...]
  start_index_map: tuple[int, ...]
  operand_batching_dims: tuple[int, ...] = ()
  start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
  """How lax.scatter writes: the update axes of a window (update_window_dims), the operand axes of size 1 the window
  leaves out (inserted_window_dims), the operand axis each index column addresses (scatter_dims_to_operand_dims),
  and batch axes shared by operand and indices, as jax.lax.ScatterDimensionNumbers."""
  update_window_dims: tuple[int, ...]
  inserted_window_dims: tuple[int, ...]
  scatter_dims_to_operand_dims: tuple[int, ...]
  operand_batching_dims: tuple[int, ...] = ()
  scatter_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode(enum.Enum):
  """What gather and scatter do with windows out of bounds: CLIP clamps them in, FILL_OR_DROP fills (gather) or
  drops (scatter) them, PROMISE_IN_BOUNDS trusts they are not, as jax.lax.GatherScatterMode.

  >>> lax.GatherScatterMode.from_any("clip")
  <GatherScatterMode.CLIP: 0>
  """
  CLIP = 0
  FILL_OR_DROP = 1
  PROMISE_IN_BOUNDS = 2
  ONE_HOT = 3

  @staticmethod
  def from_any(s) -> "GatherScatterMode":
    if isinstance(s, GatherScatterMode): return s
    if s == "clip": return GatherScatterMode.CLIP
    if s is None or s in ("fill", "drop"): return GatherScatterMode.FILL_OR_DROP
    if s == "promise_in_bounds": return GatherScatterMode.PROMISE_IN_BOUNDS
    if s == "one_hot": return GatherScatterMode.ONE_HOT
    raise ValueError(f'Unknown gather mode "{s}"')


def _index_columns(idx: Array, fn: str) -> list[UOp]:
  if not idx.dtype.is_int: raise TypeError(f"{fn}: indices must be integers, got {idx.dtype}")
  if idx.ndim == 0: raise TypeError(f"{fn}: indices must have at least one axis (the index vector), got a scalar")
  u = idx.uop.cast(_I32) if idx.dtype is not _I32 else idx.uop
  lead = idx.shape[:-1]
  return [u.slice([(0, n, 1) for n in lead] + [(i, i + 1, 1)]).reshape(lead) for i in range(idx.shape[-1])]


def _starts(cols, index_map, batch_map, shape, sizes, batch_shape, mode, fn, drop=None):
  """Per operand axis: the window's start (batch_shape, int32), clamped in; and, where the mode is FILL_OR_DROP (or
  drop), whether each window lay in bounds."""
  if len(cols) != len(index_map):
    raise TypeError(f"{fn}: the index vector has {len(cols)} entries, but the dimension numbers map {len(index_map)}")
  ok, starts = None, []
  for d, (n, k) in enumerate(zip(shape, sizes)):
    if d in index_map:
      s = cols[index_map.index(d)]
      inside = fm.lt(s, 0).alu(Ops.XOR, fm.k(s, True, dtypes.bool_)).alu(Ops.AND, fm.lt(s, n - k + 1))
      ok = inside if ok is None else ok.alu(Ops.AND, inside)
      s = s.alu(Ops.MAX, fm.k(s, 0)).alu(Ops.MIN, fm.k(s, max(n - k, 0)))
    elif d in batch_map:
      s = UOp.iota(batch_shape, batch_map[d], _I32)
    else:
      s = UOp.const(_I32, 0, batch_shape)
    starts.append(s)
  if ok is None or mode not in (GatherScatterMode.FILL_OR_DROP, drop): ok = None
  return starts, ok


def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers, slice_sizes: Sequence[int], *,
           unique_indices: bool = False, indices_are_sorted: bool = False, mode=None, fill_value=None) -> Array:
  """The slices of operand of slice_sizes starting at start_indices (last axis: the index vector), laid out by
  dimension_numbers, as jax.lax.gather. Out-of-bounds windows are filled with fill_value (nan, the minimum or
  True by default) under mode 'fill', or clamped in under 'clip' and 'promise_in_bounds' (the default).

  >>> dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
  >>> lax.gather(tnp.arange(6).reshape(3, 2), tnp.array([[2], [0]]), dn, (1, 2))
  Array([[4, 5],
         [0, 1]], dtype=int32)
  """
  fn = "gather"
  x, idx = to_array(operand, fn=fn), to_array(start_indices, fn=fn)
  dn = dimension_numbers
  mode = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else GatherScatterMode.from_any(mode)
  sizes = _ints(slice_sizes, fn, "slice_sizes")
  if len(sizes) != x.ndim or any(not 0 <= k <= n for k, n in zip(sizes, x.shape)):
    raise TypeError(f"{fn}: slice_sizes {sizes} needs one size per axis of the operand's shape {fmt(x.shape)}, each "
                    f"within it")
  batch_shape = idx.shape[:-1]
  dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
  if any(sizes[d] != 1 for d in dropped):
    raise TypeError(f"{fn}: collapsed and batching slice dimensions must have size 1, got slice_sizes {sizes}")
  kept = [d for d in range(x.ndim) if d not in dropped]
  if len(kept) != len(dn.offset_dims):
    raise TypeError(f"{fn}: offset_dims {tuple(dn.offset_dims)} must name one output axis per kept slice axis "
                    f"({len(kept)})")
  batch_map = dict(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
  starts, ok = _starts(_index_columns(idx, fn), tuple(dn.start_index_map), batch_map, x.shape, sizes, batch_shape,
                       mode, fn)
  full = (*batch_shape, *sizes)
  nb = len(batch_shape)
  cols = [(s.reshape((*batch_shape, *(1,) * x.ndim)).broadcast(full) + UOp.iota(full, nb + d, _I32)).reshape((*full, 1))
          for d, s in enumerate(starts)]
  u = x.uop.gather(UOp.concat(cols, len(full))) if x.ndim else x.uop.broadcast(full)
  if ok is not None:
    fill = _fill(x, fill_value, fn)
    u = ok.reshape((*batch_shape, *(1,) * x.ndim)).broadcast(full).where(u, fill.uop.broadcast(full))
  u = u.reshape((*batch_shape, *(sizes[d] for d in kept)))
  out_rank = nb + len(kept)
  offset = sorted(dn.offset_dims)
  batch_pos = [i for i in range(out_rank) if i not in offset]
  perm = [0] * out_rank
  for j, p in enumerate(batch_pos): perm[p] = j
  for j, p in enumerate(offset): perm[p] = nb + j
  return Array(u.permute(perm), x.weak_type)


def _fill(x: Array, fill_value, fn: str) -> Array:
  if fill_value is not None:
    return _like(fill_value, x, fn) if _weak_scalar(fill_value) else to_array(fill_value, x.dtype)
  d = x.dtype
  if d.is_bool or d.is_float: v = True if d.is_bool else float("nan")
  else: v = dtypes.max_value(d) if d.is_unsigned else dtypes.min_value(d)
  return Array(UOp.const(d, v))


def _scatter_indices(x: Array, idx: Array, upd_shape, dn: ScatterDimensionNumbers, mode, fn: str) -> UOp:
  """(*upd_shape, ndim) int32: where each update element lands (an out-of-range index where it is dropped)."""
  window = [d for d in range(x.ndim) if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
  uw = list(dn.update_window_dims)
  if len(uw) != len(window):
    raise TypeError(f"{fn}: update_window_dims {tuple(uw)} must name one update axis per operand window axis "
                    f"({len(window)})")
  scatter_dims = [i for i in range(len(upd_shape)) if i not in uw]
  batch_shape = idx.shape[:-1]
  if tuple(upd_shape[i] for i in scatter_dims) != batch_shape:
    raise TypeError(f"{fn}: updates of shape {fmt(tuple(upd_shape))} must have the indices' batch shape "
                    f"{fmt(batch_shape)} on their scatter axes {tuple(scatter_dims)}")
  sizes = [upd_shape[uw[window.index(d)]] if d in window else 1 for d in range(x.ndim)]
  if any(k > n for k, n in zip(sizes, x.shape)):
    raise TypeError(f"{fn}: the update window {tuple(sizes)} does not fit the operand's shape {fmt(x.shape)}")
  batch_map = dict(zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims))
  # XLA's scatter skips windows out of bounds: so does PROMISE_IN_BOUNDS
  starts, ok = _starts(_index_columns(idx, fn), tuple(dn.scatter_dims_to_operand_dims), batch_map, x.shape, sizes,
                       batch_shape, mode, fn, GatherScatterMode.PROMISE_IN_BOUNDS)
  shape = tuple(upd_shape)
  place = lambda u: UOp(Ops.RESHAPE, u.dtype, (u,), tuple(
    upd_shape[i] if i in scatter_dims else 1 for i in range(len(shape)))).broadcast(shape) if len(shape) else u
  cols = []
  for d, s in enumerate(starts):
    c = place(s)
    if d in window: c = c + UOp.iota(shape, uw[window.index(d)], _I32)
    if ok is not None: c = place(ok).where(c, UOp.const(_I32, x.shape[d], shape))
    cols.append(c.reshape((*shape, 1)))
  return UOp.concat(cols, len(shape))


def _scatter(fn: str, how: str, operand, scatter_indices, updates, dimension_numbers, mode) -> Array:
  x, idx = to_array(operand, fn=fn), to_array(scatter_indices, fn=fn)
  u = _like(updates, x, fn) if _weak_scalar(updates) else to_array(updates, fn=fn)
  if u.dtype is not x.dtype:
    raise TypeError(f"{fn}: updates' dtype {u.dtype} differs from the operand's {x.dtype}; lax does not promote")
  mode = GatherScatterMode.from_any(mode)
  where = _scatter_indices(x, idx, u.shape, dimension_numbers, mode, fn)
  if x.ndim == 0: return x
  up = u.uop
  if how == "sub": how, up = "add", -up
  n = u.size
  out = x.uop.scatter(where.reshape((n, x.ndim)), up.reshape((n,)), how)
  return Array(out, x.weak_type and u.weak_type)


def scatter(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
            indices_are_sorted: bool = False, unique_indices: bool = False, mode=None) -> Array:
  """operand with updates written at scatter_indices (windows laid out by dimension_numbers), as jax.lax.scatter;
  out-of-bounds windows are dropped (mode 'fill' or 'drop', the default) or clamped in ('clip').

  >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
  ...                                  scatter_dims_to_operand_dims=(0,))
  >>> lax.scatter(tnp.zeros(4), tnp.array([[1], [3]]), tnp.array([5.0, 6.0]), dn)
  Array([0., 5., 0., 6.], dtype=float32)
  """
  return _scatter("scatter", "set", operand, scatter_indices, updates, dimension_numbers, mode)


def _variant(name: str, how: str, doc: str):
  def f(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
        indices_are_sorted: bool = False, unique_indices: bool = False, mode=None) -> Array:
    return _scatter(name, how, operand, scatter_indices, updates, dimension_numbers, mode)
  f.__name__ = f.__qualname__ = name
  f.__doc__ = doc
  return f


_DN = "  >>> dn = lax.ScatterDimensionNumbers((), (0,), (0,))\n"
scatter_add = _variant("scatter_add", "add", "operand with updates added at scatter_indices, as jax.lax.scatter_add."
                       "\n\n" + _DN + "  >>> lax.scatter_add(tnp.ones(3), tnp.array([[1], [1]]), tnp.ones(2), dn)\n"
                       "  Array([1., 3., 1.], dtype=float32)\n  ")
scatter_sub = _variant("scatter_sub", "sub", "operand with updates subtracted at scatter_indices, as "
                       "jax.lax.scatter_sub.\n\n" + _DN + "  >>> lax.scatter_sub(tnp.ones(2), tnp.array([[0]]), "
                       "tnp.ones(1), dn)\n  Array([0., 1.], dtype=float32)\n  ")
scatter_mul = _variant("scatter_mul", "mul", "operand multiplied by updates at scatter_indices, as "
                       "jax.lax.scatter_mul.\n\n" + _DN + "  >>> lax.scatter_mul(tnp.full(2, 3.0), tnp.array([[1]]), "
                       "tnp.full(1, 2.0), dn)\n  Array([3., 6.], dtype=float32)\n  ")
scatter_min = _variant("scatter_min", "min", "The minimum of operand and updates at scatter_indices, as "
                       "jax.lax.scatter_min.\n\n" + _DN + "  >>> lax.scatter_min(tnp.ones(2), tnp.array([[1]]), "
                       "tnp.zeros(1), dn)\n  Array([1., 0.], dtype=float32)\n  ")
scatter_max = _variant("scatter_max", "max", "The maximum of operand and updates at scatter_indices, as "
                       "jax.lax.scatter_max.\n\n" + _DN + "  >>> lax.scatter_max(tnp.ones(2), tnp.array([[1]]), "
                       "tnp.full(1, 2.0), dn)\n  Array([1., 2.], dtype=float32)\n  ")


def scatter_apply(operand, scatter_indices, func: Callable, dimension_numbers: ScatterDimensionNumbers, *,
                  update_shape: Sequence[int] = (), indices_are_sorted: bool = False, unique_indices: bool = False,
                  mode=None) -> Array:
  """operand with func applied to the elements at scatter_indices (windows of update_shape), as
  jax.lax.scatter_apply.

  >>> dn = lax.ScatterDimensionNumbers((), (0,), (0,))
  >>> lax.scatter_apply(tnp.arange(3.0), tnp.array([[2]]), lambda v: v * 10, dn, update_shape=(1,))
  Array([ 0.,  1., 20.], dtype=float32)
  """
  fn = "scatter_apply"
  x, idx = to_array(operand, fn=fn), to_array(scatter_indices, fn=fn)
  mode = GatherScatterMode.from_any(mode)
  where = _scatter_indices(x, idx, tuple(update_shape), dimension_numbers, mode, fn)
  vals = Array(x.uop.gather(where), x.weak_type)
  new = to_array(func(vals), x.dtype)
  n = new.size
  return Array(x.uop.scatter(where.reshape((n, x.ndim)), new.uop.reshape((n,)), "set"), x.weak_type)
