"""Convolutions as jax.lax.conv_general_dilated: a sum over the kernel's taps of strided slices of the padded input
contracted with the tap's weights, so every transform (grad, vmap, jit) goes through ordinary slices and einsums.

>>> x, w = tnp.ones((1, 1, 4, 4)), tnp.ones((1, 1, 3, 3))
>>> lax.conv_general_dilated(x, w, (1, 1), "VALID").shape
(1, 1, 2, 2)
"""
from __future__ import annotations

import itertools
import math
from typing import Sequence

from .. import numpy as tnp
from ..array import Array

__all__ = ["conv", "conv_general_dilated"]


def _padding(padding, spatial, window, strides, dilation, fn) -> list[tuple[int, int]]:
  if isinstance(padding, str):
    if padding.upper() == "VALID": return [(0, 0)] * len(spatial)
    if padding.upper() != "SAME": raise ValueError(f"{fn}: padding must be 'SAME', 'VALID' or (low, high) pairs, got {padding!r}")
    out = []
    for n, k, s, d in zip(spatial, window, strides, dilation):
      total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
      out.append((total // 2, total - total // 2))
    return out
  pads = [tuple(p) for p in padding]
  if len(pads) != len(spatial) or any(len(p) != 2 for p in pads):
    raise ValueError(f"{fn}: padding needs one (low, high) pair per spatial dimension ({len(spatial)}), got {padding}")
  return pads


def _dilate(x: Array, dilation: Sequence[int], value=0) -> Array:
  """x with d - 1 copies of value between neighbours along each axis (XLA's lhs or base dilation): each axis gets a
  unit axis after it, padded to d, then the pairs are merged and the trailing fill cropped."""
  if all(d == 1 for d in dilation): return x
  y = x.reshape(tuple(itertools.chain.from_iterable((n, 1) for n in x.shape)))
  y = tnp.pad(y, [p for d in dilation for p in ((0, 0), (0, d - 1))], constant_values=value)
  y = y.reshape(tuple(n * d for n, d in zip(x.shape, dilation)))
  return y[tuple(slice(0, max(0, (n - 1) * d + 1)) for n, d in zip(x.shape, dilation))]


def _pad(x: Array, pads: Sequence[tuple[int, int]], value=0) -> Array:
  """x padded with value by (low, high) pairs, one per axis; a negative entry crops instead."""
  if any(lo < 0 or hi < 0 for lo, hi in pads):
    x = x[tuple(slice(max(-lo, 0), n + hi if hi < 0 else n) for n, (lo, hi) in zip(x.shape, pads))]
  return tnp.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in pads], constant_values=value)


def _layouts(dimension_numbers, nd: int, fn: str) -> tuple[str, str, str]:
  if dimension_numbers is None:
    s = "".join("DHW"[-nd:] if nd <= 3 else [chr(ord("a") + i) for i in range(nd)])
    return "NC" + s, "OI" + s, "NC" + s
  if len(dimension_numbers) != 3 or not all(isinstance(d, str) for d in dimension_numbers):
    raise ValueError(f"{fn}: dimension_numbers must be three layout strings such as ('NHWC', 'HWIO', 'NHWC'), got "
                     f"{dimension_numbers!r}")
  return tuple(dimension_numbers)


