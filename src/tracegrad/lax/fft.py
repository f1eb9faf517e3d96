"""Fast Fourier transforms over the trailing axes, as jax.lax.fft: each axis is one FFT primitive (a complex
transform along the last axis), which lowers to a generated kernel for its length (mixed radix, Bluestein for large
primes). The real transforms are the complex one on real input, keeping the n // 2 + 1 non-redundant outputs, and
its inverse on the Hermitian completion of the spectrum.

>>> lax.fft(tnp.array([1.0, 0.0, 0.0, 0.0]).astype(tnp.complex64), lax.FftType.FFT, (4,))
Array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)
"""
from __future__ import annotations

import enum
import operator

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from ..ir.shapes import fmt

__all__ = ["FftType", "fft"]


class FftType(enum.IntEnum):
  """The kind of transform, as jax.lax.FftType."""
  FFT = 0
  IFFT = 1
  RFFT = 2
  IRFFT = 3


def _along(u: UOp, axis: int, inverse: bool) -> UOp:
  """The unnormalised transform of u along `axis`: the FFT primitive runs along the last axis."""
  last = u.ndim - 1
  if axis == last: return UOp(Ops.FFT, u.dtype, (u,), inverse)
  perm = list(range(u.ndim))
  perm[axis], perm[last] = last, axis
  return UOp(Ops.FFT, u.dtype, (u.permute(perm),), inverse).permute(perm)


def _scale(u: UOp, s: float) -> UOp: return u * UOp.const(u.dtype, complex(s), u.shape)


def _hermitian(u: UOp, n: int) -> UOp:
  """The full spectrum of length n along the last axis from its n // 2 + 1 first entries, the rest conj(X[n - k])."""
  rest = n - u.shape[-1]
  if rest <= 0: return u
  whole = [(0, m, 1) for m in u.shape[:-1]]
  tail = u.slice(whole + [(1, 1 + rest, 1)]).flip((u.ndim - 1,))
  conj = tail.alu(Ops.REAL).alu(Ops.COMPLEX, -tail.alu(Ops.IMAG))
  return UOp.concat([u, conj], u.ndim - 1)


def fft(x, fft_type, fft_lengths) -> Array:
  """The FFT of x over its last len(fft_lengths) axes, as jax.lax.fft (IFFT and IRFFT scale by 1 / n).

  >>> lax.fft(tnp.array([0.0, 1.0, 0.0, 0.0]), "rfft", (4,))
  Array([ 1.+0.j,  0.-1.j, -1.+0.j], dtype=complex64)
  """
  if isinstance(fft_type, str):
    try:
      fft_type = FftType[fft_type.upper()]
    except KeyError:
      raise ValueError(f"lax.fft: fft_type must be one of {[t.name for t in FftType]}, got {fft_type!r}") from None
  fft_type = FftType(fft_type)
  lengths = tuple(operator.index(n) for n in fft_lengths)
  a = to_array(x, fn="fft")
  k = len(lengths)
  if not 1 <= k <= 3 or a.ndim < k:
    raise ValueError(f"lax.fft: fft_lengths must name 1 to 3 trailing axes of x, got {lengths} for shape {fmt(a.shape)}")
  want = lengths[:-1] + ((lengths[-1] // 2 + 1,) if fft_type is FftType.IRFFT else lengths[-1:])
  if a.shape[a.ndim - k:] != want:
    raise ValueError(f"lax.fft: {fft_type.name} of lengths {lengths} needs trailing axes {want}, got shape "
                     f"{fmt(a.shape)}")
  if fft_type is FftType.RFFT:
    if not a.dtype.is_float: raise TypeError(f"lax.fft: RFFT takes a real floating array, got {a.dtype}")
    u = a.uop.cast(dtypes.float32) if a.dtype.itemsize == 2 else a.uop
    u = u.alu(Ops.COMPLEX, UOp.const(u.dtype, 0.0, u.shape))
  else:
    if not a.dtype.is_complex: raise TypeError(f"lax.fft: {fft_type.name} takes a complex array, got {a.dtype}")
    u = a.uop
  inverse = fft_type in (FftType.IFFT, FftType.IRFFT)
  axes = range(a.ndim - k, a.ndim)
  if fft_type is FftType.RFFT:   # the last axis first: the others then transform only its n // 2 + 1 outputs
    u = _along(u, a.ndim - 1, False)
    u = u.slice([(0, m, 1) for m in u.shape[:-1]] + [(0, lengths[-1] // 2 + 1, 1)])
    for ax in list(axes)[:-1]: u = _along(u, ax, False)
    return Array(u)
  if fft_type is FftType.IRFFT:
    for ax in list(axes)[:-1]: u = _along(u, ax, True)
    u = _along(_hermitian(u, lengths[-1]), a.ndim - 1, True).alu(Ops.REAL)
    size = 1
    for n in lengths: size *= n
    return Array(u * UOp.const(u.dtype, 1.0 / max(size, 1), u.shape))
  for ax in axes: u = _along(u, ax, inverse)
  if inverse:
    size = 1
    for n in lengths: size *= n
    u = _scale(u, 1.0 / max(size, 1))
  return Array(u)
