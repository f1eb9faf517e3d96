"""Reverse mode: vjp, grad and value_and_grad. One cotangent rule per primitive, in VJP_RULES.

A rule sees the node `u` and `ct`, the cotangent of its result (for an op with several results, a list with None
for zero), and returns one cotangent per source (None for none).

>>> tracegrad.grad(lambda x: (x * x).sum())(tnp.arange(3.0))
Array([0., 2., 4.], dtype=float32)
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

from .. import tree as tree_util
from ..array import KNOWN, Array, to_array
from ..ir import Graph, Ops, PatternMatcher, UOp, UPat, substitute, toposort
from ..ir.dtypes import void
from ..ir.shapes import multi_avals
from ..ir.ops import COMPARE, INT_ONLY, INT_OR_BOOL
from ..run import concrete
from ..trace import trace
from ..viz import record
from . import build as B
from .build import instantiate
from .jvp import host_call_has_no_derivative


def _max_min(ct, u):
  a, b = u.src
  win = B.as_float(B.lt(b, a) if u.op is Ops.MAX else B.lt(a, b), u)
  w = win + B.as_float(B.eq(a, b), u) * B.const(u, 0.5)
  return ct * w, ct * (B.ones(u) - w)


def _pow(ct, u):
  x, y = u.src
  dx = B.eq(y, B.zeros(y)).where(B.zeros(u), y * x.alu(Ops.POW, y - B.ones(y)))
  dy = B.eq(x, B.zeros(x)).where(B.zeros(u), B.log(x) * u)
  return ct * dx, ct * dy


def _atan2(ct, u):
  y, x = u.src
  d = B.recip(x * x + y * y)
  return ct * x * d, -(ct * y * d)


def _reduce(ct, u):
  (x,) = u.src
  c = ct.broadcast(x.shape)
  if u.op is Ops.REDUCE_SUM: return (c,)
  if u.op is Ops.REDUCE_PROD: return (c * B.prod_others(x, u.arg),)
  return (c * B.chooser_weights(x, u),)


def _broadcast(ct, u): return (B.sum_to(ct, u.src[0].shape),)


def _permute(ct, u):
  inv = [0] * len(u.arg)
  for i, p in enumerate(u.arg): inv[p] = i
  return (ct.permute(inv),)


def _slice(ct, u):
  x = u.src[0]
  for ax, ((s, e, st), n) in enumerate(zip(u.arg, x.shape)):
    if st > 1:  # spread the strided elements out: (m,) -> (m, st) zero-filled -> (m*st,) -> first e - s
      m = ct.shape[ax]
      sh = ct.shape
      c = ct.reshape(sh[:ax + 1] + (1,) + sh[ax + 1:]).pad([(0, 0)] * (ax + 1) + [(0, st - 1)] + [(0, 0)] * (len(sh) - ax - 1))
      c = c.reshape(sh[:ax] + (m * st,) + sh[ax + 1:])
      ct = c.slice([(0, e - s, 1) if i == ax else (0, k, 1) for i, k in enumerate(c.shape)])
    ct = ct.pad([(s, n - e) if i == ax else (0, 0) for i in range(ct.ndim)])
  return (ct,)


def _concat(ct, u):
  out, start = [], 0
  for s in u.src:
    n = s.shape[u.arg]
    out.append(ct.slice([(start, start + n, 1) if i == u.arg else (0, k, 1) for i, k in enumerate(ct.shape)]))
    start += n
  return tuple(out)


def _gather(ct, u):
  x, idx = u.src
  return B.zeros(x).scatter(B.clamp_indices(idx, x.shape[:idx.shape[-1]]), ct, "add"), None


def _scatter(ct, u):
  x, idx, upd = u.src
  k = idx.shape[-1]
  ok = B.as_float(B.in_range(idx, x.shape[:k]), upd).reshape(idx.shape[:-1] + (1,) * (upd.ndim - idx.ndim + 1))
  ok = ok.broadcast(upd.shape)
  if u.arg == "add": return ct, None, ct.gather(idx) * ok
  if u.arg == "set":
    flat = UOp.iota((math.prod(idx.shape[:-1]),), 0, idx.dtype).reshape(idx.shape[:-1])
    nobody = UOp.const(idx.dtype, math.prod(idx.shape[:-1]), x.shape[:k])
    winner = nobody.scatter(idx, flat, "set")
    won = B.as_float(B.eq(winner.gather(idx), flat), upd)
    won = won.reshape(idx.shape[:-1] + (1,) * (upd.ndim - idx.ndim + 1)).broadcast(upd.shape)
    hit = B.zeros(x).scatter(idx, B.ones(upd), "add")
    return B.eq(hit, B.zeros(hit)).where(ct, B.zeros(ct)), None, ct.gather(idx) * won * ok
  if u.arg == "mul":
    prod = B.ones(x).scatter(idx, upd, "mul")
    return ct * prod, None, (ct * x).gather(idx) * B.scatter_mul_others(x, idx, upd) * ok
  won_x = B.as_float(B.eq(x, u), u)
  won_u = B.as_float(B.eq(upd, u.gather(idx)), upd) * ok
  count = won_x + B.zeros(x).scatter(idx, won_u, "add")
  c = B.div(ct, count)
  return c * won_x, None, c.gather(idx) * won_u


# ---- ops with sub-graphs ----

def _float_mask(us) -> list[bool]: return [u.dtype.is_inexact for u in us]


def vjp_graph(g: Graph, ct_mask: list[bool] | None = None, wrt_mask: list[bool] | None = None) -> Graph:
  """A graph taking g's inputs then one cotangent per output marked in ct_mask (default: the float ones), and
  returning the cotangent of each input marked in wrt_mask (default: the float ones), zeros where none flows."""
  ct_mask = _float_mask(g.outputs) if ct_mask is None else ct_mask
  wrt_mask = _float_mask(g.inputs) if wrt_mask is None else wrt_mask
  cps = [UOp.param(o.shape, o.dtype) for o, m in zip(g.outputs, ct_mask) if m]
  outs = [o for o, m in zip(g.outputs, ct_mask) if m]
  wrt = [p for p, m in zip(g.inputs, wrt_mask) if m]
  _, cts = backward(outs, cps, wrt)
  return Graph(g.inputs + tuple(cps), tuple(instantiate(c, w) for c, w in zip(cts, wrt)))


def _spread(vals, mask):
  it = iter(vals)
  return [next(it) if m else None for m in mask]


def _cond(ct, u):
  idx, ops, branches = u.src[0], u.src[1:], u.arg
  ct_mask = _float_mask(branches[0].outputs)
  cts = [instantiate(c, o) for c, o, m in zip(ct, branches[0].outputs, ct_mask) if m]
  new = tuple(vjp_graph(b, ct_mask) for b in branches)
  res = UOp.multi(Ops.COND, (idx, *ops, *cts), new)
  return (None, *_spread(res, _float_mask(ops)))


def record_carries(scan: UOp) -> UOp:
  """The same SCAN that also returns, stacked, the carry each step started from (for the backward pass)."""
  body, n_consts, n_carry, length, reverse = scan.arg
  rec = Graph(body.inputs, body.outputs + body.inputs[n_consts:n_consts + n_carry])
  return UOp(Ops.SCAN, void, scan.src, (rec, n_consts, n_carry, length, reverse))


def _scan(ct, u):
  """Run backward over the steps in the other order; each step recomputes the body from its recorded carry, less
  what the step's stacked outputs already hold: the backward reads those rather than computing them again (an RNN's
  tanh(x @ wx + h @ wh), whose derivative needs only the tanh, costs no matmuls there)."""
  body, n_consts, n_carry, length, reverse = u.arg  # a recording scan: its last n_carry ys are the carries
  ny = len(body.outputs) - n_carry
  consts, init, xs = u.src[:n_consts], u.src[n_consts:n_consts + n_carry], u.src[n_consts + n_carry:]
  carries = [u.proj(ny + i) for i in range(n_carry)]
  fc, fcar, fx = _float_mask(consts), _float_mask(init), _float_mask(xs)
  fy = _float_mask(body.outputs[n_carry:])
  # backward body: consts; carry = (ct of the carry, accumulated ct of the consts); x = (carry, x, ct of y) at step t
  C = [UOp.param(c.shape, c.dtype) for c in consts]
  ct_c = [UOp.param(c.shape, c.dtype) for c, m in zip(init, fcar) if m]
  acc = [UOp.param(c.shape, c.dtype) for c, m in zip(consts, fc) if m]
  car = [UOp.param(c.shape, c.dtype) for c in init]
  xt = [UOp.param(x.shape[1:], x.dtype) for x in xs]
  ct_y = [UOp.param(o.shape, o.dtype) for o, m in zip(body.outputs[n_carry:], fy) if m]
  wrt_mask = fc + fcar + fx
  fwd = body(*C, *car, *xt)
  _, d = backward([o for o, m in zip(fwd, fcar + fy) if m], ct_c + ct_y,
                  [p for p, m in zip(C + car + xt, wrt_mask) if m])
  d = [instantiate(x, p) for x, p in zip(d, [p for p, m in zip(C + car + xt, wrt_mask) if m])]
  read = _recorded_outputs(d, fwd[n_carry:], set(C + car + xt))
  d = substitute(d, {fwd[n_carry + i]: y for i, y in read.items()})
  nC, ncar = sum(fc), sum(fcar)
  dC, dcar, dx = d[:nC], d[nC:nC + ncar], d[nC + ncar:]
  bwd = Graph(tuple(C + ct_c + acc + car + xt + ct_y + list(read.values())),
              tuple(dcar + [a + b for a, b in zip(acc, dC)] + dx))
  cts_carry = [instantiate(c, o) for c, o, m in zip(ct[:n_carry], init, fcar) if m]
  cts_y = [instantiate(c, u.proj(n_carry + i)) for i, (c, m) in enumerate(zip(ct[n_carry:n_carry + ny], fy)) if m]
  acc0 = [B.zeros(c) for c, m in zip(consts, fc) if m]
  ys = [u.proj(n_carry + i) for i in read]
  res = UOp.multi(Ops.SCAN, (*consts, *cts_carry, *acc0, *carries, *xs, *cts_y, *ys),
                  (bwd, n_consts, ncar + nC, length, not reverse))
  d_init, d_consts, d_xs = res[:ncar], res[ncar:ncar + nC], res[ncar + nC:]
  return (*_spread(d_consts, fc), *_spread(d_init, fcar), *_spread(d_xs, fx))


def _recorded_outputs(d: list[UOp], ys: Sequence[UOp], params: set[UOp]) -> dict[int, UOp]:
  """For each of a scan step's outputs `ys` that its cotangents `d` read (other than one of the step's own inputs),
  a placeholder for the value the forward scan stacked there."""
  used = set(toposort(d))
  return {i: UOp.param(y.shape, y.dtype) for i, y in enumerate(ys) if y in used and y not in params and
          ys.index(y) == i}


def _while(ct, u):
  raise ValueError("grad: reverse-mode differentiation does not work through lax.while_loop (or fori_loop with traced "
                   "bounds): its trip count is known only at run time. Use lax.scan, or fori_loop with Python int "
                   "bounds; forward mode (jvp, jacfwd) does work through while_loop")


def _remat(ct, u):
  fun = u.arg
  mask = _float_mask(fun.outputs)
  cts = [instantiate(c, o) for c, o, m in zip(ct, fun.outputs, mask) if m]
  res = UOp.multi(Ops.REMAT, (*u.src, *cts), vjp_graph(fun, mask))
  return tuple(_spread(res, _float_mask(u.src)))


def _composite(ct, u):
  # outputs with no cotangent take no part (JAX's symbolic zeros): a zero times an infinite partial derivative (an
  # eigenvector's at repeated eigenvalues) would otherwise make NaN where nothing depends on that output
  fun = u.arg[0]
  mask = [m and c is not None for c, m in zip(ct, _float_mask(fun.outputs))]
  cts = [c for c, m in zip(ct, mask) if m]
  rules, static = u.arg[2:] if len(u.arg) > 2 else ((None,) * len(u.src), ())
  wrt = [m and r is None for m, r in zip(_float_mask(u.src), rules)]
  got = _spread(vjp_graph(fun, mask, wrt)(*u.src, *cts), wrt) if any(wrt) else [None] * len(u.src)
  if mask[0] and any(r is not None for r in rules):   # a composite with rules has one output
    ct0 = Array(ct[0])
    got = [to_array(r(ct0, *(Array(s) for s in u.src), **dict(static))).uop if r is not None and m else g
           for g, r, m in zip(got, rules, _float_mask(u.src))]
  return tuple(got)


def _custom_jvp(ct, u):
  """The rule's tangent output is linear in the tangents, so its reverse-mode derivative is its transpose."""
  fun, rule, in_tree, out_tree, n_free = u.arg
  srcs = u.src[n_free:]
  mask = _float_mask(srcs)
  tps = [UOp.param(s.shape, s.dtype) for s in srcs]
  primals = tree_util.unflatten(in_tree, [Array(s) for s in srcs])
  tangents = tree_util.unflatten(in_tree, [Array(t if m else B.zeros(s)) for t, s, m in zip(tps, srcs, mask)])
  _, t_out = rule(primals, tangents)
  t_leaves = [to_array(x).uop for x in tree_util.leaves(t_out)]
  omask = _float_mask(fun.outputs)
  outs = [t for t, m in zip(t_leaves, omask) if m]
  cts = [c for c, m in zip(ct, omask) if m]   # None where no cotangent flows: that output takes no part
  _, d = backward(outs, cts, [t for t, m in zip(tps, mask) if m])
  d = substitute([instantiate(x, s) for x, s in zip(d, [s for s, m in zip(srcs, mask) if m])],
                 {t: B.zeros(t) for t in tps})
  return (None,) * n_free + tuple(_spread(d, mask))


