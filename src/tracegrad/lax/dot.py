"""Contractions, as jax.lax: dot_general (batch and contracting dimensions), dot and batch_matmul, and the Precision
enum every contraction and convolution accepts. A contraction is one broadcast product summed over the contracted axes
(half floats accumulate in float32), kept whole as a composite named dot_general in traced graphs.

Precision matters where JAX's does, on a GPU: there a float32 contraction at DEFAULT or HIGH precision (the call's, else
jax_default_matmul_precision's) rounds its operands to TensorFloat-32 (10 fraction bits) and sums in float32, which
the CUDA device runs on tensor cores; HIGHEST keeps float32. On the CPU every precision gives float32's result.

>>> lax.dot_general(tnp.ones((2, 3)), tnp.ones((3, 4)), (((1,), (0,)), ((), ()))).shape
(2, 4)
"""
from __future__ import annotations

import enum
from typing import Sequence, Tuple

from ..array import Array, to_array
from ..config import config
from ..ir import Ops, UOp, composite, dtypes
from ..ir.shapes import fmt
from .ops import _ints

__all__ = ["Precision", "PrecisionLike", "DotDimensionNumbers", "dot_general", "dot", "batch_matmul",
           "check_precision", "tensorfloat32", "tf32"]


class Precision(enum.Enum):
  """The precision of a contraction on accelerators, as jax.lax.Precision (also from names such as 'highest',
  'float32' or 'bfloat16'). Only float32 contractions on CUDA depend on it: TensorFloat-32 operands at DEFAULT and
  HIGH, float32 at HIGHEST (tensorfloat32).

  >>> lax.Precision("highest")
  Precision.HIGHEST
  """
  DEFAULT = 0
  HIGH = 1
  HIGHEST = 2

  @classmethod
  def _missing_(cls, value):
    names = {"default": 0, "fastest": 0, "bfloat16": 0, "high": 1, "bfloat16_3x": 1, "tensorfloat32": 1,
             "highest": 2, "float32": 2}
    if isinstance(value, str) and value.lower() in names: return cls(names[value.lower()])
    return None

  def __str__(self) -> str: return self.name
  def __repr__(self) -> str: return f"Precision.{self.name}"


PrecisionLike = "None | str | Precision | tuple[str, str] | tuple[Precision, Precision]"
DotDimensionNumbers = Tuple[Tuple[Sequence[int], Sequence[int]], Tuple[Sequence[int], Sequence[int]]]


def check_precision(precision, fn: str) -> None:
  """precision as jax.lax accepts it (None, a Precision or its name, or a pair of them), else a ValueError."""
  if precision is None: return
  pair = precision if isinstance(precision, (tuple, list)) else (precision,)
  if len(pair) not in (1, 2):
    raise ValueError(f"{fn}: precision must be None, a Precision or a pair of them, got {precision!r}")
  for p in pair:
    if p is None or isinstance(p, Precision): continue
    try:
      Precision(p)
    except ValueError:
      raise ValueError(f"{fn}: precision {p!r} is not a lax.Precision or one of its names") from None


def _tensor_cores() -> bool:
  """Whether contractions run where float32's default is TensorFloat-32: a CUDA device, as XLA's GPUs."""
  from ..run import default_backend
  return default_backend() == "cuda"


def tensorfloat32(precision, dtype) -> bool:
  """Whether a contraction of `dtype` operands at `precision` (None: jax_default_matmul_precision's) rounds them to
  TensorFloat-32: float32 at DEFAULT or HIGH on a device with tensor cores, as JAX on a GPU."""
  if dtype is not dtypes.float32 or not _tensor_cores(): return False
  if precision is None: precision = config.read("jax_default_matmul_precision")
  if precision is None: return True
  pair = precision if isinstance(precision, (tuple, list)) else (precision,)
  return all(Precision(p) is not Precision.HIGHEST for p in pair if p is not None)


def tf32(u: UOp) -> UOp:
  """u (float32) rounded to TensorFloat-32, to nearest (ties to even), its derivative taken as 1."""
  from .misc import reduce_precision
  return reduce_precision(Array(u), exponent_bits=8, mantissa_bits=10).uop


def _contract(x: UOp, y: UOp, *, xl: tuple, yl: tuple, out: tuple) -> UOp:
  """x (axes labelled xl) times y (labelled yl), summed over the labels not in out, axes in out's order."""
  size = dict(zip(xl, x.shape)) | dict(zip(yl, y.shape))
  full = [*out, *(l for l in dict.fromkeys([*xl, *yl]) if l not in out)]
  shape = tuple(size[l] for l in full)

  def place(u: UOp, ls: tuple) -> UOp:
    perm = sorted(range(len(ls)), key=lambda i: full.index(ls[i]))
    own = dict(zip(ls, u.shape))
    return u.permute(perm).reshape(tuple(own.get(l, 1) for l in full)).broadcast(shape)

  p = place(x, xl).alu(Ops.AND if x.dtype.is_bool else Ops.MUL, place(y, yl))
  red = tuple(range(len(out), len(full)))
  return p.reduce(Ops.REDUCE_MAX if x.dtype.is_bool else Ops.REDUCE_SUM, red).reshape(shape[:len(out)])


