"""Data types and JAX's type-promotion lattice with weak Python scalars.

>>> promote_types(int8, uint8)
DType(int16)
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import ml_dtypes
import numpy as np


@dataclass(frozen=True, eq=False)
class DType:
  """A scalar type: `kind` is 'b' (bool), 'i', 'u', 'f' or 'c' (complex; 'v' for `void`, the type of an op with several
  results);
  `np` is the numpy dtype used to hold values."""
  name: str
  itemsize: int
  kind: str
  np: np.dtype

  def __repr__(self) -> str: return f"DType({self.name})"
  def __str__(self) -> str: return self.name
  def __reduce__(self): return (dtype_from_name, (self.name,))

  def __eq__(self, other) -> bool:
    """Equal to itself and, as numpy dtypes compare, to the numpy dtype, scalar type or name it stands for.

    >>> float32 == np.float32, float32 == "float32", float32 == np.dtype("float64")
    (True, True, False)
    """
    if isinstance(other, DType): return self is other
    if isinstance(other, np.dtype): return self.np == other
    if isinstance(other, str) or (isinstance(other, type) and issubclass(other, np.generic)):
      try:
        return self.np == np.dtype(other)
      except (TypeError, ValueError):   # not a dtype's name
        return False
    return NotImplemented

  def __ne__(self, other) -> bool:
    eq = self.__eq__(other)
    return eq if eq is NotImplemented else not eq

  def __hash__(self) -> int: return hash(self.np)

  @property
  def type(self) -> type:
    """The numpy scalar type, as numpy's and JAX's dtypes have it (jaxtyping reads the dtype's name from it).

    >>> float32.type.__name__
    'float32'
    """
    return self.np.type

  @property
  def dtype(self) -> np.dtype:
    """The numpy dtype, so that numpy takes a DType wherever it takes a dtype.

    >>> np.zeros(2).astype(float32).dtype
    dtype('float32')
    """
    return self.np

  @property
  def __name__(self) -> str: return self.name

  @property
  def short(self) -> str:
    """The jaxpr-style short name: f32, i8, u16, bool, bf16."""
    if self.kind == "v": return "tuple"
    return "bool" if self.kind == "b" else ("bf16" if self.name == "bfloat16" else f"{self.kind}{8 * self.itemsize}")

  @property
  def is_float(self) -> bool: return self.kind == "f"
  @property
  def is_complex(self) -> bool: return self.kind == "c"
  @property
  def is_inexact(self) -> bool:
    """Float or complex: the dtypes derivatives flow through."""
    return self.kind in "fc"
  @property
  def real(self) -> "DType":
    """The real type of a complex type's parts (a real type is its own).

    >>> complex64.real, float16.real
    (DType(float32), DType(float16))
    """
    return _REAL.get(self, self)
  @property
  def is_int(self) -> bool: return self.kind in "iu"
  @property
  def is_unsigned(self) -> bool: return self.kind == "u"
  @property
  def is_bool(self) -> bool: return self.kind == "b"
  @property
  def bits(self) -> int: return 8 * self.itemsize


def _d(name: str, np_dtype) -> DType:
  n = np.dtype(np_dtype)
  return DType(name, n.itemsize, {"b": "b", "i": "i", "u": "u", "f": "f", "V": "f", "c": "c"}[n.kind], n)


bool_ = _d("bool", np.bool_)
int8, int16, int32, int64 = _d("int8", np.int8), _d("int16", np.int16), _d("int32", np.int32), _d("int64", np.int64)
uint8, uint16, uint32, uint64 = _d("uint8", np.uint8), _d("uint16", np.uint16), _d("uint32", np.uint32), _d("uint64", np.uint64)
float16, float32, float64 = _d("float16", np.float16), _d("float32", np.float32), _d("float64", np.float64)
bfloat16 = DType("bfloat16", 2, "f", np.dtype(ml_dtypes.bfloat16))
complex64, complex128 = _d("complex64", np.complex64), _d("complex128", np.complex128)
_REAL = {complex64: float32, complex128: float64}


def complex_of(d: DType) -> DType:
  """The complex type whose parts are `d` (float16 and bfloat16 widen to complex64, as JAX's promotion).

  >>> complex_of(float64), complex_of(bfloat16)
  (DType(complex128), DType(complex64))
  """
  return d if d.is_complex else complex128 if d is float64 else complex64

void = DType("void", 0, "v", np.dtype("V1"))

ALL = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64, complex64,
       complex128)
_BY_NAME = {d.name: d for d in ALL}
_BY_NP = {d.np: d for d in ALL}


def dtype_from_name(name: str) -> DType: return _BY_NAME[name]


def as_dtype(x, fn: str = "dtype") -> DType:
  """The DType for a DType, a numpy dtype, a scalar type (np.float32, float, int, bool) or a name ('float32')."""
  if isinstance(x, DType): return x
  if isinstance(x, str) and x in _BY_NAME: return _BY_NAME[x]
  if x is float: return float32 if not x64_enabled() else float64
  if x is int: return int32 if not x64_enabled() else int64
  if x is bool: return bool_
  dt = getattr(x, "dtype", None)
  if isinstance(dt, DType): return dt
  try:
    n = np.dtype(x)
  except TypeError:
    raise TypeError(f"{fn}: {x!r} is not a data type; use one of {', '.join(_BY_NAME)}") from None
  if n in _BY_NP: return _BY_NP[n]
  raise TypeError(f"{fn}: unsupported dtype {n}; tracegrad supports {', '.join(_BY_NAME)}")


# ---- 64-bit mode (as jax_enable_x64) ----

_X64 = [False]


def x64_enabled() -> bool: return _X64[0]


def set_x64(on: bool) -> None:
  _X64[0] = bool(on)
  _canon.cache_clear()
  result_type_cached.cache_clear()


@lru_cache(None)
def _canon(d: DType) -> DType:
  if x64_enabled(): return d
  return {int64: int32, uint64: uint32, float64: float32, complex128: complex64}.get(d, d)


def canonicalize(d: DType) -> DType:
  """Narrow 64-bit types to 32-bit unless 64-bit mode is on (as JAX does by default)."""
  return _canon(d)


def default_int() -> DType: return canonicalize(int64)
def default_float() -> DType: return canonicalize(float64)
def default_complex() -> DType: return canonicalize(complex128)


# ---- the promotion lattice ----
# Nodes are DTypes plus the weak kinds "i*" (Python int), "f*" (Python float) and "c*" (Python complex).
_EDGES = {
  bool_: ("i*",), "i*": (uint8, int8), uint8: (uint16, int16), uint16: (uint32, int32), uint32: (uint64, int64),
  uint64: ("f*",), int8: (int16,), int16: (int32,), int32: (int64,), int64: ("f*",),
  "f*": (bfloat16, float16, "c*"), bfloat16: (float32,), float16: (float32,), float32: (float64, complex64),
  float64: (complex128,), "c*": (complex64,), complex64: (complex128,), complex128: (),
}


@lru_cache(None)
def _upper(node) -> frozenset:
  out = {node}
  for n in _EDGES[node]: out |= _upper(n)
  return frozenset(out)


def _join(nodes) -> object:
  common = frozenset.intersection(*(_upper(n) for n in nodes))
  # the least upper bound is the common node every other common node lies above
  return next(c for c in common if all(o in _upper(c) for o in common))


def _node(d: DType, weak: bool):
  if weak and d.kind in "iu": return "i*"
  if weak and d.kind == "f": return "f*"
  if weak and d.kind == "c": return "c*"
  return d


@lru_cache(None)
def result_type_cached(pairs: tuple) -> tuple[DType, bool]:
  dts = {d for d, _ in pairs}
  if len(dts) == 1 and not all(w for _, w in pairs): return canonicalize(next(iter(dts))), False
  j = _join([_node(d, w) for d, w in pairs])
  if j == "i*": return default_int(), True
  if j == "f*": return default_float(), True
  if j == "c*": return default_complex(), True
  return canonicalize(j), False


def result_type(*pairs: tuple[DType, bool]) -> tuple[DType, bool]:
  """The promoted (dtype, weak_type) of operands given as (dtype, weak_type) pairs, by JAX's lattice."""
  return result_type_cached(tuple(pairs))


def promote_types(a, b) -> DType:
  """The dtype two strongly typed operands promote to.

  >>> promote_types(float16, bfloat16)
  DType(float32)
  """
  return result_type((as_dtype(a), False), (as_dtype(b), False))[0]


def finfo_max(d: DType) -> float: return float(ml_dtypes.finfo(d.np).max)


def count_value(d: DType, n: int) -> int | float | None:
  """The count n as a value of type d, as a sum of n ones would give it in d: an integer wraps modulo 2**bits, a
  float is rounded (None where it overflows d).

  >>> count_value(int32, 2**32 + 3), count_value(float16, 70000)
  (3, None)
  """
  if d.is_int:
    n %= 1 << d.bits
    return n - (1 << d.bits) if not d.is_unsigned and n >> (d.bits - 1) else n
  return float(n) if float(n) <= finfo_max(d) else None


@lru_cache(maxsize=None)
def min_value(d: DType):
  """The identity of max: -inf for floats, the smallest integer, False."""
  if d.is_float: return float("-inf")
  if d.is_bool: return False
  return int(np.iinfo(d.np).min)


@lru_cache(maxsize=None)
def max_value(d: DType):
  if d.is_float: return float("inf")
  if d.is_bool: return True
  return int(np.iinfo(d.np).max)
