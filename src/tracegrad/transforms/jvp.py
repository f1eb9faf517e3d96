"""Forward mode: jvp and linearize. One tangent rule per primitive, in JVP_RULES.

A rule sees the node `u` (whose sources are the primal values) and `t`, the tangents of its sources (None for zero),
and returns u's tangent. An op with several results returns (primal results, tangent results): the primal results
replace u's, so that control flow is run once for both.

>>> tracegrad.jvp(tnp.sin, (0.5,), (1.0,))
(Array(0.479425..., dtype=float32, weak_type=True), Array(0.877582..., dtype=float32, weak_type=True))
"""
from __future__ import annotations

from typing import Callable

from .. import tree as tree_util
from ..array import Array, to_array
from ..ir import Graph, Ops, PatternMatcher, UOp, UPat, substitute, toposort
from ..ir.dtypes import void
from ..ir.ops import COMPARE, INT_ONLY, INT_OR_BOOL
from ..run import concrete
from ..trace import trace
from ..viz import record
from . import build as B
from .build import add, instantiate, neg, scale


def _max_min(t, u):
  a, b = u.src
  win = B.as_float(B.lt(b, a) if u.op is Ops.MAX else B.lt(a, b), u)
  w = win + B.as_float(B.eq(a, b), u) * B.const(u, 0.5)
  return add(scale(t[0], w), scale(t[1], B.ones(u) - w))


def _pow(t, u):
  x, y = u.src
  dx = B.eq(y, B.zeros(y)).where(B.zeros(u), y * x.alu(Ops.POW, y - B.ones(y)))
  dy = B.eq(x, B.zeros(x)).where(B.zeros(u), B.log(x) * u)
  return add(scale(t[0], dx), scale(t[1], dy))


def _atan2(t, u):
  y, x = u.src
  d = B.recip(x * x + y * y)
  return add(scale(t[0], x * d), scale(t[1], -(y * d)))


def _reduce(t, u):
  (x,) = u.src
  if u.op is Ops.REDUCE_SUM: w = None
  elif u.op is Ops.REDUCE_PROD: w = B.prod_others(x, u.arg)
  else: w = B.chooser_weights(x, u)
  return (t[0] if w is None else t[0] * w).reduce(Ops.REDUCE_SUM, u.arg)


def _scatter(t, u):
  x, idx, upd = u.src
  tx, tu = instantiate(t[0], x), instantiate(t[2], upd)
  if u.arg in ("add", "set"): return tx.scatter(idx, tu, u.arg)
  if u.arg == "mul":
    return tx.scatter(idx, upd, "mul") + B.zeros(x).scatter(idx, tu * B.scatter_mul_others(x, idx, upd), "add") * x
  won_x = B.as_float(B.eq(x, u), u)
  won_u = B.as_float(B.eq(upd, u.gather(idx)), upd)
  count = won_x + B.zeros(x).scatter(idx, won_u, "add")
  return B.div(tx * won_x + B.zeros(x).scatter(idx, tu * won_u, "add"), count)


def _same(t, u):
  """A linear op applied to the tangent in place of the primal (movement, gather)."""
  return UOp(u.op, u.dtype, (t[0], *u.src[1:]), u.arg)


# ---- ops with sub-graphs ----

def jvp_graph(g: Graph, which: list[bool], instantiate_out: list[bool] | None = None) -> tuple[Graph, list[bool]]:
  """g with tangent inputs for the inputs marked in `which` (after all primal inputs) and tangent outputs for each
  output whose tangent is nonzero or marked in instantiate_out (after all primal outputs)."""
  tps = [UOp.param(p.shape, p.dtype) for p, w in zip(g.inputs, which) if w]
  seeds = dict(zip([p for p, w in zip(g.inputs, which) if w], tps))
  outs, touts = jvp_nodes(list(g.outputs), seeds)
  inst = instantiate_out or [False] * len(outs)
  keep = [t is not None or i for t, i in zip(touts, inst)]
  touts = [instantiate(t, o) for t, o, k in zip(touts, outs, keep) if k]
  return Graph(g.inputs + tuple(tps), tuple(outs) + tuple(touts)), keep


