"""Index simplification: named rewrites, and random expressions checked point by point against the originals."""
import itertools

import pytest
from hypothesis import given, settings, strategies as st

from tracegrad.ir import Ops, UOp, dtypes, toposort
from tracegrad.lower.symbolic import bounds, simplify

i64 = dtypes.int64
K = lambda v: UOp.const(i64, v)
B = lambda v: UOp.const(dtypes.bool_, v)


def cdiv(a, b):
  q = abs(a) // abs(b)
  return q if (a < 0) == (b < 0) else -q


def wrap(v): return (v + 2**63) % 2**64 - 2**63


EVAL = {Ops.ADD: lambda a, b: wrap(a + b), Ops.SUB: lambda a, b: wrap(a - b), Ops.MUL: lambda a, b: wrap(a * b),
        Ops.NEG: lambda a: wrap(-a), Ops.IDIV: lambda a, b: wrap(cdiv(a, b)), Ops.MOD: lambda a, b: a - b * cdiv(a, b),
        Ops.MAX: max, Ops.MIN: min, Ops.CMPLT: lambda a, b: a < b, Ops.CMPEQ: lambda a, b: a == b,
        Ops.CMPNE: lambda a, b: a != b, Ops.AND: lambda a, b: a and b, Ops.OR: lambda a, b: a or b,
        Ops.WHERE: lambda c, a, b: a if c else b}


def evaluate(u: UOp, env: dict) -> int:
  """The value of `u` with C semantics (truncating IDIV, MOD with the dividend's sign, int64 wrap-around)."""
  val = {}
  for n in toposort([u]):
    if n.op is Ops.CONST: val[n] = n.arg
    elif n.op is Ops.PARAM: val[n] = env[n]
    else: val[n] = EVAL[n.op](*(val[s] for s in n.src))
  return val[u]


def points(ranges: dict):
  vs = list(ranges)
  for vals in itertools.product(*(range(ranges[v]) for v in vs)): yield dict(zip(vs, vals))


def check(e: UOp, ranges: dict) -> UOp:
  """Simplify `e` and check that the result agrees with it, lies within bounds(e), and is a fixed point."""
  s = simplify(e, ranges)
  lo, hi = bounds(e, ranges)
  for env in points(ranges):
    assert evaluate(s, env) == evaluate(e, env), (env, e.print(), s.print())
    assert lo <= evaluate(e, env) <= hi, (env, e.print(), (lo, hi))
  assert simplify(s, ranges) is s
  return s


def nodes(u: UOp) -> int: return len(toposort([u]))


def loops(*extents):
  vs = [UOp.param((), i64) for _ in extents]
  return vs, dict(zip(vs, extents))


# ---- random expressions ----

@st.composite
def expr(draw, vs, depth=4):
  if depth == 0 or draw(st.integers(0, 4)) == 0:
    return draw(st.sampled_from(vs)) if draw(st.booleans()) else K(draw(st.integers(-9, 9)))
  sub = lambda: draw(expr(vs, depth - 1))
  op = draw(st.sampled_from([Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.MIN, Ops.WHERE]))
  if op is Ops.NEG: return -sub()
  if op in (Ops.IDIV, Ops.MOD): return sub().alu(op, K(draw(st.integers(-7, 7).filter(bool))))
  if op is Ops.WHERE: return draw(cond(vs, depth - 1)).where(sub(), sub())
  if op is Ops.MUL and draw(st.booleans()): return sub() * K(draw(st.integers(-5, 5)))
  return sub().alu(op, sub())


@st.composite
def cond(draw, vs, depth):
  if depth > 0 and draw(st.integers(0, 3)) == 0:
    return draw(cond(vs, depth - 1)).alu(draw(st.sampled_from([Ops.AND, Ops.OR])), draw(cond(vs, depth - 1)))
  op = draw(st.sampled_from([Ops.CMPLT, Ops.CMPEQ, Ops.CMPNE]))
  return draw(expr(vs, min(depth, 2))).alu(op, draw(expr(vs, min(depth, 2))))


