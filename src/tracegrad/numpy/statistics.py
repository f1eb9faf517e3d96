"""Order statistics, histograms and calculus on samples: quantile, percentile, median (and their nan- forms), cov,
corrcoef, nanargmax, nanargmin, bincount, digitize, histogram*, interp, gradient, trapezoid, ediff1d, unwrap."""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..array import Array, to_array
from ..ir import dtypes
from ._support import arr, concrete, inexact, static_int
from .core import normalize_axes, normalize_axis, promote
from .creation import full, linspace, ones_like, zeros
from .elementwise import abs as _abs, ceil, clip, conj, floor, imag, isnan, logical_not, real, remainder, sqrt, where
from .index_tricks import ix_, ravel_multi_index
from .indexing import take_along_axis
from .reductions import all as _all, any as _any, argmax, argmin, cumsum, max as _max, min as _min, sum as _sum
from .shape import broadcast_to, concatenate, diff, moveaxis, ravel, reshape, stack, transpose
from .sorting import searchsorted, sort
from .contract import dot

__all__ = ["quantile", "nanquantile", "percentile", "nanpercentile", "median", "nanmedian", "cov", "corrcoef",
           "nanargmax", "nanargmin", "bincount", "digitize", "histogram_bin_edges", "histogram", "histogram2d",
           "histogramdd", "interp", "gradient", "trapezoid", "ediff1d", "unwrap"]

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _inexact(fn: str, *xs) -> list[Array]:
  """The operands promoted to a common inexact dtype, complex ones kept complex."""
  arrs, dt, _ = promote(fn, *xs)
  return arrs if dt.is_complex else inexact(fn, *xs)


def _real_input(fn: str, a) -> None:
  if arr(a, fn).dtype.is_complex:
    raise TypeError(f"{fn}: complex input is not supported (complex values have no ordering for quantiles); apply it "
                    f"to tnp.real(a) and tnp.imag(a), or to tnp.abs(a)")


def _quantile(fn, a, q, axis, method, keepdims, squash_nans):
  if method not in _METHODS:
    raise ValueError(f"{fn}: method can only be 'linear', 'lower', 'higher', 'midpoint' or 'nearest', got {method!r}")
  _real_input(fn, a)
  x, qa = inexact(fn, a, q)
  if qa.ndim > 1: raise ValueError(f"{fn}: q must have rank <= 1, got shape {qa.shape}")
  axes = normalize_axes(axis, x.ndim, fn)
  rest = [d for d in range(x.ndim) if d not in axes]
  batch = tuple(x.shape[d] for d in rest)
  n = math.prod(x.shape[d] for d in axes)
  xs = sort(reshape(transpose(x, rest + list(axes)), batch + (n,)), axis=-1)
  nb = len(batch)
  qb = qa.reshape(qa.shape + (1,) * nb)
  if squash_nans:
    counts = _sum(logical_not(isnan(xs)), axis=-1).astype(x.dtype)
    pos = qb * (counts - 1)
    top = counts - 1
  else:
    pos = qb * (n - 1)
    top = n - 1
  lo, hi = floor(pos), ceil(pos)
  hw = pos - lo
  lw = 1 - hw
  lo = clip(lo, 0, top).astype(dtypes.default_int())
  hi = clip(hi, 0, top).astype(dtypes.default_int())
  k, out_b = max(qa.size, 1), qa.shape + batch

  def gather(i):  # i: indices into the sorted axis, of shape q.shape + batch
    if n == 0: return full(out_b, float("nan"), x.dtype)
    i = moveaxis(broadcast_to(i, out_b).reshape((k,) + batch), 0, -1)
    return moveaxis(take_along_axis(xs, i, axis=-1), -1, 0).reshape(out_b)

  lv, hv = gather(lo), gather(hi)
  if method == "linear": res = lv * lw + hv * hw
  elif method == "lower": res = lv
  elif method == "higher": res = hv
  elif method == "nearest": res = where(hw <= 0.5, lv, hv)
  else: res = (lv + hv) * 0.5
  if not squash_nans and n:
    res = where(_any(isnan(xs), axis=-1), float("nan"), res)
  if keepdims:
    res = res.reshape(qa.shape + tuple(1 if d in axes else x.shape[d] for d in range(x.ndim)))
  return res.astype(x.dtype)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method: str = "linear", keepdims: bool = False, *,
             interpolation=None) -> Array:
  """The q-th quantiles (0 <= q <= 1) of a along axis (NaN if a slice holds NaN).

  >>> tnp.quantile(tnp.array([1.0, 2.0, 3.0, 4.0]), tnp.array([0.25, 0.5]))
  Array([1.75, 2.5 ], dtype=float32)
  """
  _unsupported("quantile", out, overwrite_input, interpolation)
  return _quantile("quantile", a, q, axis, method, keepdims, False)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method: str = "linear", keepdims: bool = False, *,
                interpolation=None) -> Array:
  """quantile ignoring NaNs.

  >>> tnp.nanquantile(tnp.array([1.0, tnp.nan, 3.0]), 0.5)
  Array(2., dtype=float32)
  """
  _unsupported("nanquantile", out, overwrite_input, interpolation)
  return _quantile("nanquantile", a, q, axis, method, keepdims, True)


