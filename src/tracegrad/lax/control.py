"""Control flow and stop_gradient, as jax.lax. Each function traces its Python callables into
closed sub-graphs held by one primitive (COND, SCAN, WHILE), so every transform applies to it.

>>> lax.cond(tnp.float32(2.0) > 1, lambda x: x * 10, lambda x: x, tnp.float32(2.0))
Array(20., dtype=float32)
"""
from __future__ import annotations

import builtins
import operator
from typing import Any, Callable, Sequence

import numpy as np

from .. import tree as tree_util
from ..array import Array, to_array
from ..ir import Graph, Ops, UOp, dtypes
from ..ir.shapes import fmt
from ..trace import ShapeDtypeStruct, tap, tap_outputs, trace
from ..ir.ops import HostCall

__all__ = ["stop_gradient", "optimization_barrier", "cond", "switch", "select", "scan", "fori_loop", "while_loop",
           "bitcast_convert_type"]


def _name(f) -> str: return getattr(f, "__name__", type(f).__name__)


def _avals(tree, fn: str) -> tuple[list[Array], Any]:
  leaves, treedef = tree_util.flatten(tree)
  return [to_array(x, fn=fn) for x in leaves], treedef


def _types(g: Graph) -> list[str]: return [f"{o.dtype}{fmt(o.shape)}" for o in g.outputs]


def _arrays(uops, weak) -> list[Array]: return [Array(u, w) for u, w in zip(uops, weak)]


def stop_gradient(x):
  """x, with no derivative flowing through it (applied to every leaf of a pytree).

  >>> tracegrad.grad(lambda x: x * lax.stop_gradient(x))(3.0)
  Array(3., dtype=float32, weak_type=True)
  """
  def leaf(v):
    a = to_array(v, fn="stop_gradient")
    return Array(a.uop.detach(), a.weak_type) if a.dtype.is_float else a
  return tree_util.map(leaf, x)


def optimization_barrier(operand):
  """operand unchanged (every leaf of a pytree), each traced array stored whole before anything reads it: no
  computation is fused across the barrier, as jax.lax.optimization_barrier. Derivatives and vmap pass through it.

  >>> print(tracegrad.make_graph(lambda x: lax.optimization_barrier(x * 2) + 1)(tnp.ones(2)))
  { lambda a:f32[2]. let
      b:f32[2] = broadcast[2] 2.0
      c:f32[2] = mul a b
      d:f32[2] = optimization_barrier c
      e:f32[2] = broadcast[2] 1.0
      f:f32[2] = add d e
    in (f) }
  """
  def leaf(v):
    a = to_array(v, fn="optimization_barrier")
    return Array(UOp(Ops.OPTIMIZATION_BARRIER, a.dtype, (a.uop,)), a.weak_type) if a.is_traced else a
  return tree_util.map(leaf, operand)


def select(pred, on_true, on_false):
  """Elementwise on_true where pred else on_false; pred is bool of the operands' shape (or a scalar), as lax.select."""
  p, a, b = (to_array(x, fn="select") for x in (pred, on_true, on_false))
  if p.dtype is not dtypes.bool_: raise TypeError(f"select: pred must be bool, got {p.dtype}")
  if a.shape != b.shape or a.dtype is not b.dtype:
    raise TypeError(f"select: on_true and on_false must have one shape and dtype, got {a.aval_str()} and {b.aval_str()}")
  if p.shape not in ((), a.shape):
    raise TypeError(f"select: pred must be a scalar or have the operands' shape {fmt(a.shape)}, got {fmt(p.shape)}")
  return Array(p.uop.broadcast(a.shape).where(a.uop, b.uop), a.weak_type and b.weak_type)


def bitcast_convert_type(operand, new_dtype):
  """operand's bits read as new_dtype, which must have the same size, as lax.bitcast_convert_type.

  >>> lax.bitcast_convert_type(tnp.float32(1.0), tnp.uint32)
  Array(1065353216, dtype=uint32)
  """
  a, d = to_array(operand, fn="bitcast_convert_type"), dtypes.as_dtype(new_dtype, "bitcast_convert_type")
  if d.itemsize != a.dtype.itemsize:
    raise TypeError(f"bitcast_convert_type: {a.dtype} has {a.dtype.itemsize} bytes and {d} {d.itemsize}; "
                    f"only types of one size convert")
  return Array(a.uop.bitcast(d))


def _describe(g: Graph, other: Graph) -> str:
  types = "(" + ", ".join(_types(g)) + ")"
  return f"{g.out_tree} with {types}" if g.out_tree != other.out_tree else types


