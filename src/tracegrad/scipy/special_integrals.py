"""Exponential, sine and cosine, and Fresnel integrals, Dawson's integral and Spence's function, as jax.scipy.special:
each one named node whose derivative is the function's own (the algorithms are in special_integrals_math.py).
Integers promote as JAX does (to float32, or float64 from 64-bit integers and Python ints under x64); float16 and
bfloat16 compute in float32. Where JAX 0.10 returns NaN at a limit with a value (exp1 and expn at inf, expi at 0 and
-inf) or expn(n, 0) = 1/n, these return the value, as scipy: 0, -inf, 0 and 1/(n - 1).

>>> tracegrad.scipy.special.dawsn(tnp.asarray([0.0, 1.0])).round(4)
Array([0.    , 0.5381], dtype=float32)
"""
from __future__ import annotations

from .. import numpy as tnp
from ..array import Array
from ..ir import UOp, dtypes
from ..lax import float_math as fm
from . import special_integrals_math as im
from .special_integrals_math import V, where


def _node(fn, deriv, name: str):
  """fn (Vs -> V) as one node differentiated by deriv(*xs, y) -> one partial (V or None) per x."""
  def body(*us: UOp) -> UOp: return fn(*map(V, us)).u
  def d(*us): return tuple(None if p is None else p.u for p in deriv(*map(V, us)))
  body.__name__ = name
  return fm.smooth(body, d, name)


def _call(node, *vs: V) -> V: return V(node(*(v.u for v in vs)))


def float_type(*xs) -> dtypes.DType:
  """The arguments' float dtype, as JAX promotes them: integers of 64 bits (Python ints under x64) to float64,
  narrower ones and bools to float32."""
  d = tnp.result_type(*xs)
  return d if d.is_float else tnp.float64 if d.itemsize == 8 else tnp.float32


def _floats(*xs) -> tuple[list[UOp], dtypes.DType]:
  """The arguments broadcast, of float_type (half precision widened to float32), and the dtype of the result."""
  d = float_type(*xs)
  arrs = tnp.broadcast_arrays(*(tnp.asarray(x).astype(d) for x in xs))
  work = tnp.float32 if d.itemsize == 2 else d
  return [a.uop.cast(work) if work is not d else a.uop for a in arrs], d


def _apply(nodes, *xs):
  us, d = _floats(*xs)
  out = [Array(n(*us).cast(d) if us[0].dtype is not d else n(*us), False) for n in nodes]
  return out[0] if len(out) == 1 else tuple(out)


_dawsn = _node(im.dawsn, lambda x, y: (1.0 - 2.0 * x * y,), "dawsn")
_exp1 = _node(im.exp1, lambda x, y: (-im.exp(-x) / x,), "exp1")
_expi = _node(im.expi, lambda x, y: (im.exp(x) / x,), "expi")


def _expn_deriv(n, x, y):
  """(none in n, -E_(n-1)(x)); for n = 0, d(e^-x / x)/dx = -e^-x (x + 1) / x^2."""
  zero = n.eq(0.0)
  lower = _call(_expn, where(zero, 1.0, n - 1.0), x)
  return None, where(zero, -im.exp(-x) * (x + 1.0) / (x * x), -lower)


_expn = _node(im.expn, _expn_deriv, "expn")


def _sinc(x: V) -> V:
  small = im.fabs(x) < 1e-30
  return where(small, 1.0, im.sin(x) / where(small, 1.0, x))


_si = _node(lambda x: im.sici(x)[0], lambda x, y: (_sinc(x),), "sici_si")
_ci = _node(lambda x: im.sici(x)[1], lambda x, y: (im.cos(x) / x,), "sici_ci")
_fresnel_s = _node(lambda x: im.fresnel(x)[0], lambda x, y: (im.sin(im.half_pi_square(im.fabs(x))),), "fresnel_s")
_fresnel_c = _node(lambda x: im.fresnel(x)[1], lambda x, y: (im.cos(im.half_pi_square(im.fabs(x))),), "fresnel_c")
_spence = _node(im.spence, lambda x, y: (im.spence_deriv(x),), "spence")


def dawsn(x) -> Array:
  """Dawson's integral e^(-x^2) int_0^x e^(t^2) dt, as jax.scipy.special.dawsn.

  >>> tracegrad.scipy.special.dawsn(tnp.asarray([-2.0, 0.5])).round(4)
  Array([-0.3013,  0.4244], dtype=float32)
  """
  return _apply([_dawsn], x)


def exp1(x) -> Array:
  """The exponential integral E_1(x) = int_x^inf e^-t / t dt, as jax.scipy.special.exp1: inf at 0, NaN for x < 0.

  >>> tracegrad.scipy.special.exp1(tnp.asarray([0.5, 2.0])).round(4)
  Array([0.5598, 0.0489], dtype=float32)
  """
  return _apply([_exp1], x)


def expi(x) -> Array:
  """The exponential integral Ei(x) = -int_-x^inf e^-t / t dt (a principal value for x > 0), as
  jax.scipy.special.expi.

  >>> tracegrad.scipy.special.expi(tnp.asarray([-1.0, 1.0])).round(4)
  Array([-0.2194,  1.8951], dtype=float32)
  """
  return _apply([_expi], x)


def expn(n, x) -> Array:
  """The generalized exponential integral E_n(x) = int_1^inf e^(-x t) / t^n dt, as jax.scipy.special.expn (n a
  nonnegative integer; differentiable in x).

  >>> tracegrad.scipy.special.expn(tnp.asarray([0, 1, 2]), 1.0).round(4)
  Array([0.3679, 0.2194, 0.1485], dtype=float32)
  """
  return _apply([_expn], n, x)


def sici(x) -> tuple[Array, Array]:
  """The sine and cosine integrals (Si(x), Ci(x)) = (int_0^x sin t / t dt, gamma + log x + int_0^x (cos t - 1) / t dt),
  as jax.scipy.special.sici (Ci of |x| for negative x).

  >>> [v.round(4) for v in tracegrad.scipy.special.sici(tnp.asarray(1.0))]
  [Array(0.9461, dtype=float32), Array(0.3374, dtype=float32)]
  """
  return _apply([_si, _ci], x)


def fresnel(x) -> tuple[Array, Array]:
  """The Fresnel integrals (S(x), C(x)) = (int_0^x sin(pi t^2 / 2) dt, int_0^x cos(pi t^2 / 2) dt), as
  jax.scipy.special.fresnel.

  >>> [v.round(4) for v in tracegrad.scipy.special.fresnel(tnp.asarray(1.0))]
  [Array(0.4383, dtype=float32), Array(0.7799, dtype=float32)]
  """
  return _apply([_fresnel_s, _fresnel_c], x)


def spence(x) -> Array:
  """Spence's function int_1^x log(t) / (1 - t) dt = Li2(1 - x) for x >= 0, as jax.scipy.special.spence: NaN for
  x < 0; x must be float32 or float64 (TypeError otherwise, as JAX).

  >>> tracegrad.scipy.special.spence(tnp.asarray([0.0, 1.0, 2.0])).round(4)
  Array([ 1.6449,  0.    , -0.8225], dtype=float32)
  """
  d = tnp.asarray(x).dtype
  if d not in (tnp.float32, tnp.float64):
    raise TypeError(f"spence: x.dtype={d} is not supported; pass float32 or float64 (convert with x.astype)")
  return _apply([_spence], x)


__all__ = ["dawsn", "exp1", "expi", "expn", "sici", "fresnel", "spence"]