def with_residuals(u: UOp) -> UOp:
  """A custom_vjp node that runs its fwd rule, returning the residuals for bwd after its outputs."""
  fun, fwd, bwd, in_tree, out_tree, n_free, _ = u.arg
  trees = {}

  def f(*leaves):
    out, res = fwd(*tree_util.unflatten(in_tree, leaves))
    if tree_util.structure(out) != out_tree:
      raise TypeError(f"custom_vjp: {getattr(fwd, '__name__', 'fwd')} must return (output, residuals) with the output "
                      f"structured as the function's, {out_tree}; got {tree_util.structure(out)}")
    trees["res"] = tree_util.structure(res)
    return tree_util.leaves(out) + tree_util.leaves(res)

  g, _ = trace(f, tuple(Array(s) for s in u.src[n_free:]), fn="custom_vjp")
  got, want = [(o.shape, o.dtype) for o in g.outputs[:len(fun.outputs)]], [(o.shape, o.dtype) for o in fun.outputs]
  if got != want:
    raise TypeError(f"custom_vjp: {getattr(fwd, '__name__', 'fwd')} must return outputs shaped like the function's, "
                    f"{want}; got {got}")
  g, free = g.closed()
  return UOp(Ops.CUSTOM_VJP, void, (*free, *u.src[n_free:]), (g, fwd, bwd, in_tree, out_tree, len(free), trees["res"]))