def _regroup(g: Graph, groups_in, groups_out) -> Graph:
  """g's inputs and outputs reordered: each group's primal part followed by its tangent part (SCAN/WHILE layouts)."""
  def order(n_primal: int, groups):
    idx, start, tstart = [], 0, n_primal
    for n, nt in groups:
      idx += list(range(start, start + n)) + list(range(tstart, tstart + nt))
      start, tstart = start + n, tstart + nt
    return idx
  n_in, n_out = sum(n for n, _ in groups_in), sum(n for n, _ in groups_out)
  return Graph(tuple(g.inputs[i] for i in order(n_in, groups_in)), tuple(g.outputs[i] for i in order(n_out, groups_out)))


def _tangent_mask(t):
  return [ti is not None for ti in t], [ti for ti in t if ti is not None]


def _cond(t, u):
  idx, ops, branches = u.src[0], u.src[1:], u.arg
  which, tans = _tangent_mask(t[1:])
  keep = [False] * len(branches[0].outputs)
  for b in branches: keep = [k or w for k, w in zip(keep, jvp_graph(b, which)[1])]
  new = tuple(jvp_graph(b, which, keep)[0] for b in branches)
  res = UOp.multi(Ops.COND, (idx, *ops, *tans), new)
  n = len(branches[0].outputs)
  return res[:n], _spread(res[n:], keep)


def _spread(vals, keep):
  it = iter(vals)
  return [next(it) if k else None for k in keep]


def _scan(t, u):
  body, n_consts, n_carry, length, reverse = u.arg
  nx = len(u.src) - n_consts - n_carry
  tc, tcar, tx = t[:n_consts], t[n_consts:n_consts + n_carry], t[n_consts + n_carry:]
  wc, wx = [x is not None for x in tc], [x is not None for x in tx]
  wcar = [x is not None for x in tcar]
  while True:  # a carry gets a tangent when the body gives it one from any other tangent
    _, keep = jvp_graph(body, wc + wcar + wx, wcar + [False] * (len(body.outputs) - n_carry))
    if keep[:n_carry] == wcar: break
    wcar = [a or b for a, b in zip(wcar, keep[:n_carry])]
  g, keep = jvp_graph(body, wc + wcar + wx, wcar + [False] * (len(body.outputs) - n_carry))
  ny = len(body.outputs) - n_carry
  g = _regroup(g, [(n_consts, sum(wc)), (n_carry, sum(wcar)), (nx, sum(wx))], [(n_carry, sum(wcar)), (ny, sum(keep[n_carry:]))])
  srcs = u.src
  carry_t = [instantiate(x, s) for x, s, w in zip(tcar, srcs[n_consts:n_consts + n_carry], wcar) if w]
  new_src = (*srcs[:n_consts], *[x for x in tc if x is not None], *srcs[n_consts:n_consts + n_carry], *carry_t,
             *srcs[n_consts + n_carry:], *[x for x in tx if x is not None])
  res = UOp.multi(Ops.SCAN, new_src, (g, n_consts + sum(wc), n_carry + sum(wcar), length, reverse))
  nct = sum(wcar)
  carry, ct, ys, yt = res[:n_carry], res[n_carry:n_carry + nct], res[n_carry + nct:n_carry + nct + ny], res[n_carry + nct + ny:]
  return carry + ys, _spread(ct, wcar) + _spread(yt, keep[n_carry:])