def _branch_graphs(branches: Sequence[Callable], operands: tuple, fn: str, labels: Sequence[str]):
  """Each branch traced on the operands and closed, all taking (every branch's free values, operands). Every branch
  also returns the values of every branch's host callbacks (zeros for the others'), after its own outputs; returned
  with the graphs: the free values and, per branch, its callbacks as trace(taps=) lists them."""
  traced = [(trace(b, operands, fn=fn, taps=(t := []), step=False)[0], t) for b in branches]
  mine = [len(g.outputs) - sum(n for _, n in t) for g, t in traced]
  graphs = [Graph(g.inputs, g.outputs[:m], g.in_tree, g.out_tree, g.in_weak, g.out_weak[:m])
            for (g, _), m in zip(traced, mine)]
  ref = graphs[0]
  for label, g in zip(labels, graphs):
    if g.out_tree != ref.out_tree or _types(g) != _types(ref):
      raise TypeError(f"{fn}: the branches must return the same structure, shapes and dtypes, but {labels[0]} returns "
                      f"{_describe(ref, g)} and {label} returns {_describe(g, ref)}")
  tapped = [g.outputs[m:] for (g, _), m in zip(traced, mine)]
  closed = [Graph(g.inputs, g.outputs + tuple(v if k == j else UOp.const(v.dtype, 0, v.shape)
                                                for j, vs in enumerate(tapped) for v in vs)).closed(hoist=True)
            for k, g in enumerate(graphs)]
  free = list(dict.fromkeys(u for _, fr in closed for u in fr))
  out = []
  for (g, fr), orig in zip(closed, graphs):
    params = {u: p for u, p in zip(fr, g.inputs)}
    ins = tuple(params.get(u) or UOp.param(u.shape, u.dtype) for u in free)
    weak = orig.out_weak + (False,) * (len(g.outputs) - len(orig.outputs))
    out.append(Graph(ins + g.inputs[len(fr):], g.outputs, None, orig.out_tree, (), weak))
  return out, free, [t for _, t in traced]


def switch(index, branches: Sequence[Callable], *operands):
  """branches[index](*operands), with index clamped into range, as lax.switch.

  >>> lax.switch(1, [lambda x: x + 1, lambda x: x * 10], 2.0)
  Array(20., dtype=float32, weak_type=True)
  """
  if not branches: raise ValueError("switch: branches must be a non-empty sequence of functions")
  for b in branches:
    if not callable(b): raise TypeError(f"switch: branches must be functions, got a {type(b).__name__}")
  i = to_array(index, fn="switch")
  if i.shape != () or not (i.dtype.is_int or i.dtype.is_bool):
    raise TypeError(f"switch: index must be an integer scalar, got {i.aval_str()}")
  labels = [f"branch {k} ({_name(b)})" for k, b in enumerate(branches)]
  return _cond(i.uop.cast(dtypes.int32), branches, operands, "switch", labels)


def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
  """true_fun(*operands) if pred else false_fun(*operands), as lax.cond; both branches are traced.

  >>> lax.cond(True, lambda x: x + 1, lambda x: x - 1, 1.0)
  Array(2., dtype=float32, weak_type=True)
  """
  if len(operands) == 2 and not callable(true_fun) and callable(false_fun) and callable(operands[1]):
    # the older form cond(pred, true_operand, true_fun, false_operand, false_fun), which JAX still takes
    (t_op, t_fun), (f_op, f_fun) = (true_fun, false_fun), operands
    return cond(pred, lambda ops: t_fun(ops[0]), lambda ops: f_fun(ops[1]), (t_op, f_op))
  p = to_array(pred, fn="cond")
  if p.shape != ():
    raise TypeError(f"cond: pred must be a scalar (a bool or a number), got shape {fmt(p.shape)}; for an elementwise "
                    f"choice use tracegrad.numpy.where or lax.select")
  idx = p.uop.alu(Ops.CMPNE, UOp.const(p.dtype, 0)).cast(dtypes.int32)
  labels = [f"false_fun ({_name(false_fun)})", f"true_fun ({_name(true_fun)})"]
  return _cond(idx, [false_fun, true_fun], operands, "cond", labels)


def _cond(idx: UOp, branches, operands: tuple, fn: str, labels: Sequence[str]):
  graphs, free, taps = _branch_graphs(branches, operands, fn, labels)
  leaves, _ = _avals(operands, fn)
  outs = UOp.multi(Ops.COND, (idx, *free, *(l.uop for l in leaves)), tuple(graphs))
  n_out = len(graphs[0].outputs) - sum(n for t in taps for _, n in t)
  weak = [all(w) for w in zip(*(g.out_weak[:n_out] for g in graphs))] or []
  values = iter(Array(u) for u in outs[n_out:])
  for k, branch_taps in enumerate(taps):   # each callback runs when the index picks its branch
    for run, n in branch_taps:
      tap(lambda arrs, run=run, k=k: run(arrs[:-1]) if min(max(int(arrs[-1]), 0), len(taps) - 1) == k else None,
          [next(values) for _ in range(n)] + [Array(idx)])
  return tree_util.unflatten(graphs[0].out_tree, _arrays(outs[:n_out], weak))