def _unsupported(fn, out, overwrite_input, interpolation=None):
  if out is not None: raise NotImplementedError(f"{fn}: the 'out' argument is not supported (arrays are immutable)")
  if overwrite_input: raise ValueError(f"{fn}: overwrite_input=True is not supported (arrays are immutable)")
  if interpolation is not None:
    raise TypeError(f"{fn}: the 'interpolation' argument was renamed 'method'")


def percentile(a, q, axis=None, out=None, overwrite_input=False, method: str = "linear", keepdims: bool = False, *,
               interpolation=None) -> Array:
  """The q-th percentiles (0 <= q <= 100) of a along axis.

  >>> tnp.percentile(tnp.array([1.0, 2.0, 3.0, 4.0]), 50)
  Array(2.5, dtype=float32)
  """
  _unsupported("percentile", out, overwrite_input, interpolation)
  _real_input("percentile", a)
  x, qa = inexact("percentile", a, q)
  return _quantile("percentile", x, qa / 100, axis, method, keepdims, False)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method: str = "linear", keepdims: bool = False,
                  *, interpolation=None) -> Array:
  """percentile ignoring NaNs.

  >>> tnp.nanpercentile(tnp.array([1.0, tnp.nan, 3.0]), 100)
  Array(3., dtype=float32)
  """
  _unsupported("nanpercentile", out, overwrite_input, interpolation)
  _real_input("nanpercentile", a)
  x, qa = inexact("nanpercentile", a, q)
  return _quantile("nanpercentile", x, qa / 100, axis, method, keepdims, True)


