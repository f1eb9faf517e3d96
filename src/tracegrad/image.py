"""Image resampling, as jax.image: resize and scale_and_translate.

Pixels have half-integer centres. Along each resampled axis the output is the input contracted with a weight matrix
(input size x output size) whose entries are a kernel evaluated at the distance between an output pixel's centre,
mapped back into the input, and each input pixel's centre. When downsampling with antialias, the kernel is
stretched by the inverse scale, so it low-pass filters as it interpolates. Each output pixel's weights are
normalised to sum to one; an output pixel whose centre maps outside the input gets zeros. The weights are made of
tracegrad.numpy operations, so resampling is differentiable in the image and, for scale_and_translate, in the scale
and the translation.

>>> from tracegrad import image
>>> image.resize(tnp.array([0.0, 1.0]), (4,), "linear")
Array([0.  , 0.25, 0.75, 1.  ], dtype=float32)
"""
from __future__ import annotations

import enum
import operator
from typing import Sequence

import numpy as np

from . import numpy as tnp
from .array import Array
from .ir import dtypes
from .lax.dot import Precision
from .numpy.core import normalize_axis

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
  """The resampling kernels of resize and scale_and_translate, as jax.image.ResizeMethod; `from_string` also takes
  'bilinear', 'trilinear', 'triangle', 'bicubic', 'tricubic', 'cubic-pytorch' and 'bicubic-pytorch'.

  >>> ResizeMethod.from_string("bicubic")
  <ResizeMethod.CUBIC: 4>
  """
  NEAREST = 0
  LINEAR = 1
  LANCZOS3 = 2
  LANCZOS5 = 3
  CUBIC = 4
  CUBIC_PYTORCH = 5
  AREA = 6

  @staticmethod
  def from_string(s: str) -> ResizeMethod:
    names = {"nearest": "NEAREST", "linear": "LINEAR", "bilinear": "LINEAR", "trilinear": "LINEAR",
             "triangle": "LINEAR", "lanczos3": "LANCZOS3", "lanczos5": "LANCZOS5", "cubic": "CUBIC", "bicubic": "CUBIC",
             "tricubic": "CUBIC", "cubic-pytorch": "CUBIC_PYTORCH", "bicubic-pytorch": "CUBIC_PYTORCH", "area": "AREA"}
    if s not in names: raise ValueError(f'Unknown resize method "{s}"; the methods are {sorted(names)}')
    return ResizeMethod[names[s]]


def _method(method, fn: str) -> ResizeMethod:
  if isinstance(method, ResizeMethod): return method
  if isinstance(method, str): return ResizeMethod.from_string(method)
  raise TypeError(f"{fn}: method must be a ResizeMethod or its name, got {method!r}")


def _triangle(x): return tnp.maximum(0.0, 1.0 - tnp.abs(x))


def _cubic(a: float):
  """The cubic convolution kernel with parameter a: Keys' (a = -0.5) or OpenCV's and PyTorch's (a = -0.75)."""
  def kernel(x):
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    return tnp.where(x >= 2.0, 0.0, tnp.where(x >= 1.0, far, near))
  return kernel


def _lanczos(radius: float):
  def kernel(x):
    y = radius * tnp.sin(np.pi * x) * tnp.sin(np.pi * x / radius)
    safe = tnp.where(x != 0, np.pi ** 2 * x ** 2, 1.0)   # the limit at 0 is 1; the guard keeps its gradient finite
    return tnp.where(x > radius, 0.0, tnp.where(x > 1e-3, y / safe, 1.0))
  return kernel


_AREA = "area"
_KERNELS = {ResizeMethod.LINEAR: (1, _triangle), ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
            ResizeMethod.LANCZOS5: (5, _lanczos(5.0)), ResizeMethod.CUBIC: (2, _cubic(-0.5)),
            ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)), ResizeMethod.AREA: (1, _AREA)}


def _normalise(w):
  total = tnp.sum(w, axis=0, keepdims=True)
  ok = tnp.abs(total) > 1000.0 * float(np.finfo(np.float32).eps)
  return tnp.where(ok, w / tnp.where(total != 0, total, 1.0), 0.0)