def _custom_vjp(ct, u):
  graph, fwd, bwd, in_tree, out_tree, n_free, res_tree = u.arg
  n_out = out_tree.num_leaves
  res = tree_util.unflatten(res_tree, [Array(u.proj(i)) for i in range(n_out, len(graph.outputs))])
  cts = tree_util.unflatten(out_tree, [Array(instantiate(c, o)) for c, o in zip(ct[:n_out], graph.outputs[:n_out])])
  got = bwd(res, cts)
  if not isinstance(got, tuple):
    raise TypeError(f"custom_vjp: the bwd rule {getattr(bwd, '__name__', 'bwd')} must return a tuple with one "
                    f"cotangent per argument, got {type(got).__name__}")
  try:
    leaves = _flatten_like(tree_util.unflatten(in_tree, list(u.src[n_free:])), got)
  except ValueError as e:
    raise TypeError(f"custom_vjp: the bwd rule's output does not match the arguments' structure: {e}") from None
  return (None,) * n_free + tuple(None if c is None or not s.dtype.is_inexact else to_array(c).uop.cast(s.dtype).broadcast(s.shape)
                                  for c, s in zip(leaves, u.src[n_free:]))


def _flatten_like(args: tuple, got: tuple) -> list:
  if len(got) != len(args):
    raise ValueError(f"it returned {len(got)} cotangents for {len(args)} arguments")
  out = []
  for a, g in zip(args, got):
    n = len(tree_util.leaves(a))
    if g is None: out.extend([None] * n)
    else: out.extend(tree_util.structure(a).flatten_up_to(g))
  return out


