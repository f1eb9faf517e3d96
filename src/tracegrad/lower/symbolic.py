"""Symbolic simplification of scalar integer index expressions.

A loop variable is an int64 scalar PARAM that runs over [0, extent). `bounds` gives the inclusive range of an
expression under those extents; `simplify` rewrites it with one rule table that uses the bounds, so that the index
arithmetic a reshape leaves behind folds back to the loop variables. IDIV and MOD are C's (truncating; the remainder
has the sign of the dividend), and a rule that depends on signs fires only where the bounds prove them.

>>> from tracegrad.ir import dtypes
>>> i0, i1, i2 = (UOp.param((), dtypes.int64) for _ in range(3))
>>> k = lambda v: UOp.const(dtypes.int64, v)
>>> flat = i0 * k(12) + i1 * k(4) + i2
>>> simplify(flat.alu(Ops.IDIV, k(4)).alu(Ops.MOD, k(3)), {i0: 2, i1: 3, i2: 4}) is i1
True
>>> bounds(flat, {i0: 2, i1: 3, i2: 4})
(0, 23)
"""
from __future__ import annotations

import functools
import operator

from ..ir import Ops, PatternMatcher, UOp, UPat, graph_rewrite, graph_rewrite_many
from ..ir.dtypes import DType, bool_, int8, int16, int32, int64, max_value, min_value

INTS = (int8, int16, int32, int64)


def _cdiv(a: int, b: int) -> int:
  q = abs(a) // abs(b)
  return q if (a < 0) == (b < 0) else -q


def _cmod(a: int, b: int) -> int: return a - b * _cdiv(a, b)


def _wrap(v: int, dt: DType) -> int:
  """`v` as the two's-complement integer of `dt` holds it."""
  if dt.is_bool: return bool(v)
  if -(1 << 31) <= v < (1 << 31) and dt.itemsize >= 4 and (v >= 0 or not dt.is_unsigned): return v
  return v % (1 << dt.bits) if dt.is_unsigned else (v + (1 << (dt.bits - 1))) % (1 << dt.bits) - (1 << (dt.bits - 1))


EXEC = {Ops.ADD: operator.add, Ops.SUB: operator.sub, Ops.MUL: operator.mul, Ops.NEG: operator.neg, Ops.IDIV: _cdiv,
        Ops.MOD: _cmod, Ops.MAX: max, Ops.MIN: min, Ops.CMPLT: operator.lt, Ops.CMPEQ: operator.eq,
        Ops.CMPNE: operator.ne, Ops.AND: operator.and_, Ops.OR: operator.or_, Ops.XOR: operator.xor,
        Ops.WHERE: lambda c, a, b: a if c else b}


# ---- bounds ----

def _full(dt: DType) -> tuple:
  return (min_value(dt), max_value(dt)) if dt.is_int or dt.is_bool else (float("-inf"), float("inf"))


def _corners(f, a, b) -> tuple[int, int]:
  vals = [f(x, y) for x in a for y in b]
  return min(vals), max(vals)


def _mod_bound(a, b) -> tuple[int, int]:
  if b[0] == b[1] > 0 and a[0] >= 0 and a[0] // b[0] == a[1] // b[0]: return a[0] % b[0], a[1] % b[0]
  m = max(abs(b[0]), abs(b[1]), 1) - 1
  return (0 if a[0] >= 0 else max(a[0], -m)), (0 if a[1] <= 0 else min(a[1], m))


def _eq_bound(a, b) -> tuple[int, int]:
  if a[0] == a[1] == b[0] == b[1]: return 1, 1
  return (0, 0) if a[1] < b[0] or b[1] < a[0] else (0, 1)


