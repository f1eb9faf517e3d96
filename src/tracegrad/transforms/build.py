"""Small UOp compositions shared by the rule tables (the tables cannot use tracegrad.numpy, which sits above them)."""
from __future__ import annotations

import math

import numpy as np

from ..ir import Ops, UOp, dtypes

LN2 = math.log(2.0)


def const(like: UOp, value, dtype=None) -> UOp: return UOp.const(dtype or like.dtype, value, like.shape)
def zeros(like: UOp) -> UOp: return UOp.const(like.dtype, 0, like.shape)
def ones(like: UOp) -> UOp: return UOp.const(like.dtype, 1, like.shape)
def zeros_of(shape, dtype) -> UOp: return UOp.const(dtype, 0, shape)
def div(a: UOp, b: UOp) -> UOp: return a.alu(Ops.DIV, b)
def recip(a: UOp) -> UOp: return a.alu(Ops.RECIP)
def log(x: UOp) -> UOp: return x.alu(Ops.LOG2) * const(x, LN2)
def eq(a: UOp, b: UOp) -> UOp: return a.alu(Ops.CMPEQ, b)
def lt(a: UOp, b: UOp) -> UOp: return a.alu(Ops.CMPLT, b)
def as_float(c: UOp, like: UOp) -> UOp: return c.cast(like.dtype)


def add(a: UOp | None, b: UOp | None) -> UOp | None:
  """a + b where None stands for zero."""
  return b if a is None else a if b is None else a + b


def scale(t: UOp | None, x: UOp) -> UOp | None: return None if t is None else t * x
def neg(t: UOp | None) -> UOp | None: return None if t is None else -t
def instantiate(t: UOp | None, like: UOp) -> UOp: return zeros(like) if t is None else t


def trunc(x: UOp) -> UOp:
  return lt(x, zeros(x)).where(-(-x).alu(Ops.FLOOR), x.alu(Ops.FLOOR))


def sum_to(ct: UOp, shape) -> UOp:
  """ct summed over the axes that broadcasting `shape` to ct.shape added or stretched."""
  lead = ct.ndim - len(shape)
  axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and ct.shape[lead + i] != 1)
  return ct.reduce(Ops.REDUCE_SUM, axes).reshape(shape)


def moveaxis(u: UOp, src: int, dst: int) -> UOp:
  perm = [i for i in range(u.ndim) if i != src]
  perm.insert(dst, src)
  return u.permute(perm)


def _shift(x: UOp, k: int, fill) -> UOp:
  """x moved k places along its last axis, `fill` coming in at the front."""
  n = x.shape[-1]
  body = x.slice([(0, m, 1) for m in x.shape[:-1]] + [(0, n - k, 1)])
  front = UOp.const(x.dtype, fill, x.shape[:-1] + (k,))
  return UOp.concat([front, body], x.ndim - 1)


def exclusive_cumprod(x: UOp) -> UOp:
  """Along the last axis: out[i] = prod(x[:i]), by log-step doubling (exact when x has zeros)."""
  n = x.shape[-1]
  if n <= 1: return ones(x)
  p, k = x, 1
  while k < n:
    p = p * _shift(p, k, 1)
    k *= 2
  return _shift(p, 1, 1)


def prod_others(x: UOp, axes) -> UOp:
  """For each element, the product of the other elements of its reduction over `axes` (no division)."""
  keep = [i for i in range(x.ndim) if i not in axes]
  perm = keep + list(axes)
  xt = x.permute(perm)
  flat = xt.reshape(tuple(x.shape[i] for i in keep) + (math.prod(x.shape[i] for i in axes),))
  rev = flat.flip((flat.ndim - 1,))
  others = exclusive_cumprod(flat) * exclusive_cumprod(rev).flip((flat.ndim - 1,))
  inv = [perm.index(i) for i in range(x.ndim)]
  return others.reshape(xt.shape).permute(inv)


def chooser_weights(x: UOp, out: UOp) -> UOp:
  """Where x attains the reduced value `out` (keepdims shape), 1/(number of ties); elsewhere 0."""
  hit = as_float(eq(x, out.broadcast(x.shape)), x)
  axes = tuple(i for i, (a, b) in enumerate(zip(x.shape, out.shape)) if a != b)
  return hit * recip(hit.reduce(Ops.REDUCE_SUM, axes)).broadcast(x.shape)


def clamp_indices(idx: UOp, dims) -> UOp:
  """Integer indices (..., k) clamped into [0, dims[j]) column by column, as GATHER reads them."""
  hi = UOp.concat([UOp.const(idx.dtype, d - 1, (*idx.shape[:-1], 1)) for d in dims], idx.ndim - 1)
  lo = zeros(idx)
  return idx.alu(Ops.MAX, lo).alu(Ops.MIN, hi)


def in_range(idx: UOp, dims) -> UOp:
  """bool (...,): whether every column of the indices (..., k) lies in [0, dims[j]), as SCATTER writes them."""
  hi = UOp.buffer(np.asarray(dims, dtype=idx.dtype.np)).broadcast(idx.shape)
  ok = lt(idx, hi).alu(Ops.AND, lt(zeros(idx), idx).alu(Ops.OR, eq(idx, zeros(idx))))
  okf = ok.cast(dtypes.int32).reduce(Ops.REDUCE_MIN, (idx.ndim - 1,))
  return eq(okf, UOp.const(dtypes.int32, 1, okf.shape)).reshape(idx.shape[:-1])


def scatter_mul_others(x: UOp, idx: UOp, upd: UOp) -> UOp:
  """For each update of a multiplying SCATTER into x, the product of the other updates landing on its element
  (exact when some updates are zero: only nonzero updates are ever divided by)."""
  zero = eq(upd, zeros(upd))
  nonzero = zero.where(ones(upd), upd)
  prod = ones(x).scatter(idx, nonzero, "mul").gather(idx)
  n_zero = zeros(x).scatter(idx, as_float(zero, upd), "add").gather(idx)
  none_other = eq(n_zero, zeros(n_zero))
  one_zero = eq(n_zero, ones(n_zero))
  return zero.where(one_zero.where(prod, zeros(upd)), none_other.where(div(prod, nonzero), zeros(upd)))


# ---- matrices (the last two axes; leading axes batch) ----

def mT(u: UOp) -> UOp: return u.permute((*range(u.ndim - 2), u.ndim - 1, u.ndim - 2))


def matmul(a: UOp, b: UOp) -> UOp:
  """a @ b over the last two axes, the leading axes equal."""
  *batch, m, k = a.shape
  n = b.shape[-1]
  full = (*batch, m, k, n)
  prod = a.reshape((*batch, m, k, 1)).broadcast(full) * b.reshape((*batch, 1, k, n)).broadcast(full)
  return prod.reduce(Ops.REDUCE_SUM, (len(batch) + 1,)).reshape((*batch, m, n))


def triangle(u: UOp, lower: bool, k: int = 0) -> UOp:
  """u with the entries outside its lower (j <= i + k) or upper (j >= i + k) triangle zeroed."""
  rows, cols = UOp.iota(u.shape, u.ndim - 2, dtypes.int32), UOp.iota(u.shape, u.ndim - 1, dtypes.int32)
  shifted = rows + UOp.const(dtypes.int32, k, u.shape)
  keep = lt(shifted, cols).alu(Ops.CMPEQ, UOp.const(dtypes.bool_, False, u.shape)) if lower else \
    lt(cols, shifted).alu(Ops.CMPEQ, UOp.const(dtypes.bool_, False, u.shape))
  return keep.where(u, zeros(u))