def _proj(ct, u):
  """The cotangent of one result of an op with several results, as that op's list of result cotangents."""
  cts = [None] * len(multi_avals(u.src[0].op, u.src[0].src, u.src[0].arg))
  cts[u.arg] = ct
  return (cts,)


def _no_derivative(ct, u): return (None,) * len(u.src)


def _linalg(ct, u):
  """triangular_solve's transpose: ct_b solves with op(a) transposed; ct_a = -ct_b xᵀ (or -xᵀ ct_b) through op, kept
  in a's triangle. The decompositions reach reverse mode through lax.linalg's custom_jvp rules."""
  kind, params = u.arg
  if kind != "triangular_solve":
    raise NotImplementedError(f"grad: linalg {kind} is differentiated through tracegrad.lax.linalg.{kind}, whose rule "
                              f"is given; a bare LINALG node has none")
  p = dict(params)
  (a, b), x = u.src, u.proj(0)
  if ct[0] is None: return (None, None)
  flipped = tuple((k, not v) if k == "transpose_a" else (k, v) for k, v in params)
  ct_b = UOp.multi(Ops.LINALG, (a, ct[0]), (kind, flipped))[0]
  g = -(B.matmul(ct_b, B.mT(x)) if p["left_side"] else B.matmul(B.mT(x), ct_b))
  if p["transpose_a"]: g = B.mT(g)
  ct_a = B.triangle(g, p["lower"], (-1 if p["lower"] else 1) if p["unit_diagonal"] else 0)
  return (ct_a, ct_b)