@st.composite
def index(draw, vs):
  """The flat index of a reshape over the loop variables, then a chain of the ops that movement leaves on it."""
  e = K(draw(st.integers(-4, 4)))
  for v in vs: e = e + v * K(draw(st.integers(-3, 24)))
  for _ in range(draw(st.integers(1, 4))):
    op = draw(st.sampled_from([Ops.IDIV, Ops.MOD, Ops.ADD, Ops.MUL, Ops.MAX, Ops.MIN]))
    e = e.alu(op, K(draw(st.integers(1, 12) if op in (Ops.IDIV, Ops.MOD) else st.integers(-6, 6))))
  return e


extents = st.lists(st.integers(1, 6), min_size=1, max_size=3)


@settings(max_examples=150)
@given(extents, st.data())
def test_random_expressions_keep_their_values(ext, data):
  vs, ranges = loops(*ext)
  check(data.draw(expr(vs)), ranges)


@settings(max_examples=150)
@given(extents, st.data())
def test_random_index_chains_keep_their_values(ext, data):
  vs, ranges = loops(*ext)
  e = data.draw(index(vs))
  assert nodes(check(e, ranges)) <= nodes(e)


@settings(max_examples=60)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.data())
def test_reshape_round_trip_gives_back_the_loop_variables(shape, data):
  vs, ranges = loops(*shape)
  strides = list(itertools.accumulate([1] + shape[:0:-1], lambda a, b: a * b))[::-1]
  flat = K(0)
  for v, s in zip(vs, strides): flat = flat + v * K(s)
  for v, n, s in zip(vs, shape, strides):
    assert simplify(flat.alu(Ops.IDIV, K(s)).alu(Ops.MOD, K(n)), ranges) is (K(0) if n == 1 else v)


@settings(max_examples=100)
@given(st.integers(1, 5), st.data())
def test_free_variables_take_any_sign(extent, data):
  (i,), ranges = loops(extent)
  free = UOp.param((), i64)
  e = data.draw(st.one_of(expr([i, free]), index([i, free])))
  s = simplify(e, ranges)
  for env in points({i: extent, free: 25}):
    env = {i: env[i], free: env[free] - 12}
    assert evaluate(s, env) == evaluate(e, env), (env, e.print(), s.print())


# ---- named rewrites ----

def test_reshape_index_folds_to_a_loop_variable():
  (i0, i1, i2), ranges = loops(2, 3, 4)
  flat = i0 * K(12) + i1 * K(4) + i2
  e = flat.alu(Ops.IDIV, K(4)).alu(Ops.MOD, K(3))
  assert simplify(e, ranges) is i1
  assert simplify(flat.alu(Ops.IDIV, K(4)), ranges) is i0 * K(3) + i1
  assert simplify(flat.alu(Ops.MOD, K(4)), ranges) is i2
  assert simplify(flat.alu(Ops.IDIV, K(12)), ranges) is i0
  assert simplify((i0 * K(3) + i1) * K(4) + i2, ranges) is flat


def test_a_sliding_window_index_folds_to_its_taps():
  # rows of n + d read from n repeated: (t * (n + d) + j * s) % n is t * d + j * s while the windows fit in n
  (t, j), ranges = loops(3, 4)
  n, d, s = 9, 1, 2
  assert simplify((t * K(n + d) + j * K(s)).alu(Ops.MOD, K(n)), ranges) is t * K(d) + j * K(s)
  assert simplify((t * K(n + d) + j * K(s)).alu(Ops.IDIV, K(n)), ranges) is t
  # a flat row c * 9 + tap of a tap-major block: c = row // 9, tap = row % 9, whatever the block's inner terms
  (a, b), ranges = loops(9, 25)
  assert simplify((a * K(75) + b).alu(Ops.IDIV, K(225)), ranges) is a.alu(Ops.IDIV, K(3))
  assert simplify((a * K(75) + b).alu(Ops.MOD, K(225)), ranges) is a.alu(Ops.MOD, K(3)) * K(75) + b
  # one more window would not fit: the modulo stays
  (t, j), ranges = loops(3, 5)
  assert simplify((t * K(n + d) + j * K(s)).alu(Ops.MOD, K(n)), ranges).op is Ops.MOD


