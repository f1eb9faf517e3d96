"""Convolutions as jax.lax.conv_general_dilated: one named composite node whose body is the windows of the padded
input, a gather at indices made from iotas, contracted with the kernel in one sum over channels and taps; so every
transform (grad, vmap, jit) goes through ordinary gathers, products and sums. With unit strides on a CPU each
contraction reads the windows from the padded input in place (_direct_conv); otherwise they are stored once behind an
optimization barrier (im2col), channels-last for a channels-last input (the copy then reads and writes runs of
channels, and the contraction is a matmul). The forward pass and the filter gradient are each one register-blocked
contraction.
The input gradient (the node's transpose rule) by unit strides is a convolution of the cotangent, as JAX's; by
larger strides, one contraction giving every tap's cotangent and one pass summing, for each input element, the taps
that reach it.

>>> x, w = tnp.ones((1, 1, 4, 4)), tnp.ones((1, 1, 3, 3))
>>> lax.conv_general_dilated(x, w, (1, 1), "VALID").shape
(1, 1, 2, 2)
"""
from __future__ import annotations

import math
from itertools import product as _product
from typing import Sequence

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from ..trace import composite
from . import control, dot, ops, shapes
from .conv_shapes import conv_dimension_numbers
from .dot import check_precision, tensorfloat32, tf32

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


def _pad(x: Array, value, pads: Sequence[tuple[int, int]], dilation: Sequence[int]) -> Array:
  """x with d - 1 copies of value between neighbours along each axis (XLA's lhs or base dilation), then padded by
  (low, high) pairs; negative ones crop, and cropping past the far edge leaves an empty axis."""
  config = []
  for n, (lo, hi), d in zip(x.shape, pads, dilation):
    size = (n - 1) * d + 1 if n else 0
    lo = max(lo, -size)
    config.append((lo, max(hi, -size - lo), d - 1))
  return ops.pad(x, value, config)


def _windows(x: Array, window, strides, dilation, out_sp, low) -> Array:
  """The windows of x (N, C, *spatial) as (N, C, taps, positions): tap t of window j reads x at t * dilation +
  j * stride - low along each spatial axis, zero outside x (its padding). A gather at indices computed from iotas
  (affine: the kernel reads x directly), whose transpose, the input's gradient, is the scatter-add of each window's
  taps back onto x (the padding's dropped)."""
  nd, (n, c) = len(window), x.shape[:2]
  shape = (n, c, *window, *out_sp)
  at = lambda a: UOp.iota(shape, a, dtypes.int64)
  k = lambda v: UOp.const(dtypes.int64, v, shape)
  spatial = [at(2 + a) * k(d) + at(2 + nd + a) * k(s) - k(lo)
             for a, (d, s, lo) in enumerate(zip(dilation, strides, low))]
  taps = x.uop.gather(UOp.concat([i.reshape((*shape, 1)) for i in [at(0), at(1), *spatial]], len(shape)))
  inside = None
  for i, lo, m, t, d, s, size in zip(spatial, low, out_sp, window, dilation, strides, x.shape[2:]):
    if lo <= 0 and (t - 1) * d + (m - 1) * s - lo < size: continue   # every window of this axis lies inside x
    ok = k(-1).alu(Ops.CMPLT, i).alu(Ops.AND, i.alu(Ops.CMPLT, k(size)))
    inside = ok if inside is None else inside.alu(Ops.AND, ok)
  if inside is not None: taps = inside.where(taps, UOp.const(taps.dtype, 0, shape))
  return Array(taps.reshape((n, c, math.prod(window), math.prod(out_sp))), x.weak_type)


DIRECT_MIN_WIDTH = 16   # output rows at least this long (a vector register of floats) are read directly, unit stride


def _direct(strides, out_sp) -> bool:
  """Whether a convolution reads its windows from the padded input directly (_direct_conv) rather than from an
  im2col copy: on a CPU, with unit strides, where each window's row is a run of the input as long as a vector, so
  every contraction vectorises along it. A copy of the windows costs a pass writing taps times the input (the CNN's
  first layer: 3.5 MB of windows from a 0.4 MB input, read again from memory by the filter gradient). A GPU's
  tensor cores take the im2col contraction, one matmul."""
  from ..run import GPU_BACKENDS, default_backend
  if dot._tensor_cores() or default_backend() in GPU_BACKENDS: return False
  return all(s == 1 for s in strides) and out_sp[-1] >= DIRECT_MIN_WIDTH