def _all_reduce(ct, u):
  """psum's transpose is psum; pmax and pmin send the summed cotangent to the lanes holding the extremum."""
  total = lambda v: UOp(Ops.ALL_REDUCE, v.dtype, (v,), (*u.arg[:2], "sum"))
  if u.arg[2] == "sum": return (total(ct),)
  hit = B.as_float(B.eq(u.src[0], u), u)
  return (hit * B.div(total(ct), total(hit)),)


def _ppermute(ct, u):
  name, size, perm = u.arg
  return (UOp(Ops.PPERMUTE, ct.dtype, (ct,), (name, size, tuple((d, s) for s, d in perm))),)


NON_DIFFERENTIABLE = COMPARE | INT_ONLY | INT_OR_BOOL | {Ops.BITCAST, Ops.FLOOR, Ops.DETACH, Ops.AXIS_INDEX}

VJP_RULES = PatternMatcher([
  (UPat(Ops.NEG, name="u"), lambda ct, u: (-ct,)),
  (UPat(Ops.RECIP, name="u"), lambda ct, u: (ct * -(u * u),)),
  (UPat(Ops.SQRT, name="u"), lambda ct, u: (B.div(ct, u * B.const(u, 2)),)),
  (UPat(Ops.EXP2, name="u"), lambda ct, u: (ct * u * B.const(u, B.LN2),)),
  (UPat(Ops.LOG2, name="u"), lambda ct, u: (B.div(ct, u.src[0] * B.const(u, B.LN2)),)),
  (UPat(Ops.SIN, name="u"), lambda ct, u: (ct * u.src[0].alu(Ops.COS),)),
  (UPat(Ops.COS, name="u"), lambda ct, u: (-(ct * u.src[0].alu(Ops.SIN)),)),
  (UPat(Ops.ADD, name="u"), lambda ct, u: (ct, ct)),
  (UPat(Ops.SUB, name="u"), lambda ct, u: (ct, -ct)),
  (UPat(Ops.MUL, name="u"), lambda ct, u: (ct * u.src[1], ct * u.src[0])),
  (UPat(Ops.DIV, name="u"), lambda ct, u: (B.div(ct, u.src[1]), -(B.div(ct, u.src[1]) * u))),
  (UPat(Ops.MOD, name="u"), lambda ct, u: (ct, -(ct * B.trunc(B.div(*u.src))))),
  (UPat((Ops.MAX, Ops.MIN), name="u"), _max_min),
  (UPat(Ops.POW, name="u"), _pow),
  (UPat(Ops.ATAN2, name="u"), _atan2),
  (UPat(Ops.WHERE, name="u"), lambda ct, u: (None, u.src[0].where(ct, B.zeros(ct)), u.src[0].where(B.zeros(ct), ct))),
  # JAX's convention: the cotangent of x + iy is dL/dx - i dL/dy, so each rule is a plain (unconjugated) transpose
  (UPat(Ops.REAL, name="u"), lambda ct, u: (ct.alu(Ops.COMPLEX, B.zeros(ct)),)),
  (UPat(Ops.IMAG, name="u"), lambda ct, u: (B.zeros(ct).alu(Ops.COMPLEX, -ct),)),
  (UPat(Ops.COMPLEX, name="u"), lambda ct, u: (ct.alu(Ops.REAL), -ct.alu(Ops.IMAG))),
  (UPat(Ops.CAST, name="u"), lambda ct, u: (ct.cast(u.src[0].dtype) if u.src[0].dtype.is_inexact else None,)),
  (UPat((Ops.REDUCE_SUM, Ops.REDUCE_PROD, Ops.REDUCE_MAX, Ops.REDUCE_MIN), name="u"), _reduce),
  (UPat(Ops.RESHAPE, name="u"), lambda ct, u: (ct.reshape(u.src[0].shape),)),
  (UPat(Ops.BROADCAST, name="u"), _broadcast),
  (UPat(Ops.PERMUTE, name="u"), _permute),
  (UPat(Ops.PAD, name="u"), lambda ct, u: (ct.slice([(lo, lo + n, 1) for (lo, _), n in zip(u.arg, u.src[0].shape)]),)),
  (UPat(Ops.SLICE, name="u"), _slice),
  (UPat(Ops.FLIP, name="u"), lambda ct, u: (ct.flip(u.arg),)),
  (UPat(Ops.CONCAT, name="u"), _concat),
  (UPat(Ops.GATHER, name="u"), _gather),
  (UPat(Ops.SCATTER, name="u"), _scatter),
  (UPat(Ops.PROJ, name="u"), _proj),
  (UPat(Ops.COND, name="u"), _cond),
  (UPat(Ops.SCAN, name="u"), _scan),
  (UPat(Ops.WHILE, name="u"), _while),
  (UPat(Ops.REMAT, name="u"), _remat),
  (UPat(Ops.COMPOSITE, name="u"), _composite),
  (UPat(Ops.CUSTOM_JVP, name="u"), _custom_jvp),
  (UPat(Ops.CUSTOM_VJP, name="u"), _custom_vjp),
  (UPat(Ops.SHARDING_CONSTRAINT, name="u"), lambda ct, u: (UOp(u.op, ct.dtype, (ct,), u.arg),)),
  # the cotangent is a value of its own, stored where the scheduler sees fit (a barrier would copy a stored sum)
  (UPat(Ops.OPTIMIZATION_BARRIER, name="u"), lambda ct, u: (ct,)),
  (UPat(Ops.ALL_REDUCE, name="u"), _all_reduce),
  # all_gather and psum_scatter are each other's transpose
  (UPat(Ops.ALL_GATHER, name="u"), lambda ct, u: (UOp(Ops.REDUCE_SCATTER, ct.dtype, (ct,), u.arg),)),
  (UPat(Ops.REDUCE_SCATTER, name="u"), lambda ct, u: (UOp(Ops.ALL_GATHER, ct.dtype, (ct,), u.arg),)),
  (UPat(Ops.PPERMUTE, name="u"), _ppermute),
  (UPat(Ops.ALL_TO_ALL, name="u"), lambda ct, u: (UOp(Ops.ALL_TO_ALL, ct.dtype, (ct,), (*u.arg[:2], u.arg[3], u.arg[2])),)),
  (UPat(Ops.CALLBACK, name="u"), lambda ct, u: host_call_has_no_derivative(u)),
  (UPat(Ops.LINALG, name="u"), _linalg),
  # the DFT matrix is symmetric, and JAX's cotangents are plain transposes
  (UPat(Ops.FFT, name="u"), lambda ct, u: (UOp(Ops.FFT, ct.dtype, (ct,), u.arg),)),
  (UPat(NON_DIFFERENTIABLE, name="u"), _no_derivative),
])


