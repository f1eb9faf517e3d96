"""UPat, PatternMatcher and graph_rewrite: the one mechanism behind every pass.

A pass is a table of (pattern, function) rows read top to bottom; the first row whose pattern matches and
whose function returns a UOp rewrites the node.

>>> from tracegrad.ir import UOp, Ops, dtypes
>>> x = UOp.param((3,), dtypes.float32)
>>> fold = PatternMatcher([(UPat(Ops.NEG, src=(UPat(Ops.NEG, name="y"),)), lambda y: y.src[0])])
>>> graph_rewrite(-(-x), fold) is x
True
"""
from __future__ import annotations

from typing import Callable

from .ops import Ops
from .uop import UOp


class UPat:
  """Matches a UOp by op (one or a set), dtype, arg and sources; `name` binds the match for the row's function.

  `src=None` matches any sources; a tuple matches them in order (`commutative=True` tries both orders of two).
  """
  __slots__ = ("ops", "dtypes", "src", "arg", "name", "commutative")

  def __init__(self, op=None, dtype=None, src=None, arg=None, name: str | None = None, commutative: bool = False):
    self.ops = None if op is None else (frozenset(op) if isinstance(op, (set, frozenset, tuple, list)) else frozenset({op}))
    self.dtypes = None if dtype is None else (frozenset(dtype) if isinstance(dtype, (set, frozenset, tuple, list)) else frozenset({dtype}))
    self.src, self.arg, self.name, self.commutative = src, arg, name, commutative

  @staticmethod
  def var(name: str, dtype=None) -> "UPat": return UPat(dtype=dtype, name=name)

  def match(self, u: UOp, bound: dict) -> bool:
    if self.ops is not None and u.op not in self.ops: return False
    if self.dtypes is not None and u.dtype not in self.dtypes: return False
    if self.arg is not None and u.arg != self.arg: return False
    if self.name is not None:
      if self.name in bound and bound[self.name] is not u: return False
      bound[self.name] = u
    if self.src is None: return True
    if len(self.src) != len(u.src): return False
    orders = [u.src, u.src[::-1]] if self.commutative and len(u.src) == 2 else [u.src]
    for srcs in orders:
      trial = dict(bound)
      if all(p.match(s, trial) for p, s in zip(self.src, srcs)):
        bound.update(trial)
        return True
    return False

  def __repr__(self) -> str:
    return f"UPat({sorted(o.name for o in self.ops) if self.ops else 'any'}, name={self.name!r})"


class PatternMatcher:
  def __init__(self, rules: list[tuple[UPat, Callable]]):
    self.rules = rules
    self.by_op: dict[Ops, list] = {}
    for pat, fn in rules:
      for op in (pat.ops if pat.ops is not None else Ops):
        self.by_op.setdefault(op, []).append((pat, fn))

  def rewrite(self, u: UOp, ctx=None) -> UOp | None:
    """The first row's result for `u`, or None when no row applies."""
    for pat, fn in self.by_op.get(u.op, ()):
      bound: dict = {}
      if pat.match(u, bound):
        out = fn(ctx, **bound) if ctx is not None else fn(**bound)
        if out is not None and out is not u: return out
    return None

  def __add__(self, other: "PatternMatcher") -> "PatternMatcher": return PatternMatcher(self.rules + other.rules)


def graph_rewrite(root: UOp, pm: PatternMatcher, ctx=None, bottom_up: bool = True, max_steps: int = 1_000_000) -> UOp:
  """Rewrite the graph under `root` with `pm` until no row applies anywhere (a fixed point).

  bottom_up: sources are rewritten before the node that uses them; top-down tries a node before its sources.
  """
  return graph_rewrite_many([root], pm, ctx, bottom_up, max_steps)[0]


def graph_rewrite_many(roots, pm: PatternMatcher, ctx=None, bottom_up: bool = True, max_steps: int = 1_000_000,
                       memo: dict | None = None) -> list[UOp]:
  """graph_rewrite over several roots sharing one memo (`memo`, when given, is kept by the caller: later calls with the
  same rules and context reuse what earlier ones rewrote).

  In recursive form, bottom-up is  rw(u) = let n = u with rw(sources) in (rw(row(n)) if a row applies else n)
  and top-down is  rw(u) = let v = rows applied at u to a fixed point, n = v with rw(sources) in
  (rw(n) if a row applies to n else n). Both run on an explicit stack so that deep graphs do not overflow.
  """
  done: dict[UOp, UOp] = {} if memo is None else memo
  steps = 0

  def step(u: UOp) -> UOp | None:
    nonlocal steps
    out = pm.rewrite(u, ctx)
    if out is not None and (steps := steps + 1) > max_steps:
      raise RuntimeError(f"graph_rewrite: no fixed point after {max_steps} rewrites (a rule cycles?)")
    return out

  def rebuild(u: UOp) -> UOp:
    src = tuple(done[s] for s in u.src)
    return u if src == u.src else UOp(u.op, u.dtype, src, u.arg)

  for root in roots:
    stack: list[tuple] = [(root, 0, None)]
    while stack:
      u, stage, v = stack.pop()
      if stage == 0:
        if u in done: continue
        if not bottom_up:
          while (w := step(u if v is None else v)) is not None: v = w
        v = u if v is None else v
        stack.append((u, 1, v))
        stack.extend((s, 0, None) for s in v.src if s not in done)
      elif stage == 1:
        new = rebuild(v)
        nxt = step(new) if bottom_up or new is not v else None
        if nxt is None:
          done[u] = done[new] = new
        elif not bottom_up:
          stack.append((u, 2, new))
          stack.append((new, 0, nxt))
        elif nxt in done:
          done[u] = done[nxt]
        else:
          stack.append((u, 2, nxt))
          stack.append((nxt, 0, None))
      else:
        done[u] = done[v]
  return [done[r] for r in roots]


LOG2E, LN2 = 1.4426950408889634, 0.6931471805599453   # 1 / ln 2, ln 2


def natural_exp_argument(u: UOp) -> UOp | None:
  """x when u is EXP2(x * log2(e)), log2(e) rounded to u's dtype (possibly broadcast): how exp is built from the
  primitives. Devices compute such a node as e^x, whose error does not grow with |x| as 2^(x log2(e)) rounded does."""
  if u.op is not Ops.EXP2 or u.src[0].op is not Ops.MUL: return None
  one = float(u.dtype.np.type(LOG2E))
  for x, c in (u.src[0].src, u.src[0].src[::-1]):
    while c.op in (Ops.BROADCAST, Ops.RESHAPE): c = c.src[0]
    if c.op is Ops.CONST and float(u.dtype.np.type(c.arg)) == one: return x
  return None


def natural_log_argument(u: UOp) -> UOp | None:
  """x when u is LOG2(x) * ln(2), ln(2) rounded to u's dtype (possibly broadcast): how log is built from the
  primitives. Devices compute such a node as log(x), rounded once where the product rounded a rounded log2."""
  if u.op is not Ops.MUL or u.arg is not None or not u.dtype.is_float: return None
  one = float(u.dtype.np.type(LN2))
  for g, c in (u.src, u.src[::-1]):
    while c.op in (Ops.BROADCAST, Ops.RESHAPE): c = c.src[0]
    if g.op is Ops.LOG2 and c.op is Ops.CONST and float(u.dtype.np.type(c.arg)) == one: return g.src[0]
  return None