def _while(t, u):
  cond, body, n_consts = u.arg
  n_carry = len(u.src) - n_consts
  tc, tcar = t[:n_consts], t[n_consts:]
  wc, wcar = [x is not None for x in tc], [x is not None for x in tcar]
  while True:
    _, keep = jvp_graph(body, wc + wcar, wcar)
    if keep == wcar: break
    wcar = [a or b for a, b in zip(wcar, keep)]
  g, _ = jvp_graph(body, wc + wcar, wcar)
  g = _regroup(g, [(n_consts, sum(wc)), (n_carry, sum(wcar))], [(n_carry, sum(wcar))])
  cg = _regroup(Graph(cond.inputs + tuple(UOp.param(p.shape, p.dtype) for p, w in zip(cond.inputs, wc + wcar) if w),
                      cond.outputs), [(n_consts, sum(wc)), (n_carry, sum(wcar))], [(1, 0)])
  carry_t = [instantiate(x, s) for x, s, w in zip(tcar, u.src[n_consts:], wcar) if w]
  new_src = (*u.src[:n_consts], *[x for x in tc if x is not None], *u.src[n_consts:], *carry_t)
  res = UOp.multi(Ops.WHILE, new_src, (cg, g, n_consts + sum(wc)))
  return res[:n_carry], _spread(res[n_carry:], wcar)


def _remat(t, u):
  which, tans = _tangent_mask(t)
  g, keep = jvp_graph(u.arg, which)
  res = UOp.multi(Ops.REMAT, (*u.src, *tans), g)
  n = len(u.arg.outputs)
  return res[:n], _spread(res[n:], keep)


def _composite(t, u):
  which, tans = _tangent_mask(t)
  g, keep = jvp_graph(u.arg[0], which)
  res = g(*u.src, *tans)
  n = len(u.arg[0].outputs)
  return res[:n], _spread(res[n:], keep)


def _custom_jvp(t, u):
  fun, rule, in_tree, out_tree, n_free = u.arg
  if any(x is not None for x in t[:n_free]):
    raise TypeError(f"custom_jvp: {getattr(rule, '__name__', 'the rule')} is differentiated with respect to a value its "
                    f"function closes over; pass that value as an argument instead")
  srcs, t = u.src[n_free:], t[n_free:]
  primals = tree_util.unflatten(in_tree, [Array(s) for s in srcs])
  tangents = tree_util.unflatten(in_tree, [Array(instantiate(x, s)) for x, s in zip(t, srcs)])
  p_out, t_out = rule(primals, tangents)
  p_leaves, t_leaves = tree_util.leaves(p_out), tree_util.leaves(t_out)
  want = [(o.shape, o.dtype) for o in fun.outputs]
  for what, leaves in (("primal", p_leaves), ("tangent", t_leaves)):
    got = [(to_array(x).shape, to_array(x).dtype) for x in leaves]
    if got != want:
      raise TypeError(f"custom_jvp: the rule {getattr(rule, '__name__', 'rule')} returned {what} outputs of shapes/dtypes "
                      f"{got}, but the function returns {want}")
  return [to_array(x).uop for x in p_leaves], [to_array(x).uop for x in t_leaves]


def _custom_vjp(t, u):
  raise TypeError("jvp: cannot apply forward-mode differentiation to a custom_vjp function; define it with custom_jvp "
                  "instead, or differentiate it in reverse mode (grad, vjp)")


def _no_derivative(t, u): return None


def _all_reduce(t, u):
  """psum is linear; pmax and pmin take the tangent of the lanes holding the extremum, averaged over ties."""
  if u.arg[2] == "sum": return _same(t, u)
  hit = B.as_float(B.eq(u.src[0], u), u)
  total = lambda v: UOp(Ops.ALL_REDUCE, v.dtype, (v,), (*u.arg[:2], "sum"))
  return B.div(total(scale(t[0], hit)), total(hit))


NON_DIFFERENTIABLE = COMPARE | INT_ONLY | INT_OR_BOOL | {Ops.BITCAST, Ops.FLOOR, Ops.DETACH, Ops.AXIS_INDEX}

def _callback(t, u: UOp):
  """A host callback returning only integers (debug taps' tokens) passes; one with float results has no derivative."""
  n = len(u.arg.results)
  if any(d.is_inexact for _, d in u.arg.results): host_call_has_no_derivative(u)
  return [u.proj(i) for i in range(n)], [None] * n


