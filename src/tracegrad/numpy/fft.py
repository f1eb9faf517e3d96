"""tracegrad.numpy.fft, as jax.numpy.fft: discrete Fourier transforms over any axes, written on tracegrad.lax.fft
(which transforms up to three trailing axes). Each transform moves its axes to the end, cuts or zero-pads them to the
requested lengths, transforms (more than three axes in several steps), scales for `norm` and moves the axes back.

dtypes as JAX: a complex input keeps its dtype; a real one becomes float32 (float64 for 64-bit inputs under x64)
and then complex. Unlike JAX, rfft, rfftn and ihfft take float16 and bfloat16 (widened to float32) rather than
raising.

>>> tnp.fft.fft(tnp.array([1.0, 1.0, 1.0, 1.0]))
Array([4.+0.j, 0.+0.j, 0.+0.j, 0.+0.j], dtype=complex64)
"""
from __future__ import annotations

import math
import operator
from typing import Sequence

from ..array import Array, device_put
from ..ir import dtypes
from ..ir.dtypes import DType
from ..lax.fft import FftType
from ..lax.fft import fft as _lax_fft
from .core import arraylike, normalize_axis
from .creation import arange, asarray
from .elementwise import conj
from .shape import concatenate, moveaxis, pad, roll

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = (None, "backward", "ortho", "forward")
_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}
_INVERSE = (FftType.IFFT, FftType.IRFFT)
_ONE_AXIS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")


def _real_dtype(d: DType) -> DType:
  """The float type a real input is transformed in: float64 for 64-bit inputs (under x64), else float32."""
  return dtypes.canonicalize(dtypes.float64) if d.itemsize == 8 else dtypes.float32


def _convert(a: Array, kind: FftType, fn: str) -> Array:
  """a in the dtype the transform takes: real float for RFFT, complex for the others."""
  if kind is FftType.RFFT:
    if a.dtype.is_complex:
      raise TypeError(f"{fn}: a must be real, got {a.dtype}; use fft/fftn for complex input")
    dt = _real_dtype(a.dtype)
  else:
    dt = a.dtype if a.dtype.is_complex else dtypes.complex_of(_real_dtype(a.dtype))
  return a if a.dtype is dt and not a.weak_type else Array(a.uop.cast(dt))


def _as_complex(a, fn: str) -> Array: return _convert(arraylike(a, fn), FftType.FFT, fn)


def _norm(norm, fn: str) -> str | None:
  if norm not in _NORMS:
    raise ValueError(f'{fn}: norm must be "backward", "ortho", "forward" or None, got {norm!r}')
  return norm


def _length(v, fn: str, name: str) -> int:
  try:
    n = operator.index(v)
  except TypeError:
    raise TypeError(f"{fn}: {name} must be an integer, got {v!r}") from None
  if n < 1: raise ValueError(f"{fn}: invalid number of data points ({n}) specified")
  return n


def _resize(a: Array, axis: int, n: int) -> Array:
  """a cut to, or zero-padded at the end to, length n along axis."""
  m = a.shape[axis]
  if n < m: return a[(slice(None),) * axis + (slice(0, n),)]
  if n > m: return pad(a, [(0, 0)] * axis + [(0, n - m)] + [(0, 0)] * (a.ndim - axis - 1))
  return a


def _trailing(a: Array, kind: FftType, lengths: tuple[int, ...]) -> Array:
  """lax.fft over the last len(lengths) axes of a, three axes at a time: the forward transforms take the last
  group first, the inverse ones last (IRFFT's Hermitian axis must be the final step)."""
  k = len(lengths)
  if k <= 3: return _lax_fft(a, kind, lengths)
  nd = a.ndim
  head, last = lengths[:-3], lengths[-3:]
  src = tuple(range(nd - k, nd - 3))
  dst = tuple(range(nd - len(head), nd))

  def leading(x: Array, inner: FftType) -> Array:
    return moveaxis(_trailing(moveaxis(x, src, dst), inner, head), dst, src)

  if kind in _INVERSE: return _lax_fft(leading(a, FftType.IFFT), kind, last)
  return leading(_lax_fft(a, kind, last), FftType.FFT)