BOUND = {
  Ops.ADD: lambda a, b: (a[0] + b[0], a[1] + b[1]),
  Ops.SUB: lambda a, b: (a[0] - b[1], a[1] - b[0]),
  Ops.MUL: lambda a, b: _corners(operator.mul, a, b),
  Ops.NEG: lambda a: (-a[1], -a[0]),
  Ops.IDIV: lambda a, b: _corners(_cdiv, a, b) if b[0] > 0 or b[1] < 0 else (-max(map(abs, a)), max(map(abs, a))),
  Ops.MOD: _mod_bound,
  Ops.MAX: lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
  Ops.MIN: lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
  Ops.CMPLT: lambda a, b: (1, 1) if a[1] < b[0] else (0, 0) if a[0] >= b[1] else (0, 1),
  Ops.CMPEQ: _eq_bound,
  Ops.CMPNE: lambda a, b: (1 - _eq_bound(a, b)[1], 1 - _eq_bound(a, b)[0]),
  Ops.AND: lambda a, b: (a[0] & b[0], a[1] & b[1]),
  Ops.OR: lambda a, b: (a[0] | b[0], a[1] | b[1]),
  Ops.WHERE: lambda c, a, b: a if c[0] else b if not c[1] else (min(a[0], b[0]), max(a[1], b[1])),
  Ops.CAST: lambda a: a,
}


def _bounded(u: UOp) -> bool:
  """Whether BOUND knows `u`: an integer or bool scalar of a listed op on integer or bool scalars."""
  if u.shape or u.op not in BOUND or u.dtype.is_float or any(s.dtype.is_float for s in u.src): return False
  return u.op not in (Ops.AND, Ops.OR) or u.dtype.is_bool


class Bounds:
  """Inclusive bounds of scalar integer expressions given loop extents, memoized by node (nodes never change)."""

  def __init__(self, ranges: dict[UOp, int]):
    self.ranges, self.memo = ranges, {}

  def __call__(self, u: UOp) -> tuple[int, int]:
    memo, stack = self.memo, [u]
    while stack:
      n = stack[-1]
      if n in memo:
        stack.pop()
        continue
      if _bounded(n) and (todo := [s for s in n.src if s not in memo]):
        stack.extend(todo)
        continue
      memo[n] = self._bound(n)
      stack.pop()
    return memo[u]

  def _bound(self, u: UOp) -> tuple:
    if u.shape == () and u.op is Ops.CONST and not u.dtype.is_float: return int(u.arg), int(u.arg)
    if u.shape == () and u.op is Ops.PARAM and u in self.ranges: return 0, self.ranges[u] - 1
    if not _bounded(u): return _full(u.dtype)
    lo, hi = BOUND[u.op](*(self.memo[s] for s in u.src))
    full = _full(u.dtype)
    return (lo, hi) if full[0] <= lo and hi <= full[1] else full


def bounds(u: UOp, ranges: dict[UOp, int]) -> tuple[int, int]:
  """Inclusive (lo, hi) of the int64 scalar `u` when each loop variable v in `ranges` runs over [0, ranges[v]).

  A variable not in `ranges` may take any int64 value.
  """
  return Bounds(ranges)(u)


# ---- sums as linear combinations ----

MEMO_SIZE = 1 << 14   # index expressions whose terms (and variables) are remembered: the scheduler asks again per loop


@functools.lru_cache(maxsize=MEMO_SIZE)
def _linear(u: UOp) -> tuple[dict[UOp, int], int]:
  """`u` as {term: coefficient} plus a constant, through ADD, SUB, NEG and MUL by a constant (the dict is shared:
  read it, never change it)."""
  terms: dict[UOp, int] = {}
  const, stack = 0, [(u, 1)]
  while stack:
    x, k = stack.pop()
    if x.op is Ops.CONST: const += k * x.arg
    elif x.op is Ops.ADD: stack += [(x.src[1], k), (x.src[0], k)]
    elif x.op is Ops.SUB: stack += [(x.src[1], -k), (x.src[0], k)]
    elif x.op is Ops.NEG: stack.append((x.src[0], -k))
    elif x.op is Ops.MUL and x.src[1].op is Ops.CONST: stack.append((x.src[0], k * x.src[1].arg))
    elif x.op is Ops.MUL and x.src[0].op is Ops.CONST: stack.append((x.src[1], k * x.src[0].arg))
    else: terms[x] = terms.get(x, 0) + k
  return {t: w for t, c in terms.items() if (w := _wrap(c, u.dtype))}, _wrap(const, u.dtype)


def _sum(terms: dict[UOp, int], const: int, dt: DType) -> UOp:
  """The canonical chain: terms with positive coefficients, then those with negative ones (subtracted), then the
  constant; `t*c` for a coefficient c other than 1."""
  terms = {t: _wrap(c, dt) for t, c in terms.items()}
  out = None
  for t, c in sorted(terms.items(), key=lambda tc: tc[1] < 0):
    if out is None: out = t if c == 1 else t * UOp.const(dt, c)
    elif c > 0: out = out + (t if c == 1 else t * UOp.const(dt, c))
    else: out = out - (t if c == -1 else t * UOp.const(dt, _wrap(-c, dt)))
  const = _wrap(const, dt)
  if out is None: return UOp.const(dt, const)
  return out if const == 0 else out + UOp.const(dt, const) if const > 0 else out - UOp.const(dt, _wrap(-const, dt))