def median(a, axis=None, out=None, overwrite_input=False, keepdims: bool = False) -> Array:
  """The median along axis.

  >>> tnp.median(tnp.array([[1, 3, 2], [4, 6, 5]]), axis=1)
  Array([2., 5.], dtype=float32)
  """
  _unsupported("median", out, overwrite_input)
  return _quantile("median", a, 0.5, axis, "midpoint", keepdims, False)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims: bool = False) -> Array:
  """median ignoring NaNs.

  >>> tnp.nanmedian(tnp.array([1.0, tnp.nan, 4.0]))
  Array(2.5, dtype=float32)
  """
  _unsupported("nanmedian", out, overwrite_input)
  return _quantile("nanmedian", a, 0.5, axis, "midpoint", keepdims, True)


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof=None, fweights=None, aweights=None) -> Array:
  """The covariance matrix of the variables in the rows of m (columns with rowvar=False).

  >>> tnp.cov(tnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
  Array([[ 1., -1.],
         [-1.,  1.]], dtype=float32)
  """
  if y is not None: m, y = _inexact("cov", m, y)
  else: m, = _inexact("cov", m)
  if m.ndim > 2: raise ValueError(f"cov: m has more than 2 dimensions, got shape {m.shape}")
  X = m.reshape((1, -1)) if m.ndim < 2 else m
  if not rowvar and X.shape[0] != 1: X = X.T
  if X.shape[0] == 0: return zeros((0, 0), X.dtype)
  if y is not None:
    if y.ndim > 2: raise ValueError(f"cov: y has more than 2 dimensions, got shape {y.shape}")
    yy = y.reshape((1, -1)) if y.ndim < 2 else y
    if not rowvar and yy.shape[0] != 1: yy = yy.T
    X = concatenate([X, yy.astype(X.dtype)], axis=0)
  if ddof is None: ddof = 0 if bias else 1
  w = None
  if fweights is not None:
    f = arr(fweights, "cov")
    if f.ndim > 1: raise RuntimeError(f"cov: cannot handle multidimensional fweights, got shape {f.shape}")
    if f.shape[0] != X.shape[1]:
      raise RuntimeError(f"cov: incompatible numbers of samples and fweights ({X.shape[1]} vs {f.shape[0]})")
    w = f.astype(X.dtype)
  if aweights is not None:
    aw = arr(aweights, "cov")
    if aw.ndim > 1: raise RuntimeError(f"cov: cannot handle multidimensional aweights, got shape {aw.shape}")
    if aw.shape[0] != X.shape[1]:
      raise RuntimeError(f"cov: incompatible numbers of samples and aweights ({X.shape[1]} vs {aw.shape[0]})")
    w = aw.astype(X.dtype) if w is None else w * aw
  if w is None:
    avg = X.mean(axis=1)
    w_sum = to_array(X.shape[1], X.dtype, fn="cov")
    fact = X.shape[1] - ddof
  else:
    w_sum = _sum(w)
    avg = _sum(X * w, axis=1) / w_sum
    if ddof == 0: fact = w_sum
    elif aweights is None: fact = w_sum - ddof
    else: fact = w_sum - ddof * _sum(w * arr(aweights, "cov")) / w_sum
  Xc = X - avg[:, None]
  Xt = (Xc * w).T if w is not None else Xc.T
  c = dot(Xc, conj(Xt)) / fact
  return c.reshape(()) if c.shape == (1, 1) else c


def corrcoef(x, y=None, rowvar: bool = True) -> Array:
  """Pearson correlation coefficients of the variables in the rows of x.

  >>> tnp.corrcoef(tnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
  Array([[ 1., -1.],
         [-1.,  1.]], dtype=float32)
  """
  c = cov(x, y, rowvar)
  if c.ndim == 0: return c / c
  d = real(c.diagonal())
  sd = sqrt(d)
  c = c / sd[:, None] / sd[None, :]
  if not c.dtype.is_complex: return clip(c, -1, 1)
  return (clip(real(c), -1, 1) + 1j * clip(imag(c), -1, 1)).astype(c.dtype)   # each part clipped, as numpy


def _nanarg(fn, pick, fill, a, axis, out, keepdims):
  if out is not None: raise NotImplementedError(f"{fn}: the 'out' argument is not supported (arrays are immutable)")
  x = arr(a, fn)
  if not x.dtype.is_inexact: return pick(x, axis=axis, keepdims=keepdims)
  nan = isnan(x)
  res = pick(where(nan, complex(fill, fill) if x.dtype.is_complex else fill, x), axis=axis, keepdims=keepdims)
  return where(_all(nan, axis=axis, keepdims=keepdims), -1, res)


def nanargmax(a, axis=None, out=None, keepdims=None) -> Array:
  """The index of the maximum, ignoring NaNs (-1 where a slice is all NaN).

  >>> tnp.nanargmax(tnp.array([1.0, tnp.nan, 3.0]))
  Array(2, dtype=int32)
  """
  return _nanarg("nanargmax", argmax, -float("inf"), a, axis, out, bool(keepdims))


