"""Collectives over named axes, as jax.lax.psum and friends: inside vmap(f, axis_name="i") each lane of the mapped
axis is one participant, and lax.psum(x, "i") gives every lane the sum over all lanes. The same primitives are what
shard_map's per-device programs exchange.

>>> tracegrad.vmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(tnp.arange(1.0, 4.0))
Array([0.16666667, 0.33333334, 0.5       ], dtype=float32)
"""
from __future__ import annotations

import math

from .. import tree as tree_util
from ..array import Array, device_put, to_array
from ..ir import Ops, UOp, dtypes
from ..parallel.sharding import NamedSharding
from ..trace import axis_size as _size
from ..transforms.vmap import _per_leaf
from .ops import convert_element_type, normalize_axis

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "all_to_all", "axis_index",
           "with_sharding_constraint"]

def _names(axis_name) -> tuple[str, ...]: return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _all_reduce(x, axis_name, kind: str, fn: str):
  def one(leaf):
    a = to_array(leaf, fn=fn)
    if a.dtype is dtypes.bool_: a = convert_element_type(a, dtypes.int32)
    for name in _names(axis_name):
      a = Array(UOp(Ops.ALL_REDUCE, a.dtype, (a.uop,), (name, _size(name, fn), kind)), a.weak_type)
    return a
  return tree_util.map(one, x)


def psum(x, axis_name):
  """The sum of x over the lanes of axis_name (a name or a tuple of names), on every lane; x may be a pytree."""
  return _all_reduce(x, axis_name, "sum", "psum")


def pmax(x, axis_name):
  """The maximum of x over the lanes of axis_name, on every lane."""
  return _all_reduce(x, axis_name, "max", "pmax")


def pmin(x, axis_name):
  """The minimum of x over the lanes of axis_name, on every lane."""
  return _all_reduce(x, axis_name, "min", "pmin")


def pmean(x, axis_name):
  """The mean of x over the lanes of axis_name, on every lane."""
  n = math.prod(_size(name, "pmean") for name in _names(axis_name))
  return tree_util.map(lambda s: s / n, psum(x, axis_name))


def all_gather(x, axis_name: str, *, axis: int = 0, tiled: bool = False):
  """Every lane's x, stacked on a new axis `axis` (tiled: concatenated along it), on every lane."""
  size = _size(axis_name, "all_gather")

  def one(leaf):
    a = to_array(leaf, fn="all_gather")
    ax = normalize_axis(axis, a.ndim + (not tiled), "all_gather")
    return Array(UOp(Ops.ALL_GATHER, a.dtype, (a.uop,), (axis_name, size, ax, bool(tiled))), a.weak_type)
  return tree_util.map(one, x)


def psum_scatter(x, axis_name: str, *, scatter_dimension: int = 0, tiled: bool = False):
  """The sum over lanes of x, lane i keeping block i of dimension scatter_dimension (untiled: that dimension must
  have one entry per lane, and is removed)."""
  size = _size(axis_name, "psum_scatter")

  def one(leaf):
    a = to_array(leaf, fn="psum_scatter")
    ax = normalize_axis(scatter_dimension, a.ndim, "psum_scatter", "scatter_dimension")
    n = a.shape[ax]
    if (tiled and n % size) or (not tiled and n != size):
      raise ValueError(f"psum_scatter: dimension {ax} of shape {a.shape} has size {n}; over the {size} lanes of "
                       f"{axis_name!r} it must {'divide by' if tiled else 'equal'} {size}")
    return Array(UOp(Ops.REDUCE_SCATTER, a.dtype, (a.uop,), (axis_name, size, ax, bool(tiled))), a.weak_type)
  return tree_util.map(one, x)


