"""Sorting, as jax.lax: sort (of several operands by their first num_keys, stable), sort_key_val, top_k and
approx_max_k / approx_min_k (exact here). There is no sort primitive: a bitonic network of compare-exchange steps
(one scan over the steps) on the sorted axis, moved last and padded to a power of two, sorts the keys with an iota;
the operands are gathered at the iota's sorted order. Floats sort as JAX's: -0.0 ties with 0.0 and every NaN comes
last; top_k orders them in the total order (-nan < -inf < ... < -0.0 < 0.0 < ... < inf < nan). Keys are compared as
integers made from their bits, with an iota breaking ties (the sort is stable); a key of at most 32 bits and its
index are packed into one int64, so that each step compares one number.

>>> lax.sort(tnp.array([3.0, tnp.nan, -1.0, 2.0]))
Array([-1.,  2.,  3., nan], dtype=float32)
"""
from __future__ import annotations

import math
import operator
from typing import Sequence

import numpy as np

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from ..ir.shapes import fmt
from . import float_math as fm
from .control import scan, switch
from .ops import normalize_axis

__all__ = ["sort", "sort_key_val", "top_k", "approx_max_k", "approx_min_k"]

_I32 = dtypes.int32


def _order_key(u: UOp) -> UOp:
  """An integer array ordered as u in the total order."""
  if u.dtype.is_bool: return u.cast(dtypes.int8)
  if not u.dtype.is_float: return u
  it = fm.sint(u.dtype)
  s = u.bitcast(it)
  return fm.lt(s, 0).where(s.alu(Ops.XOR, fm.k(s, dtypes.max_value(it))), s)


def _canonical(u: UOp) -> UOp:
  """u with -0.0 as 0.0 and every NaN as +NaN, so that a sort keeps them in their order (as JAX's sort does)."""
  if not u.dtype.is_float: return u
  zero = fm.k(u, 0)
  u = fm.eq(u, zero).where(zero, u)
  return u.alu(Ops.CMPNE, u).where(fm.k(u, float("nan")), u)


def sort_key(u: UOp) -> UOp:
  """An integer array ordered as JAX's sort orders u (and numpy's: NaN last, -0.0 tied with 0.0)."""
  return _order_key(_canonical(u))


def packed(key: UOp, idx: UOp) -> UOp | None:
  """(key, idx) as one int64 that orders as the pair does, lexicographically: key (an integer of at most 32 bits,
  ordered as a signed 32-bit number) times 2^32 plus idx (a non-negative int32), so that a sorting network compares
  one number, by MIN and MAX, rather than a pair; None for a wider key. unpacked_index undoes it."""
  if key.dtype.itemsize > 4: return None
  hi = key.cast(dtypes.int64)
  if key.dtype == dtypes.uint32: hi = fm.sub(hi, 1 << 31)
  return fm.add(fm.mul(hi, 1 << 32), idx.cast(dtypes.int64))


def unpacked_index(p: UOp) -> UOp:
  """The int32 index held in a packed key's low half."""
  return p.alu(Ops.AND, fm.k(p, (1 << 32) - 1)).cast(_I32)


def padded(u: UOp, m: int, value) -> UOp:
  """u's last axis lengthened to m with `value`."""
  n = u.shape[-1]
  return u if m == n else UOp.concat([u, UOp.const(u.dtype, value, (*u.shape[:-1], m - n))], u.ndim - 1)


def cut(u: UOp, n: int) -> UOp:
  """u's last axis shortened to its first n entries (padded's inverse)."""
  return u.slice([(0, d, 1) for d in u.shape[:-1]] + [(0, n, 1)])


def min_max(a, b):
  """The compare-exchange of single numbers (no ties to break: equal ones are alike)."""
  return [a[0].alu(Ops.MIN, b[0])], [a[0].alu(Ops.MAX, b[0])]


def _masks(m: int) -> list[int]:
  """The partner masks of a bitonic network over m entries (a power of two), step by step: each stage's first step
  pairs entry i with its mirror in a block of s (i ^ (s - 1)), the rest with the entry j away (i ^ j), so that every
  step puts each pair in ascending order."""
  masks, s = [], 2
  while s <= m:
    masks += [s - 1] + _halvings(s)
    s *= 2
  return masks


def _halvings(s: int) -> list[int]:
  """The masks s/4, s/8, ..., 1: the steps that sort each half of a block of s whose halves are bitonic."""
  return [s >> k for k in range(2, s.bit_length())]