def _direct_conv(xq: Array, w: Array, window, dil, out_sp, g: int, dt) -> Array:
  """The convolution of xq (N, C, *spatial), padded so that every window lies inside it, by w (O, I, *window): each
  output position sums w's taps times xq at the position plus the tap, read in place (a gather whose index is affine
  in the loops). The windows' positions stay separate axes, so a row of them is a run of xq; the taps' axes come
  before the channels', so that the sum's innermost loop strides through xq (the forward pass's register blocks
  read xq's rows as vectors). The barrier keeps the padding a copy: masked reads would not vectorise."""
  xq = control.optimization_barrier(xq)
  nd, (n, c), o = len(window), xq.shape[:2], w.shape[0]
  ci = c // g
  shape = (n, g, *window, ci, *out_sp)
  at = lambda a: UOp.iota(shape, a, dtypes.int64)
  k = lambda v: UOp.const(dtypes.int64, v, shape)
  spatial = [at(2 + a) * k(d) + at(3 + nd + a) for a, d in enumerate(dil)]
  chan = at(1) * k(ci) + at(2 + nd)
  taps = Array(xq.uop.gather(UOp.concat([i.reshape((*shape, 1)) for i in [at(0), chan, *spatial]], len(shape))))
  wt = ops.transpose(ops.reshape(w, (g, o // g, ci, *window)), (0, 1, *range(3, 3 + nd), 2))   # g, o, taps, ci
  full = (n, g, o // g, *window, ci, *out_sp)
  summed = tuple(range(3, 4 + nd))
  prod = ops.mul(ops.broadcast_in_dim(wt, full, tuple(range(1, 4 + nd))),
                 ops.broadcast_in_dim(taps, full, (0, 1, *range(3, 4 + nd), *range(4 + nd, 4 + 2 * nd))))
  return ops.reshape(_summed(prod, summed, dt), (n, o, *out_sp))


def _pointwise(x: Array, w: Array, g: int, dt) -> Array:
  """A 1 x 1 convolution by unit strides without padding: a contraction over the channels of x as it is, with no
  copy (a channels-last input is then a matmul whose rows are its positions)."""
  n, c, *spatial = x.shape
  o, nd = w.shape[0], x.ndim - 2
  full = (n, g, o // g, c // g, *spatial)
  prod = ops.mul(ops.broadcast_in_dim(ops.reshape(w, (g, o // g, c // g)), full, (1, 2, 3)),
                 ops.broadcast_in_dim(ops.reshape(x, (n, g, c // g, *spatial)), full, (0, 1, 3, *range(4, 4 + nd))))
  return ops.reshape(_summed(prod, (3,), dt), (n, o, *spatial))


def _summed(prod: Array, axes: tuple, dt: dtypes.DType) -> Array:
  """prod, of dtype dt, summed over axes in JAX's dtype for sums of dt (_sum_dtype)."""
  return ops.reduce_sum(prod if _sum_dtype(dt) is dt else ops.convert_element_type(prod, _sum_dtype(dt)), axes)


def _sum_dtype(d: dtypes.DType) -> dtypes.DType:
  """JAX's dtype for sums: bool and narrow integers accumulate in the default (unsigned) integer."""
  if d.is_bool: return dtypes.default_int()
  wide = dtypes.canonicalize(dtypes.uint64) if d.is_unsigned else dtypes.default_int()
  return wide if d.is_int and d.itemsize < wide.itemsize else d


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
  check_precision(precision, fn)
  x, w = to_array(lhs, fn=fn), to_array(rhs, fn=fn)
  nd = x.ndim - 2
  if nd < 1 or w.ndim != x.ndim: raise ValueError(f"{fn}: lhs and rhs need one rank of at least 3, got {x.shape} and {w.shape}")
  dn = conv_dimension_numbers(x.shape, w.shape, dimension_numbers)
  x, w = ops.transpose(x, dn.lhs_spec), ops.transpose(w, dn.rhs_spec)  # to N C spatial... and O I spatial...
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
  dt = dtypes.result_type((x.dtype, x.weak_type), (w.dtype, w.weak_type))[0]  # mixed dtypes promote by JAX's lattice
  x, w = (Array(a.uop.cast(dt), a.weak_type) for a in (x, w))
  if tensorfloat32(precision, dt): x, w = (Array(tf32(a.uop), a.weak_type) for a in (x, w))   # as JAX on a GPU
  xp_sp = [(sp - 1) * d + 1 if sp else 0 for sp, d in zip(spatial, ldil)]
  if any((sp + lo + hi - (k - 1) * d - 1) // s + 1 <= 0
         for sp, (lo, hi), k, d, s in zip(xp_sp, pads, window, dil, strides)):
    padded = tuple(sp + lo + hi for sp, (lo, hi) in zip(xp_sp, pads))
    raise ValueError(f"{fn}: the window does not fit the padded input {padded}")
  # the input's gradient by unit strides is one convolution reading the output's cotangent in place; by larger
  # strides, one contraction giving every tap's cotangent and one pass adding them up for each of the input's
  # elements (measured faster than a convolution per phase of the strides, whose rows are short)
  rules = (_lhs_transpose if all(s == 1 for s in strides) else _strided_lhs_transpose if all(d == 1 for d in ldil)
           else None, None)
  out = composite("conv_general_dilated", _conv, x, w, transposes=rules, strides=strides,
                  pads=tuple(map(tuple, pads)), ldil=ldil, dil=dil, groups=g, last=dn.lhs_spec[1] == x.ndim - 1)
  out = out if preferred_element_type is None else ops.convert_element_type(out, preferred_element_type)
  return ops.transpose(out, [dn.out_spec.index(i) for i in range(out.ndim)])


def _conv(x: Array, w: Array, *, strides, pads, ldil, dil, groups, last=False) -> Array:
  """The convolution of x (N, C, *spatial) by w (O, I, *window), both of one dtype: the body of conv_general_dilated.
  `last`: x is a view of channels-last data (NHWC)."""
  nd, dt = x.ndim - 2, x.dtype
  n, window, o = x.shape[0], w.shape[2:], w.shape[0]
  if any(d > 1 for d in ldil) and all(s == 1 for s in strides): return _phased(x, w, pads, ldil, dil, groups)
  if all(k == 1 for k in window) and all(s == 1 for s in strides) and not any(lo or hi for lo, hi in pads):
    return _pointwise(x, w, groups, dt)
  # zeros between the input's elements are a padded copy; the zeros around it, the windows' reads outside it
  xp = _pad(x, 0, [(0, 0), (0, 0), *[(0, 0)] * nd], (1, 1, *ldil)) if any(d > 1 for d in ldil) else x
  padded = [sp + lo + hi for sp, (lo, hi) in zip(xp.shape[2:], pads)]
  out_sp = [(sp - (k - 1) * d - 1) // s + 1 for sp, k, d, s in zip(padded, window, dil, strides)]
  if _direct(strides, out_sp):
    return _direct_conv(_pad(xp, 0, [(0, 0), (0, 0), *pads], (1,) * xp.ndim), w, window, dil, out_sp, groups, dt)
  g, ci = groups, w.shape[1]
  cols = _windows(xp, window, strides, dil, out_sp, [lo for lo, _ in pads])
  taps, positions = math.prod(window), math.prod(out_sp)
  if last and g == 1:
    # channels-last im2col: the windows stored (n, positions, taps * ci) and the output (n, positions, o) as the data
    # lie, a matmul by the filter (taps * ci, o); a channels-first copy of them transposed the input (2.3x slower) and
    # its contraction read the filter's taps a channel apart
    cols = control.optimization_barrier(ops.reshape(ops.transpose(cols, (0, 3, 2, 1)), (n, positions, taps * ci)))
    wl = ops.reshape(ops.transpose(w, (*range(2, 2 + nd), 1, 0)), (taps * ci, o))
    full = (n, positions, taps * ci, o)
    prod = ops.mul(ops.broadcast_in_dim(cols, full, (0, 1, 2)), ops.broadcast_in_dim(wl, full, (2, 3)))
    out = ops.reshape(_summed(prod, (2,), dt), (n, *out_sp, o))
    return ops.transpose(out, (0, nd + 1, *range(1, nd + 1)))
  # im2col: the windows of the padded input stored once, (n, g, ci * taps, positions); then one contraction
  cols = control.optimization_barrier(ops.reshape(cols, (n, g, ci * taps, positions)))
  wg = ops.reshape(w, (g, o // g, ci * taps))
  # positions last, where the windows, the output and its cotangent are contiguous: the forward pass and both
  # gradients each vectorise along them (the filter's gradient sums along them)
  full = (n, g, o // g, ci * taps, positions)
  prod = ops.mul(ops.broadcast_in_dim(wg, full, (1, 2, 3)), ops.broadcast_in_dim(cols, full, (0, 1, 3, 4)))
  return ops.reshape(_summed(prod, (3,), dt), (n, o, *out_sp))


def _phased(x: Array, w: Array, pads, ldil, dil, groups) -> Array:
  """A convolution of x with s - 1 zeros between its elements (lhs dilation s; unit strides) as s ** nd convolutions
  of x itself, one per phase of the output's position modulo s: output i = s * q + r reads x at q plus a fixed offset
  through the taps k with (r + k * d - low) divisible by s, every (s / gcd(d, s))-th tap, so no product meets a zero.
  The phases are interleaved back into one stored array. This is a transposed convolution (conv_transpose)."""
  nd, (n, o), window, spatial = x.ndim - 2, (x.shape[0], w.shape[0]), w.shape[2:], x.shape[2:]
  out_sp = [((sp - 1) * s + 1) + lo + hi - (k - 1) * d
            for sp, s, (lo, hi), k, d in zip(spatial, ldil, pads, window, dil)]
  q_sp = [-(-m // s) for m, s in zip(out_sp, ldil)]
  axes = []   # per axis, per phase: (first tap, tap step, sub-dilation, low pad) or None where no tap meets x
  for sp, s, (lo, _), k, d, q in zip(spatial, ldil, pads, window, dil, q_sp):
    step, phases = s // math.gcd(d, s), []
    for r in range(s):
      first = next((t for t in range(min(k, step)) if (r + t * d - lo) % s == 0), None)
      phases.append(None if first is None else (first, step, d // math.gcd(d, s), -((r + first * d - lo) // s)))
    axes.append(phases)
  parts = []
  for phase in _product(*[range(s) for s in ldil]):
    got = [ax[r] for ax, r in zip(axes, phase)]
    if any(p is None for p in got):
      parts.append(Array(UOp.const(_sum_dtype(x.dtype), 0, (n, o, *q_sp)))); continue
    wk = ops.slice(w, (0, 0, *[f for f, *_ in got]), w.shape, (1, 1, *[st for _, st, _, _ in got]))
    sub = [(lo, q + (kk - 1) * dd - sp - lo)
           for (_, _, dd, lo), q, kk, sp in zip(got, q_sp, wk.shape[2:], spatial)]
    parts.append(_conv(x, wk, strides=(1,) * nd, pads=tuple(sub), ldil=(1,) * nd, dil=tuple(g[2] for g in got),
                       groups=groups))
  return _interleaved(parts, ldil, out_sp)


def _interleaved(parts: list[Array], s, size, last: bool = False) -> Array:
  """Arrays (n, c, *q) in phase order (r_1, ..., r_nd), element q of phase r going to s * q + r, cropped to size and
  stored once (channels-last where `last`): a consumer reading the phases in place would pick among them at every
  element."""
  (n, c, *q_sp), nd = parts[0].shape, len(s)
  stacked = ops.reshape(shapes.concatenate([ops.reshape(p, (n, c, 1, *q_sp)) for p in parts], 2), (n, c, *s, *q_sp))
  inter = ops.transpose(stacked, (0, 1, *[a for i in range(nd) for a in (2 + nd + i, 2 + i)]))
  inter = ops.reshape(inter, (n, c, *[q * k for q, k in zip(q_sp, s)]))
  out = ops.slice(inter, (0,) * inter.ndim, (n, c, *size))
  if not last: return control.optimization_barrier(out)
  stored = control.optimization_barrier(ops.transpose(out, (0, *range(2, 2 + nd), 1)))
  return ops.transpose(stored, (0, nd + 1, *range(1, nd + 1)))


def _strided_lhs_transpose(ct: Array, x: Array, w: Array, *, strides, pads, ldil, dil, groups, last=False) -> Array:
  """x's cotangent by strides above 1: every tap's cotangent, T[n, c, k, y] = sum_o w[o, c, k] ct[n, o, y], in one
  contraction; then element s * q + r of x (phase r of the strides) adds T at y = q + e over the taps k that reach it,
  those with r + low - k * dilation = s * e. The phases are interleaved: each element is written once, by one pass
  reading T, rather than zeroed and then added to tap by tap. For channels-last data (`last`, one group) T is
  channels-last too, a matmul of the cotangent's positions by the filter, and so is x's cotangent: each pass then
  reads and writes runs of channels, where a channels-first one was transposed back element by element."""
  nd, (n, c), window, out_sp, spatial = x.ndim - 2, x.shape[:2], w.shape[2:], ct.shape[2:], x.shape[2:]
  o, ci, g = w.shape[0], w.shape[1], groups
  taps, positions = math.prod(window), math.prod(out_sp)
  last = last and g == 1
  if last:
    space = tuple(range(2, 2 + nd))
    full = (n, positions, o, taps * ci)
    ctl = ops.reshape(ops.transpose(ct, (0, *space, 1)), (n, positions, o))
    wl = ops.reshape(ops.transpose(w, (0, *space, 1)), (o, taps * ci))
    prod = ops.mul(ops.broadcast_in_dim(ctl, full, (0, 1, 2)), ops.broadcast_in_dim(wl, full, (2, 3)))
    t = ops.reshape(_summed(prod, (2,), x.dtype), (n, *out_sp, *window, ci))
    t = ops.transpose(t, (0, 1 + 2 * nd, *range(1 + nd, 1 + 2 * nd), *range(1, 1 + nd)))   # (n, c, *window, *out_sp)
  else:
    full = (n, g, o // g, ci * taps, positions)
    prod = ops.mul(ops.broadcast_in_dim(ops.reshape(w, (g, o // g, ci * taps)), full, (1, 2, 3)),
                   ops.broadcast_in_dim(ops.reshape(ct, (n, g, o // g, positions)), full, (0, 1, 2, 4)))
    t = ops.reshape(_summed(prod, (2,), x.dtype), (n, c, *window, *out_sp))
  q_sp = [-(-h // k) for h, k in zip(spatial, strides)]
  parts = []
  for phase in _product(*[range(k) for k in strides]):
    got = None
    for tap in _product(*[range(k) for k in window]):
      shift = [(r + lo - k * d) for r, (lo, _), k, d in zip(phase, pads, tap, dil)]
      if any(e % k for e, k in zip(shift, strides)): continue
      shift = [e // k for e, k in zip(shift, strides)]
      if any(e >= m or e + q <= 0 for e, m, q in zip(shift, out_sp, q_sp)): continue   # reaches no element
      one = ops.reshape(ops.slice(t, (0, 0, *tap, *[0] * nd), (n, c, *[k + 1 for k in tap], *out_sp)), (n, c, *out_sp))
      one = ops.pad(one, 0, [(0, 0, 0)] * 2 + [(-e, q - m + e, 0) for e, q, m in zip(shift, q_sp, out_sp)])
      got = one if got is None else ops.add(got, one)
    parts.append(Array(UOp.const(t.dtype, 0, (n, c, *q_sp))) if got is None else got)
  return _interleaved(parts, strides, spatial, last)


def _lhs_transpose(ct: Array, x: Array, w: Array, *, strides, pads, ldil, dil, groups, last=False) -> Array:
  """x's cotangent: ct convolved with w flipped, its input and output features swapped within each group, with
  ct's elements spaced by the strides (lhs dilation), x's lhs dilation as the strides, and the padding that lines
  each of x's elements up with the outputs that read it (as JAX's transpose rule)."""
  nd, window = x.ndim - 2, w.shape[2:]
  o, i = w.shape[:2]
  kd = [(k - 1) * d + 1 for k, d in zip(window, dil)]
  xd = [(sp - 1) * s + 1 for sp, s in zip(x.shape[2:], ldil)]
  od = [(m - 1) * s + 1 for m, s in zip(ct.shape[2:], strides)]
  before = [k - lo - 1 for k, (lo, _) in zip(kd, pads)]
  pads_t = [(b, a + k - 1 - m - b) for b, a, k, m in zip(before, xd, kd, od)]
  wt = ops.reshape(w, (groups, o // groups, i, *window))
  wt = ops.transpose(wt, (0, 2, 1, *range(3, 3 + nd)))
  wt = shapes.rev(ops.reshape(wt, (groups * i, o // groups, *window)), tuple(range(2, 2 + nd)))
  return conv_general_dilated(ct, wt, ldil, pads_t, lhs_dilation=strides, rhs_dilation=dil,
                              feature_group_count=groups)


def conv(lhs, rhs, window_strides: Sequence[int], padding, precision=None, preferred_element_type=None) -> Array:
  """conv_general_dilated in NCHW / OIHW without dilation or groups, as jax.lax.conv.

  >>> lax.conv(tnp.ones((1, 1, 4)), tnp.ones((1, 1, 2)), (1,), "VALID")
  Array([[[2., 2., 2.]]], dtype=float32)
  """
  return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                              preferred_element_type=preferred_element_type)