# ops that keep more of their forward pass for the backward pass than a plain evaluation does
PREPARE = {Ops.SCAN: record_carries, Ops.CUSTOM_VJP: with_residuals}


def _prepared(u: UOp) -> bool: return u.op is Ops.CUSTOM_VJP and u.arg[-1] is not None


def _differentiable(u: UOp) -> bool: return u.dtype is void or u.dtype.is_inexact


def backward(outputs: Sequence[UOp], cts: Sequence[UOp | None], wrt: Sequence[UOp]) -> tuple[list[UOp], list[UOp | None]]:
  """The cotangents of `wrt` given cotangents of `outputs` (None for zero), and the outputs themselves (scans on
  the path are rebuilt to record their carries for the backward pass, custom_vjp functions become their fwd)."""
  outputs = list(outputs)
  order = toposort(outputs)
  needs = _needs(order, wrt)
  prep: dict[UOp, UOp] = {}
  for u in order:   # in order, so that a prepared node reads the prepared forms of those below it
    if u in needs and u.op in PREPARE and not _prepared(u):
      prep[u] = PREPARE[u.op](substitute([u], prep)[0] if prep else u)
  if prep:
    outputs = substitute(outputs, prep)
    order = toposort(outputs)
    needs = _needs(order, wrt)
  grads: dict = {}

  def acc(s: UOp, c):
    if s not in grads: grads[s] = c
    elif isinstance(c, list): grads[s] = [B.add(a, b) for a, b in zip(grads[s], c)]
    else: grads[s] = grads[s] + c

  for o, c in zip(outputs, cts):
    if c is not None and o in needs: acc(o, c)
  for u in reversed(order):
    if u not in grads or not u.src: continue
    src_cts = VJP_RULES.rewrite(u, grads[u])
    for s, c in zip(u.src, src_cts):
      if c is not None and s in needs: acc(s, c)
  spent = [p for p in prep.values() if p.op is Ops.CUSTOM_VJP]
  return _inline_fwd(spent, outputs, [grads.get(w) for w in wrt])


