"""Fast Fourier transforms over the trailing axes, as jax.lax.fft: each axis is one FFT primitive (a complex
transform along the last axis), which lowers to a generated kernel for its length (mixed radix, Bluestein for large
primes). The real transforms are the complex one on real input, keeping the n // 2 + 1 non-redundant outputs, and
its inverse on the Hermitian completion of the spectrum.

>>> lax.fft(tnp.array([1.0, 0.0, 0.0, 0.0]).astype(tnp.complex64), lax.FftType.FFT, (4,))
Array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)
"""
from __future__ import annotations

import enum
import math
import operator

import numpy as np

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from ..ir.shapes import fmt
from . import complex_math as cm

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


def _rfft_last(x: UOp) -> UOp:
  """The n // 2 + 1 first outputs of the DFT of the real x along its last axis. For even n, one complex FFT of half
  the length: z = x[0::2] + i x[1::2] transforms to Z, the even and odd samples' spectra are E = (Z[k] + conj Z[-k]) / 2
  and O = (Z[k] - conj Z[-k]) / 2i, and X[k] = E[k] + exp(-2 pi i k / n) O[k]."""
  n, lead = x.shape[-1], [(0, m, 1) for m in x.shape[:-1]]
  c = dtypes.complex_of(x.dtype)
  if n % 2 or n < 4:
    return _along(x.alu(Ops.COMPLEX, UOp.const(x.dtype, 0.0, x.shape)), x.ndim - 1, False).slice(
      lead + [(0, n // 2 + 1, 1)])
  h, last = n // 2, x.ndim - 1
  z = _along(x.slice(lead + [(0, n, 2)]).alu(Ops.COMPLEX, x.slice(lead + [(1, n, 2)])), last, False)
  ext = UOp.concat([z, z.slice(lead + [(0, 1, 1)])], last)   # ext[k] = Z[k mod h], k <= h
  rev = cm.conj(ext.flip((last,)))                            # conj Z[(h - k) mod h]
  k = np.arange(h + 1)
  q, rest = np.divmod(4 * k, n)                               # exp(-2 pi i k / n) / 2i, exact on the axes
  w = np.exp(-0.5j * np.pi * rest / n) * np.array([1, -1j, -1, 1j])[q % 4] * -0.5j
  w = UOp.buffer(w.astype(c.np)).reshape((1,) * last + (h + 1,)).broadcast(ext.shape)
  return _scale(ext + rev, 0.5) + (ext - rev) * w


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
  else:
    if not a.dtype.is_complex: raise TypeError(f"lax.fft: {fft_type.name} takes a complex array, got {a.dtype}")
    u = a.uop
  inverse = fft_type in (FftType.IFFT, FftType.IRFFT)
  axes = range(a.ndim - k, a.ndim)
  scale = 1.0 / max(math.prod(lengths), 1)   # of the inverse transforms
  if fft_type is FftType.RFFT:   # the last axis first: the others then transform only its n // 2 + 1 outputs
    u = _rfft_last(u)
    for ax in list(axes)[:-1]: u = _along(u, ax, False)
    return Array(u)
  if fft_type is FftType.IRFFT:
    for ax in list(axes)[:-1]: u = _along(u, ax, True)
    u = _along(_hermitian(u, lengths[-1]), a.ndim - 1, True).alu(Ops.REAL)
    return Array(u * UOp.const(u.dtype, scale, u.shape))
  for ax in axes: u = _along(u, ax, inverse)
  return Array(_scale(u, scale) if inverse else u)