def ppermute(x, axis_name: str, perm):
  """Lane dst receives lane src's x for each (src, dst) in perm; lanes that receive nothing get zeros."""
  size = _size(axis_name, "ppermute")
  pairs = tuple((int(s), int(d)) for s, d in perm)
  srcs, dsts = [s for s, _ in pairs], [d for _, d in pairs]
  if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts) or not all(0 <= i < size for i in srcs + dsts):
    raise ValueError(f"ppermute: perm must pair distinct sources with distinct destinations in [0, {size}) for axis "
                     f"{axis_name!r}, got {list(pairs)}")

  def one(leaf):
    a = to_array(leaf, fn="ppermute")
    return Array(UOp(Ops.PPERMUTE, a.dtype, (a.uop,), (axis_name, size, pairs)), a.weak_type)
  return tree_util.map(one, x)


def all_to_all(x, axis_name: str, split_axis: int, concat_axis: int, *, tiled: bool = False):
  """Lane j gets block j of every lane's x along split_axis, the blocks put together in lane order along
  concat_axis. Untiled, x.shape[split_axis] must equal the number of lanes: that axis is removed and the lanes'
  axis is inserted at concat_axis; tiled, split_axis is divided by the number of lanes and concat_axis multiplied
  by it."""
  size = _size(axis_name, "all_to_all")

  def one(leaf):
    a = to_array(leaf, fn="all_to_all")
    split = normalize_axis(split_axis, a.ndim, "all_to_all", "split_axis")
    concat = normalize_axis(concat_axis, a.ndim, "all_to_all", "concat_axis")
    n = a.shape[split]
    if (tiled and n % size) or (not tiled and n != size):
      raise ValueError(f"all_to_all: dimension {split} of shape {a.shape} has size {n}; over the {size} lanes of "
                       f"{axis_name!r} it must {'divide by' if tiled else 'equal'} {size}")
    u = a.uop
    if not tiled:   # a new axis of 1 that becomes the lanes' axis at concat once the split axis is dropped
      at = concat if concat <= split else concat + 1
      u = u.reshape(u.shape[:at] + (1,) + u.shape[at:])
      split, concat = split + (at <= split), at
    u = UOp(Ops.ALL_TO_ALL, a.dtype, (u,), (axis_name, size, split, concat))
    if not tiled: u = u.reshape(u.shape[:split] + u.shape[split + 1:])
    return Array(u, a.weak_type)
  return tree_util.map(one, x)


def axis_index(axis_name: str) -> Array:
  """This lane's index along axis_name, an int32 scalar."""
  return Array(UOp(Ops.AXIS_INDEX, dtypes.int32, (), (axis_name, _size(axis_name, "axis_index"))))


def with_sharding_constraint(x, shardings):
  """x (a pytree), to be laid out by `shardings` (a NamedSharding, or a pytree prefix of x holding them) wherever a
  sharded jit partitions the program; on a concrete value, device_put(x, shardings). The value is unchanged.

  >>> mesh = tracegrad.sharding.Mesh(tracegrad.devices()[:1], ("i",))
  >>> s = tracegrad.sharding.NamedSharding(mesh, tracegrad.sharding.P("i"))
  >>> tracegrad.jit(lambda v: lax.with_sharding_constraint(v * 2, s))(tnp.ones(2)).sharding == s
  True
  """
  leaves, tree = tree_util.flatten(x)
  given = _per_leaf(shardings, x, NamedSharding,
                    f"with_sharding_constraint: shardings {shardings!r} is not a tree prefix of x")
  out = []
  for leaf, s in zip(leaves, given):
    if not isinstance(s, NamedSharding):
      raise TypeError(f"with_sharding_constraint: shardings must be NamedShardings, got {s!r}")
    a = to_array(leaf, fn="with_sharding_constraint")
    s.check(a.shape, "with_sharding_constraint")
    out.append(Array(UOp(Ops.SHARDING_CONSTRAINT, a.dtype, (a.uop,), s), a.weak_type) if a.is_traced else
               device_put(a, s))
  return tree_util.unflatten(tree, out)