def nanargmin(a, axis=None, out=None, keepdims=None) -> Array:
  """The index of the minimum, ignoring NaNs (-1 where a slice is all NaN).

  >>> tnp.nanargmin(tnp.array([tnp.nan, 2.0, 1.0]))
  Array(2, dtype=int32)
  """
  return _nanarg("nanargmin", argmin, float("inf"), a, axis, out, bool(keepdims))


def bincount(x, weights=None, minlength: int = 0, *, length: int | None = None) -> Array:
  """How often each value 0, 1, ... occurs in the non-negative ints x (pass length= under jit).

  >>> tnp.bincount(tnp.array([0, 1, 1, 3]))
  Array([1, 2, 0, 1], dtype=int32)
  """
  xa = arr(x, "bincount")
  if xa.dtype.is_bool: xa = xa.astype(dtypes.int32)
  if not xa.dtype.is_int: raise TypeError(f"bincount: x must have an integer type, got {xa.dtype}")
  if xa.ndim != 1: raise ValueError(f"bincount: only 1-dimensional input supported, got shape {xa.shape}")
  minlength = static_int(minlength, "bincount", "minlength")
  if length is None:
    concrete(xa, "bincount", "x", "pass a static length= argument")
    length = builtins.max(minlength, int(np.asarray(xa).max(initial=-1)) + 1 if xa.size else 0)
  else:
    length = static_int(length, "bincount", "length")
  if weights is None: w = to_array(1, dtypes.default_int(), fn="bincount")
  else:
    w = arr(weights, "bincount")
    if w.shape != xa.shape:
      raise ValueError(f"bincount: weights must have the shape of x, got {w.shape} and {xa.shape}")
  return zeros(length, w.dtype).at[clip(xa, 0)].add(w, mode="drop")


def digitize(x, bins, right: bool = False, *, method: str | None = None) -> Array:
  """The index of the bin each x falls in (bins increasing or decreasing).

  >>> tnp.digitize(tnp.array([0.5, 1.5, 3.0]), tnp.array([1.0, 2.0, 3.0]))
  Array([0, 1, 3], dtype=int32)
  """
  xa, b = arr(x, "digitize"), arr(bins, "digitize")
  if b.ndim != 1: raise ValueError(f"digitize: bins must be a 1-dimensional array, got shape {b.shape}")
  if b.shape[0] == 0: return zeros(xa.shape, dtypes.int32)
  side = "left" if right else "right"
  return where(b[-1] >= b[0], searchsorted(b, xa, side=side), b.shape[0] - searchsorted(b[::-1], xa, side=side))


def histogram_bin_edges(a, bins=10, range=None, weights=None) -> Array:  # noqa: A002
  """The edges of the bins histogram would use.

  >>> tnp.histogram_bin_edges(tnp.array([0.0, 1.0, 2.0]), bins=2)
  Array([0., 1., 2.], dtype=float32)
  """
  if isinstance(bins, str): raise NotImplementedError("histogram_bin_edges: string values for bins are not supported")
  x, = inexact("histogram_bin_edges", a)
  if np.ndim(bins) == 1: return arr(bins, "histogram_bin_edges").astype(x.dtype)
  nb = static_int(bins, "histogram_bin_edges", "bins")
  r = stack([_min(x), _max(x)]) if range is None else to_array(range, fn="histogram_bin_edges").astype(x.dtype)
  if r.shape != (2,): raise ValueError(f"histogram_bin_edges: range must be None or a pair of scalars, got {range}")
  same = r[1] == r[0]
  lo, hi = where(same, r[0] - 0.5, r[0]), where(same, r[1] + 0.5, r[1])
  return linspace(lo, hi, nb + 1, dtype=x.dtype)