def _inline_fwd(nodes: list[UOp], outputs: list[UOp], cts: list[UOp | None]) -> tuple[list[UOp], list[UOp | None]]:
  """outputs and cts with the custom_vjp nodes whose bwd rule was just applied replaced by their fwd, inlined: a later
  derivative (grad of grad, jvp of grad) then differentiates fwd and the traced bwd like any function, as JAX does."""
  if not nodes: return outputs, cts
  calls = {u.proj(i): o for u in nodes for i, o in enumerate(u.arg[0](*u.src))}
  live = [c for c in cts if c is not None]
  new = substitute(outputs + live, calls)
  it = iter(new[len(outputs):])
  return new[:len(outputs)], [None if c is None else next(it) for c in cts]


def _needs(order: list[UOp], wrt) -> set[UOp]:
  needs = set(w for w in wrt if _differentiable(w))
  for u in order:
    if u not in needs and u.op is not Ops.DETACH and _differentiable(u) and any(s in needs for s in u.src): needs.add(u)
  return needs


# ---- public API ----

def _fname(f) -> str: return getattr(f, "__name__", type(f).__name__)


def vjp(fun: Callable, *primals, has_aux: bool = False, _realize: bool = True):
  """(fun(*primals), vjp_fn) where vjp_fn(ct) gives the cotangent of each primal, as jax.vjp.

  >>> y, f_vjp = tracegrad.vjp(tnp.sin, 0.0)
  >>> f_vjp(1.0)
  (Array(1., dtype=float32, weak_type=True),)
  """
  g, _ = trace(fun, primals, fn="vjp", known=True)
  leaves = [to_array(x, fn="vjp") for x in tree_util.leaves(primals)]
  n_out = len(g.outputs)
  if has_aux:
    sub = tree_util.unflatten(g.out_tree, list(range(n_out)))
    if not isinstance(sub, (tuple, list)) or len(sub) != 2:
      raise TypeError("vjp: with has_aux=True the function must return a pair (output, aux)")
    out_idx, aux_idx, out_tree = tree_util.leaves(sub[0]), tree_util.leaves(sub[1]), tree_util.structure(sub[0])
  else:
    out_idx, aux_idx, out_tree = list(range(n_out)), [], g.out_tree
  outs = [g.outputs[i] for i in out_idx]
  cps = [UOp.param(o.shape, o.dtype) for o in outs]
  args = {p: a.uop for p, a in zip(g.inputs, leaves)}
  outer = KNOWN.set({**KNOWN.get(), **args})   # custom_jvp rules run on the primals' values, as in tracing
  try:
    outs, cts = backward(outs, [c if o.dtype.is_inexact else None for c, o in zip(cps, outs)], list(g.inputs))
  finally:
    KNOWN.reset(outer)
  record.step(f"grad {_fname(fun)}", outs + [c for c in cts if c is not None], list(g.inputs) + cps)
  fwd = outs + [g.outputs[i] for i in aux_idx]
  prim = substitute(fwd, args)
  if _realize and not any(a.is_traced for a in leaves):
    # eager, as JAX: compute the outputs and the forward values the backward pass reads once, now, and keep them
    known = set(toposort(fwd))
    back = [u for u in toposort([c for c in cts if c is not None]) if u not in known]
    residuals = list(dict.fromkeys(s for u in back for s in u.src if s in known and s.traced and s.op is not Ops.PARAM
                                   and s.dtype is not void))
    vals = concrete(substitute(fwd + residuals, args))
    prim = vals[:len(fwd)]
    args.update(zip(residuals, vals[len(fwd):]))
  weak = [g.out_weak[i] for i in out_idx]
  out = tree_util.unflatten(out_tree, [Array(u, w) for u, w in zip(prim[:len(outs)], weak)])
  in_tree = tree_util.structure(tuple(primals))

  def vjp_fn(ct, realize: bool = _realize):
    cl = tree_util.leaves(ct)
    if tree_util.structure(ct) != out_tree:
      raise ValueError(f"vjp: the cotangent must have the structure of the output, {out_tree}; got {tree_util.structure(ct)}")
    cl = [to_array(c, fn="vjp") for c in cl]
    for i, (c, o) in enumerate(zip(cl, outs)):
      if c.shape != o.shape:
        raise ValueError(f"vjp: cotangent leaf {i} has shape {c.shape}, but the output has shape {o.shape}")
    mapping = dict(args)
    mapping.update((p, c.uop.cast(p.dtype)) for p, c in zip(cps, cl))
    res = substitute([instantiate(c, p) for c, p in zip(cts, g.inputs)], mapping)
    if realize: res = concrete(res)
    return tree_util.unflatten(in_tree, [Array(r, w) for r, w in zip(res, g.in_weak)])

  if has_aux:
    aux = tree_util.unflatten(tree_util.structure(sub[1]), [Array(u, g.out_weak[i]) for u, i in zip(prim[len(outs):], aux_idx)])
    return out, vjp_fn, aux
  return out, vjp_fn