def conv_general_dilated(lhs, rhs, window_strides: Sequence[int], padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count: int = 1, precision=None,
                         preferred_element_type=None) -> Array:
  """An N-d convolution (cross-correlation, as JAX's), NCHW / OIHW / NCHW unless dimension_numbers says otherwise,
  with strides, padding ('SAME', 'VALID' or (low, high) pairs, negative ones crop), input dilation (lhs_dilation: zeros
  between the input's elements, a transposed convolution), kernel dilation and feature groups.

  >>> lax.conv_general_dilated(tnp.ones((1, 1, 3)), tnp.ones((1, 1, 2)), (1,), [(1, 1)], lhs_dilation=(2,))
  Array([[[1., 1., 1., 1., 1., 1.]]], dtype=float32)
  """
  fn = "conv_general_dilated"
  x, w = tnp.asarray(lhs), tnp.asarray(rhs)
  nd = x.ndim - 2
  if nd < 1 or w.ndim != x.ndim: raise ValueError(f"{fn}: lhs and rhs need one rank of at least 3, got {x.shape} and {w.shape}")
  lhs_spec, rhs_spec, out_spec = _layouts(dimension_numbers, nd, fn)
  # to N C spatial... and O I spatial...
  x = tnp.transpose(x, [lhs_spec.index(c) for c in "NC"] + [i for i, c in enumerate(lhs_spec) if c not in "NC"])
  w = tnp.transpose(w, [rhs_spec.index(c) for c in "OI"] + [i for i, c in enumerate(rhs_spec) if c not in "OI"])
  strides, dil, ldil = tuple(window_strides), tuple(rhs_dilation or (1,) * nd), tuple(lhs_dilation or (1,) * nd)
  if len(strides) != nd or len(dil) != nd or len(ldil) != nd:
    raise ValueError(f"{fn}: window_strides, lhs_dilation and rhs_dilation need {nd} entries, one per spatial "
                     f"dimension, got {strides}, {ldil} and {dil}")
  if any(d < 1 for d in ldil + dil) or any(s < 1 for s in strides):
    raise ValueError(f"{fn}: window_strides and dilations must be positive, got {strides}, {ldil} and {dil}")
  n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
  o, ci, window = w.shape[0], w.shape[1], w.shape[2:]
  g = feature_group_count
  if c != ci * g or o % g:
    raise ValueError(f"{fn}: lhs has {c} features and rhs {ci} per group with {o} outputs; with feature_group_count={g} "
                     f"lhs needs {ci * g} and the outputs a multiple of {g}")
  if isinstance(padding, str) and any(d != 1 for d in ldil):
    raise ValueError(f"{fn}: padding {padding!r} is ambiguous with lhs_dilation={ldil} (a transposed convolution); "
                     f"give explicit (low, high) pairs, e.g. [(k - 1, k - 1)] per spatial dimension for a kernel of size k")
  pads = _padding(padding, spatial, window, strides, dil, fn)
  xp = _pad(_dilate(x, (1, 1, *ldil)), [(0, 0), (0, 0), *pads])
  out_sp = [(sp - (k - 1) * d - 1) // s + 1 for sp, k, d, s in zip(xp.shape[2:], window, dil, strides)]
  if any(m <= 0 for m in out_sp): raise ValueError(f"{fn}: the window does not fit the padded input {xp.shape[2:]}")
  wg = w.reshape(g, o // g, ci, *window)
  out = None
  for tap in itertools.product(*(range(k) for k in window)):
    idx = tuple(slice(t * d, t * d + (m - 1) * s + 1, s) for t, d, m, s in zip(tap, dil, out_sp, strides))
    part = xp[(slice(None), slice(None), *idx)].reshape(n, g, 1, ci, *out_sp)
    # a broadcast product summed over channels keeps the output's spatial axes last, where the input is contiguous
    term = tnp.sum(part * wg[(slice(None), slice(None), slice(None), *tap)].reshape(g, o // g, ci, *[1] * nd), axis=3)
    out = term if out is None else out + term
  out = out.reshape(n, o, *out_sp)
  spatial_names = [ch for ch in out_spec if ch not in "NC"]
  src = "NC" + "".join(spatial_names)
  return tnp.transpose(out, [src.index(ch) for ch in out_spec])


def conv(lhs, rhs, window_strides: Sequence[int], padding, precision=None, preferred_element_type=None) -> Array:
  """conv_general_dilated in NCHW / OIHW without dilation or groups, as jax.lax.conv."""
  return conv_general_dilated(lhs, rhs, window_strides, padding)