def _weights(m: int, n: int, scale, translation, kernel, antialias: bool, edge_radius: int | None):
  """The (m, n) matrix taking m input pixels to n output pixels along one axis. With edge_radius, the kernel also
  reads `edge_radius` pixels beyond each edge, each a copy of the edge pixel, instead of giving the outside zero."""
  dt = tnp.result_type(scale, translation)
  inv = 1.0 / scale
  centres = (tnp.arange(n, dtype=dt) + 0.5) * inv - translation * inv - 0.5   # in input pixel coordinates
  k = edge_radius or 0
  if kernel is _AREA:   # the overlap of each output pixel's extent, mapped back, with each input pixel
    lo = tnp.arange(n, dtype=dt) * inv - translation * inv
    left = tnp.arange(m, dtype=dt)[:, None]
    w = tnp.maximum(0.0, tnp.minimum(lo[None, :] + inv, left + 1.0) - tnp.maximum(lo[None, :], left))
  else:
    stretch = tnp.maximum(inv, 1.0) if antialias else 1.0
    w = kernel(tnp.abs(centres[None, :] - tnp.arange(-k, m + k, dtype=dt)[:, None]) / stretch)
  if edge_radius is not None:   # fold the weights of the copies onto the edge pixels
    fold = (np.clip(np.arange(-k, m + k), 0, m - 1)[:, None] == np.arange(m)[None, :]).astype(np.dtype(dt.np))
    return _normalise(tnp.matmul(tnp.asarray(fold).T, w))
  inside = (centres >= -0.5) & (centres <= m - 0.5)
  return tnp.where(inside[None, :], _normalise(w), 0.0)


def _resample(x: Array, shape, dims, scales, translations, method: ResizeMethod, antialias: bool, precision):
  if method is ResizeMethod.CUBIC_PYTORCH and antialias: method = ResizeMethod.CUBIC
  radius, kernel = _KERNELS[method]
  edge = radius if method is ResizeMethod.CUBIC_PYTORCH else None
  for d, s, t in zip(dims, scales, translations):
    w = _weights(x.shape[d], shape[d], s, t, kernel, antialias, edge).astype(x.dtype)
    banded = None if w.uop.traced else _banded(x, d, np.asarray(w))
    x = banded if banded is not None else tnp.moveaxis(tnp.tensordot(x, w, axes=([d], [0]), precision=precision), -1, d)
  return x


def _banded(x: Array, d: int, w: np.ndarray) -> Array | None:
  """x resampled along axis d by known (m, n) weights w whose columns each weigh a few neighbouring input pixels:
  a gather and a multiply-add per tap, rather than a contraction with every input pixel (upsampling 64 pixels to
  128 linearly weighs 2 of them). None when the taps span over half the input. Half types add in float32."""
  m, n = w.shape
  nz = w != 0
  some = nz.any(0)   # a column of zeros (an output pixel off the input) takes one tap of weight 0
  first, last = np.where(some, nz.argmax(0), 0), np.where(some, m - 1 - nz[::-1].argmax(0), 0)
  taps = int((last - first).max(initial=0)) + 1
  if 2 * taps > m: return None
  at = first[None, :] + np.arange(taps)[:, None]
  taken = np.minimum(at, m - 1)
  weights = np.where(at < m, np.take_along_axis(w, taken, 0), 0)
  wide = x if x.dtype.itemsize >= 4 else x.astype(tnp.float32)
  shape = [1] * x.ndim
  shape[d] = n
  out = None
  for tap, weight in zip(taken, weights):
    term = tnp.take(wide, tap, axis=d) * tnp.asarray(weight.astype(wide.dtype.np)).reshape(shape)
    out = term if out is None else out + term
  return out.astype(x.dtype)


