"""custom_jvp and custom_vjp: functions whose derivative is given by a Python rule rather than by their own nodes.

>>> @tracegrad.custom_jvp
... def f(x): return tnp.sin(x)
>>> @f.defjvp
... def f_jvp(primals, tangents): return f(*primals), 2.0 * tangents[0]
>>> tracegrad.grad(f)(0.0)
Array(2., dtype=float32, weak_type=True)
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

from .. import tree as tree_util
from ..array import Array, to_array
from ..ir import Graph, Ops, UOp
from ..trace import trace


def _split(args: tuple, nondiff: tuple[int, ...]):
  static = tuple(args[i] for i in nondiff)
  dyn = tuple(a for i, a in enumerate(args) if i not in nondiff)

  def merge(dyn_args):
    it = iter(dyn_args)
    return tuple(args[i] if i in nondiff else next(it) for i in range(len(args)))

  return static, dyn, merge


def _traced(args: tuple) -> bool:
  return any(isinstance(x, Array) and x.is_traced for x in tree_util.leaves(args))


def _call(op: Ops, g: Graph, dyn: tuple, arg_of: Callable, n_out: int, fn: str):
  """Emit the op for traced graph g on the array leaves of dyn; returns the outputs as Arrays."""
  g, free = g.closed()
  leaves = [to_array(x, fn=fn).uop for x in tree_util.leaves(dyn)]
  outs = UOp.multi(op, (*free, *leaves), arg_of(g, tree_util.structure(dyn), len(free)))
  return [Array(o, w) for o, w in zip(outs[:n_out], g.out_weak[:n_out])]


class custom_jvp:
  """A function with a custom forward-mode rule, as jax.custom_jvp; reverse mode transposes the rule.

  The rule is `rule(primals, tangents) -> (primal_out, tangent_out)`, linear in the tangents."""

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    functools.update_wrapper(self, fun)
    self.fun, self.nondiff_argnums, self.rule = fun, tuple(nondiff_argnums), None

  def defjvp(self, rule: Callable) -> Callable:
    self.rule = rule
    return rule

  def defjvps(self, *jvps: Callable | None) -> None:
    """One rule per positional argument, `jvp_i(tangent_i, primal_out, *primals) -> tangent_out` (None: the output
    does not depend on that argument); the tangent out is their sum, as jax.custom_jvp.defjvps.

    >>> @tracegrad.custom_jvp
    ... def f(x, y): return tnp.sin(x) * y
    >>> f.defjvps(lambda xd, out, x, y: tnp.cos(x) * xd * y, lambda yd, out, x, y: tnp.sin(x) * yd)
    >>> tracegrad.grad(f, argnums=(0, 1))(0.0, 2.0)
    (Array(2., dtype=float32, weak_type=True), Array(0., dtype=float32, weak_type=True))
    """
    name = getattr(self.fun, "__name__", "function")
    if self.nondiff_argnums:
      raise TypeError(f"custom_jvp.defjvps: {name} has nondiff_argnums {self.nondiff_argnums}; use defjvp instead")

    def rule(primals, tangents):
      if len(jvps) != len(primals):
        raise TypeError(f"custom_jvp.defjvps: {name} takes {len(primals)} arguments but {len(jvps)} rules were given")
      out = self(*primals)
      parts = [j(t, out, *primals) for t, j in zip(tangents, jvps) if j is not None]
      if not parts: return out, tree_util.map(lambda o: o * 0, out)
      return out, tree_util.map(lambda *ts: functools.reduce(lambda a, b: a + b, ts), *parts)

    self.defjvp(rule)

  def __call__(self, *args):
    name = getattr(self.fun, "__name__", "function")
    if self.rule is None:
      raise AttributeError(f"custom_jvp: no rule is defined for {name}; define one with @{name}.defjvp")
    if not _traced(args): return self.fun(*args)   # no transform in progress: the function itself, as in JAX
    static, dyn, merge = _split(args, self.nondiff_argnums)
    rule = self.rule

    def dyn_rule(primals, tangents): return rule(*static, tuple(primals), tuple(tangents))

    dyn_rule.__name__ = getattr(rule, "__name__", "rule")
    g, _ = trace(lambda *d: self.fun(*merge(d)), dyn, fn=f"custom_jvp({name})", known=True, step=False)
    outs = _call(Ops.CUSTOM_JVP, g, dyn, lambda cg, in_tree, n_free: (cg, dyn_rule, in_tree, g.out_tree, n_free),
                 len(g.outputs), name)
    return tree_util.unflatten(g.out_tree, outs)


class custom_vjp:
  """A function with a custom reverse-mode rule, as jax.custom_vjp: `fwd(*args) -> (out, residuals)` and
  `bwd(residuals, ct) -> one cotangent per argument (a tuple)`.

  >>> @tracegrad.custom_vjp
  ... def clip_grad(x): return x
  >>> clip_grad.defvjp(lambda x: (x, None), lambda _, g: (tnp.clip(g, -1.0, 1.0),))
  >>> tracegrad.grad(lambda x: 5.0 * clip_grad(x))(2.0)
  Array(1., dtype=float32, weak_type=True)
  """

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    functools.update_wrapper(self, fun)
    self.fun, self.nondiff_argnums, self.fwd, self.bwd = fun, tuple(nondiff_argnums), None, None

  def defvjp(self, fwd: Callable, bwd: Callable) -> None:
    self.fwd, self.bwd = fwd, bwd

  def __call__(self, *args):
    name = getattr(self.fun, "__name__", "function")
    if self.fwd is None:
      raise AttributeError(f"custom_vjp: no rule is defined for {name}; define one with {name}.defvjp(fwd, bwd)")
    if not _traced(args): return self.fun(*args)
    static, dyn, merge = _split(args, self.nondiff_argnums)
    fwd, bwd = self.fwd, self.bwd

    def dyn_fwd(*d): return fwd(*merge(d))
    def dyn_bwd(res, ct): return bwd(*static, res, ct)

    dyn_fwd.__name__, dyn_bwd.__name__ = getattr(fwd, "__name__", "fwd"), getattr(bwd, "__name__", "bwd")
    g, _ = trace(lambda *d: self.fun(*merge(d)), dyn, fn=f"custom_vjp({name})", known=True, step=False)
    outs = _call(Ops.CUSTOM_VJP, g, dyn,
                 lambda cg, in_tree, n_free: (cg, dyn_fwd, dyn_bwd, in_tree, g.out_tree, n_free, None), len(g.outputs), name)
    return tree_util.unflatten(g.out_tree, outs)
