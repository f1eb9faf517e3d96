"""Complex numbers and their parts, as jax.lax: complex, real, imag, conj. No promotion: `complex` takes two float32
(or two float64) arrays; `real` and `imag` take complex ones.

>>> lax.complex(tnp.array([1.0]), tnp.array([2.0]))
Array([1.+2.j], dtype=complex64)
"""
from __future__ import annotations

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from . import complex_math as cm
from .elementwise import operands

__all__ = ["complex", "conj", "imag", "real"]


def complex(x, y) -> Array:  # noqa: A001
  """x + i y for float32 or float64 x and y of one dtype, as jax.lax.complex.

  >>> lax.complex(1.0, 0.5)
  Array(1.+0.5j, dtype=complex64, weak_type=True)
  """
  (a, b), d, weak = operands("complex", x, y, kind="float")
  if d.itemsize == 2: a, b = a.cast(dtypes.float32), b.cast(dtypes.float32)
  return Array(a.alu(Ops.COMPLEX, b), weak)


def _complex_operand(fn: str, x) -> Array:
  a = to_array(x, fn=fn)
  if not a.dtype.is_complex:
    raise TypeError(f"lax.{fn} takes a complex array, got {a.dtype}; tracegrad.numpy.{fn} also takes real ones")
  return a


def real(x) -> Array:
  """The real part of a complex array, as jax.lax.real.

  >>> lax.real(tnp.array([1 + 2j]))
  Array([1.], dtype=float32)
  """
  a = _complex_operand("real", x)
  return Array(cm.re(a.uop), a.weak_type)


def imag(x) -> Array:
  """The imaginary part of a complex array, as jax.lax.imag.

  >>> lax.imag(tnp.array([1 + 2j]))
  Array([2.], dtype=float32)
  """
  a = _complex_operand("imag", x)
  return Array(cm.im(a.uop), a.weak_type)


def conj(x) -> Array:
  """The complex conjugate, as jax.lax.conj (a real array gives a complex one, as JAX).

  >>> lax.conj(tnp.array([1 + 2j]))
  Array([1.-2.j], dtype=complex64)
  """
  a = to_array(x, fn="conj")
  if a.dtype.is_complex: return Array(cm.conj(a.uop), a.weak_type)
  (u,), d, weak = operands("conj", a, kind="float")
  u = u.cast(dtypes.float32) if d.itemsize == 2 else u
  return Array(u.alu(Ops.COMPLEX, UOp.const(u.dtype, -0.0, u.shape)), weak)