@pytest.mark.parametrize("build, want", [
  (lambda x: x + K(0), lambda x: x),
  (lambda x: K(0) + x, lambda x: x),
  (lambda x: x * K(1), lambda x: x),
  (lambda x: x * K(0), lambda x: K(0)),
  (lambda x: x.alu(Ops.IDIV, K(1)), lambda x: x),
  (lambda x: x.alu(Ops.MOD, K(1)), lambda x: K(0)),
  (lambda x: K(0).alu(Ops.IDIV, x), lambda x: K(0)),
  (lambda x: x - x, lambda x: K(0)),
  (lambda x: (x * K(7)).alu(Ops.IDIV, K(7)), lambda x: x),
  (lambda x: (x * K(7)).alu(Ops.MOD, K(7)), lambda x: K(0)),
  (lambda x: (x * K(12)).alu(Ops.IDIV, K(4)), lambda x: x * K(3)),
  (lambda x: (x + K(3)) + K(4), lambda x: x + K(7)),
  (lambda x: (x * K(3)) * K(4), lambda x: x * K(12)),
  (lambda x: -(-x), lambda x: x),
  (lambda x: x.alu(Ops.IDIV, K(4)).alu(Ops.IDIV, K(3)), lambda x: x.alu(Ops.IDIV, K(12))),
  (lambda x: x.alu(Ops.MOD, K(12)).alu(Ops.MOD, K(4)), lambda x: x.alu(Ops.MOD, K(4))),
  (lambda x: x.alu(Ops.CMPLT, x), lambda x: B(False)),
  (lambda x: x.alu(Ops.CMPEQ, x), lambda x: B(True)),
  (lambda x: x.alu(Ops.MAX, x), lambda x: x),
])
def test_identities_hold_for_any_value(build, want):
  x = UOp.param((), i64)
  assert simplify(build(x), {}) is want(x)


def test_constant_folding_follows_c():
  for a, b in itertools.product([-7, -4, 0, 3, 9], [-3, -1, 2, 5]):
    for op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.MIN, Ops.CMPLT, Ops.CMPEQ, Ops.CMPNE):
      e = K(a).alu(op, K(b))
      assert simplify(e, {}) is UOp.const(e.dtype, evaluate(e, {})), (op, a, b)
  assert simplify(K(-7).alu(Ops.IDIV, K(2)), {}) is K(-3)
  assert simplify(K(-7).alu(Ops.MOD, K(2)), {}) is K(-1)
  assert simplify(-K(5), {}) is K(-5)
  assert simplify(B(True).alu(Ops.AND, B(False)).alu(Ops.OR, B(True)), {}) is B(True)
  assert simplify(K(2**62) * K(4), {}) is K(0)
  assert simplify(K(1).alu(Ops.IDIV, K(0)), {}).op is Ops.IDIV


def test_bounds_decide_range_checks():
  (i, j), ranges = loops(4, 3)
  assert simplify(i.alu(Ops.MOD, K(4)), ranges) is i
  assert simplify(i.alu(Ops.IDIV, K(4)), ranges) is K(0)
  assert simplify(i.alu(Ops.CMPLT, K(4)), ranges) is B(True)
  assert simplify(i.alu(Ops.CMPLT, K(0)), ranges) is B(False)
  assert simplify(i.alu(Ops.CMPEQ, K(7)), ranges) is B(False)
  assert simplify(i.alu(Ops.MAX, K(0)), ranges) is i
  assert simplify(i.alu(Ops.MIN, K(3)), ranges) is i
  assert simplify(i.alu(Ops.MIN, K(3)).alu(Ops.MAX, K(0)), ranges) is i
  assert simplify(i.alu(Ops.CMPLT, K(4)).where(i, j), ranges) is i
  assert simplify(B(False).where(i, j), ranges) is j
  assert simplify(i.alu(Ops.CMPLT, j).where(i, i), ranges) is i
  assert simplify((i * K(3) + j).alu(Ops.MOD, K(3)), ranges) is j
  assert simplify(UOp.param((), i64) * K(0) + i, ranges) is i


def test_range_rules_wait_for_proof():
  (i,), ranges = loops(5)
  assert simplify(i.alu(Ops.MOD, K(4)), ranges).op is Ops.MOD
  assert simplify(i.alu(Ops.MAX, K(2)), ranges).op is Ops.MAX
  assert simplify(i.alu(Ops.CMPLT, K(3)), ranges).op is Ops.CMPLT
  free = UOp.param((), i64)
  assert simplify(free.alu(Ops.MOD, K(4)), {}).op is Ops.MOD
  assert simplify((free * K(4) + i).alu(Ops.IDIV, K(4)), ranges).op is Ops.IDIV