def _carry_check(fn: str, what: str, init: list[Array], init_tree, out: list[UOp], out_tree, f):
  if out_tree != init_tree or [(a.shape, a.dtype) for a in init] != [(o.shape, o.dtype) for o in out]:
    got = "(" + ", ".join(f"{o.dtype}{fmt(o.shape)}" for o in out) + ")"
    want = "(" + ", ".join(f"{a.dtype}{fmt(a.shape)}" for a in init) + ")"
    if out_tree != init_tree: got, want = f"{out_tree} with {got}", f"{init_tree} with {want}"
    raise TypeError(f"{fn}: {_name(f)} must return a {what} of the same structure, shapes and dtypes as its input "
                    f"{what}: expected {want}, got {got}")


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False, unroll: int = 1):
  """Loop f(carry, x) -> (carry, y) over the leading axis of xs, returning (final carry, stacked ys), as lax.scan.

  >>> lax.scan(lambda c, x: (c + x, c * x), 0.0, tnp.arange(1.0, 4.0))
  (Array(6., dtype=float32), Array([0., 2., 9.], dtype=float32))
  """
  carry, carry_tree = _avals(init, "scan")
  xl, x_tree = _avals(xs, "scan")
  lengths = {x.shape[0] if x.ndim else None for x in xl}
  if None in lengths: raise ValueError("scan: every leaf of xs needs a leading axis to scan over; got a scalar")
  if length is not None:
    try:
      length = operator.index(length)
    except TypeError:
      raise TypeError(f"scan: length must be an int, got {length!r}") from None
    if length < 0: raise ValueError(f"scan: length must be >= 0 (the number of steps), got {length}")
    lengths.add(length)
  if len(lengths) > 1:
    raise ValueError(f"scan: xs leaves and length must agree on the number of steps, got leading sizes "
                     f"{[x.shape[0] for x in xl]}" + (f" and length={length}" if length is not None else ""))
  if not lengths: raise ValueError("scan: with no xs, pass length= to say how many steps to take")
  n = lengths.pop()
  x_avals = tree_util.unflatten(x_tree, [ShapeDtypeStruct(x.shape[1:], x.dtype, x.weak_type) for x in xl])
  c_avals = tree_util.unflatten(carry_tree, [ShapeDtypeStruct(c.shape, c.dtype, c.weak_type) for c in carry])

  def body(c, x):
    out = f(c, x)
    if not isinstance(out, tuple) or len(out) != 2:
      raise TypeError(f"scan: {_name(f)} must return a pair (carry, y), got {type(out).__name__}")
    return out

  g, _ = trace(body, (c_avals, x_avals), fn="scan", taps=(taps := []), step=False)
  nc, n_out = len(carry), len(g.outputs) - sum(k for _, k in taps)
  pair = tree_util.unflatten(g.out_tree, list(range(n_out)))
  c_out_tree, y_tree = tree_util.structure(pair[0]), tree_util.structure(pair[1])
  _carry_check("scan", "carry", carry, carry_tree, list(g.outputs[:nc]), c_out_tree, f)
  g, free = g.closed(hoist=True)
  outs = UOp.multi(Ops.SCAN, (*free, *(c.uop for c in carry), *(x.uop for x in xl)), (g, len(free), nc, n, bool(reverse)))
  c_res = _arrays(outs[:nc], [c.weak_type and w for c, w in zip(carry, g.out_weak[:nc])])
  ys = _arrays(outs[nc:], g.out_weak[nc:])
  steps = range(n - 1, -1, -1) if reverse else range(n)
  tap_outputs(taps, ys[n_out - nc:], lambda run, arrays: [run([a[i] for a in arrays]) for i in steps])
  ys = ys[:n_out - nc]
  return tree_util.unflatten(carry_tree, c_res), tree_util.unflatten(y_tree, ys)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
  """val = body_fun(val) while cond_fun(val), as lax.while_loop. Forward mode and vmap go through it; reverse mode
  cannot (its trip count is known only when it runs).

  >>> lax.while_loop(lambda x: x < 10, lambda x: x * 2, 1)
  Array(16, dtype=int32, weak_type=True)
  """
  carry, tree = _avals(init_val, "while_loop")
  avals = tree_util.unflatten(tree, [ShapeDtypeStruct(c.shape, c.dtype, c.weak_type) for c in carry])
  cg, _ = trace(cond_fun, (avals,), fn="while_loop", step=False)
  if len(cg.outputs) != 1 or cg.outputs[0].shape != () or not (cg.outputs[0].dtype.is_bool or cg.outputs[0].dtype.is_int):
    raise TypeError(f"while_loop: {_name(cond_fun)} must return a bool scalar, got {_types(cg)}")
  bg, _ = trace(body_fun, (avals,), fn="while_loop", taps=(taps := []), step=False)
  if taps: cg, bg = _tapping_body(cg, bg, taps)
  _carry_check("while_loop", "carry", carry, tree, list(bg.outputs[:len(carry)]), bg.out_tree, body_fun)
  p = cg.outputs[0]
  if not p.dtype.is_bool: p = p.alu(Ops.CMPNE, UOp.const(p.dtype, 0, ()))
  cg = Graph(cg.inputs, (p,))
  (cg, cfree), (bg, bfree) = cg.closed(hoist=True), bg.closed(hoist=True)
  free = list(dict.fromkeys(cfree + bfree))

  def widen(g: Graph, fr: list[UOp]) -> Graph:
    m = dict(zip(fr, g.inputs))
    return Graph(tuple(m.get(u) or UOp.param(u.shape, u.dtype) for u in free) + g.inputs[len(fr):], g.outputs)

  weak = [c.weak_type and w for c, w in zip(carry, bg.out_weak)]
  token = [UOp.const(dtypes.int32, 0, ())] if taps else []
  outs = UOp.multi(Ops.WHILE, (*free, *(c.uop for c in carry), *token), (widen(cg, cfree), widen(bg, bfree), len(free)))
  res = _arrays(outs[:len(carry)], weak)
  if taps and res and not any(r.is_traced for r in res): res[0].block_until_ready()   # its callbacks run now, as eagerly
  return tree_util.unflatten(tree, res)


