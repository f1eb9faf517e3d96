"""Checking derivatives against finite differences, as jax.test_util.check_grads.

>>> tracegrad.test_util.check_grads(tnp.sin, (tnp.float32(0.5),), order=2)
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

from . import tree
from .array import to_array
from .transforms import jvp, vjp

EPS = 1e-4
_TOL = {"float16": 1e-2, "bfloat16": 1e-1, "float32": 2e-3, "float64": 1e-5}


def _np(x) -> np.ndarray: return np.asarray(x)


def _tol(given, trees) -> float:
  if given is not None: return given
  kinds = [str(_np(x).dtype) for x in tree.leaves(trees)]
  return max([_TOL.get(k, 2e-3) for k in kinds] or [2e-3])


def _rand_like(rng: np.random.RandomState, x):
  a = _np(x)
  r = rng.randn(*a.shape)
  if a.dtype.kind == "c": r = r + 1j * rng.randn(*a.shape)
  return to_array(np.asarray(r, dtype=a.dtype))


def _wide(x) -> np.ndarray:
  x = _np(x)
  return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _scaled(x, a: float) -> np.ndarray:
  x = _np(x)
  return np.multiply(x, np.array(a, x.dtype), dtype=x.dtype)


def _shift(args, tangent, eps: float):
  """args + eps * tangent, each step in the argument's own dtype (the points JAX's check takes)."""
  return tree.map(lambda x, t: to_array(np.add(_np(x), _scaled(t, eps), dtype=_np(x).dtype)), args, tangent)


def _numerical_jvp(f: Callable, args, tangent, eps: float):
  f_pos, f_neg = f(*_shift(args, tangent, eps)), f(*_shift(args, tangent, -eps))

  def slope(p, n):
    p, n = _np(p), _np(n)
    with np.errstate(invalid="ignore"):   # inf - inf counts as no change
      d = np.where(p == n, np.zeros((), p.dtype), np.subtract(p, n, dtype=p.dtype))
    return _scaled(d, 0.5 / eps)

  return tree.map(slope, f_pos, f_neg)


def _check_close(got, want, atol: float, rtol: float, what: str) -> None:
  gs, ws = tree.leaves(got), tree.leaves(want)
  if tree.structure(got) != tree.structure(want) or len(gs) != len(ws):
    raise AssertionError(f"check_grads: {what}: the structures differ: {tree.structure(got)} vs {tree.structure(want)}")
  for i, (g, w) in enumerate(zip(gs, ws)):
    g, w = _wide(g), _wide(w)
    # as JAX: the tolerances grow with the leaf's size (a sum of errors over its elements)
    if g.shape != w.shape or not np.allclose(g, w, atol=atol * max(g.size, 1), rtol=rtol * max(w.size, 1)):
      raise AssertionError(f"check_grads: {what} differs from finite differences at leaf {i} (atol={atol}, "
                           f"rtol={rtol}, times its size {w.size}):\n  autodiff: {g}\n  expected: {w}")


def _inner(xs, ys) -> float:
  """sum x y over all elements, real part: the pairing under which JAX's cotangents (df/dx - i df/dy for a complex
  x + iy) are the transposes of tangents, so unconjugated."""
  return sum(float(np.real(np.dot(_wide(x).reshape(-1), _wide(y).reshape(-1))))
             for x, y in zip(tree.leaves(xs), tree.leaves(ys)))


def check_jvp(f: Callable, f_jvp: Callable, args, atol=None, rtol=None, eps: float = EPS, err_msg: str = "") -> None:
  """f_jvp(args, tangents) (usually partial(jvp, f)) against finite differences of f in a random direction."""
  tangent = tree.map(functools.partial(_rand_like, np.random.RandomState(0)), args)
  v_out, t_out = f_jvp(args, tangent)
  atol, rtol = _tol(atol, v_out), _tol(rtol, v_out)
  _check_close(v_out, f(*args), atol, rtol, f"{err_msg} primal")
  _check_close(t_out, _numerical_jvp(f, args, tangent, eps), atol, rtol, f"{err_msg} tangent")


def check_vjp(f: Callable, f_vjp: Callable, args, atol=None, rtol=None, eps: float = EPS, err_msg: str = "") -> None:
  """f_vjp(*args) (usually partial(vjp, f)) against finite differences of f, projected on random directions."""
  rand = functools.partial(_rand_like, np.random.RandomState(0))
  v_out, pull = f_vjp(*args)
  atol, rtol = _tol(atol, v_out), _tol(rtol, v_out)
  _check_close(v_out, f(*args), atol, rtol, f"{err_msg} primal")
  tangent = tree.map(rand, args)
  t_out = _numerical_jvp(f, args, tangent, eps)
  ct = tree.map(rand, v_out)
  _check_close(_inner(tangent, pull(ct)), _inner(t_out, ct), atol, rtol, f"{err_msg} cotangent projection")


def check_grads(f: Callable, args: Sequence, order: int, modes: Sequence[str] = ("fwd", "rev"), atol=None,
                rtol=None, eps: float | None = None) -> None:
  """Derivatives of f at args up to `order`, forward ("fwd", jvp) and reverse ("rev", vjp), checked against finite
  differences in one random direction; AssertionError naming the failing derivative when they differ.

  >>> tracegrad.test_util.check_grads(lambda x: x ** 3, (tnp.float32(1.5),), order=1, modes=("rev",))
  """
  if not isinstance(order, int) or order < 1:
    raise ValueError(f"check_grads: order must be an int >= 1, got {order!r}")
  bad = [m for m in modes if m not in ("fwd", "rev")]
  if bad: raise ValueError(f"check_grads: modes must be 'fwd' and/or 'rev', got {tuple(modes)}")
  args, eps = tuple(args), eps or EPS

  def check(f, args, order, msg):
    if "fwd" in modes:
      m = f"JVP of {msg}" if msg else "JVP"
      check_jvp(f, functools.partial(jvp, f), args, atol, rtol, eps, m)
      if order > 1: check(functools.partial(jvp, f), (args, args), order - 1, m)
    if "rev" in modes:
      m = f"VJP of {msg}" if msg else "VJP"
      check_vjp(f, functools.partial(vjp, f), args, atol, rtol, eps, m)
      if order > 1:
        def f_vjp(*a):
          out, pull = vjp(f, *a)
          return pull(out)
        check(f_vjp, args, order - 1, m)

  check(f, args, order, "")