def _recombine(terms: dict[UOp, int]) -> dict[UOp, int]:
  """k*c*(x//c) + k*(x%c) = k*x (C guarantees (x/c)*c + x%c == x for any sign)."""
  for t in [t for t in terms if t.op is Ops.MOD and t.src[1].op is Ops.CONST and t.src[1].arg != 0]:
    x, c = t.src
    d = x.alu(Ops.IDIV, c)
    if t in terms and d in terms and terms[d] == terms[t] * c.arg:
      k = terms.pop(t)
      del terms[d]
      terms[x] = terms.get(x, 0) + k
  return terms


def _canonical(u: UOp) -> UOp | None:
  if u.shape or (u.op is Ops.MUL and Ops.CONST not in (u.src[0].op, u.src[1].op)): return None
  terms, const = _linear(u)
  return _sum(_recombine(dict(terms)), const, u.dtype)


def _split(ctx: Bounds, x: UOp, d: int) -> tuple[UOp, UOp] | None:
  """(q, r) with x = q*d + r, where q takes every term whose coefficient d divides and r keeps x's sign, so that
  x // d = q + r // d and x % d = r % d under truncation. None when there is nothing to take or signs are unproven."""
  terms, const = _linear(x)
  if ctx(x)[0] >= 0 and (whole := _split_whole(ctx, terms, const, d, x.dtype)): return whole
  q = {t: c // d for t, c in terms.items() if c % d == 0}
  r = {t: c for t, c in terms.items() if c % d}
  qc = const // d if const % d == 0 or ctx(x)[0] >= 0 else -(-const // d)
  if not q and qc == 0: return None
  rest = _sum(r, const - qc * d, x.dtype)
  lo, hi = ctx(rest)
  if lo == hi == 0 or (ctx(x)[0] >= 0 and lo >= 0) or (ctx(x)[1] <= 0 and hi <= 0): return _sum(q, qc, x.dtype), rest
  return None


def _split_whole(ctx: Bounds, terms: dict[UOp, int], const: int, d: int, dt: DType) -> tuple[UOp, UOp] | None:
  """(q, r) with r in [0, d) taking each coefficient modulo d: (k*(n+a) + j) % n is k*a + j where that stays below n,
  the index a sliding window leaves behind. None when r could leave [0, d) or nothing is taken."""
  if not any(c // d for c in terms.values()) and not const // d: return None
  r = _sum({t: c % d for t, c in terms.items() if c % d}, const % d, dt)
  lo, hi = ctx(r)
  if lo < 0 or hi >= d: return None
  return _sum({t: c // d for t, c in terms.items() if c // d}, const // d, dt), r


def coefficient(index: UOp, var: UOp) -> int | None:
  """How much index grows when var grows by one, when index is linear in var (else None). A clamp to a constant
  (the edge of a padded view, whose clamped lanes a guard masks) counts as its unclamped operand: the answer only
  chooses a loop order, never changes a result."""
  terms, _ = _linear(index)
  out = terms.get(var, 0)
  for t, k in terms.items():
    if t is var or var not in _variables(t): continue
    if t.op not in (Ops.MAX, Ops.MIN) or Ops.CONST not in (t.src[0].op, t.src[1].op): return None
    inner = coefficient(t.src[1] if t.src[0].op is Ops.CONST else t.src[0], var)
    if inner is None: return None
    out += k * inner
  return out


@functools.lru_cache(maxsize=MEMO_SIZE)
def _variables(u: UOp) -> frozenset:
  """The nodes without sources under u (its loop variables, constants and buffers)."""
  return frozenset(x for x in u.toposort() if not x.src)


# ---- rules ----

def _fold(u: UOp) -> UOp | None:
  if not all(s.op is Ops.CONST and not s.dtype.is_float for s in u.src): return None
  if u.op in (Ops.IDIV, Ops.MOD) and u.src[1].arg == 0: return None
  return UOp.const(u.dtype, _wrap(EXEC[u.op](*(s.arg for s in u.src)), u.dtype))


def _pinned(ctx: Bounds, u: UOp) -> UOp | None:
  lo, hi = ctx(u)
  return UOp.const(u.dtype, lo) if lo == hi and u.op is not Ops.CONST else None


def _flip(x: UOp, c: UOp, u: UOp) -> UOp | None:
  if c.arg >= 0 or c.arg == min_value(c.dtype): return None
  out = x.alu(u.op, UOp.const(c.dtype, -c.arg))
  return out * UOp.const(c.dtype, -1) if u.op is Ops.IDIV else out


def _div_div(x: UOp, a: UOp, b: UOp) -> UOp | None:
  if a.arg <= 0 or b.arg <= 0 or a.arg * b.arg > max_value(x.dtype): return None
  return x.alu(Ops.IDIV, UOp.const(x.dtype, a.arg * b.arg))


def _factor(ctx: Bounds, x: UOp, d: int) -> tuple[UOp, UOp, int] | None:
  """(y, r, g) with x = g*y + r, g > 1 dividing d and r in [0, g): then x // d = y // (d/g) and x % d is
  (y % (d/g))*g + r (the channel and tap of a flat im2col row). None when no coefficient gives that."""
  if ctx(x)[0] < 0: return None
  terms, const = _linear(x)
  for g in sorted({c for c in terms.values() if 1 < c <= d and d % c == 0}, reverse=True):
    r = _sum({t: c for t, c in terms.items() if c % g}, const, x.dtype)
    lo, hi = ctx(r)
    if 0 <= lo and hi < g: return _sum({t: c // g for t, c in terms.items() if c % g == 0}, 0, x.dtype), r, g
  return None


def _div(ctx: Bounds, x: UOp, c: UOp) -> UOp | None:
  if c.arg <= 0: return None
  if (qr := _split(ctx, x, c.arg)) is not None: return qr[0] + qr[1].alu(Ops.IDIV, c)
  if (yrg := _factor(ctx, x, c.arg)) is not None: return yrg[0].alu(Ops.IDIV, UOp.const(c.dtype, c.arg // yrg[2]))
  return None


def _mod(ctx: Bounds, x: UOp, c: UOp) -> UOp | None:
  if c.arg <= 0: return None
  if (qr := _split(ctx, x, c.arg)) is not None: return qr[1].alu(Ops.MOD, c)
  if (yrg := _factor(ctx, x, c.arg)) is not None:
    y, r, g = yrg
    return y.alu(Ops.MOD, UOp.const(c.dtype, c.arg // g)) * UOp.const(c.dtype, g) + r
  return None


def _multiple(ctx: Bounds, x: UOp, c: UOp, nonneg: bool) -> UOp | None:
  """x % d == 0 (or x % d < 1 where x >= 0), d > 1, as r == 0: r is x with each coefficient and the constant taken
  modulo d into [-d/2, d/2), so x - r is a multiple of d, and r lies within (-d, d). A diagonal's test in a flat index,
  (i * n + j) % (n + 1) == 0, becomes j - i == 0."""
  d = c.arg
  if d <= 1 or nonneg and ctx(x)[0] < 0: return None
  terms, const = _linear(x)
  near = lambda k: (k + d // 2) % d - d // 2
  r = _sum({t: near(k) for t, k in terms.items() if near(k)}, near(const), x.dtype)
  lo, hi = ctx(r)
  return r.alu(Ops.CMPEQ, UOp.const(r.dtype, 0)) if -d < lo and hi < d else None


def _max(ctx: Bounds, x: UOp, y: UOp) -> UOp | None:
  return x if x is y or ctx(x)[0] >= ctx(y)[1] else y if ctx(y)[0] >= ctx(x)[1] else None


def _min(ctx: Bounds, x: UOp, y: UOp) -> UOp | None:
  return x if x is y or ctx(x)[1] <= ctx(y)[0] else y if ctx(y)[1] <= ctx(x)[0] else None


_u, _x, _y = UPat.var("u", INTS + (bool_,)), UPat.var("x", INTS), UPat.var("y", INTS)
_a, _b, _c = UPat(Ops.CONST, name="a"), UPat(Ops.CONST, name="b"), UPat(Ops.CONST, name="c")
_IDIV_MOD = (Ops.IDIV, Ops.MOD)

rules = PatternMatcher([
  # constants fold, and so does any expression whose bounds pin it to one value
  (UPat(tuple(EXEC), INTS + (bool_,), name="u"), lambda ctx, u: _fold(u)),
  (_u, _pinned),
  # sums become one chain with like terms and constants combined: x+0, x*1, x*0, x-x, (x+3)+4, (x*3)*4, -x,
  # and x//c*c + x%c = x
  (UPat((Ops.ADD, Ops.SUB, Ops.NEG, Ops.MUL), INTS, name="u"), lambda ctx, u: _canonical(u)),
  # division and remainder by a constant d (C's: truncating, the remainder has the sign of the dividend)
  (UPat(_IDIV_MOD, src=(_x, _c), name="u"), lambda ctx, x, c, u: _flip(x, c, u)),         # x//-d = -(x//d), x%-d = x%d
  (UPat(Ops.MOD, src=(_x, _c)), lambda ctx, x, c: x if -c.arg < ctx(x)[0] and ctx(x)[1] < c.arg else None),  # |x| < d
  (UPat(Ops.IDIV, src=(UPat(Ops.IDIV, src=(_x, _a)), _b)), lambda ctx, x, a, b: _div_div(x, a, b)),  # x//a//b = x//(ab)
  (UPat(Ops.MOD, src=(UPat(Ops.MOD, src=(_x, _a)), _b)),                                  # x%a%b = x%b when b divides a
   lambda ctx, x, a, b: x.alu(Ops.MOD, b) if a.arg > 0 and b.arg > 0 and a.arg % b.arg == 0 else None),
  (UPat(Ops.IDIV, src=(_x, _c)), _div),                                                   # (q*d + r)//d = q + r//d
  (UPat(Ops.MOD, src=(_x, _c)), _mod),                                                    # (q*d + r)%d = r%d
  (UPat(Ops.CMPEQ, src=(UPat(Ops.MOD, src=(_x, _c)), UPat(Ops.CONST, arg=0))),          # x%d == 0: a multiple
   lambda ctx, x, c: _multiple(ctx, x, c, False)),
  (UPat(Ops.CMPLT, src=(UPat(Ops.MOD, src=(_x, _c)), UPat(Ops.CONST, arg=1))),          # x%d < 1, x >= 0
   lambda ctx, x, c: _multiple(ctx, x, c, True)),
  # max, min, comparisons and selects that bounds or equal operands decide
  (UPat(Ops.MAX, src=(_x, _y)), _max),
  (UPat(Ops.MIN, src=(_x, _y)), _min),
  (UPat((Ops.CMPLT, Ops.CMPNE), src=(_x, _x), name="u"), lambda ctx, u, x: UOp.const(bool_, False, u.shape)),
  (UPat(Ops.CMPEQ, src=(_x, _x), name="u"), lambda ctx, u, x: UOp.const(bool_, True, u.shape)),
  (UPat(Ops.WHERE, src=(_c, UPat.var("a"), UPat.var("b"))), lambda ctx, c, a, b: a if c.arg else b),
  (UPat(Ops.WHERE, src=(UPat(), UPat.var("a"), UPat.var("a"))), lambda ctx, a: a),
  (UPat(Ops.AND, src=(UPat.var("p", bool_), UPat(Ops.CONST, arg=True)), commutative=True), lambda ctx, p: p),
  (UPat(Ops.OR, src=(UPat.var("p", bool_), UPat(Ops.CONST, arg=False)), commutative=True), lambda ctx, p: p),
])


class Simplifier:
  """simplify for one set of ranges, remembering every node it has rewritten: a kernel's indices share most of their
  terms, and the scheduler asks for each of them many times."""

  def __init__(self, ranges: dict[UOp, int]):
    self.bounds, self.memo = Bounds(ranges), {}

  def __call__(self, u: UOp) -> UOp: return graph_rewrite_many([u], rules, self.bounds, memo=self.memo)[0]


def simplify(u: UOp, ranges: dict[UOp, int]) -> UOp:
  """`u` rewritten by `rules` to a fixed point; equal to `u` wherever each loop variable v lies in [0, ranges[v]).

  Assumes, as C does, that the expression itself never overflows int64.
  """
  return graph_rewrite(u, rules, Bounds(ranges))
