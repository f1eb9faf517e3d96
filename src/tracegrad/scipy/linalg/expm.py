"""The matrix exponential of jax.scipy.linalg by scaling and squaring (Higham 2005, as JAX chooses its steps): the
Padé approximant of the lowest degree accurate for a's 1-norm, on a / 2**s, squared s times. expm_frechet is its
derivative. Both differentiate through their own operations.

>>> tracegrad.scipy.linalg.expm(tnp.zeros((2, 2)))
Array([[1., 0.],
       [0., 1.]], dtype=float32)
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import partial

from ... import lax
from ... import numpy as tnp
from ...array import Array
from ...ir import dtypes
from ...transforms.jvp import jvp
from .factor import _inexact, _matrices, solve_triangular
from .solve import _solve_lu

__all__ = ["expm", "expm_frechet"]

# (degree, the largest 1-norm at which that Padé approximant is accurate to the unit roundoff), per precision
_THETA = {
  dtypes.float32: ((3, 4.258730016922831e-1), (5, 1.880152677804762), (7, 3.925724783138660)),
  dtypes.float64: ((3, 1.495585217958292e-2), (5, 2.539398330063230e-1), (7, 9.504178996162932e-1),
                   (9, 2.097847961257068), (13, 5.371920351148152)),
}


def _pade_coefficients(m: int) -> tuple[float, ...]:
  """b_0..b_m of the [m/m] Padé approximant of exp, p(x) = Σ b_j x^j (q(x) = p(-x)), scaled so that b_m = 1."""
  c = [Fraction(math.factorial(2 * m - j) * math.factorial(m), math.factorial(2 * m) * math.factorial(j)
                * math.factorial(m - j)) for j in range(m + 1)]
  return tuple(float(x / c[m]) for x in c)


def _pade(m: int, a: Array) -> tuple[Array, Array]:
  """(u, v), the odd and even parts of p(a): p(a) = v + u and q(a) = v - u. For degree 13 the polynomials in a² are
  evaluated from a², a⁴ and a⁶ (Paterson-Stockmeyer), else from the powers of a² themselves."""
  b = _pade_coefficients(m)
  eye = tnp.eye(a.shape[-1], dtype=a.dtype)
  x = [eye, a @ a]   # powers of a²
  for _ in range(min((m - 1) // 2, 3) - 1): x.append(x[-1] @ x[1])
  odd, even = b[1::2], b[0::2]
  if m == 13:
    poly = lambda c: x[3] @ (c[6] * x[3] + c[5] * x[2] + c[4] * x[1]) + sum(c[k] * x[k] for k in range(4))  # noqa: E731
  else:
    if m == 9: x.append(x[3] @ x[1])
    poly = lambda c: sum(ck * xk for ck, xk in zip(c, x))   # noqa: E731
  return a @ poly(odd), poly(even)


def _expm(a: Array, upper_triangular: bool, max_squarings: int) -> Array:
  theta = _THETA[a.dtype]
  norm = tnp.max(tnp.sum(tnp.abs(a), axis=-2), axis=-1)
  # as JAX: the approximant is picked by the unscaled norm, and a is scaled by 2**floor(log2(norm / θ_max))
  squarings = tnp.maximum(0, tnp.floor(tnp.log2(norm / theta[-1][1])))
  scaled = a / (2 ** squarings).astype(a.dtype)
  which = tnp.sum(norm >= tnp.asarray([t for _, t in theta[:-1]], a.dtype)).astype(tnp.int32)
  u, v = lax.switch(which, [partial(_pade, m) for m, _ in theta], scaled)
  r = solve_triangular(v - u, v + u) if upper_triangular else _solve_lu(v - u, v + u)
  r = lax.fori_loop(0, max_squarings, lambda i, r: lax.cond(i < squarings, lambda r: r @ r, lambda r: r, r), r)
  return tnp.where(squarings > max_squarings, tnp.nan, r)


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16) -> Array:
  """The matrix exponential of A[..., n, n] (NaN where it needs more than max_squarings squarings), as
  jax.scipy.linalg.expm; upper_triangular: A is upper triangular, and the Padé quotient is a triangular solve.

  >>> tracegrad.scipy.linalg.expm(tnp.array([[0.0, 1.0], [0.0, 0.0]]))
  Array([[1., 1.],
         [0., 1.]], dtype=float32)
  """
  (a,) = _inexact(A)
  _matrices("expm", a, "A")
  if a.dtype not in _THETA: raise TypeError(f"expm: A must be float32 or float64, got {a.dtype}")
  fn = partial(_expm, upper_triangular=bool(upper_triangular), max_squarings=int(max_squarings))
  return fn(a) if a.ndim == 2 else tnp.vectorize(fn, signature="(n,n)->(n,n)")(a)


def expm_frechet(A, E, *, method=None, compute_expm: bool = True):
  """(expm(A), L(A, E)) with L the Fréchet derivative of expm at A in the direction E (L alone without compute_expm),
  as jax.scipy.linalg.expm_frechet: the forward-mode derivative of expm.

  >>> _, l = tracegrad.scipy.linalg.expm_frechet(tnp.zeros((2, 2)), tnp.array([[0.0, 1.0], [2.0, 0.0]]))
  >>> l
  Array([[0., 1.],
         [2., 0.]], dtype=float32)
  """
  a, e = _inexact(A, E)
  _matrices("expm_frechet", a, "A")
  _matrices("expm_frechet", e, "E")
  if a.shape != e.shape:
    raise ValueError(f"expm_frechet: A and E must have one shape, got {a.shape} and {e.shape}")
  value, deriv = jvp(expm, (a,), (e,))
  return (value, deriv) if compute_expm else deriv
