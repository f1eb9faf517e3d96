"""Jacobians and Hessians, as vmaps of jvp (forward) or vjp (reverse) over a basis.

>>> tracegrad.jacfwd(lambda x: x * x)(tnp.arange(3.0))
Array([[0., 0., 0.],
       [0., 2., 0.],
       [0., 0., 4.]], dtype=float32)
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .. import tree as tree_util
from ..array import Array, to_array
from ..ir import UOp
from ..trace import ShapeDtypeStruct, eval_shape
from .grad import _argnums, vjp
from .jvp import jvp
from .vmap import vmap


def _basis(leaves: list[Array]) -> list[Array]:
  """For leaves of total size n: one array (n, *leaf.shape) per leaf, together the rows of the n x n identity."""
  n = sum(l.size for l in leaves)
  out, start = [], 0
  for l in leaves:
    eye = np.eye(n, dtype=np.float64)[:, start:start + l.size].reshape((n, *l.shape))
    out.append(Array(UOp.buffer(eye.astype(l.dtype.np))))
    start += l.size
  return out


def _blocks(rows: list[Array], out_leaves: list[Array], in_leaves: list[Array], forward: bool) -> list[list[Array]]:
  """rows[k] has shape (n, *shape_k); cut into one block (out_shape + in_shape) per (out leaf, in leaf)."""
  res = []
  if forward:  # rows are per output, n runs over inputs
    for r, o in zip(rows, out_leaves):
      blocks, start = [], 0
      for i in in_leaves:
        b = r[start:start + i.size].reshape((*i.shape, *o.shape))
        blocks.append(b.transpose(tuple(range(i.ndim, i.ndim + o.ndim)) + tuple(range(i.ndim))))
        start += i.size
      res.append(blocks)
    return res
  for o_i, o in enumerate(out_leaves):  # rows are per input, n runs over outputs
    start = sum(x.size for x in out_leaves[:o_i])
    res.append([r[start:start + o.size].reshape((*o.shape, *i.shape)) for r, i in zip(rows, in_leaves)])
  return res


def _check_dtypes(fn: str, leaves: list, what: str, holomorphic: bool, complex_ok: bool) -> None:
  """JAX's checks: holomorphic=True needs complex leaves; otherwise real ones (or, where complex_ok, complex too)."""
  for l in leaves:
    d = l.dtype
    if holomorphic and not d.is_complex:
      raise TypeError(f"{fn}: holomorphic=True needs {what}s with a complex dtype, got {d}")
    if not holomorphic and not (d.is_float or complex_ok and d.is_complex):
      extra = (f"; for holomorphic differentiation pass holomorphic=True, for other functions of complex values use "
               f"vjp directly" if d.is_complex else "")
      raise TypeError(f"{fn}: needs real floating {what}s, got {what} dtype {d}{extra}")


def _jacobian(fun: Callable, argnums, has_aux: bool, forward: bool, fn: str, holomorphic: bool = False) -> Callable:
  def jac(*args, **kwargs):
    nums = _argnums(argnums, len(args), fn)
    diff = tuple(args[a] for a in nums)
    in_leaves = [to_array(x, fn=fn) for x in tree_util.leaves(diff)]
    _check_dtypes(fn, in_leaves, "input", holomorphic, complex_ok=not forward)

    def f(*d):
      full = list(args)
      for a, x in zip(nums, d): full[a] = x
      return fun(*full, **kwargs)

    in_tree = tree_util.structure(diff)
    if forward:
      if has_aux: out, _, aux = jvp(f, diff, diff, has_aux=True)   # the aux values
      else: out, aux = eval_shape(f, *diff), None                   # only the output's structure and shapes
      push = lambda *t: jvp(f, diff, tree_util.unflatten(in_tree, t), has_aux=has_aux)[1]
      rows = tree_util.leaves(vmap(push)(*_basis(in_leaves)))
    else:
      res = vjp(f, *diff, has_aux=has_aux)
      out, pull = res[0], res[1]
      aux = res[2] if has_aux else None
      out_tree = tree_util.structure(out)
      out_leaves0 = [to_array(x) for x in tree_util.leaves(out)]
      _check_dtypes(fn, out_leaves0, "output", holomorphic, complex_ok=False)
      rows = tree_util.leaves(vmap(lambda *c: pull(tree_util.unflatten(out_tree, c)))(*_basis(out_leaves0)))
    out_leaves = [x if isinstance(x, ShapeDtypeStruct) else to_array(x) for x in tree_util.leaves(out)]
    if forward and holomorphic: _check_dtypes(fn, out_leaves, "output", True, complex_ok=True)
    blocks = _blocks(rows, out_leaves, in_leaves, forward)
    per_out = [tree_util.unflatten(in_tree, b) for b in blocks]
    if isinstance(argnums, int): per_out = [p[0] for p in per_out]
    result = tree_util.unflatten(tree_util.structure(out), per_out)
    return (result, aux) if has_aux else result

  return jac


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False) -> Callable:
  """The Jacobian of fun by forward mode (one jvp per input element, vmapped), as jax.jacfwd (holomorphic=True: of a
  complex function of complex inputs)."""
  return _jacobian(fun, argnums, has_aux, True, "jacfwd", holomorphic)


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False) -> Callable:
  """The Jacobian of fun by reverse mode (one vjp per output element, vmapped), as jax.jacrev (holomorphic=True: of a
  complex function of complex inputs)."""
  return _jacobian(fun, argnums, has_aux, False, "jacrev", holomorphic)


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
  """The Hessian of a scalar function, jacfwd of jacrev, as jax.hessian.

  >>> tracegrad.hessian(lambda x: (x ** 3).sum())(tnp.asarray([1.0, 2.0]))
  Array([[ 6.,  0.],
         [ 0., 12.]], dtype=float32)
  """
  return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)