def _axes(axes, s, ndim: int, fn: str) -> tuple[int, ...]:
  """The axes to transform, non-negative: given, or the last len(s) (every axis when s is None too)."""
  if axes is None:
    if s is None: return tuple(range(ndim))
    if len(s) > ndim:
      raise ValueError(f"{fn}: s={tuple(s)} names {len(s)} axes, but a has only {ndim}; give fewer lengths")
    return tuple(range(ndim - len(s), ndim))
  out = tuple(normalize_axis(ax, ndim, fn, "axes") for ax in axes)
  if len(set(out)) != len(out):
    raise ValueError(f"{fn}: repeated axes in axes={tuple(axes)} (axes {out} of {ndim}); each axis is transformed "
                     f"once")
  return out


def _fftn(fn: str, kind: FftType, a, s, axes, norm) -> Array:
  """The transform `kind` of `a` over `axes` with lengths `s`, scaled for `norm` (numpy's meaning of each)."""
  _norm(norm, fn)
  a = arraylike(a, fn)
  if s is not None and not isinstance(s, Sequence): raise TypeError(f"{fn}: s must be a sequence of ints, got {s!r}")
  if axes is not None and not isinstance(axes, Sequence):
    raise TypeError(f"{fn}: axes must be a sequence of ints, got {axes!r}")
  if s is not None and axes is not None and len(s) != len(axes):
    raise ValueError(f"{fn}: s and axes must have the same length, got s={tuple(s)} and axes={tuple(axes)}")
  axes = _axes(axes, s, a.ndim, fn)
  a = _convert(a, kind, fn)
  k = len(axes)
  if k == 0:
    if kind in (FftType.FFT, FftType.IFFT): return a
    raise ValueError(f"{fn}: axes must name at least one axis, got axes=()")
  lengths = []
  for i, ax in enumerate(axes):
    m = a.shape[ax]
    if s is None:   # the input's length (for IRFFT's last axis, that of the signal an rfft of it came from)
      lengths.append(_length(2 * (m - 1) if kind is FftType.IRFFT and i == k - 1 else m, fn, "n"))
    else: lengths.append(_length(s[i], fn, "n" if fn in _ONE_AXIS else f"s[{i}]"))
  nd = a.ndim
  ends = tuple(range(nd - k, nd))
  moved = axes != ends
  if moved: a = moveaxis(a, axes, ends)
  for i, n in enumerate(lengths):
    a = _resize(a, nd - k + i, n // 2 + 1 if kind is FftType.IRFFT and i == k - 1 else n)
  out = _trailing(a, kind, tuple(lengths))
  # lax.fft leaves the forward transforms unscaled and scales the inverse ones by 1 / size, as norm="backward"
  size = math.prod(lengths)
  if norm == "ortho": out = out * (math.sqrt(size) if kind in _INVERSE else 1 / math.sqrt(size))
  elif norm == "forward": out = out * (float(size) if kind in _INVERSE else 1 / size)
  return moveaxis(out, ends, axes) if moved else out


def _one_axis(axis, fn: str) -> list[int]:
  if isinstance(axis, Sequence) or not hasattr(axis, "__index__"):
    raise TypeError(f"{fn}: axis must be an int, got {axis!r}; fftn, rfftn, ... transform several axes")
  return [axis]


def _two_axes(axes, fn: str) -> Sequence[int]:
  if not isinstance(axes, Sequence) or len(axes) != 2:
    raise ValueError(f"{fn}: axes must name two axes, got axes={axes!r}; use {fn[:-1]}n for other counts")
  return axes


# ---- one axis ----

def fft(a, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
  """The discrete Fourier transform along `axis`, the input cut or zero-padded to length `n`.

  >>> tnp.fft.fft(tnp.array([1.0, 2.0, 3.0, 4.0]))
  Array([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], dtype=complex64)
  """
  return _fftn("fft", FftType.FFT, a, None if n is None else [n], _one_axis(axis, "fft"), norm)


def ifft(a, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
  """The inverse of fft along `axis` (scaled by 1 / n under the default norm).

  >>> tnp.fft.ifft(tnp.array([4.0, 0.0, 0.0, 0.0]))
  Array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)
  """
  return _fftn("ifft", FftType.IFFT, a, None if n is None else [n], _one_axis(axis, "ifft"), norm)


def rfft(a, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
  """The Fourier transform of a real input along `axis`: its n // 2 + 1 non-negative frequency terms.

  >>> tnp.fft.rfft(tnp.array([1.0, 2.0, 3.0, 4.0]))
  Array([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
  """
  return _fftn("rfft", FftType.RFFT, a, None if n is None else [n], _one_axis(axis, "rfft"), norm)


def irfft(a, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
  """The inverse of rfft: a real signal of length n (default 2 * (m - 1)) from m non-negative frequency terms.

  >>> tnp.fft.irfft(tnp.array([10.0, -2 + 2j, -2.0]))
  Array([1., 2., 3., 4.], dtype=float32)
  """
  return _fftn("irfft", FftType.IRFFT, a, None if n is None else [n], _one_axis(axis, "irfft"), norm)


def hfft(a, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
  """The (real) Fourier transform of a signal with Hermitian symmetry, given by its first half: irfft(conj(a)) * n.

  >>> tnp.fft.hfft(tnp.array([1.0, 2.0, 3.0]))
  Array([ 8., -2.,  0., -2.], dtype=float32)
  """
  return _fftn("hfft", FftType.IRFFT, conj(_as_complex(a, "hfft")), None if n is None else [n],
               _one_axis(axis, "hfft"), _SWAP[_norm(norm, "hfft")])


def ihfft(a, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
  """The inverse of hfft: conj(rfft(a)) / n, the first half of a Hermitian spectrum.

  >>> tnp.fft.ihfft(tnp.array([8.0, -2.0, 0.0, -2.0]))
  Array([1.-0.j, 2.-0.j, 3.-0.j], dtype=complex64)
  """
  return conj(_fftn("ihfft", FftType.RFFT, a, None if n is None else [n], _one_axis(axis, "ihfft"),
                    _SWAP[_norm(norm, "ihfft")]))


# ---- two axes ----

def fft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Array:
  """fftn over two axes (the last two by default).

  >>> tnp.fft.fft2(tnp.array([[1.0, 0.0], [0.0, 0.0]]))
  Array([[1.+0.j, 1.+0.j],
         [1.+0.j, 1.+0.j]], dtype=complex64)
  """
  return _fftn("fft2", FftType.FFT, a, s, _two_axes(axes, "fft2"), norm)


def ifft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Array:
  """ifftn over two axes (the last two by default).

  >>> tnp.fft.ifft2(tnp.array([[4.0, 0.0], [0.0, 0.0]]))
  Array([[1.+0.j, 1.+0.j],
         [1.+0.j, 1.+0.j]], dtype=complex64)
  """
  return _fftn("ifft2", FftType.IFFT, a, s, _two_axes(axes, "ifft2"), norm)


def rfft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Array:
  """rfftn over two axes (the last two by default; the last one is halved).

  >>> tnp.fft.rfft2(tnp.array([[1.0, 0.0], [0.0, 0.0]]))
  Array([[1.+0.j, 1.+0.j],
         [1.+0.j, 1.+0.j]], dtype=complex64)
  """
  return _fftn("rfft2", FftType.RFFT, a, s, _two_axes(axes, "rfft2"), norm)


def irfft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Array:
  """irfftn over two axes (the last two by default).

  >>> tnp.fft.irfft2(tnp.array([[4.0, 0.0], [0.0, 0.0]]))
  Array([[1., 1.],
         [1., 1.]], dtype=float32)
  """
  return _fftn("irfft2", FftType.IRFFT, a, s, _two_axes(axes, "irfft2"), norm)


# ---- any axes ----

def fftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Array:
  """The n-dimensional discrete Fourier transform over `axes` (every axis by default, or the last len(s)), each
  cut or zero-padded to its length in `s`.

  >>> tnp.fft.fftn(tnp.ones((2, 2)))
  Array([[4.+0.j, 0.+0.j],
         [0.+0.j, 0.+0.j]], dtype=complex64)
  """
  return _fftn("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Array:
  """The inverse of fftn.

  >>> tnp.fft.ifftn(tnp.array([[4.0, 0.0], [0.0, 0.0]]))
  Array([[1.+0.j, 1.+0.j],
         [1.+0.j, 1.+0.j]], dtype=complex64)
  """
  return _fftn("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Array:
  """fftn of a real input, keeping the s[-1] // 2 + 1 non-negative frequencies along the last of `axes`.

  >>> tnp.fft.rfftn(tnp.ones((2, 2)))
  Array([[4.+0.j, 0.+0.j],
         [0.+0.j, 0.+0.j]], dtype=complex64)
  """
  return _fftn("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Array:
  """The inverse of rfftn: a real result, of length s[-1] (default 2 * (m - 1)) along the last of `axes`.

  >>> tnp.fft.irfftn(tnp.array([[4.0, 0.0], [0.0, 0.0]]))
  Array([[1., 1.],
         [1., 1.]], dtype=float32)
  """
  return _fftn("irfftn", FftType.IRFFT, a, s, axes, norm)


# ---- frequencies and shifts ----

def _freqs(fn: str, k: Array, n: int, d, dtype, device) -> Array:
  """k / (d * n), computed in the float type of `dtype` (the default float when None) and returned in `dtype`."""
  out = dtypes.default_float() if dtype is None else dtypes.canonicalize(dtypes.as_dtype(dtype, fn))
  dt = out.real if out.is_complex else out if out.is_float else dtypes.default_float()
  if isinstance(d, (list, tuple)): raise TypeError(f"{fn}: d must be a scalar, got {type(d).__name__} {d!r}")
  dn = asarray(d * n, dt) if isinstance(d, (int, float)) else (arraylike(d, fn) * n).astype(dt)
  res = (k.astype(dt) / dn).astype(out)
  return res if device is None else device_put(res, device)


def _count(n, fn: str, least: int) -> int:
  if isinstance(n, Array) and not n.is_traced: n = n.item()
  try:
    n = operator.index(n)
  except TypeError:
    raise TypeError(f"{fn}: n must be an integer, got {n!r}") from None
  if n < least: raise ValueError(f"{fn}: n must be at least {least}, got {n}")
  return n


def fftfreq(n: int, d=1.0, *, dtype=None, device=None) -> Array:
  """The sample frequencies of fft's n outputs for sample spacing d: [0, 1, ..., -2, -1] / (d * n).

  >>> tnp.fft.fftfreq(4)
  Array([ 0.  ,  0.25, -0.5 , -0.25], dtype=float32)
  """
  n = _count(n, "fftfreq", 0)
  k = concatenate([arange((n + 1) // 2), arange(-(n // 2), 0)])
  return _freqs("fftfreq", k, n, d, dtype, device)


def rfftfreq(n: int, d=1.0, *, dtype=None, device=None) -> Array:
  """The sample frequencies of rfft's n // 2 + 1 outputs for sample spacing d: [0, 1, ..., n // 2] / (d * n).

  >>> tnp.fft.rfftfreq(4, d=0.5)
  Array([0. , 0.5, 1. ], dtype=float32)
  """
  n = _count(n, "rfftfreq", 1)
  return _freqs("rfftfreq", arange(n // 2 + 1), n, d, dtype, device)


def _shift(fn: str, x, axes, sign: int) -> Array:
  a = arraylike(x, fn)
  axes = tuple(range(a.ndim)) if axes is None else (axes,) if not isinstance(axes, Sequence) else tuple(axes)
  axes = tuple(normalize_axis(ax, a.ndim, fn, "axes") for ax in axes)
  return roll(a, [sign * (a.shape[ax] // 2) for ax in axes], axes)


def fftshift(x, axes: int | Sequence[int] | None = None) -> Array:
  """x rolled so that the zero frequency is in the middle of each of `axes` (every axis by default).

  >>> tnp.fft.fftshift(tnp.fft.fftfreq(4))
  Array([-0.5 , -0.25,  0.  ,  0.25], dtype=float32)
  """
  return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes: int | Sequence[int] | None = None) -> Array:
  """The inverse of fftshift (they differ for odd lengths).

  >>> tnp.fft.ifftshift(tnp.array([-0.5, -0.25, 0.0, 0.25]))
  Array([ 0.  ,  0.25, -0.5 , -0.25], dtype=float32)
  """
  return _shift("ifftshift", x, axes, -1)