def _tapping_body(cg: Graph, bg: Graph, taps: list) -> tuple[Graph, Graph]:
  """A while_loop's condition and body with one more carry, an int32 token the body passes through a host call
  running its debug callbacks on each step's values (the body's outputs after its carry), so that no step's call is
  dropped or merged with another's."""
  n = len(bg.outputs) - sum(k for _, k in taps)
  values = bg.outputs[n:]

  def run(vals: list) -> list:
    it = iter(to_array(v, fn="while_loop") for v in vals)
    for f, k in taps: f([next(it) for _ in range(k)])
    return [np.zeros((), np.int32)]

  (done,) = UOp.multi(Ops.CALLBACK, values, HostCall(run, (((), dtypes.int32),), "debug.callback", "sequential"))
  tok, tok2 = UOp.param((), dtypes.int32), UOp.param((), dtypes.int32)
  body = Graph((*bg.inputs, tok), (*bg.outputs[:n], tok + done), bg.in_tree, bg.out_tree, (*bg.in_weak, False),
               (*bg.out_weak[:n], False))
  return Graph((*cg.inputs, tok2), cg.outputs, cg.in_tree, cg.out_tree, (*cg.in_weak, False), cg.out_weak), body


def _static_int(x):
  if isinstance(x, (int, np.integer)) and not isinstance(x, bool): return int(x)
  if isinstance(x, Array) and not x.is_traced and x.shape == () and x.dtype.is_int: return int(x)
  return None


def fori_loop(lower, upper, body_fun: Callable, init_val, unroll: int | None = None):
  """val = body_fun(i, val) for i in range(lower, upper), as lax.fori_loop. With Python int bounds it is a scan
  (so reverse mode works); with traced bounds, a while_loop.

  >>> lax.fori_loop(0, 3, lambda i, x: x * 2.0, 1.0)
  Array(8., dtype=float32, weak_type=True)
  """
  lo, hi = _static_int(lower), _static_int(upper)
  if lo is not None and hi is not None:
    idx_dtype = dtypes.int32
    (_, val), _ = scan(lambda c, _: ((c[0] + 1, body_fun(c[0], c[1])), None),
                       (Array(UOp.const(idx_dtype, lo)), init_val), None, length=builtins.max(0, hi - lo))
    return val
  l, h = to_array(lower, fn="fori_loop"), to_array(upper, fn="fori_loop")
  if not (l.dtype.is_int and h.dtype.is_int) or l.shape != () or h.shape != ():
    raise TypeError(f"fori_loop: lower and upper must be integer scalars, got {l.aval_str()} and {h.aval_str()}")
  d = dtypes.promote_types(l.dtype, h.dtype)
  _, _, val = while_loop(lambda c: Array(c[0].uop.alu(Ops.CMPLT, c[1].uop)),
                         lambda c: (Array(c[0].uop + UOp.const(d, 1)), c[1], body_fun(c[0], c[2])),
                         (Array(l.uop.cast(d)), Array(h.uop.cast(d)), init_val))
  return val