def _image_and_shape(image, shape, fn: str) -> tuple[Array, tuple[int, ...]]:
  x = tnp.asarray(image)
  try:
    shape = tuple(operator.index(s) for s in shape)
  except TypeError:
    raise TypeError(f"{fn}: shape must be a sequence of integers, got {shape!r}") from None
  if len(shape) != x.ndim:
    raise ValueError(f"{fn}: shape must have length equal to the number of dimensions of image, got shape {shape} "
                     f"for an image of shape {x.shape}")
  if any(s < 0 for s in shape): raise ValueError(f"{fn}: shape {shape} has a negative size")
  return x, shape


def _inexact(x: Array) -> Array: return x if x.dtype.is_float else x.astype(dtypes.default_float())


def scale_and_translate(image, shape: Sequence[int], spatial_dims: Sequence[int], scale, translation,
                        method: str | ResizeMethod, antialias: bool = True, precision=Precision.HIGHEST) -> Array:
  """image resampled to `shape`, the point y of the input along spatial_dims[i] landing at
  y * scale[i] + translation[i] of the output (pixel centres at half integers; outside the input, zeros), as
  jax.image.scale_and_translate. Any method but nearest; differentiable in image, scale and translation.

  >>> scale_and_translate(tnp.arange(4.0), (4,), (0,), tnp.array([1.0]), tnp.array([1.0]), "linear")
  Array([0., 0., 1., 2.], dtype=float32)
  """
  fn = "scale_and_translate"
  x, shape = _image_and_shape(image, shape, fn)
  method = _method(method, fn)
  if method is ResizeMethod.NEAREST:
    raise ValueError(f"{fn}: nearest neighbour resampling is not supported here; use resize(image, shape, 'nearest')")
  dims = [normalize_axis(d, x.ndim, fn, "spatial_dims") for d in spatial_dims]
  kept = [d for d in range(x.ndim) if d not in dims and x.shape[d] != shape[d]]
  if kept:
    raise ValueError(f"{fn}: axes {kept} are not in spatial_dims={tuple(spatial_dims)}, so they keep their sizes; got "
                     f"shape {shape} for an image of shape {x.shape}")
  s, t = tnp.asarray(scale), tnp.asarray(translation)
  dt = tnp.result_type(s, t, 1.0)
  s, t = s.astype(dt), t.astype(dt)
  if s.shape != (len(dims),) or t.shape != (len(dims),):
    raise ValueError(f"{fn}: scale and translation need one entry per spatial dimension ({len(dims)}), got shapes "
                     f"{s.shape} and {t.shape}")
  return _resample(_inexact(x), shape, dims, [s[i] for i in range(len(dims))], [t[i] for i in range(len(dims))],
                   method, antialias, precision)


def _nearest(x: Array, shape) -> Array:
  for d, (m, n) in enumerate(zip(x.shape, shape)):
    if m == n: continue
    # in float32 as JAX computes them: the input pixel whose extent holds each output pixel's centre
    at = np.floor((np.arange(n, dtype=np.float32) + np.float32(0.5)) * np.float32(m) / np.float32(n)).astype(np.int32)
    x = tnp.take(x, at, axis=d)
  return x


def resize(image, shape: Sequence[int], method: str | ResizeMethod, antialias: bool = True,
           precision=Precision.HIGHEST) -> Array:
  """image resampled to `shape` (every axis whose size changes; batch and channel axes keep theirs) with the given
  method, antialiased when downsampling unless antialias=False, as jax.image.resize. Nearest keeps the dtype; the
  other methods compute in a float type.

  >>> resize(tnp.array([[1.0, 2.0], [3.0, 4.0]]), (1, 1), "linear")
  Array([[2.5]], dtype=float32)
  """
  fn = "resize"
  x, shape = _image_and_shape(image, shape, fn)
  method = _method(method, fn)
  if method is ResizeMethod.NEAREST: return _nearest(x, shape)
  dims = [d for d in range(x.ndim) if x.shape[d] != shape[d]]
  scales = [shape[d] / x.shape[d] if shape[d] else 1.0 for d in dims]
  return _resample(_inexact(x), shape, dims, scales, [0.0] * len(dims), method, antialias, precision)
