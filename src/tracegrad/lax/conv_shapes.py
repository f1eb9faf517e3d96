"""Convolution bookkeeping, as jax.lax: dimension numbers (layout strings to axis permutations), padding modes to
explicit pads, and the output shapes of convolutions, transposed convolutions and windowed reductions.

>>> lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "conv_dimension_numbers",
           "conv_general_permutations", "padtype_to_pads", "conv_shape_tuple", "conv_general_shape_tuple",
           "conv_transpose_shape_tuple", "reduce_window_shape_tuple", "conv_transpose_padding"]


class ConvDimensionNumbers(NamedTuple):
  """The axes of a convolution's input, kernel and output, each as (batch or out-feature, feature, *spatial)
  positions, as jax.lax.ConvDimensionNumbers."""
  lhs_spec: tuple[int, ...]
  rhs_spec: tuple[int, ...]
  out_spec: tuple[int, ...]


ConvGeneralDilatedDimensionNumbers = "None | ConvDimensionNumbers | tuple[str, str, str]"


def conv_general_permutations(dimension_numbers) -> tuple[tuple[int, ...], ...]:
  """The permutations taking layout strings (e.g. 'NHWC', 'HWIO', 'NHWC') to N C spatial / O I spatial, spatial axes
  in the kernel's order, as jax.lax.conv_general_permutations.

  >>> lax.conv_general_permutations(("NHWC", "HWIO", "NHWC"))
  ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
  """
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  pairs = ("N", "C"), ("O", "I"), ("N", "C")
  for i, (a, b) in enumerate(pairs):
    spec = dimension_numbers[i]
    if not spec.count(a) == spec.count(b) == 1:
      raise TypeError(f"conv_general_permutations: dimension_numbers[{i}] must contain the characters '{a}' and "
                      f"'{b}' exactly once, got {spec}")
    if len(spec) != len(set(spec)):
      raise TypeError(f"conv_general_permutations: dimension_numbers[{i}] cannot repeat characters, got {spec}")
  if not set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"} == set(out_spec) - {"N", "C"}:
    raise TypeError(f"conv_general_permutations: the layouts must have one set of spatial characters, got "
                    f"{tuple(dimension_numbers)}")

  def perm(spec, pair):
    spatial = [i for i, ch in enumerate(spec) if ch not in pair]
    if spec is not rhs_spec: spatial = sorted(spatial, key=lambda i: rhs_spec.index(spec[i]))
    return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)

  return tuple(perm(s, p) for s, p in zip(dimension_numbers, pairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
  """dimension_numbers (None, three layout strings or ConvDimensionNumbers) as ConvDimensionNumbers, as
  jax.lax.conv_dimension_numbers.

  >>> lax.conv_dimension_numbers((1, 3, 5), (2, 3, 2), None)
  ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2))
  """
  fn = "conv_dimension_numbers"
  if isinstance(dimension_numbers, ConvDimensionNumbers): return dimension_numbers
  if len(lhs_shape) != len(rhs_shape):
    raise TypeError(f"{fn}: lhs and rhs need one rank, got shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}")
  if dimension_numbers is None:
    iota = tuple(range(len(lhs_shape)))
    return ConvDimensionNumbers(iota, iota, iota)
  if not isinstance(dimension_numbers, (list, tuple)) or len(dimension_numbers) != 3:
    raise TypeError(f"{fn}: dimension_numbers must be None, ConvDimensionNumbers or three layout strings, got "
                    f"{dimension_numbers!r}")
  if not all(isinstance(s, str) for s in dimension_numbers):
    if all(isinstance(s, (tuple, list)) for s in dimension_numbers):
      return ConvDimensionNumbers(*(tuple(s) for s in dimension_numbers))
    raise TypeError(f"{fn}: dimension_numbers must be strings, got {dimension_numbers!r}")
  if any(len(s) != len(lhs_shape) for s in dimension_numbers):
    raise TypeError(f"{fn}: each layout of {tuple(dimension_numbers)} needs {len(lhs_shape)} characters, the rank "
                    f"of lhs {tuple(lhs_shape)} and rhs {tuple(rhs_shape)}")
  return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def padtype_to_pads(in_shape, window_shape, window_strides, padding) -> list[tuple[int, int]]:
  """'SAME', 'SAME_LOWER' or 'VALID' as one (low, high) pair per spatial axis, as jax.lax.padtype_to_pads.

  >>> lax.padtype_to_pads((5,), (2,), (1,), "SAME")
  [(0, 1)]
  """
  mode = getattr(padding, "name", padding)
  mode = mode.upper() if isinstance(mode, str) else mode
  if mode == "VALID": return [(0, 0)] * len(in_shape)
  if mode not in ("SAME", "SAME_LOWER"):
    raise RuntimeError(f"padtype_to_pads: unrecognized padding type {padding!r}; expected 'SAME', 'SAME_LOWER' or "
                       f"'VALID'")
  out = []
  for n, k, s in zip(in_shape, window_shape, window_strides):
    total = max((math.ceil(n / s) - 1) * s + k - n, 0)
    lo = total // 2 if mode == "SAME" else (total + 1) // 2
    out.append((lo, total - lo))
  return out


def _dilate(n: int, d: int) -> int: return 0 if n == 0 else 1 + d * (n - 1)


def _stride(n: int, k: int, s: int) -> int: return 0 if n < k else (n - k) // s + 1


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1) -> tuple[int, ...]:
  """The output shape of a convolution in N C spatial / O I spatial layout, as jax.lax.conv_shape_tuple.

  >>> lax.conv_shape_tuple((1, 3, 8, 8), (4, 3, 3, 3), (2, 2), "SAME")
  (1, 4, 4, 4)
  """
  if isinstance(pads, str): pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
  if len(pads) != len(lhs_shape) - 2:
    raise TypeError(f"conv_shape_tuple: expected {len(lhs_shape) - 2} explicit pads, got {len(pads)}")
  padded = [n + lo + hi for n, (lo, hi) in zip(lhs_shape[2:], pads)]
  if any(n < 0 for n in padded):
    raise ValueError(f"conv_shape_tuple: padding {pads} crops more than lhs_shape[2:]={tuple(lhs_shape[2:])} holds")
  space = tuple(_stride(n, k, s) for n, k, s in zip(padded, rhs_shape[2:], strides))
  return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + space


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers) -> tuple[int, ...]:
  """The output shape of a convolution with layout strings, as jax.lax.conv_general_shape_tuple.

  >>> lax.conv_general_shape_tuple((1, 8, 8, 3), (3, 3, 3, 4), (1, 1), "VALID", ("NHWC", "HWIO", "NHWC"))
  (1, 6, 6, 4)
  """
  lp, rp, op = conv_general_permutations(dimension_numbers)
  out = conv_shape_tuple(np.take(lhs_shape, lp).tolist(), np.take(rhs_shape, rp).tolist(), window_strides, padding)
  return tuple(int(n) for n in np.take(out, np.argsort(op)))


def conv_transpose_padding(k: int, s: int, padding) -> tuple[int, int]:
  """The (low, high) padding of a transposed convolution for a kernel of size k and stride s."""
  if padding == "SAME":
    total = k + s - 2
    lo = k - 1 if s > k - 1 else math.ceil(total / 2)
  elif padding == "VALID":
    total = k + s - 2 + max(k - s, 0)
    lo = k - 1
  elif isinstance(padding, tuple):
    pads = tuple(k - p - 1 for p in padding)
    lo, total = pads[0], sum(pads)
  else:
    raise ValueError(f"conv_transpose: invalid padding mode {padding!r}")
  return lo, total - lo


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers) -> tuple[int, ...]:
  """The output shape of lax.conv_transpose, as jax.lax.conv_transpose_shape_tuple.

  >>> lax.conv_transpose_shape_tuple((1, 4, 4, 3), (3, 3, 3, 8), (2, 2), "SAME", ("NHWC", "HWIO", "NHWC"))
  (1, 8, 8, 8)
  """
  lp, rp, op = conv_general_permutations(dimension_numbers)
  lhs, rhs = np.take(lhs_shape, lp).tolist(), np.take(rhs_shape, rp).tolist()
  if isinstance(padding, str):
    padding = [conv_transpose_padding(k, s, padding) for k, s in zip(rhs[2:], window_strides)]
  space = [(i - 1) * s - k + 2 + sum(p) for i, k, s, p in zip(lhs[2:], rhs[2:], window_strides, padding)]
  out = (lhs[0], rhs[0], *space)
  return tuple(int(n) for n in np.take(out, np.argsort(op)))


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding, base_dilation=None,
                              window_dilation=None) -> tuple[int, ...]:
  """The output shape of lax.reduce_window with explicit padding, as jax.lax.reduce_window_shape_tuple.

  >>> lax.reduce_window_shape_tuple((4, 4), (2, 2), (2, 2), ((0, 0), (0, 0)))
  (2, 2)
  """
  shape = list(operand_shape)
  window = list(window_dimensions)
  if base_dilation is not None: shape = [_dilate(n, d) for n, d in zip(shape, base_dilation)]
  if window_dilation is not None: window = [_dilate(n, d) for n, d in zip(window, window_dilation)]
  padded = [n + lo + hi for n, (lo, hi) in zip(shape, padding)]
  return tuple(_stride(n, k, s) for n, k, s in zip(padded, window, window_strides))