def test_negative_dividends_keep_truncation():
  (i,), ranges = loops(4)
  for e in [(i - K(4)).alu(Ops.IDIV, K(4)), (i - K(4)).alu(Ops.MOD, K(4)), (i * K(4) - K(3)).alu(Ops.IDIV, K(4)),
            (K(1) - i * K(4)).alu(Ops.IDIV, K(4)), (i - K(8)).alu(Ops.IDIV, K(-4)), (i - K(6)).alu(Ops.MOD, K(-4))]:
    check(e, ranges)
  assert simplify((K(-8) - i * K(4)).alu(Ops.IDIV, K(4)), ranges) is i * K(-1) - K(2)
  assert simplify((i - K(3)).alu(Ops.MOD, K(4)), ranges) is i - K(3)
  assert simplify((i - K(4)).alu(Ops.MOD, K(4)), ranges).op is Ops.MOD


def test_node_counts_shrink():
  (i0, i1, i2, i3), ranges = loops(2, 3, 4, 5)
  flat = ((i0 * K(3) + i1) * K(4) + i2) * K(5) + i3
  for stride, n, want in [(60, 2, i0), (20, 3, i1), (5, 4, i2), (1, 5, i3)]:
    e = flat.alu(Ops.IDIV, K(stride)).alu(Ops.MOD, K(n))
    assert simplify(e, ranges) is want
    assert nodes(simplify(e, ranges)) < nodes(e)


def test_bounds():
  (i, j), ranges = loops(4, 3)
  free = UOp.param((), i64)
  assert bounds(i * K(3) + j, ranges) == (0, 11)
  assert bounds(i - j * K(2), ranges) == (-4, 3)
  assert bounds((i * K(3) + j).alu(Ops.IDIV, K(-2)), ranges) == (-5, 0)
  assert bounds((i - K(2)).alu(Ops.MOD, K(3)), ranges) == (-2, 1)
  assert bounds((i + K(4)).alu(Ops.MOD, K(8)), ranges) == (4, 7)
  assert bounds(free, ranges) == (-2**63, 2**63 - 1)
  assert bounds(free.alu(Ops.MOD, K(10)), ranges) == (-9, 9)
  assert bounds(free * K(2), ranges) == (-2**63, 2**63 - 1)
  assert bounds(i.alu(Ops.CMPLT, K(9)), ranges) == (1, 1)


def test_deep_graphs_do_not_recurse():
  (i,), ranges = loops(3)
  e = i
  for n in range(400): e = e + K(n % 7) if n % 2 else e * K(1) + i
  s = simplify(e, ranges)
  assert s is i * K(201) + K(sum(n % 7 for n in range(1, 400, 2)))
  assert bounds(s, ranges)[0] == bounds(e, ranges)[0]


def test_float_expressions_are_left_alone():
  x = UOp.param((), dtypes.float32)
  for e in [x - x, x * UOp.const(dtypes.float32, 0), x.alu(Ops.CMPLT, x), x.alu(Ops.MAX, x)]:
    assert simplify(e, {}) is e


@pytest.mark.parametrize("n", [3, 8])
@pytest.mark.parametrize("shift", [0, 2, -1])
def test_a_diagonals_test_in_a_flat_index_is_an_equality(n, shift):
  """(i * n + j + shift) % (n + 1) == 0 (or < 1, the index never negative) becomes j - i + shift == 0 where that
  stays within (-(n + 1), n + 1) (|shift| < 2); a dividend that may be negative keeps its < 1 test."""
  (i, j), ranges = loops(n, n)
  flat = i * K(n) + j + K(shift)
  for e in (flat.alu(Ops.MOD, K(n + 1)).alu(Ops.CMPEQ, K(0)), flat.alu(Ops.MOD, K(n + 1)).alu(Ops.CMPLT, K(1))):
    s = check(e, ranges)
    rewritten = abs(shift) < 2 and not (shift < 0 and e.op is Ops.CMPLT)
    assert (Ops.MOD not in {u.op for u in toposort([s])}) == rewritten