def dot_general(lhs, rhs, dimension_numbers: DotDimensionNumbers, precision=None, preferred_element_type=None,
                out_sharding=None) -> Array:
  """The contraction of lhs and rhs over ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)): the result
  has the batch axes, then lhs's free axes, then rhs's, as jax.lax.dot_general. Mixed dtypes promote; the sum is
  taken in preferred_element_type when given.

  >>> lax.dot_general(tnp.ones((5, 2, 3)), tnp.ones((5, 3)), (((2,), (1,)), ((0,), (0,)))).shape
  (5, 2)
  """
  fn = "dot_general"
  check_precision(precision, fn)
  x, y = to_array(lhs, fn=fn), to_array(rhs, fn=fn)
  try:
    (xc, yc), (xb, yb) = dimension_numbers
  except (TypeError, ValueError):
    raise TypeError(f"{fn}: dimension_numbers must be ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)), "
                    f"got {dimension_numbers!r}") from None
  xc, yc, xb, yb = (_ints(d, fn, "dimension_numbers") for d in (xc, yc, xb, yb))
  for dims, a, side in ((xc + xb, x, "lhs"), (yc + yb, y, "rhs")):
    if len(set(dims)) != len(dims) or any(not 0 <= d < a.ndim for d in dims):
      raise TypeError(f"{fn}: {side} dimensions {dims} must be distinct axes of shape {fmt(a.shape)}")
  if len(xc) != len(yc) or len(xb) != len(yb) or any(x.shape[i] != y.shape[j] for i, j in zip(xc + xb, yc + yb)):
    raise TypeError(f"{fn}: contracting and batch dimensions must pair up with equal sizes, got lhs {fmt(x.shape)} "
                    f"at {xc}, {xb} and rhs {fmt(y.shape)} at {yc}, {yb}")
  dt, weak = dtypes.result_type((x.dtype, x.weak_type), (y.dtype, y.weak_type))
  out_dt = dt if preferred_element_type is None else dtypes.canonicalize(dtypes.as_dtype(preferred_element_type, fn))
  acc = out_dt if out_dt.is_float or (out_dt.is_int and not dt.is_float) else dt
  if acc in (dtypes.float16, dtypes.bfloat16): acc = dtypes.float32
  if dt.is_bool and out_dt.is_bool: acc = dtypes.bool_
  xl = tuple(("b", xb.index(i)) if i in xb else ("c", xc.index(i)) if i in xc else ("x", i) for i in range(x.ndim))
  yl = tuple(("b", yb.index(i)) if i in yb else ("c", yc.index(i)) if i in yc else ("y", i) for i in range(y.ndim))
  out = (*(("b", k) for k in range(len(xb))), *(l for l in xl if l[0] == "x"), *(l for l in yl if l[0] == "y"))
  xu, yu = x.uop.cast(acc), y.uop.cast(acc)
  if tensorfloat32(precision, acc) and dt is acc: xu, yu = tf32(xu), tf32(yu)
  u = composite(fn, _contract, xu, yu, xl=xl, yl=yl, out=out)[0]
  return Array(u.cast(out_dt), weak and preferred_element_type is None)


def dot(lhs, rhs, precision=None, preferred_element_type=None, out_sharding=None) -> Array:
  """The vector, matrix-vector or matrix product (lhs of rank 1 or 2, rhs of rank 1 or 2), as jax.lax.dot.

  >>> lax.dot(tnp.ones((2, 3)), tnp.arange(3.0))
  Array([3., 3.], dtype=float32)
  """
  x, y = to_array(lhs, fn="dot"), to_array(rhs, fn="dot")
  if x.ndim not in (1, 2) or y.ndim not in (1, 2) or x.shape[-1] != y.shape[0]:
    raise TypeError(f"dot: incompatible shapes for a dot product: {fmt(x.shape)} and {fmt(y.shape)} (ranks 1 or 2, "
                    f"lhs's last axis of rhs's first axis's size)")
  return dot_general(x, y, (((x.ndim - 1,), (0,)), ((), ())), precision, preferred_element_type)


def batch_matmul(lhs, rhs, precision=None) -> Array:
  """Matrix products over the leading batch axes of two arrays of one rank (at least 2), as jax.lax.batch_matmul.

  >>> lax.batch_matmul(tnp.ones((4, 2, 3)), tnp.ones((4, 3, 5))).shape
  (4, 2, 5)
  """
  x, y = to_array(lhs, fn="batch_matmul"), to_array(rhs, fn="batch_matmul")
  if x.ndim < 2 or x.ndim != y.ndim or x.shape[:-2] != y.shape[:-2] or x.shape[-1] != y.shape[-2]:
    raise ValueError(f"batch_matmul: operands of one rank (>= 2) with equal batch axes and lhs's last axis matching "
                     f"rhs's second to last are needed, got {fmt(x.shape)} and {fmt(y.shape)}")
  batch = tuple(range(x.ndim - 2))
  return dot_general(x, y, (((x.ndim - 1,), (y.ndim - 2,)), (batch, batch)), precision)