def histogram(a, bins=10, range=None, weights=None, density=None) -> tuple[Array, Array]:  # noqa: A002
  """Counts (or summed weights, or a density) of a's values in bins, and the bin edges.

  >>> tnp.histogram(tnp.array([0.0, 0.5, 2.0]), bins=2)
  (Array([2., 1.], dtype=float32), Array([0., 1., 2.], dtype=float32))
  """
  if weights is None:
    x, = inexact("histogram", a)
    w = ones_like(x)
  else:
    x, w = arr(a, "histogram"), arr(weights, "histogram")
    if x.shape != w.shape:
      raise ValueError(f"histogram: weights should have the shape of a, got {w.shape} and {x.shape}")
    x, w = inexact("histogram", x, w)
  edges = histogram_bin_edges(x, bins, range)
  idx = searchsorted(edges, x, side="right")
  idx = where(x == edges[-1], edges.shape[0] - 1, idx)
  counts = zeros(edges.shape[0], w.dtype).at[idx].add(w, mode="drop")[1:]
  if density: counts = counts / diff(edges) / _sum(counts)
  return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None) -> tuple[Array, list[Array]]:  # noqa: A002
  """A D-dimensional histogram of the N points in sample (N, D), and the edges on each axis.

  >>> h, edges = tnp.histogramdd(tnp.array([[0.0, 0.0], [1.0, 1.0]]), bins=2)
  >>> h
  Array([[1, 0],
         [0, 1]], dtype=int32)
  """
  if weights is None:
    s, = inexact("histogramdd", sample)
    w = None
  else:
    s, w = arr(sample, "histogramdd"), arr(weights, "histogramdd")
    if w.shape != s.shape[:1]:
      raise ValueError(f"histogramdd: should have one weight for each sample, got shapes {w.shape} and {s.shape}")
    s, w = inexact("histogramdd", s, w)
  if s.ndim != 2: raise ValueError(f"histogramdd: sample must have shape (N, D), got {s.shape}")
  N, D = s.shape
  if range is not None and (len(range) != D or builtins.any(r is not None and np.shape(r)[0] != 2 for r in range)):
    raise ValueError(f"histogramdd: for sample.shape={(N, D)}, range must be a sequence of {D} pairs or Nones; "
                     f"got range={range}")
  try:
    per = list(bins)
  except TypeError:
    per = D * [bins]
  else:
    if len(per) != D: raise ValueError(f"histogramdd: should be a bin for each dimension, got {len(per)} for {D}")
  idxs, edges = [], []
  for i in builtins.range(D):
    e = histogram_bin_edges(s[:, i], per[i], None if range is None else range[i])
    bi = searchsorted(e, s[:, i], side="right")
    idxs.append(where(s[:, i] == e[-1], bi - 1, bi))
    edges.append(e)
  nbins = tuple(e.shape[0] + 1 for e in edges)
  flat = ravel_multi_index(tuple(idxs), nbins, mode="clip")
  hist = bincount(flat, w, length=math.prod(nbins)).reshape(nbins)[D * (slice(1, -1),)]
  if density:
    hist = hist.astype(s.dtype)
    hist = hist / _sum(hist)
    for norm in ix_(*(diff(e) for e in edges)): hist = hist / norm
  return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
  """A 2-d histogram of the points (x, y), and the edges on each axis.

  >>> h, ex, ey = tnp.histogram2d(tnp.array([0.0, 1.0]), tnp.array([0.0, 1.0]), bins=2)
  >>> h
  Array([[1, 0],
         [0, 1]], dtype=int32)
  """
  xa, ya = arr(x, "histogram2d"), arr(y, "histogram2d")
  try:
    n = len(bins)
  except TypeError:
    n = 1
  if n not in (1, 2):
    e = arr(bins, "histogram2d")
    bins = [e, e]
  hist, edges = histogramdd(stack([xa, ya], axis=1), bins, range, weights, density)
  return hist, edges[0], edges[1]


