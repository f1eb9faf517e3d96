"""dtype queries as in jax.numpy: dtype, result_type, iinfo, finfo, issubdtype, can_cast."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ..array import Array
from ..ir import dtypes
from ..ir.dtypes import DType

__all__ = ["dtype", "result_type", "iinfo", "finfo", "issubdtype", "can_cast", "isdtype",
           "floating", "integer", "signedinteger", "unsignedinteger", "number", "inexact", "bool", "generic"]

floating, integer, signedinteger, unsignedinteger = np.floating, np.integer, np.signedinteger, np.unsignedinteger
number, inexact, generic, bool = np.number, np.inexact, np.generic, np.bool_  # noqa: A001


def dtype(x) -> DType:
  """The tracegrad DType of a dtype-like or of an array.

  >>> tnp.dtype("float32")
  DType(float32)
  """
  if isinstance(x, Array): return x.dtype
  return dtypes.as_dtype(x, "dtype")


def _pair(x):
  if isinstance(x, Array): return (x.dtype, x.weak_type)
  if isinstance(x, (int, float)) and not isinstance(x, (np.generic,)):
    if isinstance(x, type(True)): return (dtypes.bool_, False)
    return (dtypes.default_int() if isinstance(x, int) else dtypes.default_float(), True)
  if isinstance(x, (np.ndarray, np.generic)): return (dtypes.canonicalize(dtypes.as_dtype(x.dtype, "result_type")), False)
  return (dtypes.canonicalize(dtypes.as_dtype(x, "result_type")), False)


def result_type(*args) -> DType:
  """The dtype JAX's promotion gives for operands (arrays, dtypes or Python scalars)."""
  if not args: raise ValueError("result_type: at least one argument is required")
  return dtypes.result_type(*(_pair(a) for a in args))[0]


def iinfo(t):
  return np.iinfo(dtype(t).np)


def finfo(t):
  return ml_dtypes.finfo(dtype(t).np)


_ABSTRACT = (np.generic, np.number, np.inexact, np.floating, np.integer, np.signedinteger, np.unsignedinteger)


def _np_type(x): return x if isinstance(x, type) and x in _ABSTRACT else dtype(x).np


def issubdtype(a, b) -> bool:
  """Whether dtype `a` lies under `b` (a dtype or an abstract kind such as tnp.floating).

  >>> tnp.issubdtype(tnp.bfloat16, tnp.floating)
  True
  """
  na, nb = _np_type(a), _np_type(b)
  if na == dtypes.bfloat16.np: return nb in (np.floating, np.inexact, np.number, np.generic) or nb == na
  return bool(np.issubdtype(na, nb))


def can_cast(from_, to, casting: str = "safe") -> bool:
  f, t = dtype(from_), dtype(to)
  return dtypes.promote_types(f, t) is t if casting == "safe" else bool(np.can_cast(f.np, t.np, casting))


def isdtype(d, kind) -> bool:
  d = dtype(d)
  kinds = kind if isinstance(kind, tuple) else (kind,)
  table = {"bool": d.is_bool, "signed integer": d.kind == "i", "unsigned integer": d.kind == "u",
           "integral": d.is_int, "real floating": d.is_float, "numeric": not d.is_bool}
  return any(table[k] if isinstance(k, str) else dtype(k) is d for k in kinds)
