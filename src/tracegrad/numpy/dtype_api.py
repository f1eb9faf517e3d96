"""dtype queries as in jax.numpy: dtype, result_type, iinfo, finfo, issubdtype, can_cast."""
from __future__ import annotations

import builtins

import ml_dtypes
import numpy as np

from ..array import Array
from ..ir import dtypes
from ..ir.dtypes import DType

__all__ = ["dtype", "result_type", "iinfo", "finfo", "issubdtype", "can_cast", "isdtype", "iscomplexobj", "isrealobj",
           "csingle", "cdouble", "complex_",
           "floating", "complexfloating", "integer", "signedinteger", "unsignedinteger", "number", "inexact", "bool", "generic"]

floating, integer, signedinteger, unsignedinteger = np.floating, np.integer, np.signedinteger, np.unsignedinteger
complexfloating = np.complexfloating
number, inexact, generic = np.number, np.inexact, np.generic
bool = dtypes.bool_  # noqa: A001
csingle, cdouble = dtypes.complex64, dtypes.complex128
complex_ = dtypes.complex128


def dtype(x) -> DType:
  """The tracegrad DType of a dtype-like or of an array.

  >>> tnp.dtype("float32")
  DType(float32)
  """
  if isinstance(x, Array): return x.dtype
  return dtypes.as_dtype(x, "dtype")


def _pair(x):
  if isinstance(x, Array): return (x.dtype, x.weak_type)
  if isinstance(x, (int, float, complex)) and not isinstance(x, (np.generic,)):
    if isinstance(x, type(True)): return (dtypes.bool_, False)
    return (dtypes.default_int() if isinstance(x, int) else dtypes.default_complex() if isinstance(x, complex) else
            dtypes.default_float(), True)
  if isinstance(x, (np.ndarray, np.generic)): return (dtypes.canonicalize(dtypes.as_dtype(x.dtype, "result_type")), False)
  if x is int or x is float or x is complex:   # weak, as JAX
    return ({int: dtypes.default_int, float: dtypes.default_float, complex: dtypes.default_complex}[x](), True)
  return (dtypes.canonicalize(dtypes.as_dtype(x, "result_type")), False)


def result_type(*args) -> DType:
  """The dtype JAX's promotion gives for operands (arrays, dtypes or Python scalars)."""
  if not args: raise ValueError("result_type: at least one argument is required")
  return dtypes.result_type(*(_pair(a) for a in args))[0]


class _Info:
  """numpy's iinfo or finfo of a type, whose `dtype` is the tracegrad DType."""

  def __init__(self, info, dtype: DType):
    self._info, self.dtype = info, dtype

  def __getattr__(self, name):
    if name.startswith("__"): raise AttributeError(name)   # copy and pickle look before __init__ has run
    return getattr(self._info, name)
  def __repr__(self) -> str: return repr(self._info).replace(f"dtype={self._info.dtype}", f"dtype={self.dtype}")


def iinfo(t) -> _Info:
  """The limits of an integer type (as np.iinfo; `.dtype` is the DType).

  >>> tnp.iinfo(tnp.int8).max, tnp.iinfo(tnp.int8).dtype
  (127, DType(int8))
  """
  d = dtype(t)
  if not d.is_int: raise ValueError(f"iinfo: {d} is not an integer type")
  return _Info(np.iinfo(d.np), d)


def finfo(t) -> _Info:
  """The limits of a floating type (as np.finfo; `.dtype` is the DType).

  >>> tnp.finfo(tnp.float16).eps, tnp.finfo(tnp.float32).dtype
  (np.float16(0.000977), DType(float32))
  """
  d = dtype(t)
  if not d.is_inexact: raise ValueError(f"finfo: {d} is not a floating type")
  return _Info(ml_dtypes.finfo(d.real.np), d.real)   # a complex type's finfo is its parts', as numpy's


_ABSTRACT = (np.generic, np.number, np.inexact, np.floating, np.complexfloating, np.integer, np.signedinteger,
             np.unsignedinteger)


def _np_type(x): return x if isinstance(x, type) and x in _ABSTRACT else dtype(x).np


def issubdtype(a, b) -> bool:
  """Whether dtype `a` lies under `b` (a dtype or an abstract kind such as tnp.floating).

  >>> tnp.issubdtype(tnp.bfloat16, tnp.floating)
  True
  """
  na, nb = _np_type(a), _np_type(b)
  if na == dtypes.bfloat16.np: return nb in (np.floating, np.inexact, np.number, np.generic) or nb == na
  return builtins.bool(np.issubdtype(na, nb))


def can_cast(from_, to, casting: str = "safe") -> bool:
  f, t = dtype(from_), dtype(to)
  return dtypes.promote_types(f, t) is t if casting == "safe" else builtins.bool(np.can_cast(f.np, t.np, casting))


_KINDS = {"bool": lambda d: d.is_bool, "signed integer": lambda d: d.kind == "i",
          "unsigned integer": lambda d: d.kind == "u", "integral": lambda d: d.is_int,
          "real floating": lambda d: d.is_float, "complex floating": lambda d: d.is_complex,
          "numeric": lambda d: not d.is_bool}


def isdtype(dtype, kind) -> bool:
  """Whether `dtype` is of `kind`: a dtype, a kind name ('bool', 'signed integer', 'unsigned integer', 'integral',
  'real floating', 'complex floating', 'numeric') or a tuple of them.

  >>> tnp.isdtype(tnp.float32, "real floating"), tnp.isdtype(tnp.int8, ("bool", "unsigned integer"))
  (True, False)
  """
  d = dtypes.as_dtype(dtype, "isdtype")
  for k in (kind if isinstance(kind, tuple) else (kind,)):
    if isinstance(k, str):
      if k not in _KINDS:
        raise ValueError(f"isdtype: unrecognized kind {k!r}; expected one of {', '.join(map(repr, _KINDS))} or a dtype")
      if _KINDS[k](d): return True
    elif dtypes.as_dtype(k, "isdtype") is d:
      return True
  return False


def iscomplexobj(x) -> builtins.bool:
  """Whether x has a complex dtype (its values do not matter; None is not complex).

  >>> tnp.iscomplexobj(tnp.array([1 + 0j])), tnp.iscomplexobj(1.0)
  (True, False)
  """
  if x is None: return False
  d = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
  return dtypes.as_dtype(d, "iscomplexobj").is_complex


def isrealobj(x) -> builtins.bool:
  """Whether x does not have a complex dtype.

  >>> tnp.isrealobj(tnp.array([1.0])), tnp.isrealobj(tnp.array([1 + 0j]))
  (True, False)
  """
  return not iscomplexobj(x)