def _op_a(m: UOp, transpose: bool) -> UOp: return B.mT(m) if transpose else m


def _linalg(t, u: UOp):
  """triangular_solve: x = op(a)⁻¹ b (or b op(a)⁻¹) moves by op(a)⁻¹ (db - op(da) x) (or (db - x op(da)) op(a)⁻¹),
  da read in the triangle a is; the decompositions are differentiated through lax.linalg's custom_jvp rules."""
  kind, params = u.arg
  if kind != "triangular_solve":
    raise NotImplementedError(f"jvp: linalg {kind} is differentiated through tracegrad.lax.linalg.{kind}, whose rule "
                              f"is given; a bare LINALG node has none")
  p = dict(params)
  (a, b), (ta, tb), x = u.src, t, u.proj(0)
  rhs = instantiate(tb, b)
  if ta is not None:
    da = _op_a(B.triangle(ta, p["lower"], (-1 if p["lower"] else 1) if p["unit_diagonal"] else 0), p["transpose_a"])
    rhs = rhs - (B.matmul(da, x) if p["left_side"] else B.matmul(x, da))
  return [x], [UOp.multi(Ops.LINALG, (a, rhs), u.arg)[0]]


def host_call_has_no_derivative(u: UOp):
  raise ValueError(f"{u.arg.name}: pure callbacks have no derivative (tracegrad cannot see inside the Python "
                   f"function); wrap the function calling it in tracegrad.custom_jvp or custom_vjp to give one")


JVP_RULES = PatternMatcher([
  (UPat(Ops.NEG, name="u"), lambda t, u: neg(t[0])),
  (UPat(Ops.RECIP, name="u"), lambda t, u: t[0] * -(u * u)),
  (UPat(Ops.SQRT, name="u"), lambda t, u: B.div(t[0], u * B.const(u, 2))),
  (UPat(Ops.EXP2, name="u"), lambda t, u: t[0] * u * B.const(u, B.LN2)),
  (UPat(Ops.LOG2, name="u"), lambda t, u: B.div(t[0], u.src[0] * B.const(u, B.LN2))),
  (UPat(Ops.SIN, name="u"), lambda t, u: t[0] * u.src[0].alu(Ops.COS)),
  (UPat(Ops.COS, name="u"), lambda t, u: -(t[0] * u.src[0].alu(Ops.SIN))),
  (UPat(Ops.ADD, name="u"), lambda t, u: add(t[0], t[1])),
  (UPat(Ops.SUB, name="u"), lambda t, u: add(t[0], neg(t[1]))),
  (UPat(Ops.MUL, name="u"), lambda t, u: add(scale(t[0], u.src[1]), scale(t[1], u.src[0]))),
  (UPat(Ops.DIV, name="u"), lambda t, u: B.div(add(t[0], neg(scale(t[1], u))), u.src[1])),
  (UPat(Ops.MOD, name="u"), lambda t, u: add(t[0], neg(scale(t[1], B.trunc(B.div(*u.src)))))),
  (UPat((Ops.MAX, Ops.MIN), name="u"), _max_min),
  (UPat(Ops.POW, name="u"), _pow),
  (UPat(Ops.ATAN2, name="u"), _atan2),
  (UPat(Ops.WHERE, name="u"), lambda t, u: u.src[0].where(instantiate(t[1], u), instantiate(t[2], u))),
  (UPat(Ops.CAST, name="u"), lambda t, u: t[0].cast(u.dtype)),
  (UPat((Ops.REAL, Ops.IMAG), name="u"), lambda t, u: t[0].alu(u.op)),
  (UPat(Ops.COMPLEX, name="u"), lambda t, u: B.instantiate(t[0], u.src[0]).alu(Ops.COMPLEX, B.instantiate(t[1], u.src[1]))),
  (UPat((Ops.REDUCE_SUM, Ops.REDUCE_PROD, Ops.REDUCE_MAX, Ops.REDUCE_MIN), name="u"), _reduce),
  (UPat((Ops.RESHAPE, Ops.BROADCAST, Ops.PERMUTE, Ops.PAD, Ops.SLICE, Ops.FLIP, Ops.GATHER), name="u"), _same),
  (UPat(Ops.CONCAT, name="u"), lambda t, u: UOp.concat([instantiate(x, s) for x, s in zip(t, u.src)], u.arg)),
  (UPat(Ops.SCATTER, name="u"), _scatter),
  (UPat(Ops.PROJ, name="u"), lambda t, u: t[0][u.arg]),
  (UPat(Ops.COND, name="u"), _cond),
  (UPat(Ops.SCAN, name="u"), _scan),
  (UPat(Ops.WHILE, name="u"), _while),
  (UPat(Ops.REMAT, name="u"), _remat),
  (UPat(Ops.COMPOSITE, name="u"), _composite),
  (UPat(Ops.CUSTOM_JVP, name="u"), _custom_jvp),
  (UPat(Ops.CUSTOM_VJP, name="u"), _custom_vjp),
  (UPat((Ops.SHARDING_CONSTRAINT, Ops.OPTIMIZATION_BARRIER), name="u"), _same),
  (UPat(Ops.ALL_REDUCE, name="u"), _all_reduce),
  (UPat((Ops.ALL_GATHER, Ops.REDUCE_SCATTER, Ops.PPERMUTE, Ops.ALL_TO_ALL), name="u"), _same),
  (UPat(Ops.CALLBACK, name="u"), _callback),
  (UPat(Ops.LINALG, name="u"), _linalg),
  (UPat(Ops.FFT, name="u"), _same),
  (UPat(NON_DIFFERENTIABLE, name="u"), _no_derivative),
])