LANES = 8   # a network step reads its partners a block of this many entries at a time, or held lanes-first
TURN_MAX = 1 << 12   # rows longer than this gather near partners entry by entry: turning them costs more than it saves


def network(xs: list[UOp], exchange, masks: list[int] | None = None) -> list[UOp]:
  """xs sorted along their last axis (a power of two) by a bitonic network; exchange(a, b) -> (lo, hi) puts each
  pair of tuples in order. The network is one loop (a scan over its partner masks, _masks(m) unless given), so that
  the graph and its compile stay the same size for any length. A switch picks each step's kind, so that every step
  reads its partners a vector at a time: with the row seen as blocks of LANES, a partner LANES or more entries away
  is the same lane of another block (lanes reversed for a mirror mask); for a run of nearer partners the row is first
  turned lanes-first (each lane's entries of every block together), where they are in another lane, and turned back
  after the run (in a row of up to TURN_MAX entries; a longer one gathers them)."""
  *lead, m = xs[0].shape
  masks = _masks(m) if masks is None else masks
  if not masks: return xs
  rows, lanes = math.prod(lead), min(LANES, m)
  blocks = m // lanes
  far, mirrored, near, across, back, gathered = range(6)
  plan, turned = [], False
  for mk in masks:
    if mk < lanes and m > TURN_MAX:
      plan.append((gathered, mk))
      continue
    if (mk < lanes) != turned:
      plan.append((back if turned else across, 0))
      turned = not turned
    plan.append((near, mk) if turned else (mirrored if mk % lanes else far, mk // lanes))
  if turned: plan.append((back, 0))

  def exchanged(outer: int, inner: int, mirror: bool):
    """The step on the row seen as (outer, inner): partners in the outer entry `jump` away by XOR, the same inner
    entry (or its mirror)."""
    def step(jump, *carry):
      us = [c.uop.reshape((rows, outer, inner)) for c in carry]
      b = UOp.iota((rows, outer), 1, _I32)
      partner = b.alu(Ops.XOR, jump.uop.reshape((1, 1)).broadcast((rows, outer)))
      at = UOp.concat([UOp.iota((rows, outer, 1), 0, _I32), partner.reshape((rows, outer, 1))], 2)
      theirs = [u.gather(at) for u in us]
      if mirror: theirs = [t.flip((2,)) for t in theirs]
      lo, hi = exchange(us, theirs)
      lower = b.alu(Ops.CMPLT, partner).reshape((rows, outer, 1)).broadcast(us[0].shape)
      return [Array(lower.where(a, h).reshape((rows, m))) for a, h in zip(lo, hi)]
    return step

  def turn(outer: int, inner: int):
    """The row seen as (outer, inner) transposed."""
    def step(jump, *carry):
      return [Array(c.uop.reshape((rows, outer, inner)).permute((0, 2, 1)).reshape((rows, m))) for c in carry]
    return step

  branches = [exchanged(blocks, lanes, False), exchanged(blocks, lanes, True), exchanged(lanes, blocks, False),
              turn(blocks, lanes), turn(lanes, blocks), exchanged(m, 1, False)]

  def step(carry, row):
    which, jump = (Array(row.uop.slice([(j, j + 1, 1)]).reshape(())) for j in (0, 1))
    return list(switch(which, branches, jump, *carry)), None

  out, _ = scan(step, [Array(x.detach().reshape((rows, m))) for x in xs], Array(UOp.buffer(np.array(plan, np.int32))))
  return [o.uop.reshape(x.shape) for o, x in zip(out, xs)]


def take_last(u: UOp, idx: UOp) -> UOp:
  """u's entries at idx (int32) along the last axis, as take_along_axis (idx's shape, u's leading axes)."""
  *lead, k = idx.shape
  at = [UOp.iota((*lead, k, 1), j, _I32) for j in range(len(lead))] + [idx.reshape((*lead, k, 1))]
  return u.gather(UOp.concat(at, len(lead) + 1))


def _by_keys(nkeys: int):
  """The exchange of tuples ordered by their first nkeys entries, then by the next (an iota: stable)."""
  def exchange(a, b):
    swap, tie = None, None
    for ka, kb in zip(a[:nkeys + 1], b[:nkeys + 1]):
      less = kb.alu(Ops.CMPLT, ka)
      step = less if tie is None else tie.alu(Ops.AND, less)
      swap = step if swap is None else swap.alu(Ops.OR, step)
      same = kb.alu(Ops.CMPEQ, ka)
      tie = same if tie is None else tie.alu(Ops.AND, same)
    return [swap.where(y, x) for x, y in zip(a, b)], [swap.where(x, y) for x, y in zip(a, b)]
  return exchange


def _sorted(us: list[UOp], keys: list[UOp]) -> list[UOp]:
  """us (last axis sorted) in the order of the integer keys, stable."""
  *lead, n = us[0].shape
  if n <= 1: return us
  m = 1 << (n - 1).bit_length()
  idx = UOp.iota(us[0].shape, len(lead), _I32)

  if len(keys) == 1 and (p := packed(keys[0], idx)) is not None:
    order = unpacked_index(cut(network([padded(p, m, dtypes.max_value(p.dtype))], min_max)[0], n))
  else:   # padding sorts last: every key at its maximum, and the iota beyond n
    xs = [padded(k, m, dtypes.max_value(k.dtype)) for k in keys] + [padded(idx, m, n)]
    order = cut(network(xs, _by_keys(len(keys)))[-1], n)
  return [take_last(u, order) for u in us]


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
  """operand (or a sequence of operands of one shape, sorted together by the first num_keys) sorted along
  dimension, as jax.lax.sort.

  >>> lax.sort((tnp.array([2, 1, 2]), tnp.array([0, 1, 2])), num_keys=1)
  (Array([1, 2, 2], dtype=int32), Array([1, 0, 2], dtype=int32))
  """
  fn = "sort"
  single = not isinstance(operand, (tuple, list))
  arrs = [to_array(o, fn=fn) for o in ([operand] if single else operand)]
  if not arrs: raise ValueError(f"{fn}: needs at least one operand")
  if any(a.shape != arrs[0].shape for a in arrs):
    raise TypeError(f"{fn}: the operands must have one shape, got {', '.join(fmt(a.shape) for a in arrs)}")
  if not 1 <= operator.index(num_keys) <= len(arrs):
    raise ValueError(f"{fn}: num_keys must be in [1, {len(arrs)}], got {num_keys}")
  if arrs[0].ndim == 0: raise TypeError(f"{fn}: cannot sort a scalar")
  ax = normalize_axis(dimension, arrs[0].ndim, fn, "dimension")
  perm = [i for i in range(arrs[0].ndim) if i != ax] + [ax]
  inv = [perm.index(i) for i in range(len(perm))]
  us = [a.uop.permute(perm) for a in arrs]
  keys = [sort_key(u) for u in us[:num_keys]]
  out = [Array(u.permute(inv), a.weak_type) for u, a in zip(_sorted(us, keys), arrs)]
  return out[0] if single else tuple(out)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True) -> tuple[Array, Array]:
  """keys sorted along dimension, and values in the same order, as jax.lax.sort_key_val.

  >>> lax.sort_key_val(tnp.array([3, 1, 2]), tnp.array([0, 1, 2]))
  (Array([1, 2, 3], dtype=int32), Array([1, 2, 0], dtype=int32))
  """
  return sort((keys, values), dimension, is_stable, 1)


def top_k(operand, k: int, *, axis: int = -1) -> list[Array]:
  """The k largest entries along axis, largest first (ties: the lower index first), and their int32 indices, as
  jax.lax.top_k (a list of the two, as JAX's).

  >>> lax.top_k(tnp.array([1.0, 4.0, 2.0, 4.0]), 2)
  [Array([4., 4.], dtype=float32), Array([1, 3], dtype=int32)]
  """
  return _best("top_k", operand, k, axis, _order_key)


def _reversed(key: UOp) -> UOp:
  """An integer key in the opposite order."""
  return key.alu(Ops.XOR, fm.k(key, -1 if not key.dtype.is_unsigned else dtypes.max_value(key.dtype)))


def _best(fn: str, operand, k: int, axis: int, keyed) -> list[Array]:
  """The k entries along axis with the greatest keyed(u) (ties: the lower index first), and their int32 indices."""
  a = to_array(operand, fn=fn)
  if a.ndim == 0: raise TypeError(f"{fn}: operand must have at least one axis, got a scalar")
  ax = normalize_axis(axis, a.ndim, fn)
  k = operator.index(k)
  if not 0 <= k <= a.shape[ax]:
    raise ValueError(f"{fn}: k must be in [0, {a.shape[ax]}] (the size of axis {ax} of shape {fmt(a.shape)}), got {k}")
  perm = [i for i in range(a.ndim) if i != ax] + [ax]
  inv = [perm.index(i) for i in range(len(perm))]
  u = a.uop.permute(perm)
  key = keyed(u)
  first = _reversed(key)   # ascending: the best first
  if k <= PASSES_K: vals, idx = _top_by_passes(u, key, k)
  elif (p := packed(first, UOp.iota(u.shape, u.ndim - 1, _I32))) is not None: vals, idx = _top_by_merges(u, p, k)
  else:
    vals, idx = _sorted([u, UOp.iota(u.shape, u.ndim - 1, _I32)], [first])
    vals, idx = cut(vals, k), cut(idx, k)
  return [Array(vals.permute(inv), a.weak_type), Array(idx.permute(inv))]


PASSES_K = 16   # top_k of at most this many entries takes them one pass over the last axis each; more merge blocks


def _top_by_merges(u: UOp, p: UOp, k: int) -> tuple[UOp, UOp]:
  """The k entries along u's last axis with the least packed keys p, and their indices: the row, padded to m entries,
  cut into blocks of b (the power of two from k) that a network sorts; then, until one block is left, each pair of
  blocks becomes the b least of their entries (the lesser of each entry and its mirror in the other block: a bitonic
  sequence), sorted by a network's last log2(b) steps. About half the work of sorting the row when k is small beside
  it."""
  *lead, n = u.shape
  rows, m, b = math.prod(lead), 1 << (n - 1).bit_length(), 1 << (k - 1).bit_length()
  x = network([padded(p, m, dtypes.max_value(p.dtype)).reshape((rows * m // b, b))], min_max)[0]
  while x.shape[0] > rows:
    pairs = x.reshape((x.shape[0] // 2, 2, b))
    first, second = (pairs.slice([(0, pairs.shape[0], 1), (h, h + 1, 1), (0, b, 1)]).reshape((pairs.shape[0], b))
                     for h in (0, 1))
    x = network([first.alu(Ops.MIN, second.flip((1,)))], min_max, _halvings(2 * b))[0]
  idx = unpacked_index(x.slice([(0, rows, 1), (0, k, 1)]).reshape((*lead, k)))
  return take_last(u, idx), idx


def _top_by_passes(u: UOp, key: UOp, k: int) -> tuple[UOp, UOp]:
  """The k entries along u's last axis with the greatest integer key and their int32 indices: each the greatest
  (the first of equals) among those after the one before, found by a max and a min reduction; the values gathered
  at their indices (so that gradients flow to them)."""
  *lead, n = u.shape
  last = u.ndim - 1
  if k == 0 or n == 0: return UOp.const(u.dtype, 0, (*lead, k)), UOp.const(_I32, 0, (*lead, k))
  i = UOp.iota(u.shape, last, _I32)
  low, none = fm.k(key, dtypes.min_value(key.dtype)), fm.k(i, n)
  picks, left = [], None   # left: the entries after the last pick
  for _ in range(k):
    best = (key if left is None else left.where(key, low)).reduce(Ops.REDUCE_MAX, (last,)).broadcast(u.shape)
    same = fm.eq(key, best) if left is None else fm.eq(key, best).alu(Ops.AND, left)
    pick = same.where(i, none).reduce(Ops.REDUCE_MIN, (last,))
    picks.append(pick)
    left = fm.lt(key, best).alu(Ops.OR, fm.eq(key, best).alu(Ops.AND, fm.gt(i, pick.broadcast(u.shape))))
  idx = UOp.concat(picks, last)
  return take_last(u, idx), idx


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True) -> list[Array]:
  """The k largest entries along reduction_dimension and their indices, as jax.lax.approx_max_k (exact here: top_k's).

  >>> lax.approx_max_k(tnp.array([1.0, 4.0, 2.0]), 1)
  [Array([4.], dtype=float32), Array([1], dtype=int32)]
  """
  return top_k(operand, k, axis=reduction_dimension)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True) -> list[Array]:
  """The k smallest entries along reduction_dimension and their indices, as jax.lax.approx_min_k (exact here: the
  first k of sort's order, NaN last, -0.0 tied with 0.0, ties in index order).

  >>> lax.approx_min_k(tnp.array([1.0, 4.0, 2.0]), 2)
  [Array([1., 2.], dtype=float32), Array([0, 2], dtype=int32)]
  """
  return _best("approx_min_k", operand, k, reduction_dimension, lambda u: _reversed(sort_key(u)))