def _argnums(argnums, n: int, fn: str) -> tuple[int, ...]:
  nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
  for a in nums:
    if not isinstance(a, int): raise TypeError(f"{fn}: argnums must be ints, got {a!r}")
    if not -n <= a < n: raise ValueError(f"{fn}: argnums {argnums} is out of range for a function called with {n} positional arguments")
  return tuple(a % n for a in nums)


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False) -> Callable:
  """A function returning (fun(*args), the gradient of fun with respect to args[argnums]), as jax.value_and_grad.
  Of a real function of complex inputs it is JAX's df/dx - i df/dy; with holomorphic=True, of a complex function of
  complex inputs, the complex derivative.

  >>> tracegrad.value_and_grad(lambda x: x ** 2)(3.0)
  (Array(9., dtype=float32, weak_type=True), Array(6., dtype=float32, weak_type=True))
  """
  def vg(*args, **kwargs):
    nums = _argnums(argnums, len(args), "grad")
    for a in nums:
      for leaf in tree_util.leaves(args[a]):
        d = to_array(leaf, fn="grad").dtype
        if holomorphic and not d.is_complex:
          raise TypeError(f"grad: holomorphic=True needs complex inputs, but a leaf of argument {a} has dtype {d}; "
                          f"convert it (x.astype(complex)) or drop holomorphic=True")
        if not d.is_inexact and not allow_int:
          raise TypeError(f"grad: differentiating {_fname(fun)} with respect to argument {a} needs float inputs, but a "
                          f"leaf has dtype {d}; convert it (x.astype(float)), or pass allow_int=True for a zero gradient")

    def f(*diff):
      full = list(args)
      for a, d in zip(nums, diff): full[a] = d
      return fun(*full, **kwargs)
    f.__name__ = _fname(fun)

    res = vjp(f, *[args[a] for a in nums], has_aux=has_aux, _realize=False)
    out, vjp_fn = res[0], res[1]
    if not isinstance(out, Array) or out.shape != () or not out.dtype.is_inexact:
      what = (f"an output of shape {out.shape} and dtype {out.dtype}" if isinstance(out, Array)
              else f"a {type(out).__name__}")
      raise TypeError(f"grad: the function {_fname(fun)} must return a scalar (shape ()) float output, but returned "
                      f"{what}; reduce it (e.g. .sum()), or use vjp or jacrev for non-scalar outputs")
    if out.dtype.is_complex and not holomorphic:
      raise TypeError(f"grad: the function {_fname(fun)} returned a complex output ({out.dtype}); grad needs a real "
                      f"one. For a holomorphic function pass holomorphic=True; for others take a real part (x.real, "
                      f"abs(x)) or use vjp directly")
    if holomorphic and not out.dtype.is_complex:
      raise TypeError(f"grad: with holomorphic=True the function {_fname(fun)} must return a complex output, got "
                      f"{out.dtype}")
    g = vjp_fn(Array(UOp.const(out.dtype, 1.0), out.weak_type))
    g = g[0] if isinstance(argnums, int) else g
    aux = res[2] if has_aux else None
    leaves, tree = tree_util.flatten((out, g, aux))  # one pass computes the value, the gradient and aux together
    done = concrete([x.uop for x in leaves])
    out, g, aux = tree_util.unflatten(tree, [Array(u, x.weak_type) for u, x in zip(done, leaves)])
    return ((out, aux), g) if has_aux else (out, g)

  vg.__name__ = f"value_and_grad({_fname(fun)})"
  return vg


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False) -> Callable:
  """The gradient of a scalar function with respect to args[argnums], as jax.grad (holomorphic=True: the complex
  derivative of a complex function).

  >>> tracegrad.grad(lambda x: tnp.sin(x))(0.0)
  Array(1., dtype=float32, weak_type=True)
  >>> tracegrad.grad(lambda z: z * z, holomorphic=True)(1j)
  Array(0.+2.j, dtype=complex64, weak_type=True)
  """
  vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

  def g(*args, **kwargs):
    (out, aux), gr = vg(*args, **kwargs) if has_aux else ((None, None), vg(*args, **kwargs)[1])
    return (gr, aux) if has_aux else gr

  g.__name__ = f"grad({_fname(fun)})"
  return g