def jvp_nodes(outputs: list[UOp], tangents: dict[UOp, UOp]) -> tuple[list[UOp], list[UOp | None]]:
  """The outputs (control flow rebuilt to run once for primal and tangent) and their tangents, given the tangents
  of some nodes below them (usually PARAMs). None stands for a zero tangent."""
  tan: dict = dict(tangents)
  replace: dict[UOp, UOp] = {}
  for u in toposort(outputs):
    if u in tan: continue
    ts = tuple(tan.get(s) for s in u.src)
    if all(x is None for x in ts): continue
    if u.dtype is not void and not u.dtype.is_inexact: continue
    out = JVP_RULES.rewrite(u, ts)
    if u.dtype is void:
      primal, out = out
      replace.update((u.proj(i), p) for i, p in enumerate(primal) if p is not u.proj(i))
    tan[u] = out
  touts = [tan.get(o) for o in outputs]
  if not replace: return list(outputs), touts
  live = [x for x in touts if x is not None]
  new = substitute(list(outputs) + live, replace)
  it = iter(new[len(outputs):])
  return new[:len(outputs)], [None if x is None else next(it) for x in touts]


# ---- public API ----

def _leaves(tree, fn: str) -> list[Array]: return [to_array(x, fn=fn) for x in tree_util.leaves(tree)]


def _check_tangents(primals: list[Array], tangents: list[Array], fn: str):
  if len(primals) != len(tangents):
    raise ValueError(f"{fn}: primals and tangents must have the same structure; got {len(primals)} and {len(tangents)} leaves")
  for i, (p, t) in enumerate(zip(primals, tangents)):
    if p.shape != t.shape:
      raise ValueError(f"{fn}: primal and tangent leaf {i} must have equal shapes, got {p.shape} and {t.shape}")
    if p.dtype.is_inexact and t.dtype is not p.dtype:
      raise TypeError(f"{fn}: primal and tangent leaf {i} must have equal dtypes, got {p.dtype} and {t.dtype}")


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
  """(fun(*primals), the directional derivative of fun at primals along tangents), as jax.jvp.

  >>> tracegrad.jvp(lambda x: x * x, (3.0,), (1.0,))
  (Array(9., dtype=float32, weak_type=True), Array(6., dtype=float32, weak_type=True))
  """
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError(f"jvp: primals and tangents must be tuples or lists of arguments, got {type(primals).__name__} "
                    f"and {type(tangents).__name__}")
  if tree_util.structure(tuple(primals)) != tree_util.structure(tuple(tangents)):
    raise ValueError(f"jvp: primals and tangents must have the same tree structure, got "
                     f"{tree_util.structure(tuple(primals))} and {tree_util.structure(tuple(tangents))}")
  out, t_out, aux = _linearized(fun, tuple(primals), has_aux, "jvp")(tangents, with_primal=True)
  return (out, t_out, aux) if has_aux else (out, t_out)


