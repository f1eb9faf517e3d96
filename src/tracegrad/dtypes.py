"""Data-type helpers, as jax.dtypes: canonical dtypes (64-bit types narrowed unless 64-bit mode is on), promotion
with weak types, subtypes, limits, sizes. Dtypes are tracegrad's DType objects, which compare equal to numpy's.

>>> import tracegrad.dtypes
>>> tracegrad.dtypes.canonicalize_dtype("float64"), tracegrad.dtypes.result_type(tnp.int8, 2.0)
(DType(float32), DType(float32))
"""
from __future__ import annotations

import numpy as np

from .api import float0
from .array import Array
from .ir import dtypes as _d
from .numpy.dtype_api import dtype as _dtype, finfo, iinfo, issubdtype as _issubdtype, result_type as _result_type

__all__ = ["bfloat16", "canonicalize_dtype", "finfo", "float0", "iinfo", "issubdtype", "itemsize_bits", "result_type",
           "scalar_type_of"]

bfloat16 = _d.bfloat16


def _is_float0(x) -> bool: return isinstance(x, np.dtype) and x == float0


def canonicalize_dtype(dtype, allow_extended_dtype: bool = False):
  """The dtype tracegrad computes in for `dtype`: 64-bit types become 32-bit ones unless 64-bit mode is on.
  (allow_extended_dtype has no effect: tracegrad has no extended dtypes.)

  >>> tracegrad.dtypes.canonicalize_dtype(int), tracegrad.dtypes.canonicalize_dtype(tnp.uint8)
  (DType(int32), DType(uint8))
  """
  if isinstance(dtype, (Array, np.ndarray)):
    raise TypeError(f"canonicalize_dtype: dtype must be a data type, got an array ({type(dtype).__name__}); pass its "
                    f".dtype")
  if _is_float0(dtype): return float0
  return _d.canonicalize(_d.as_dtype(dtype, "canonicalize_dtype"))


def _weak(x) -> bool:
  if isinstance(x, Array): return x.weak_type
  # Python numbers and the types int, float and complex are weakly typed; bool is not
  return x in (int, float, complex) if isinstance(x, type) else type(x) in (int, float, complex)


def result_type(*args, return_weak_type_flag: bool = False):
  """The dtype JAX's promotion gives for arrays, dtypes and Python scalars (with whether it is weak, on request).

  >>> tracegrad.dtypes.result_type(tnp.int8, 1), tracegrad.dtypes.result_type(1, 2.0, return_weak_type_flag=True)
  (DType(int8), (DType(float32), True))
  """
  if not args: raise ValueError("result_type: at least one array or dtype is required")
  dt, weak = _d.result_type(*((_result_type(a), _weak(a)) for a in args))
  return (dt, weak) if return_weak_type_flag else dt


def issubdtype(a, b) -> bool:
  """Whether dtype `a` lies under `b` (a dtype or an abstract kind such as numpy.floating).

  >>> tracegrad.dtypes.issubdtype(tnp.bfloat16, np.inexact), tracegrad.dtypes.issubdtype("int8", np.unsignedinteger)
  (True, False)
  """
  if _is_float0(a) or _is_float0(b): return _is_float0(a) and (_is_float0(b) or b in (np.generic, np.void))
  return bool(_issubdtype(a, b))   # tracegrad.numpy.issubdtype answers a bool Array


def scalar_type_of(x) -> type:
  """The Python scalar type (bool, int or float) of a value's or a dtype's elements.

  >>> tracegrad.dtypes.scalar_type_of(tnp.arange(3)), tracegrad.dtypes.scalar_type_of(np.float16(1))
  (<class 'int'>, <class 'float'>)
  """
  if x is None: raise ValueError("scalar_type_of: x must be a value or a dtype, got None")
  if isinstance(x, complex): return complex
  d = _dtype(x if isinstance(x, (Array, type, str, np.dtype, _d.DType)) else np.asarray(x).dtype)
  return bool if d.is_bool else int if d.is_int else complex if d.is_complex else float


def itemsize_bits(dtype) -> int:
  """The number of bits one element of dtype takes (int and float are numpy's 64-bit types, as in JAX).

  >>> tracegrad.dtypes.itemsize_bits(tnp.bfloat16), tracegrad.dtypes.itemsize_bits(bool)
  (16, 8)
  """
  if dtype is None: raise ValueError("itemsize_bits: dtype cannot be None")
  if _is_float0(dtype): raise ValueError("itemsize_bits: float0 has no storage size")
  if dtype is int or dtype is float: return 64
  return _dtype(dtype).bits