def interp(x, xp, fp, left=None, right=None, period=None) -> Array:
  """Piecewise-linear interpolation of the points (xp, fp) at x (xp increasing).

  >>> tnp.interp(tnp.array([0.5, 1.5, 9.0]), tnp.array([0.0, 1.0, 2.0]), tnp.array([0.0, 10.0, 20.0]))
  Array([ 5., 15., 20.], dtype=float32)
  """
  xa, xpa, fpa = arr(x, "interp"), arr(xp, "interp"), arr(fp, "interp")
  if xpa.shape != fpa.shape or xpa.ndim != 1:
    raise ValueError(f"interp: xp and fp must be one-dimensional arrays of equal size, got {xpa.shape} and "
                     f"{fpa.shape}")
  xa, xpa = inexact("interp", xa, xpa)
  fpa, = _inexact("interp", fpa)
  ext_l, ext_r = _extrapolate("left", left), _extrapolate("right", right)
  if period is not None:
    if np.ndim(period) != 0: raise ValueError(f"interp: period must be a scalar, got {period}")
    period = _abs(arr(period, "interp"))
    xa, xpa = remainder(xa, period), remainder(xpa, period)
    order = xpa.argsort()
    xpa, fpa = xpa[order], fpa[order]
    xpa = concatenate([xpa[-1:] - period, xpa, xpa[:1] + period])
    fpa = concatenate([fpa[-1:], fpa, fpa[:1]])
  i = clip(searchsorted(xpa, xa, side="right"), 1, xpa.shape[0] - 1)
  df = fpa[i] - fpa[i - 1]
  dx = xpa[i] - xpa[i - 1]
  delta = xa - xpa[i - 1]
  eps = float(np.spacing(np.finfo(np.float32 if xpa.dtype.itemsize <= 4 else np.float64).eps))
  dx0 = _abs(dx) <= eps
  f = where(dx0, fpa[i - 1], fpa[i - 1] + (delta / where(dx0, 1, dx)) * df)
  if not ext_l and period is None: f = where(xa < xpa[0], fpa[0] if left is None else left, f)
  if not ext_r and period is None: f = where(xa > xpa[-1], fpa[-1] if right is None else right, f)
  return f


def _extrapolate(name, v) -> bool:
  if not isinstance(v, str): return False
  if v != "extrapolate":
    raise ValueError(f"interp: the only valid string value of `{name}` is 'extrapolate', got {v!r}")
  return True


def gradient(f, *varargs, axis=None, edge_order=None):
  """The gradient of sampled values by central differences (one-sided at the edges).

  >>> tnp.gradient(tnp.array([1.0, 2.0, 4.0, 7.0]))
  Array([1. , 1.5, 2.5, 3. ], dtype=float32)
  """
  if edge_order is not None: raise NotImplementedError("gradient: the 'edge_order' argument is not supported")
  a, *spacing = _inexact("gradient", f, *varargs)
  axes = tuple(range(a.ndim)) if axis is None else tuple(
    normalize_axis(i, a.ndim, "gradient") for i in ((axis,) if isinstance(axis, int) else axis))
  if not axes: return []
  if builtins.min(a.shape[i] for i in axes) < 2:
    raise ValueError(f"gradient: shape {a.shape} is too small to calculate a numerical gradient along axes {axes}; "
                     f"at least 2 elements are required")
  if not spacing: dx = [1.0] * len(axes)
  elif len(spacing) == 1: dx = spacing * len(axes)
  elif len(spacing) == len(axes): dx = spacing
  else: raise TypeError(f"gradient: invalid number of spacing arguments {len(spacing)} for axis={axis}")

  def along(h, ax):
    def sl(x, start, stop):
      return x[(slice(None),) * ax + (slice(start, stop),)]
    upper, lower = sl(a, 1, 2) - sl(a, 0, 1), sl(a, -1, None) - sl(a, -2, -1)
    if h.ndim == 0:
      inner = (sl(a, 2, None) - sl(a, None, -2)) * 0.5 / h
      upper, lower = upper / h, lower / h
    elif h.ndim == 1:
      if h.shape[0] != a.shape[ax]:
        raise ValueError(f"gradient: spacing arrays must have the length of the axis ({a.shape[ax]}), got {h.shape}")
      h = h.reshape(tuple(h.shape[0] if d == ax else 1 for d in range(a.ndim)))
      upper = upper / (sl(h, 1, 2) - sl(h, 0, 1))
      lower = lower / (sl(h, -1, None) - sl(h, -2, -1))
      dx1, dx2 = sl(h, 1, -1) - sl(h, 0, -2), sl(h, 2, None) - sl(h, 1, -1)
      inner = (-dx2 / (dx1 * (dx1 + dx2)) * sl(a, 0, -2) + (dx2 - dx1) / (dx1 * dx2) * sl(a, 1, -1)
               + dx1 / (dx2 * (dx1 + dx2)) * sl(a, 2, None))
    else:
      raise ValueError(f"gradient: spacing arrays must be 1D arrays or scalars, got shape {h.shape}")
    return concatenate([upper, inner, lower], axis=ax)

  out = [along(arr(h, "gradient").astype(a.dtype), ax) for h, ax in zip(dx, axes)]
  return out[0] if len(axes) == 1 else out