def linearize(fun: Callable, *primals, has_aux: bool = False):
  """(fun(*primals), f_jvp) where f_jvp(*tangents) is the jvp of fun at primals, as jax.linearize.

  >>> y, f_jvp = tracegrad.linearize(tnp.sin, 0.0)
  >>> f_jvp(2.0)
  Array(2., dtype=float32, weak_type=True)
  """
  run = _linearized(fun, primals, has_aux, "linearize")
  out, aux = run.primal()
  return ((out, aux) if has_aux else out), lambda *tangents: run(tangents)[1]


def _linearized(fun: Callable, primals: tuple, has_aux: bool, fn: str):
  """A function of the tangents giving (primal out, tangent out, aux); its .primal() gives (primal out, aux) alone."""
  g, _ = trace(fun, primals, fn=fn, known=True)
  leaves = _leaves(primals, fn)
  n_out = len(g.outputs)
  if has_aux:
    sub = tree_util.unflatten(g.out_tree, list(range(n_out)))
    if not isinstance(sub, (tuple, list)) or len(sub) != 2:
      raise TypeError(f"{fn}: with has_aux=True the function must return a pair (output, aux)")
    out_idx, aux_idx = tree_util.leaves(sub[0]), tree_util.leaves(sub[1])
    out_tree, aux_tree = tree_util.structure(sub[0]), tree_util.structure(sub[1])
  else:
    out_idx, aux_idx, out_tree, aux_tree = list(range(n_out)), [], g.out_tree, None
  weak = [g.out_weak[i] for i in out_idx]
  outs0, aux0 = [g.outputs[i] for i in out_idx], [g.outputs[i] for i in aux_idx]
  tps = [UOp.param(p.shape, p.dtype) for p in g.inputs]
  outs, touts = jvp_nodes(outs0, {p: t for p, t in zip(g.inputs, tps) if p.dtype.is_inexact})
  record.step(f"{fn} {getattr(fun, '__name__', '')}".rstrip(), outs + [t for t in touts if t is not None],
              list(g.inputs) + tps)
  touts = [B.instantiate(t, o) if o.dtype.is_inexact else B.zeros(o) for t, o in zip(touts, outs)]
  args = {p: a.uop for p, a in zip(g.inputs, leaves)}

  def build(prim, aux, tan):
    o = tree_util.unflatten(out_tree, [Array(u, w) for u, w in zip(prim, weak)])
    a = tree_util.unflatten(aux_tree, [Array(u, g.out_weak[i]) for u, i in zip(aux, aux_idx)]) if has_aux else None
    return o, (None if tan is None else tree_util.unflatten(out_tree, [Array(u, w) for u, w in zip(tan, weak)])), a

  def run(tangents, with_primal: bool = False):
    tl = _leaves(tangents, fn)
    _check_tangents(leaves, tl, fn)
    mapping = dict(args)
    mapping.update((t, x.uop.cast(t.dtype)) for t, x in zip(tps, tl))
    res = concrete(substitute(outs + aux0 + touts, mapping))
    n, m = len(outs), len(aux0)
    return build(res[:n], res[n:n + m], res[n + m:])

  def primal():
    res = concrete(substitute(outs0 + aux0, args))
    o, _, a = build(res[:len(outs0)], res[len(outs0):], None)
    return o, a

  run.primal = primal
  return run
