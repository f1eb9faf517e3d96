"""Convolutions built on conv_general_dilated, as jax.lax: conv_with_general_padding, conv_transpose (the gradient
of a strided convolution, as Keras's Conv2DTranspose), conv_general_dilated_patches (the windows themselves) and
conv_general_dilated_local (a kernel of its own at each output position: the patches contracted per position).

>>> lax.conv_transpose(tnp.ones((1, 2, 2, 1)), tnp.ones((2, 2, 1, 1)), (2, 2), "SAME").shape
(1, 4, 4, 1)
"""
from __future__ import annotations

import math
from typing import Sequence

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from . import ops
from .conv import conv_general_dilated
from .conv_shapes import conv_dimension_numbers, conv_transpose_padding
from .dot import check_precision, dot_general

__all__ = ["conv_with_general_padding", "conv_transpose", "conv_general_dilated_patches", "conv_general_dilated_local"]


def conv_with_general_padding(lhs, rhs, window_strides: Sequence[int], padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None) -> Array:
  """conv_general_dilated in NCHW / OIHW layout with dilations, as jax.lax.conv_with_general_padding.

  >>> lax.conv_with_general_padding(tnp.ones((1, 1, 3)), tnp.ones((1, 1, 2)), (1,), [(0, 0)], None, None)
  Array([[[2., 2.]]], dtype=float32)
  """
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_transpose(lhs, rhs, strides: Sequence[int], padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None,
                   use_consistent_padding: bool = False) -> Array:
  """The transposed convolution (input dilated by strides), NHWC / HWIO / NHWC unless dimension_numbers says
  otherwise, padding 'SAME', 'VALID' or (low, high) pairs, as jax.lax.conv_transpose.

  >>> lax.conv_transpose(tnp.ones((1, 2, 1)), tnp.ones((2, 1, 1)), (2,), "VALID")[..., 0]
  Array([[1., 1., 1., 1.]], dtype=float32)
  """
  fn = "conv_transpose"
  x, w = to_array(lhs, fn=fn), to_array(rhs, fn=fn)
  nd = x.ndim
  if dimension_numbers is None:
    if not 2 <= nd <= 5: raise ValueError(f"{fn}: no default dimension_numbers for rank {nd}; pass them")
    dimension_numbers = [("NC", "IO", "NC"), ("NHC", "HIO", "NHC"), ("NHWC", "HWIO", "NHWC"),
                         ("NHWDC", "HWDIO", "NHWDC")][nd - 2]
  dn = conv_dimension_numbers(x.shape, w.shape, dimension_numbers)
  k_sdims = [w.shape[i] for i in dn.rhs_spec[2:]]
  rhs_dilation = tuple(rhs_dilation or (1,) * (nd - 2))
  if use_consistent_padding or isinstance(padding, str):
    eff = [0 if k == 0 else 1 + r * (k - 1) for k, r in zip(k_sdims, rhs_dilation)]
    rep = [padding] * len(strides) if isinstance(padding, str) else [tuple(p) for p in padding]
    pads = [conv_transpose_padding(k, s, p) for k, s, p in zip(eff, strides, rep)]
  else:
    pads = padding
  if transpose_kernel:
    w = Array(w.uop.flip(tuple(dn.rhs_spec[2:])), w.weak_type)
    perm = list(range(nd))
    perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
    w = ops.transpose(w, perm)
  return conv_general_dilated(x, w, (1,) * (nd - 2), pads, strides, rhs_dilation, dn, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs, filter_shape: Sequence[int], window_strides: Sequence[int], padding,
                                 lhs_dilation=None, rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None) -> Array:
  """The patches a convolution with a kernel of filter_shape reads, flattened into the feature axis (channel major,
  then the window's positions), as jax.lax.conv_general_dilated_patches.

  >>> lax.conv_general_dilated_patches(tnp.arange(4.0).reshape(1, 1, 4), (2,), (1,), "VALID")
  Array([[[0., 1., 2.],
          [1., 2., 3.]]], dtype=float32)
  """
  fn = "conv_general_dilated_patches"
  x = to_array(lhs, fn=fn)
  filter_shape = tuple(filter_shape)
  dn = conv_dimension_numbers(x.shape, (1, 1) + filter_shape, dimension_numbers)
  size, c = math.prod(filter_shape), x.shape[dn.lhs_spec[1]]
  rows = UOp.iota((size, size), 0, dtypes.int32)
  eye = Array(rows.alu(Ops.CMPEQ, UOp.iota((size, size), 1, dtypes.int32)).cast(x.dtype))
  w = ops.reshape(ops.broadcast_in_dim(eye, (c, size, size), (1, 2)), (c * size, 1, *filter_shape))
  perm = [0] * w.ndim
  rest = iter(range(2, w.ndim))
  for i in range(w.ndim):
    perm[i] = 0 if i == dn.rhs_spec[0] else 1 if i == dn.rhs_spec[1] else next(rest)
  w = ops.transpose(w, perm)
  return conv_general_dilated(x, w, window_strides, padding, lhs_dilation, rhs_dilation, dn, feature_group_count=c,
                              precision=precision, preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides: Sequence[int], padding, filter_shape: Sequence[int],
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None, precision=None) -> Array:
  """An unshared convolution (a locally connected layer), as jax.lax.conv_general_dilated_local: rhs holds one
  kernel per output position, its spatial axes the output's and its I axis the input channels times the window's
  positions (channel major, the window in rhs_spec's order), the windows of a kernel of filter_shape.

  >>> x = tnp.arange(4.0).reshape(1, 1, 4)
  >>> lax.conv_general_dilated_local(x, tnp.ones((1, 2, 3)), (1,), "VALID", (2,))
  Array([[[1., 3., 5.]]], dtype=float32)
  """
  fn = "conv_general_dilated_local"
  check_precision(precision, fn)
  x, w = to_array(lhs, fn=fn), to_array(rhs, fn=fn)
  filter_shape = tuple(filter_shape)
  if len(filter_shape) != x.ndim - 2 or w.ndim != x.ndim:
    raise TypeError(f"{fn}: lhs {x.shape} and rhs {w.shape} need one rank, with filter_shape {filter_shape} one entry "
                    f"per spatial dimension of lhs")
  pair = precision if isinstance(precision, (tuple, list)) else (precision, precision)
  patches = conv_general_dilated_patches(x, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation,
                                         dimension_numbers, precision=pair[0])
  dn = conv_dimension_numbers(x.shape, (1, 1) + filter_shape, dimension_numbers)
  feat, kern = (patches.shape[dn.out_spec[1]],), (w.shape[dn.rhs_spec[1]],)
  pos, kpos = [patches.shape[i] for i in dn.out_spec[2:]], [w.shape[i] for i in dn.rhs_spec[2:]]
  if feat != kern or pos != kpos:
    raise TypeError(f"{fn}: rhs {w.shape} needs I = input channels x window positions = {feat[0]} (has {kern[0]}) and "
                    f"the output's spatial sizes {tuple(pos)} (has {tuple(kpos)}), in rhs_spec's order")
  # spatial axes pair up in rhs_spec's order; dot_general puts them first, in the output's axis order
  order = sorted(range(len(pos)), key=lambda i: dn.out_spec[2 + i])
  batch = ([dn.out_spec[2 + i] for i in order], [dn.rhs_spec[2 + i] for i in order])
  out = dot_general(patches, w, (([dn.out_spec[1]], [dn.rhs_spec[1]]), batch), precision=precision)
  perm, rest = [0] * out.ndim, iter(range(out.ndim - 2))
  for i in range(out.ndim):
    perm[i] = out.ndim - 2 if i == dn.out_spec[0] else out.ndim - 1 if i == dn.out_spec[1] else next(rest)
  return ops.transpose(out, perm)