def trapezoid(y, x=None, dx=1.0, axis: int = -1) -> Array:
  """The integral of y along axis by the trapezoidal rule (samples at x, or spaced dx).

  >>> tnp.trapezoid(tnp.array([1.0, 2.0, 3.0]))
  Array(4., dtype=float32)
  """
  if x is None:
    ya, = _inexact("trapezoid", y)
    d = arr(dx, "trapezoid")
    if d.ndim > 0:
      d = d.reshape((1,) * (ya.ndim - d.ndim) + d.shape)
      d = moveaxis(d, axis, -1)
  else:
    ya, xa = _inexact("trapezoid", y, x)
    d = diff(xa) if xa.ndim == 1 else moveaxis(diff(xa, axis=axis), axis, -1)
  ya = moveaxis(ya, axis, -1)
  if d.ndim == 0 or d.shape[-1] == 1:
    dr = d if d.ndim == 0 else d[..., 0]
    return dr * (ya.sum(-1) - 0.5 * (ya[..., 0] + ya[..., -1]))
  return 0.5 * (d * (ya[..., 1:] + ya[..., :-1])).sum(-1)


def ediff1d(ary, to_end=None, to_begin=None) -> Array:
  """The differences between consecutive elements of the flattened array.

  >>> tnp.ediff1d(tnp.array([1, 4, 9]), to_begin=0)
  Array([0, 3, 5], dtype=int32)
  """
  a = ravel(arr(ary, "ediff1d"))
  res = a[1:] - a[:-1]
  if to_begin is not None: res = concatenate([ravel(to_array(to_begin, fn="ediff1d").astype(a.dtype)), res])
  if to_end is not None: res = concatenate([res, ravel(to_array(to_end, fn="ediff1d").astype(a.dtype))])
  return res


def unwrap(p, discont=None, axis: int = -1, period=2 * np.pi) -> Array:
  """p with jumps larger than discont replaced by their period-complement (phase unwrapping).

  >>> tnp.unwrap(tnp.array([0.0, 6.0]))
  Array([ 0.      , -0.28...], dtype=float32)
  """
  (pa, per), _, _ = promote("unwrap", p, period)
  ax = normalize_axis(axis, pa.ndim, "unwrap")
  if pa.shape[ax] == 0: return pa
  interval = per // 2 if pa.dtype.is_int else per / 2
  if discont is None: discont = per / 2
  dd = diff(pa, axis=ax)
  ddmod = remainder(dd + interval, per) - interval
  ddmod = where((ddmod == -interval) & (dd > 0), interval, ddmod)
  corr = where(_abs(dd) < discont, 0, ddmod - dd)
  first = pa[(slice(None),) * ax + (slice(0, 1),)]
  rest = pa[(slice(None),) * ax + (slice(1, None),)] + cumsum(corr, axis=ax)
  return concatenate([first, rest], axis=ax)
