"""The Bessel functions of the first kind of integer order of jax.scipy.special: bessel_jn.

Miller's algorithm (Zhang and Jin, Computation of Special Functions, 1996, section 5.2): the recurrence
J_(k-1)(z) = (2k / z) J_k(z) - J_(k+1)(z), run downward from an order N far above the ones wanted, is stable and
gives J_k up to one factor, fixed by J_0 + 2 J_2 + 2 J_4 + ... = 1. It runs here on the ratios r_k = J_k / J_(k-1)
= 1 / (2k / z - r_(k+1)), which neither overflow nor underflow, with w_k = (J_(k+2) + J_(k+4) + ...) / J_k carried
along for the sum: J_0 = 1 / (1 + 2 w_0) and J_k = J_0 r_1 ... r_k.

>>> tracegrad.scipy.special.bessel_jn(tnp.asarray([1.0, 2.0]), v=1).round(4)
Array([[0.7652, 0.2239],
       [0.4401, 0.5767]], dtype=float32)
"""
from __future__ import annotations

import functools

from .. import lax
from .. import numpy as tnp
from ..array import Array
from ..numpy._support import static_int
from ..trace import composite
from ..transforms import custom_jvp
from .special_series import promote

_MAX_START = 20000   # the highest starting order: beyond |z| of about 19000 the result is NaN


def bessel_jn(z, *, v: int, n_iter: int = 50) -> Array:
  """J_0(z), ..., J_v(z) stacked on a new leading axis, as jax.scipy.special.bessel_jn (whose rows stop at order
  n_iter when v is larger, here too). The recurrence starts at order n_iter + 1, or higher where |z| needs it (JAX's
  loses its accuracy there); differentiable in z.

  >>> tracegrad.scipy.special.bessel_jn(tnp.asarray(2.5), v=2).round(4)
  Array([-0.0484,  0.4971,  0.4461], dtype=float32)
  """
  v = static_int(v, "bessel_jn", "v")
  n_iter = static_int(n_iter, "bessel_jn", "n_iter")
  if v < 0: raise ValueError(f"bessel_jn: v must be a nonnegative order, got {v}")
  if n_iter < 0: raise ValueError(f"bessel_jn: n_iter must be >= 0, got {n_iter}")
  (z,), d = promote("bessel_jn", z)
  return _jn(z, min(v, n_iter) + 1, n_iter).astype(d)


def _start(z: Array, rows: int, n_iter: int) -> Array:
  """The order each element's recurrence starts from: above |z| by enough that J_N(z) is below 1e-20 of the largest
  J_k(z), and above the highest row wanted by enough that its ratio has settled."""
  a = tnp.abs(z)
  n = tnp.ceil(a + 9.0 * (a + 1.0) ** (1.0 / 3.0) + 15.0)
  return tnp.minimum(tnp.maximum(n, float(max(n_iter + 1, rows + 15))), float(_MAX_START))


def _ratios(z: Array, rows: int, n_iter: int) -> Array:
  """J_0(z), ..., J_(rows-1)(z), stacked (NaN where z is not finite or too large)."""
  ok = tnp.isfinite(z) & (tnp.abs(z) < _MAX_START - 1000)
  z = tnp.where(ok, z, 1.0)
  start = _start(z, rows, n_iter)
  zero = tnp.zeros_like(z)
  tiny = float(tnp.finfo(z.dtype).tiny)

  def step(k, r, w, z, start):
    """(r_k, w_(k-1)) from r_(k+1), w_k."""
    den = (2.0 * k) / z - r
    r = tnp.where(k > start, 0.0, 1.0 / tnp.where(den == 0, tiny, den))
    even = tnp.mod(k, 2.0) == 0
    return r, r * (w + tnp.where(even, 1.0, 0.0))

  def body(s):
    k, r, w, z, start = s
    r, w = step(k.astype(z.dtype), r, w, z, start)
    return k - 1, r, w, z, start

  top = tnp.max(start).astype(tnp.int32)
  _, r, w, _, _ = lax.while_loop(lambda s: s[0] >= rows, body, (top, zero, zero, z, start))

  def scan_body(carry, k):
    r, w, z, start = carry
    r, w = step(k, r, w, z, start)
    return (r, w, z, start), r

  rs = None
  if rows > 1:
    (r, w, _, _), rs = lax.scan(scan_body, (r, w, z, start), tnp.arange(rows - 1, 0, -1).astype(z.dtype))
  j0 = 1.0 / (1.0 + 2.0 * w)
  out = j0[None] if rs is None else j0 * tnp.cumprod(tnp.concatenate([tnp.ones_like(z)[None], rs[::-1]]), axis=0)
  return tnp.where(ok, out, tnp.nan)


@functools.partial(custom_jvp, nondiff_argnums=(1, 2))
def _jn(z, rows, n_iter): return composite("bessel_jn", _ratios, z, rows=rows, n_iter=n_iter)


@_jn.defjvp
def _jn_jvp(rows, n_iter, primals, tangents):
  (z,), (tz,) = primals, tangents
  j = _jn(z, rows + 1, n_iter)
  below = tnp.concatenate([-j[1:2], j[:rows - 1]])   # J_(-1) = -J_1
  return j[:rows], 0.5 * (below - j[1:rows + 1]) * tz
