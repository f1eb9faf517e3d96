"""Kernel IR to C: one static function per Kernel, and one source per Program whose entry `void tg_run(void **bufs)`
runs every kernel in order.

>>> from tracegrad.ir import UOp, dtypes
>>> from tracegrad.lower.kernel import Kernel, Loop, Store
>>> i, x = UOp.param((), dtypes.int64), UOp.param((4,), dtypes.float32)
>>> print(render_kernel(Kernel("neg", (x,), (Loop(i, 4),), (Store(x, i, -x.gather(i.reshape((1,)))),), parallel=False)))
static void neg(float *restrict b0) {
  for (int64_t i0 = 0; i0 < 4; i0++) {
    float v0 = b0[i0];
    float v1 = -v0;
    b0[i0] = v1;
  }
}

Each expression node becomes one `T vN = ...;` statement, so shared subexpressions are computed once. float16 and
bfloat16 values live in float and are rounded back after every operation (as numpy and ml_dtypes compute them);
their buffers hold the bits as uint16_t. Integer arithmetic wraps: the source is compiled with -fwrapv. exp2, log2, sin
and cos of float32 (and of the half types) call c_math's functions, which gcc vectorises; float64 calls libm. A float
converted to an integer saturates as XLA converts it: NaN to 0, beyond the range to its nearest end.

A long float sum adds up blocks of its values, each summed on its own, and the blocks' sums exactly but for a carried
rounding error (TwoSum), so its error grows with the block, not with its length (numpy's pairwise sum: with log n).
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import re
from contextlib import ExitStack, contextmanager

import numpy as np

from ..ir import Ops, UOp, dtypes, substitute, toposort
from ..ir.dtypes import DType
from ..ir.ops import CONTRACT, ELEMENTWISE, FUSED
from ..ir.pattern import natural_exp_argument, natural_log_argument
from .c_math import SOURCE as MATH
from ..devices.base import Program, host_calls
from .kernel import Control, Kernel, Loop
from .symbolic import Simplifier, _linear, coefficient, simplify

# What a target defines before HELPERS: the fixed-width integer types, TG_INLINE (a helper function's qualifiers),
# TG_BITCAST(T, S, x), TG_CLZLL (leading zeros of a 64-bit value), and tg_fbits, tg_ffrom, tg_dbits, tg_dfrom (the
# bits of a float or double, and back)
C_HEAD = r"""#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TG_BITCAST(T, S, x) (((union { S s; T t; }){.s = (x)}).t)
#define TG_INLINE static inline
#define TG_CLZLL(x) __builtin_clzll(x)

static inline uint32_t tg_fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float tg_ffrom(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint64_t tg_dbits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static inline double tg_dfrom(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
"""

# Helpers every target shares, in C that CUDA and OpenCL C read too
HELPERS = r"""
/* float16 <-> float, rounding to nearest even; NaNs keep their sign and top payload bits (as numpy) */
TG_INLINE float tg_h2f(uint16_t h) {
  uint32_t e = h & 0x7c00u, m = h & 0x3ffu;
  uint32_t normal = ((uint32_t)(h & 0x7fffu) << 13) + 0x38000000u, special = 0x7f800000u | m << 13;
  uint32_t subnormal = tg_fbits((float)m * 0x1p-24f);
  return tg_ffrom((uint32_t)(h & 0x8000u) << 16 | (e == 0x7c00u ? special : e ? normal : subnormal));
}
TG_INLINE uint16_t tg_f2h(float f) {
  uint32_t x = tg_fbits(f), a = x & 0x7fffffffu;
  uint32_t nan = 0x7c00u | ((a & 0x7fffffu) >> 13), normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
  uint32_t subnormal = tg_fbits(tg_ffrom(a) * 0x1p24f + 0x1p23f) - 0x4b000000u;
  uint32_t r = a > 0x7f800000u ? (nan == 0x7c00u ? 0x7c01u : nan) : a >= 0x477ff000u ? 0x7c00u
             : a >= 0x38800000u ? normal : subnormal;
  return (uint16_t)((x >> 16 & 0x8000u) | r);
}

/* bfloat16 <-> float, rounding to nearest even; a NaN becomes the quiet NaN of its sign (as ml_dtypes) */
TG_INLINE float tg_bf2f(uint16_t b) { return tg_ffrom((uint32_t)b << 16); }
TG_INLINE uint16_t tg_f2bf(float f) {
  uint32_t x = tg_fbits(f);
  uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16, nan = (x >> 16 & 0x8000u) | 0x7fc0u;
  return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? nan : r);
}
TG_INLINE uint16_t tg_bf_bits(float f) { return (uint16_t)(tg_fbits(f) >> 16); }

TG_INLINE float tg_rh(float f) { return tg_h2f(tg_f2h(f)); }
TG_INLINE float tg_rb(float f) { return tg_bf2f(tg_f2bf(f)); }

/* to float rounding to odd, so that a second rounding to a half type is the correctly rounded result */
TG_INLINE float tg_d2f_odd(double d) {
  float f = (float)d;
  if ((double)f == d || f != f) return f;
  uint32_t b = tg_fbits(f);
  if (fabs((double)f) > fabs(d)) b -= 1;
  return tg_ffrom(b | 1u);
}
TG_INLINE float tg_u64_odd(uint64_t u) {
  if (u < (1ull << 24)) return (float)u;
  int s = 40 - TG_CLZLL(u);
  uint64_t m = (u >> s) | ((u & ((1ull << s) - 1)) != 0);
  return (float)m * tg_ffrom((uint32_t)(127 + s) << 23);
}
TG_INLINE float tg_i64_odd(int64_t x) { return x < 0 ? -tg_u64_odd(-(uint64_t)x) : tg_u64_odd((uint64_t)x); }

/* x clamped to [lo, hi], NaN to 0: a float in the range of the integer type it is then converted to */
TG_INLINE float tg_clampf(float x, float lo, float hi) {
  float c = x > lo ? x : lo;
  c = c < hi ? c : hi;
  return x == x ? c : 0.0f;
}
TG_INLINE double tg_clampd(double x, double lo, double hi) {
  double c = x > lo ? x : lo;
  c = c < hi ? c : hi;
  return x == x ? c : 0.0;
}
""" + MATH
PRELUDE = C_HEAD + HELPERS

HALF = (dtypes.float16, dtypes.bfloat16)
CTYPE = {dtypes.bool_: "_Bool", dtypes.int8: "int8_t", dtypes.int16: "int16_t", dtypes.int32: "int32_t",
         dtypes.int64: "int64_t", dtypes.uint8: "uint8_t", dtypes.uint16: "uint16_t", dtypes.uint32: "uint32_t",
         dtypes.uint64: "uint64_t", dtypes.float16: "float", dtypes.bfloat16: "float", dtypes.float32: "float",
         dtypes.float64: "double"}
# bools are bytes in memory: gcc vectorises no _Bool load
MEMTYPE = {**CTYPE, dtypes.bool_: "uint8_t", dtypes.float16: "uint16_t", dtypes.bfloat16: "uint16_t"}
LOAD = {dtypes.float16: "tg_h2f", dtypes.bfloat16: "tg_bf2f"}
STORE = {dtypes.float16: "tg_f2h", dtypes.bfloat16: "tg_bf_bits"}   # the values are exact: no rounding at a store
ROUND = {dtypes.float16: "tg_rh", dtypes.bfloat16: "tg_rb"}
UNSIGNED = {dtypes.int8: "uint8_t", dtypes.int16: "uint16_t", dtypes.int32: "uint32_t", dtypes.int64: "uint64_t"}

# ops whose half-type result must be rounded back (NEG, FLOOR, MAX, MIN and WHERE are exact)
ROUNDED = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.DIV, Ops.MOD, Ops.RECIP, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN,
                     Ops.COS, Ops.POW, Ops.ATAN2})

PARALLEL_MIN_STEPS = 32768
COLLAPSE_MIN = 64
SUM_BLOCK = 1024   # a long float sum adds up blocks of at most this many values, each summed on its own, and the
                   # blocks' sums with their rounding errors carried: its error grows with the block, not its length
SUM_LANES = 256    # bytes of the partial sums a block of a contiguous sum keeps, one per vector lane (64 floats: 16
                   # values each, as in numpy's pairwise sum), added up as a tree
POINT_BLOCK = 128  # a block of a register block's sums (_emit_block), each point's added in turn
# a register block's reduction over several loops whose last runs this many steps or fewer (a convolution's taps)
# keeps that a loop, which gcc would otherwise unroll whole with the loops around it: a CNN's first layer (three loops
# of 3) ran 29% faster, a 7x7 one's 35%; one short loop alone gained nothing (8 steps: 10% slower)
SHORT_STEPS = 16
DOT_LANES = 16     # a block of dot products (_emit_dots) spans this many blocks' steps: each lane adds about a block
MIN_SUM_LANES = 16  # a sum whose last loop is shorter than SUM_LANES keeps as many lanes as fit it, down to this many


# ---- constants ----

def _wrap(v: int, d: DType) -> int:
  lo = 0 if d.is_unsigned else -(1 << (d.bits - 1))
  return (v - lo) % (1 << d.bits) + lo


def _int_literal(v: int, d: DType) -> str:
  v = _wrap(v, d)
  if d.bits == 64:
    if d.is_unsigned: return f"{v}ULL"
    return "(-9223372036854775807LL - 1)" if v == -2**63 else (f"{v}LL" if v >= 0 else f"({v}LL)")
  if d is dtypes.uint32: return f"{v}u"
  if v == -2**31: return "(-2147483647 - 1)"
  return str(v) if v >= 0 else f"({v})"


def _float_literal(x: float, d: DType) -> str:
  if math.isnan(x): return "(-NAN)" if math.copysign(1.0, x) < 0 else "NAN"
  if math.isinf(x): return "INFINITY" if x > 0 else "(-INFINITY)"
  s = repr(x) if d is dtypes.float64 else f"{x:.9g}"
  if not any(c in s for c in ".e"): s += ".0"
  s += "" if d is dtypes.float64 else "f"
  return f"({s})" if s.startswith("-") else s


def render_const(value, d: DType) -> str:
  """A C literal of `value` as the dtype `d` holds it (half types: their exact value, as a float)."""
  if d.is_bool: return "1" if value else "0"
  if d.is_int: return _int_literal(int(value), d)
  return _float_literal(float(np.array(value, dtype=d.np).astype(np.float64)), d)


# ---- operations: each renders the C expression of a node from its operands' expressions ----

def _dt(u: UOp) -> DType: return u.src[-1].dtype


def _libm(name: str):
  return lambda u, *a: f"{name}{'' if _dt(u) is dtypes.float64 else 'f'}({', '.join(a)})"


def _vec(name: str):
  """float64 calls libm's `name`, the float types c_math's vectorisable tg_`name`f."""
  return lambda u, a: f"{name}({a})" if _dt(u) is dtypes.float64 else f"tg_{name}f({a})"


def _infix(op: str): return lambda u, a, b: f"{a} {op} {b}"


def _plain_divisor(u: UOp) -> bool:
  return u.src[1].op is Ops.CONST and _wrap(int(u.src[1].arg), _dt(u)) not in (0, -1)


def _idiv(u, a, b):
  if _plain_divisor(u): return f"{a} / {b}"
  if _dt(u).is_unsigned: return f"{b} == 0 ? 0 : {a} / {b}"
  return f"{b} == 0 ? 0 : {b} == -1 ? -{a} : {a} / {b}"


def _mod(u, a, b):
  if _dt(u).is_float: return _libm("fmod")(u, a, b)
  if _plain_divisor(u): return f"{a} % {b}"
  if _dt(u).is_unsigned: return f"{b} == 0 ? 0 : {a} % {b}"
  return f"({b} == 0 || {b} == -1) ? 0 : {a} % {b}"


# the comparison that picks b, a number, over a in a (cmp) b's minimum or maximum: a's NaN fails it and stays
FLIPPED = {"<": "<=", ">": ">=", "<=": "<", ">=": ">"}


def _number(u: UOp) -> bool: return u.op is Ops.CONST and not math.isnan(u.arg)


def _minmax(cmp: str):
  def go(u, a, b):
    d = _dt(u)
    if not d.is_float: return f"{a} {cmp} {b} ? {a} : {b}"
    # numpy returns the second operand of two equal values (the first for float16) and propagates NaN; a constant
    # operand is no NaN, which spares a test (relu's max(x, 0): one comparison where there were two and an or)
    c = cmp + "=" if d is dtypes.float16 else cmp
    pick, first, other = f"({a} {c} {b}) | ({a} != {a})", a, b
    if _number(u.src[0]): pick = f"{a} {c} {b}"
    elif _number(u.src[1]): pick, first, other = f"{b} {FLIPPED[c]} {a}", b, a
    sel = {dtypes.float32: "tg_self", dtypes.float64: "tg_seld"}.get(d)
    if sel is None: return f"({pick}) ? {first} : {other}"
    return f"{sel}({pick}, {first}, {other})"   # a bit select: gcc's ?: here may branch and not vectorise
  return go


def _shl(u, a, b):
  d = _dt(u)
  return f"({CTYPE[d]})(({UNSIGNED[d]}){a} << {b})" if d in UNSIGNED else f"{a} << {b}"


def _recip(u, a): return f"{'1.0' if _dt(u) is dtypes.float64 else '1.0f'} / {a}"


def _multiply_add(u: UOp) -> tuple[UOp, UOp, UOp] | None:
  """(a, b, d) where u is a * b + d of float32 or float64 with a FUSED (else a CONTRACT) product, rendered as one
  multiply-add."""
  if u.op is not Ops.ADD or u.dtype not in (dtypes.float32, dtypes.float64): return None
  pairs = ((u.src[0], u.src[1]), (u.src[1], u.src[0]))
  for arg in (FUSED, CONTRACT):
    for m, d in pairs:
      if m.op is Ops.MUL and m.arg == arg: return m.src[0], m.src[1], d
  return None


def _fma_macro(u: UOp) -> str:
  """The multiply-add of u (see _multiply_add): TG_FMA[F]_EXACT, always rounded once, for a FUSED product; TG_FMA[F],
  fused where the target has the instruction, for a CONTRACT one."""
  exact = any(m.op is Ops.MUL and m.arg == FUSED for m in u.src)   # _multiply_add takes a FUSED product first
  return ("TG_FMA" if u.dtype is dtypes.float64 else "TG_FMAF") + ("_EXACT" if exact else "")


ALU = {
  Ops.NEG: lambda u, a: f"-{a}", Ops.RECIP: _recip, Ops.SQRT: _libm("sqrt"), Ops.EXP2: _vec("exp2"),
  Ops.LOG2: _vec("log2"), Ops.SIN: _vec("sin"), Ops.COS: _vec("cos"), Ops.FLOOR: _libm("floor"),
  Ops.ADD: _infix("+"), Ops.SUB: _infix("-"), Ops.MUL: _infix("*"), Ops.DIV: _infix("/"), Ops.IDIV: _idiv,
  Ops.MOD: _mod, Ops.MAX: _minmax(">"), Ops.MIN: _minmax("<"), Ops.POW: _libm("pow"), Ops.ATAN2: _libm("atan2"),
  Ops.CMPLT: _infix("<"), Ops.CMPEQ: _infix("=="), Ops.CMPNE: _infix("!="),
  Ops.AND: _infix("&"), Ops.OR: _infix("|"), Ops.XOR: _infix("^"), Ops.SHL: _shl, Ops.SHR: _infix(">>"),
  Ops.WHERE: lambda u, c, a, b: f"{c} ? {a} : {b}",
}


def _below(hi: int, fd: DType) -> float:
  """The largest value of the float type fd at most hi (an integer type's maximum, 2^k - 1)."""
  f = fd.np.type(hi)
  return float(np.nextafter(f, fd.np.type(0)) if int(f) > hi else f)


def _saturate(src: DType, dst: DType, x: str) -> str:
  """A float to an integer as XLA converts: NaN to 0, beyond the range to its nearest end, else truncated toward zero
  (C leaves the rest undefined). Clamped in float to bounds the float holds, so the conversion is always in range, and
  the maximum selected after where the float cannot hold it: compares and selects only, which vectorise."""
  fd = dtypes.float64 if src is dtypes.float64 else dtypes.float32
  lo, hi = dtypes.min_value(dst), dtypes.max_value(dst)
  top = _float_literal(_below(hi, fd), fd)
  out = f"({CTYPE[dst]})tg_clamp{'d' if fd is dtypes.float64 else 'f'}({x}, {_float_literal(float(lo), fd)}, {top})"
  return out if _below(hi, fd) == hi else f"{x} > {top} ? {_int_literal(hi, dst)} : {out}"


def render_cast(src: DType, dst: DType, x: str) -> str:
  if dst.is_bool: return f"{x} != 0"
  if src.is_bool and dst.is_float:   # a select: GCC vectorises no loop that converts a _Bool to a float by a cast
    return f"({x} ? {_float_literal(1.0, dst)} : {_float_literal(0.0, dst)})"
  if src.is_float and dst.is_int: return _saturate(src, dst, x)
  if dst in HALF:
    if src is dtypes.float64: x = f"tg_d2f_odd({x})"
    elif src.is_int and src.bits >= 32: x = f"tg_{'u' if src.is_unsigned else 'i'}64_odd({x})"
    return f"{ROUND[dst]}({x})"
  return f"({CTYPE[dst]}){x}"


def render_bitcast(src: DType, dst: DType, x: str) -> str:
  if src in HALF: src, x = dtypes.uint16, f"{STORE[src]}({x})"
  if dst.is_bool: return f"{x} != 0"
  via = dtypes.uint16 if dst in HALF else dst
  if CTYPE[src] != CTYPE[via]: x = f"TG_BITCAST({CTYPE[via]}, {CTYPE[src]}, {x})"
  return f"{LOAD[dst]}({x})" if dst in HALF else x


# ---- kernels ----

def _deps(u: UOp) -> tuple:
  """The scalar values a node reads: a load reads its index (a buffer is not a value); a parity test, the number
  whose low bit it tests (_low_bit_test); a multiply-add, its three operands (_multiply_add); exp(x) written as
  2^(x log2(e)), x (the product is not computed), and log(x) written as log2(x) ln(2), x."""
  if (x := _low_bit_test(u)) is not None: return (x,)
  if u.op is Ops.EXP2 and (x := natural_exp_argument(u)) is not None: return (x,)
  if (x := natural_log_argument(u)) is not None: return (x,)
  if (fused := _multiply_add(u)) is not None: return fused
  if u.op is not Ops.GATHER: return u.src
  idx = u.src[1]
  if idx.op is not Ops.RESHAPE or idx.shape != (1,) or idx.src[0].shape != ():
    raise ValueError(f"render_c: a load must be GATHER(buffer, RESHAPE(index, (1,))), got index {idx!r}")
  return (idx.src[0],)


def _order(roots, known) -> list[UOp]:
  """The nodes below `roots` not in `known`, each after its sources (iterative: expressions can be deep)."""
  seen, order = set(known), []
  for r in roots:
    stack = [(r, False)]
    while stack:
      u, done = stack.pop()
      if done: order.append(u)
      elif u not in seen:
        seen.add(u)
        stack.append((u, True))
        stack.extend((s, False) for s in reversed(_deps(u)) if s not in seen)
  return order


def _widening(u: UOp) -> bool:
  """A half-type value read as float32: the same C value."""
  return u.op is Ops.CAST and u.dtype is dtypes.float32 and u.src[0].dtype in HALF


_TESTS = {Ops.CMPEQ: "==", Ops.CMPNE: "!="}


def _low_bit_test(u: UOp) -> UOp | None:
  """x where u compares x & 1 with 0 (a parity test, as the round-to-nearest-even of exact float arithmetic makes):
  gcc 12 takes (x & 1) == 0 for a bool of x's width, and leaves a loop scalar that combines it with a float compare's
  mask, which (x << 31) == 0 does not make it do."""
  if u.op not in _TESTS: return None
  a, b = u.src
  if a.op is Ops.CONST: a, b = b, a
  if b.op is not Ops.CONST or b.arg != 0 or a.op is not Ops.AND: return None
  x, one = a.src if a.src[1].op is Ops.CONST else a.src[::-1]
  return x if one.op is Ops.CONST and one.arg == 1 and x.dtype.is_int and not x.dtype.is_bool else None


OPAQUE_BYTES = 128   # strides of this many bytes or more, powers of two, along a vectorised loop are TG_OPAQUE


class _Body:
  """The statements of one kernel function; each value is named once per scope, and read again from memory after a
  store to a buffer it loads from."""

  sum_block, sum_lanes = SUM_BLOCK, SUM_LANES   # how a long float sum is cut (see _emit_blocked_sum)

  def __init__(self, k: Kernel):
    self.bufs = {b: f"b{i}" for i, b in enumerate(k.bufs)}
    self.names: dict[UOp, str] = {}
    self.reads: dict[UOp, frozenset] = {}
    self.lines: list[str] = []
    self.count, self.depth = 0, 1
    self.simd: UOp | None = None   # the variable of the loop that gcc vectorises (its "omp simd" pragma), if any
    self.opaque: set[int] = set()   # the strides along it that are read as TG_OPAQUE(n) (opaque_stride)
    self.far = OPAQUE_BYTES // min((b.dtype.itemsize for b in k.bufs if b.dtype.itemsize >= 4), default=4)
    self.panel: UOp | None = None   # the column panel a register block reads (_emit_paneled), if any

  def line(self, s: str): self.lines.append("  " * self.depth + s)

  @contextmanager
  def block(self, header: str, pragma: str | None = None):
    if pragma: self.line(pragma)
    self.line(header + " {")
    saved, self.depth = dict(self.names), self.depth + 1
    yield
    self.names = {u: n for u, n in saved.items() if self.names.get(u) == n}
    self.depth -= 1
    self.line("}")

  def stored(self, buf: UOp):
    self.names = {u: n for u, n in self.names.items() if buf not in self.reads.get(u, ())}

  def load(self, buf: UOp, index: str) -> str:
    if buf not in self.bufs: raise ValueError(f"render_c: a load reads {buf!r}, which is not a buffer of the kernel")
    ref = f"{self.bufs[buf]}[{index}]"
    return f"{LOAD[buf.dtype]}({ref})" if buf.dtype in LOAD else ref

  def expr(self, u: UOp) -> str:
    a = [self.names[s] for s in _deps(u)]
    if u.op is Ops.EXP2 and (x := natural_exp_argument(u)) is not None:   # exp(x), not 2^(x log2(e)) rounded
      e = f"{'exp' if _dt(u) is dtypes.float64 else 'tg_expf'}({self.names[x]})"
      return f"{ROUND[u.dtype]}({e})" if u.dtype in ROUND else e
    if (x := natural_log_argument(u)) is not None:   # log(x), not log2(x) rounded times ln(2)
      e = f"{'log' if _dt(u) is dtypes.float64 else 'tg_logf'}({self.names[x]})"
      return f"{ROUND[u.dtype]}({e})" if u.dtype in ROUND else e
    if (n := self.opaque_stride(u)) is not None:
      self.opaque.add(n)
      return f"{self.names[self.simd]} * {self.stride_name(n)}"
    if u.op is Ops.SUB and (n := self.opaque_stride(u.src[1], -1)) is not None:   # x - i * 2: x + i * (-2)
      self.opaque.add(n)
      return f"{self.names[u.src[0]]} + {self.names[self.simd]} * {self.stride_name(n)}"
    if (x := _low_bit_test(u)) is not None:   # the low bit moved to the top: gcc then vectorises it beside float masks
      wide = x.dtype.itemsize == 8
      return f"(({'uint64_t' if wide else 'uint32_t'}){self.names[x]} << {63 if wide else 31}) {_TESTS[u.op]} 0"
    if _multiply_add(u) is not None: return f"{_fma_macro(u)}({', '.join(a)})"
    if u.op in ALU:
      e = ALU[u.op](u, *a)
      return f"{ROUND[u.dtype]}({e})" if u.dtype in ROUND and u.op in ROUNDED else e
    if u.op is Ops.GATHER: return self.load(u.src[0], a[0])
    if u.op is Ops.CAST: return render_cast(u.src[0].dtype, u.dtype, a[0])
    if u.op is Ops.BITCAST: return render_bitcast(u.src[0].dtype, u.dtype, a[0])
    if u.op is Ops.PARAM:
      raise ValueError(f"render_c: {u!r} is not a loop variable, the accumulator or a buffer load of the kernel")
    raise NotImplementedError(f"render_c: no C rendering of {u.op.name} in a kernel expression")

  def opaque_stride(self, u: UOp, sign: int = 1) -> int | None:
    """n where sign * u is the vectorised loop's variable times a power of two n at least `far` (OPAQUE_BYTES of
    the kernel's narrowest element of 4 bytes or more), or times a negative power of two (a mirrored read of complex
    pairs: gcc 12 vectorises no loop loading at -2, -4, ...): a stride gcc must not see as a constant (TG_OPAQUE)."""
    if u.op is not Ops.MUL or self.simd is None or u.dtype is not dtypes.int64 or self.simd not in u.src: return None
    c = u.src[1] if u.src[0] is self.simd else u.src[0]
    if c.op is not Ops.CONST or c.arg in (0, 1, -1): return None
    n = abs(c.arg)
    return None if n & (n - 1) or 0 < sign * c.arg < self.far else sign * c.arg

  @staticmethod
  def stride_name(n: int) -> str: return f"tg_s{n}" if n > 0 else f"tg_sm{-n}"

  def declarations(self) -> list[str]:
    """The lines declaring the opaque strides the body reads, at the function's top."""
    return [f"  const int64_t {self.stride_name(n)} = TG_OPAQUE({n}LL);" for n in sorted(self.opaque)]

  def emit(self, roots) -> list[str]:
    for u in _order(roots, self.names):
      own = (u.src[0],) if u.op is Ops.GATHER else ()
      self.reads[u] = frozenset().union(own, *(self.reads.get(s, ()) for s in _deps(u)))
      if u.op is Ops.CONST: self.names[u] = render_const(u.arg, u.dtype)
      elif u.op in (Ops.DETACH, Ops.SHARDING_CONSTRAINT) or _widening(u): self.names[u] = self.names[u.src[0]]
      else:
        name, self.count = f"v{self.count}", self.count + 1
        self.line(f"{CTYPE[u.dtype]} {name} = {self.expr(u)};")
        self.names[u] = name
    return [self.names[r] for r in roots]


REDUCE_ALU = {Ops.REDUCE_SUM: Ops.ADD, Ops.REDUCE_PROD: Ops.MUL, Ops.REDUCE_MAX: Ops.MAX, Ops.REDUCE_MIN: Ops.MIN}
BOOL_ALU = {Ops.ADD: Ops.OR, Ops.MUL: Ops.AND, Ops.MAX: Ops.OR, Ops.MIN: Ops.AND}
STORE_ALU = {"add": Ops.ADD, "mul": Ops.MUL, "min": Ops.MIN, "max": Ops.MAX}
SIMD_REDUCTION = {Ops.REDUCE_SUM: "+", Ops.REDUCE_PROD: "*"}
NAN_REDUCTION = {Ops.REDUCE_MAX: (">", "max"), Ops.REDUCE_MIN: ("<", "min")}


def combine(op: Ops, a: UOp, b: UOp) -> UOp:
  """a op b in a's dtype (bool: OR for sums and maxima, AND for products and minima)."""
  return UOp(BOOL_ALU[op] if a.dtype.is_bool else op, a.dtype, (a, b.cast(a.dtype)))


def reduce_identity(op: Ops, d: DType):
  return {Ops.REDUCE_SUM: 0, Ops.REDUCE_PROD: 1, Ops.REDUCE_MAX: dtypes.min_value(d),
          Ops.REDUCE_MIN: dtypes.max_value(d)}[op]


def _omp(what: str, n: int) -> str: return f"#pragma omp {what}" + (f" collapse({n})" if n > 1 else "")


def _loop_pragmas(k: Kernel) -> dict[int, str]:
  """OpenMP pragmas by outer loop position: threads over the outer loops of big parallel kernels, simd on the
  innermost loop where no accumulator is carried across it and no loops run inside it."""
  n = len(k.loops)
  if not k.parallel or n == 0: return {}
  opts, nested = dict(k.opts), k.reduce is not None or bool(k.epilogue) or bool(k.phases)
  if not opts.get("threads", 1): return {} if nested else {n - 1: "#pragma omp simd"}
  ext = [l.extent for l in k.loops]
  steps = math.prod(ext) * sum(math.prod(l.extent for l in (*(p.reduce.loops if p.reduce else ()), *p.epilogue))
                               for p in k.steps())
  if "collapse" not in opts and (steps < PARALLEL_MIN_STEPS or math.prod(ext) < 2):
    return {} if nested else {n - 1: "#pragma omp simd"}
  c = min(opts.get("collapse", n), n)   # how many outer loops the threads share out
  if nested: return {0: _omp("parallel for", c)}
  if "collapse" not in opts and n > 1 and math.prod(ext[:-1]) >= COLLAPSE_MIN: c = n - 1
  if c == n: return {0: _omp("parallel for simd", n)}
  return {0: _omp("parallel for", c), n - 1: "#pragma omp simd"}


def _reduce_pragma(k: Kernel) -> str | None:
  d, op = k.reduce.acc.dtype, k.reduce.op
  # integer max and min too: a short one left unrolled goes to gcc 12's straight-line vectoriser, which for AVX2 may
  # read a bool cast to int as the compare's mask, -1 (a max of (x > 0).astype(int) came out 0)
  if d.is_int and op in NAN_REDUCTION: return f"#pragma omp simd reduction({NAN_REDUCTION[op][1]}:acc)"
  if op not in SIMD_REDUCTION or d.is_bool or d in HALF: return None
  return f"#pragma omp simd reduction({SIMD_REDUCTION[op]}:acc)"


def _loop(var: str, extent: int) -> str: return f"for (int64_t {var} = 0; {var} < {extent}; {var}++)"


def _emit_reduce(b: _Body, k: Kernel):
  r = k.reduce
  b.names[r.acc] = "acc"
  inner = {l.var for l in r.loops} | {r.acc}
  for j, l in enumerate(r.loops): b.names[l.var] = f"r{j}"
  step = combine(REDUCE_ALU[r.op], r.acc, r.value)
  _hoist(b, [step], inner)
  b.line(f"{CTYPE[r.acc.dtype]} acc = {render_const(reduce_identity(r.op, r.acc.dtype), r.acc.dtype)};")
  if r.op in NAN_REDUCTION and r.acc.dtype in (dtypes.float32, dtypes.float64):
    _emit_nan_reduce(b, r)
    return
  if sum_plan(r, b.sum_block) is not None:
    _emit_blocked_sum(b, k, step)
    return
  last = len(r.loops) - 1
  with ExitStack() as loops:
    for j, l in enumerate(r.loops):
      loops.enter_context(b.block(_loop(f"r{j}", l.extent), _reduce_pragma(k) if j == last else None))
    b.line(f"acc = {b.emit([step])[0]};")
    for s in r.stores: _emit_store(b, s)


def _hoist(b: _Body, roots, inner: set, stored: frozenset = frozenset()):
  """Emit the parts of roots that a loop over `inner` (its variables, and the accumulator) does not change, before
  it: what reads neither an inner variable nor a buffer the loop stores to."""
  nodes = _order(roots, b.names)
  varying = set(inner)
  for u in nodes:
    if any(s in varying for s in _deps(u)) or (u.op is Ops.GATHER and u.src[0] in stored): varying.add(u)
  b.emit([s for u in nodes if u in varying for s in _deps(u) if s not in varying])


def sum_plan(r, block: int = SUM_BLOCK) -> tuple[int, int] | None:
  """Where a long float sum is cut into blocks of at most `block` steps: (j, c), its loop j running in chunks of c
  steps and the loops inside j whole in each; None for a short sum or another reduction."""
  if r is None or r.op is not Ops.REDUCE_SUM or not r.acc.dtype.is_float: return None
  inner = 1
  for j in reversed(range(len(r.loops))):
    if inner * r.loops[j].extent > block: return j, block // inner
    inner *= r.loops[j].extent
  return None


def is_product(v: UOp) -> bool:
  """Whether a reduction's value is a product (a matmul's), perhaps converted."""
  while v.op is Ops.CAST: v = v.src[0]
  return v.op is Ops.MUL


def open_blocks(b: _Body, r, plan: tuple[int, int], stack: ExitStack, pragma: str | None = None):
  """Open the loops around one block of a long sum: the sum's loops outside the cut one, and `rb` over its chunks (the
  chunk is [rb, re)). `pragma` goes on the outermost, collapsing them all."""
  j, c = plan
  heads = [_loop(f"r{i}", r.loops[i].extent) for i in range(j)]
  n = r.loops[j].extent
  heads.append(f"for (int64_t rb = 0; rb < {n}; rb += {c})")
  if pragma and len(heads) > 1: pragma += f" collapse({len(heads)})"
  for i, h in enumerate(heads): stack.enter_context(b.block(h, None if i else pragma))
  b.line(f"const int64_t re = rb + {c} < {n} ? rb + {c} : {n};")


def block_loop(r, plan: tuple[int, int], i: int) -> str:
  """The header of a long sum's loop i inside a block: the cut loop over the chunk, a loop inside it whole."""
  return f"for (int64_t r{i} = rb; r{i} < re; r{i}++)" if i == plan[0] else _loop(f"r{i}", r.loops[i].extent)


def add_exactly(acc: str, comp: str, part: str, ct: str) -> str:
  """C adding part into acc, the rounding error into comp (TwoSum: exact whatever the magnitudes)."""
  return f"{{ const {ct} s = {acc} + {part}, d = s - {acc}; {comp} += ({acc} - (s - d)) + ({part} - d); {acc} = s; }}"


def add_error(acc: str, comp: str) -> str:
  """C folding the carried error into the sum (an infinite or NaN sum has a NaN error and stays as it is)."""
  return f"if ({acc} - {acc} == 0) {acc} = {acc} + {comp};"


def _emit_blocked_sum(b: _Body, k: Kernel, step: UOp):
  """A long float sum: each block summed on its own into `part`, and added to acc exactly but for an error kept in
  comp, in block order. When the sum is one value, threads share out the blocks, each block's sum kept in `parts`,
  and the sums are added in order after: the same bits for any number of threads. Where the last loop is long
  enough, a block keeps a partial sum per vector lane (b.sum_lanes bytes of them, added up as a tree), which breaks
  the chain of additions and gives each few values to add."""
  r, ct = k.reduce, CTYPE[k.reduce.acc.dtype]
  plan, zero, last = sum_plan(r, b.sum_block), render_const(0.0, r.acc.dtype), len(r.loops) - 1
  lanes = b.sum_lanes // r.acc.dtype.itemsize
  while r.loops[last].extent < lanes and lanes >= 2 * MIN_SUM_LANES: lanes //= 2   # a row of 32: 32 lanes
  if r.loops[last].extent < lanes: lanes = 0
  b.line(f"{ct} comp = {zero};")
  steps = math.prod(l.extent for l in r.loops)
  threads = k.parallel and not k.loops and steps >= PARALLEL_MIN_STEPS and dict(k.opts).get("threads", 1)

  def point(part: str):
    b.names[r.acc] = part
    b.line(f"{part} = {b.emit([step])[0]};")
    for s in r.stores: _emit_store(b, s)

  j, c = plan
  chunks = -(-r.loops[j].extent // c)
  blocks = math.prod(l.extent for l in r.loops[:j]) * chunks
  if threads: b.line(f"{ct} *parts = ({ct} *)malloc({blocks} * sizeof({ct}));")
  with ExitStack() as loops:
    open_blocks(b, r, plan, loops, "#pragma omp parallel for" if threads else None)
    if lanes:
      b.line(f"{ct} part[{lanes}];")
      b.line(f"for (int64_t l = 0; l < {lanes}; l++) part[l] = {zero};")
      with ExitStack() as inner:
        for i in range(plan[0], last): inner.enter_context(b.block(block_loop(r, plan, i)))
        lo, hi = ("rb", "re") if plan[0] == last else ("0", str(r.loops[last].extent))
        with b.block(f"for (int64_t rv = {lo}; rv + {lanes} <= {hi}; rv += {lanes})"), \
             b.block(f"for (int64_t l = 0; l < {lanes}; l++)", "#pragma omp simd"):
          b.line(f"const int64_t r{last} = rv + l;")
          point("part[l]")
        b.line(f"const int64_t rt = {hi} - ({hi} - {lo}) % {lanes};")
        with b.block(f"for (int64_t r{last} = rt; r{last} < {hi}; r{last}++)"): point(f"part[r{last} - rt]")
      w = lanes
      while (w := w // 2): b.line(f"for (int64_t l = 0; l < {w}; l++) part[l] = part[l] + part[l + {w}];")
      total = "part[0]"
    else:
      b.line(f"{ct} part = {zero};")
      with ExitStack() as inner:
        for i in range(plan[0], len(r.loops)):
          pragma = _reduce_pragma(k).replace(":acc", ":part") if i == last else None
          inner.enter_context(b.block(block_loop(r, plan, i), pragma))
        point("part")
      total = "part"
    b.names[r.acc] = "acc"
    if not threads: b.line(add_exactly("acc", "comp", total, ct))
    else:
      block = "0"
      for i, l in enumerate(r.loops[:j]): block = f"({block} * {l.extent} + r{i})"
      b.line(f"parts[{block} * {chunks} + rb / {c}] = {total};")
  if threads:
    b.line(f"for (int64_t i = 0; i < {blocks}; i++) " + add_exactly("acc", "comp", "parts[i]", ct))
    b.line("free(parts);")
  b.line(add_error("acc", "comp"))


def _step(b: _Body, r) -> str:
  """C for the reduction's next accumulator value; a float sum of products accumulates with one fused multiply-add
  (the order of a sum already differs from numpy's BLAS, and it rounds once instead of twice)."""
  v = r.value
  if r.op is Ops.REDUCE_SUM and v.op is Ops.MUL and v.dtype is r.acc.dtype and v.dtype in (dtypes.float32, dtypes.float64):
    x, y, acc = b.emit([v.src[0], v.src[1], r.acc])
    return f"{'TG_FMAF' if v.dtype is dtypes.float32 else 'TG_FMA'}({x}, {y}, {acc})"
  return b.emit([combine(REDUCE_ALU[r.op], r.acc, r.value)])[0]


def _emit_nan_reduce(b: _Body, r):
  """A float max or min as a plain one, which vectorises, beside a flag of whether any value was NaN (the result
  then)."""
  cmp, name = NAN_REDUCTION[r.op]
  b.line("int nan = 0;")
  with ExitStack() as loops:
    for j, l in enumerate(r.loops):
      pragma = f"#pragma omp simd reduction({name}:acc) reduction(|:nan)" if j == len(r.loops) - 1 else None
      loops.enter_context(b.block(_loop(f"r{j}", l.extent), pragma))
    v = b.emit([r.value.cast(r.acc.dtype)])[0]
    b.line(f"acc = {v} {cmp} acc ? {v} : acc;")
    b.line(f"nan |= {v} != {v};")
    for s in r.stores: _emit_store(b, s)
  b.line("if (nan) acc = NAN;")


# The register block of a matmul-like kernel: rows of the second-last output loop by bytes of the last, sized for the
# target's vector registers (AVX-512: 6 x 4 registers of accumulators), by the macro that tells the target. With 8 x 4
# the accumulators fill the 32 registers and every multiply-add reloads an operand: the 1024^2 matmul ran at 255
# GFLOPS, 324 with 6 x 4 (298 with 4 x 4, 318 with 12 x 2), and the CNN, GPT and MLP steps' kernels 11-20% faster. A
# block of dot products takes 8 x 3 there (a filter gradient ran at 94 GFLOPS with 8 x 4, 108 with 8 x 3, 89 with
# 8 x 2). On AVX2 one of two columns takes 8 rows (TG_DOT_ROWS): its 16 accumulators fill the registers, yet ResNet-8's
# filter gradients by windows ran 6-21% faster than with 6 or 4; one of three columns (a filter gradient by taps,
# whose 3 columns' vectors take registers too) takes 4 (TG_DOT3_ROWS), and so does a long sum (LONG_DOT_ROWS).
# TG_REGS: the target's vector registers, which a register block's accumulators must fit in (kernel search tries no
# bigger block: one of 6 x 4 vectors on AVX2 ran a weight gradient 1.7x slower than the 6 x 2 default, 6 x 8 2.7x)
BLOCKS = {"__AVX512F__": dict(TG_ROWS=6, TG_VBYTES=256, TG_VREG=64, TG_DOT_COLS=3, TG_DOT_ROWS=8, TG_DOT3_ROWS=8,
                              TG_REGS=32),
          "__AVX__": dict(TG_ROWS=6, TG_VBYTES=64, TG_VREG=32, TG_DOT_COLS=2, TG_DOT_ROWS=8, TG_DOT3_ROWS=4,
                          TG_REGS=16),
          None: dict(TG_ROWS=4, TG_VBYTES=32, TG_VREG=16, TG_DOT_COLS=2, TG_DOT_ROWS=4, TG_DOT3_ROWS=4, TG_REGS=16)}
REGISTERS = {target: sizes["TG_REGS"] for target, sizes in BLOCKS.items()}


def _transpose(name: str, vec: str, lanes: int) -> str:
  """C of `name(r)`: the square of `lanes` vectors of `lanes` lanes at r transposed in place, in log2(lanes) rounds
  that each swap the off-diagonal blocks of one size (a row's and a lane's bit of that size trade places)."""
  lines, b = [f"TG_INLINE void {name}({vec} *r) {{", f"  {vec} x, y;"], 1
  while b < lanes:
    lo = ", ".join(str(l if l // b % 2 == 0 else lanes + l - b) for l in range(lanes))
    hi = ", ".join(str(l + b if l // b % 2 == 0 else lanes + l) for l in range(lanes))
    for j in (j for j in range(lanes) if j // b % 2 == 0):
      lines.append(f"  x = r[{j}], y = r[{j + b}]; r[{j}] = TG_SHUFFLE({vec}_lanes, x, y, {lo}); "
                   f"r[{j + b}] = TG_SHUFFLE({vec}_lanes, x, y, {hi});")
    b *= 2
  return "\n".join(lines + ["}"]) + "\n"


def _lane_sum(name: str, vec: str, ct: str, lanes: int) -> str:
  """C of `name(v)`: the sum of v's lanes as a tree, log2(lanes) rounds each adding v turned by half the lanes left
  to add (the first lane ends with the sum)."""
  lines, b = [f"TG_INLINE {ct} {name}({vec} v) {{"], lanes // 2
  while b:
    lines.append(f"  v += TG_SHUFFLE({vec}_lanes, v, v, {', '.join(str((l + b) % lanes) for l in range(lanes))});")
    b //= 2
  return "\n".join(lines + ["  return v[0];", "}"]) + "\n"


# tg_tr_vf(r), tg_tr_vd(r): a square block of vectors transposed in registers (a packing copy's tiles), and
# tg_sum_vf(v), tg_sum_vd(v): a vector's lanes summed (a block of dot products' partial sums), for each target's
# register width; TG_SHUFFLE picks lanes of two vectors by constant indices
SHUFFLES = r"""
#if defined(__clang__) || __GNUC__ >= 12
#define TG_SHUFFLE(M, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define TG_SHUFFLE(M, a, b, ...) __builtin_shuffle(a, b, (M){__VA_ARGS__})
#endif
typedef int32_t tg_vf_lanes __attribute__((vector_size(TG_VREG)));
typedef int64_t tg_vd_lanes __attribute__((vector_size(TG_VREG)));
/* v with its last n lanes kept and the others zero: a sum's last n steps, short of a vector, read as the whole vector
   that ends with them (its other lanes a vector step summed already) */
TG_INLINE tg_vf tg_last_vf(tg_vf v, int64_t n) {
  tg_vf_lanes keep;
  for (int l = 0; l < TG_VREG / 4; l++) keep[l] = l >= TG_VREG / 4 - n ? -1 : 0;
  return (tg_vf)((tg_vf_lanes)v & keep);
}
TG_INLINE tg_vd tg_last_vd(tg_vd v, int64_t n) {
  tg_vd_lanes keep;
  for (int l = 0; l < TG_VREG / 8; l++) keep[l] = l >= TG_VREG / 8 - n ? -1 : 0;
  return (tg_vd)((tg_vd_lanes)v & keep);
}
""" + "".join(f"#{'if' if i == 0 else 'elif'} TG_VREG == {w}\n" + _transpose("tg_tr_vf", "tg_vf", w // 4) +
              _transpose("tg_tr_vd", "tg_vd", w // 8) + _lane_sum("tg_sum_vf", "tg_vf", "float", w // 4) +
              _lane_sum("tg_sum_vd", "tg_vd", "double", w // 8)
              for i, w in enumerate(sorted({b["TG_VREG"] for b in BLOCKS.values()}, reverse=True))) + "#endif\n"


BLOCK_PRELUDE = "\n" + "".join(
  ("#else\n" if macro is None else f"#{'if' if i == 0 else 'elif'} defined({macro})\n")
  + "".join(f"#define {k} {v}\n" for k, v in sizes.items())
  for i, (macro, sizes) in enumerate(BLOCKS.items())) + "#endif\n" + \
  "#define TG_WIDTH(n, T) ((n) < TG_VBYTES / (int64_t)sizeof(T) ? (n) : TG_VBYTES / (int64_t)sizeof(T))\n" + \
  "#define TG_CLAMP(x, lo, hi) ((x) < (lo) ? (lo) : (x) > (hi) ? (hi) : (x))\n" + \
  "#define TG_MIN2(a, b) ((a) < (b) ? (a) : (b))\n#define TG_MAX2(a, b) ((a) > (b) ? (a) : (b))\n" + \
  "#define TG_FLOOR_DIV(a, b) ((a) >= 0 ? (a) / (b) : -((-(a) + (b) - 1) / (b)))\n" + r"""
/* n bytes starting at a cache line (a whole number of lines): a vector load at malloc's 16-byte alignment reads two */
#define TG_LINES_ALLOC(n) aligned_alloc(64, ((size_t)(n) + 63) & ~(size_t)63)
/* a loop's unrolling and a prefetch, both left out of a quick build (TG_QUICK: the -O1 build that runs the first calls
   while the full one compiles), where they took a fifth of the compiler's time; but not a register block's rows,
   whose accumulators would otherwise live in memory (the quick build ran an MLP's steps 3x slower) */
#define TG_PRAGMA(x) _Pragma(#x)
#define TG_BLOCK_UNROLL(n) TG_PRAGMA(GCC unroll n)
#ifdef TG_QUICK
#define TG_UNROLL(n)
#define TG_PREFETCH(...) ((void)0)
#else
#define TG_UNROLL(n) TG_PRAGMA(GCC unroll n)
#define TG_PREFETCH(...) __builtin_prefetch(__VA_ARGS__)
#endif
/* n, which gcc cannot see as a constant: gcc 12 leaves a loop scalar when it loads at a constant stride that is a power
   of two of 128 bytes or more (a transposed read of a channels-last activation), and vectorises it at a stride it
   does not know */
#if defined(__GNUC__) && !defined(__clang__)
#define TG_OPAQUE(n) ({ int64_t tg_n_ = (n); __asm__("" : "+r"(tg_n_)); tg_n_; })
#else
#define TG_OPAQUE(n) (n)
#endif
/* the threads of a parallel region, this one's number, and how many the next region will have */
#ifdef _OPENMP
int omp_get_num_threads(void);
int omp_get_thread_num(void);
int omp_get_max_threads(void);
#define TG_THREADS() omp_get_num_threads()
#define TG_THREAD() omp_get_thread_num()
#define TG_CREW() omp_get_max_threads()
#else
#define TG_THREADS() 1
#define TG_THREAD() 0
#define TG_CREW() 1
#endif
/* a vector register of floats or doubles (and one read at any element), their multiply-add, and TG_PIN(v), which keeps
   v in a register: without it gcc reads a row operand again from memory in each of its multiply-adds */
typedef float tg_vf __attribute__((vector_size(TG_VREG)));
typedef float tg_vfu __attribute__((vector_size(TG_VREG), aligned(4)));
typedef double tg_vd __attribute__((vector_size(TG_VREG)));
typedef double tg_vdu __attribute__((vector_size(TG_VREG), aligned(8)));
TG_INLINE tg_vf tg_vfmaf(tg_vf a, tg_vf b, tg_vf c) {
  for (int l = 0; l < TG_VREG / 4; l++) c[l] = TG_FMAF(a[l], b[l], c[l]);
  return c;
}
TG_INLINE tg_vd tg_vfma(tg_vd a, tg_vd b, tg_vd c) {
  for (int l = 0; l < TG_VREG / 8; l++) c[l] = TG_FMA(a[l], b[l], c[l]);
  return c;
}
#if defined(__x86_64__) || defined(__i386__)
#define TG_PIN(v) __asm__("" : "+v"(v))
#elif defined(__aarch64__)
#define TG_PIN(v) __asm__("" : "+w"(v))
#else
#define TG_PIN(v) (void)0
#endif
/* the registers a multiply-add takes beside its operands: its product's, where no instruction fuses the two */
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define TG_MADD_TEMPS 0
#else
#define TG_MADD_TEMPS 1
#endif
""" + SHUFFLES


def interchanged(k: Kernel) -> bool:
  """Whether to run the reduction's loops outside the last outer loop, with one accumulator per element of that
  loop: worth it when some load is contiguous (or of stride 2: a strided convolution's input) along the last outer
  loop but strided along the reduction (the right operand of a matmul), so that the innermost loop vectorises; or
  when a transposed right operand is read from column panels (panels_read)."""
  r = k.reduce
  if r is None or not k.loops or k.epilogue or k.phases or not r.loops or not k.parallel: return False
  last, inner = k.loops[-1].var, r.loops[-1].var
  for u in r.value.toposort():
    if u.op is Ops.GATHER:
      idx = u.src[1].src[0]
      if coefficient(idx, last) in (1, 2) and coefficient(idx, inner) not in (0, 1, None): return True
  return panel_load(k) is not None


def dot_blocked(k: Kernel) -> bool:
  """Whether a sum is a block of dot products: every load contiguous (or constant) along the reduction's innermost
  loop, and some load moving with the last outer loop (a matmul by a transposed right operand). Those run as
  TG_DOT_ROWS x TG_DOT_COLS outputs at once, each with a vector of partial sums along the reduction."""
  r = k.reduce
  if r is None or r.op is not Ops.REDUCE_SUM or len(k.loops) < 2 or not r.loops or k.epilogue or k.phases or \
     not k.parallel:
    return False
  if r.acc.dtype not in (dtypes.float32, dtypes.float64) or r.loops[-1].extent < 16: return False
  last, rows, inner, moves = k.loops[-1].var, k.loops[-2].var, r.loops[-1].var, False
  reads = []   # for each load: whether it moves with the rows, and with the columns
  for u in r.value.toposort():
    if u.op is Ops.GATHER:
      idx = u.src[1].src[0]
      if coefficient(idx, inner) not in (0, 1): return False
      moves = moves or (coefficient(idx, inner) == 1 and coefficient(idx, last) not in (0, None))
      deps = set(idx.toposort())
      reads.append((rows in deps, last in deps))
  # a block pays only when a row's operand serves every column and a column's every row (a product of two operands);
  # a sum whose loads all move with both (a row reduction of elementwise work) gains nothing but code
  return moves and (True, False) in reads and (False, True) in reads


# each block size's least common multiple over the targets: an extent it divides is cut into whole blocks
# everywhere, and its kernel needs no code for a cut edge
EVERY_TARGET = {k: math.lcm(*(b[k] for b in BLOCKS.values())) for k in BLOCKS[None]}


def _whole(extent: int, block) -> bool: return extent % int(block) == 0


def _divides(extent: int, block) -> bool | str:
  """Whether blocks of `block` cut `extent` whole: a bool for a number, or the preprocessor's test for a size the
  target defines (TG_ROWS), so that each target compiles only the code its blocks need."""
  return _whole(extent, block) if str(block).isdigit() else f"{extent} % {block} == 0"


def _every(tests) -> bool | str:
  """_divides' tests all true: a bool where each is known, else the preprocessor's condition."""
  if any(t is False for t in tests): return False
  return " && ".join(f"({t})" for t in tests if t is not True) or True


def _accumulate(b: _Body, r, ct: str, cell: str) -> None:
  """One step of a register block's sum: the accumulator `cell` read as acc, then updated by the reduction's step."""
  b.line(f"{ct} acc = {cell};")
  b.names[r.acc] = "acc"
  b.line(f"{cell} = {_step(b, r)};")


DOT_COLS_DIVIDING = (3, 2)   # the block of dot products' columns where the targets' sizes would leave a cut edge
LONG_DOT_ROWS = 4            # the rows of a block of dot products long enough to be summed in blocks


def _dot_block(k: Kernel, sum_block: int = SUM_BLOCK) -> tuple[str, str]:
  """(rows, columns) of k's block of dot products: its opts' where given, else the target's (TG_DOT_ROWS by
  TG_DOT_COLS), but whole blocks of 3 or 2 columns where the target's would leave a cut edge, and LONG_DOT_ROWS rows
  for a sum long enough to be summed in blocks."""
  opts, cols = dict(k.opts), k.loops[-1]
  if "cols" not in opts and not _whole(cols.extent, EVERY_TARGET["TG_DOT_COLS"]):
    # whole blocks of a size that divides the columns rather than cut ones (a filter gradient's 27 taps: 3)
    if (c := next((c for c in DOT_COLS_DIVIDING if _whole(cols.extent, c)), None)) is not None: opts["cols"] = c
  if "rows" not in opts and sum_plan(k.reduce, DOT_LANES * sum_block) is not None and vector_factors(k) is None:
    opts["rows"] = LONG_DOT_ROWS   # a long sum keeps each point's sum and error too: fewer rows keep them in registers
  nc = str(opts.get("cols", "TG_DOT_COLS"))
  return str(opts.get("rows", "TG_DOT3_ROWS" if nc == "3" else "TG_DOT_ROWS")), nc


def accumulators(k: Kernel, sizes: dict[str, int]) -> int:
  """The vectors of accumulators in k's register block on a target with these BLOCKS sizes (0: no block)."""
  got = block_sizes(k, sizes)
  if "cols" in got: return got["rows"] * got["cols"]
  return got["rows"] * -(-got["width"] * k.reduce.acc.dtype.itemsize // sizes["TG_VREG"]) if got else 0


def block_sizes(k: Kernel, sizes: dict[str, int]) -> dict[str, int]:
  """The sizes of k's register blocks (`rows` and `width` of a block along the row, `rows` and `cols` of a block of
  dot products) on a target with these BLOCKS sizes: its opts' where given, else the defaults'.

  >>> import tracegrad, tracegrad.numpy as tnp
  >>> from tracegrad.lower.schedule import schedule
  >>> k = schedule(tracegrad.make_graph(lambda x, y: x @ y)(tnp.ones((64, 32)), tnp.ones((32, 64)))).kernels[0]
  >>> block_sizes(k, BLOCKS["__AVX__"])
  {'rows': 6, 'width': 16}
  """
  def value(v) -> int: return int(sizes.get(v, v))
  if interchanged(k):
    last, dtype = k.loops[-1], k.reduce.acc.dtype
    lanes = sizes["TG_VBYTES"] // dtype.itemsize
    return {"rows": _rows_on(k, sizes),
            "width": dict(k.opts).get("width", lanes if last.extent >= widest_lanes(dtype) else min(last.extent, lanes))}
  if dot_blocked(k):
    rows, cols = _dot_block(k)
    return {"rows": value(rows), "cols": value(cols)}
  return {}


def _emit_dot_blocked(b: _Body, k: Kernel, pragmas: dict[int, str]):
  r, n = k.reduce, len(k.loops)
  rows, cols = k.loops[-2], k.loops[-1]
  ct, opts = CTYPE[r.acc.dtype], dict(k.opts)
  nr, nc = _dot_block(k, b.sum_block)
  if opts.get("chunk", 1) and (chunk := dot_chunk(b, k)) is not None:
    return _emit_dot_chunked(b, k, pragmas, chunk, nr, nc, ct)
  with ExitStack() as loops:
    for j, l in enumerate(k.loops[:-2]):
      b.names[l.var] = f"i{j}"
      loops.enter_context(b.block(_loop(f"i{j}", l.extent), _omp("parallel for", n) if j == 0 and pragmas else None))
    first = pragmas and n == 2
    heads = [f"for (int64_t ib = 0; ib < {rows.extent}; ib += {nr})", f"for (int64_t jb = 0; jb < {cols.extent}; jb += {nc})"]
    if columns_outside(k): heads.reverse()   # a filter gradient's windows: each thread reads its share once
    loops.enter_context(b.block(heads[0], _omp("parallel for", 2) if first else None))
    loops.enter_context(b.block(heads[1]))
    b.line(f"const int64_t rn = {rows.extent} - ib < {nr} ? {rows.extent} - ib : {nr};")
    b.line(f"const int64_t cn = {cols.extent} - jb < {nc} ? {cols.extent} - jb : {nc};")
    whole = _every([_divides(rows.extent, nr), _divides(cols.extent, nc)])
    _whole_or_cut(b, lambda r, c: _emit_dots(b, k, r, c, ct, (nr, nc)), whole, (nr, nc), ("rn", "cn"),
                  columns_left=f"({cols.extent} % {nc})")


# a block of dot products whose operands outgrow the L2 cache is summed in chunks of its reduction: each thread adds
# one chunk into every block it owns before the next chunk, so that the chunk of the operand its inner loop of blocks
# reads again (all of it, for each block of the outer loop) stays in L2, where unchunked it came from L3 or memory
# each time (the CNN's filter gradients, 9 MB of windows by 2 MB of output gradients)
DOT_CHUNK_BYTES = 384 << 10


DOT_L1_BYTES = 32 << 10   # a chunk of a block's rows read again for each tap (rows_first) stays within this


def rows_first(k: Kernel) -> bool:
  """Whether a block of dot products' tiles run with its blocks of rows outside its outer loops: where the rows'
  operand (the bigger one) reads none of those loops (a filter gradient's output gradients, the same for every tap
  and input channel), each thread then reads its blocks of it once a chunk, from the L1 cache for every tap, rather
  than all of it again from L2 for each tap."""
  r, (rows, cols) = k.reduce, k.loops[-2:]
  if len(k.loops) < 3 or columns_outside(k): return False
  outer = {l.var for l in k.loops[:-2] if l.extent > 1}
  row_reads = [deps for u in r.value.toposort() if u.op is Ops.GATHER
               and rows.var in (deps := set(u.src[1].src[0].toposort())) and cols.var not in deps]
  return bool(outer and row_reads) and not any(outer & deps for deps in row_reads)


def dot_tile_order(k: Kernel) -> list[Loop]:
  """The loops of a block of dot products' tiles, slowest first: its outer loops, then the blocks of rows and of
  columns (the columns' outside where columns_outside); the rows' first where rows_first."""
  *outer, rows, cols = k.loops
  if rows_first(k): return [rows, *outer, cols]
  return [*outer, *((cols, rows) if columns_outside(k) else (rows, cols))]


def reread_bytes(k: Kernel) -> int:
  """The bytes per step of a register-blocked sum that a thread reads again after reading others: of each operand,
  its values along the loops of blocks (outer loops first) inside the outermost loop it does not move with. The
  operand of a matmul's inner loop of blocks; a filter gradient's output gradients, read again for each tap."""
  r = k.reduce
  order = [l for l in dot_tile_order(k) if l.extent > 1]
  total = 0
  for u in r.value.toposort():
    if u.op is not Ops.GATHER: continue
    deps = set(u.src[1].src[0].toposort())
    still = next((j for j, l in enumerate(order) if l.var not in deps), len(order))
    if inside := [l.extent for l in order[still:] if l.var in deps]: total += math.prod(inside) * u.dtype.itemsize
  return total


def dot_chunk(b: _Body, k: Kernel) -> tuple[int, int] | None:
  """The chunks (a sum_plan) a block of dot products is summed in, or None where what its threads read again
  (reread_bytes) fits DOT_CHUNK_BYTES whole. With rows_first, a chunk of a block's rows fits DOT_L1_BYTES."""
  r = k.reduce
  step, steps = reread_bytes(k), math.prod(l.extent for l in r.loops)
  most = DOT_CHUNK_BYTES // max(step, 1)
  if rows_first(k):
    most = min(most, DOT_L1_BYTES // (max(t["TG_DOT_ROWS"] for t in BLOCKS.values()) * r.acc.dtype.itemsize))
  if most >= steps: return None
  plan = sum_plan(r, min(most, DOT_LANES * b.sum_block))
  if plan is None: return None
  j, c = plan
  if j == len(r.loops) - 1: c -= c % 16   # whole vectors but the last
  return (j, c) if c > 0 else None


CARRIED_BYTES = 64 << 10   # the most vectors of partial sums a block of dot products carries between its chunks


def carried_chunks(b: _Body, k: Kernel, chunk: tuple[int, int]) -> tuple[int, int]:
  """(chunks per block, chunks in all) of a block of dot products summed in `chunk`s: a block of the sum
  (DOT_LANES x sum_block steps, as unchunked) spans several short chunks, whose vectors of partial sums are carried
  from one to the next in memory and summed across their lanes once a block, not once a chunk (a filter gradient's
  chunk of one image: the lanes' sums took a fifth of its time). Only where the vectors of all its points fit in
  CARRIED_BYTES: more would be read back from beyond the L1 cache."""
  r, (j, c) = k.reduce, chunk
  steps = c * math.prod(l.extent for l in r.loops[j + 1:])
  total = math.prod(l.extent for l in r.loops[:j]) * -(-r.loops[j].extent // c)
  vectors = math.prod(l.extent for l in k.loops) * max(t["TG_VREG"] for t in BLOCKS.values())
  return (max(1, DOT_LANES * b.sum_block // steps) if vectors <= CARRIED_BYTES else 1), total


def _emit_dot_chunked(b: _Body, k: Kernel, pragmas: dict[int, str], chunk: tuple[int, int], nr: str, nc: str,
                      ct: str):
  """_emit_dot_blocked in chunks of the reduction (dot_chunk): each thread takes its share of the blocks (the share a
  static parallel loop would give it), keeps their sums and carried errors in memory, and adds each chunk into all
  of them in turn; then it stores them. Where a block of the sum spans several chunks (carried_chunks), each
  block's vectors of partial sums wait in memory between them."""
  r, (rows, cols) = k.reduce, k.loops[-2:]
  outer = k.loops[:-2]
  per, total = carried_chunks(b, k, chunk)
  nbr, nbc = f"(({rows.extent} + {nr} - 1) / {nr})", f"(({cols.extent} + {nc} - 1) / {nc})"
  tiles = " * ".join([*(str(l.extent) for l in outer), nbr, nbc])
  # each tile loop's index, number of tiles and step, the fastest first
  named = {rows.var: ("ib", nbr, nr), cols.var: ("jb", nbc, nc)}
  named |= {l.var: (f"i{j}", str(l.extent), "1") for j, l in enumerate(outer)}
  fastest_first = [named[l.var] for l in reversed(dot_tile_order(k))]

  cuts = [("rn", rows.extent, "ib", nr), ("cn", cols.extent, "jb", nc)]
  each_block = lambda: _each_tile(b, outer, fastest_first, cuts, nc, ct)

  with b.block("", "#pragma omp parallel" if pragmas else None):
    b.line("const int64_t nt = TG_THREADS(), id = TG_THREAD();")
    b.line(f"const int64_t lo = {tiles} * id / nt, hi = {tiles} * (id + 1) / nt;")
    b.line(f"{ct} (*part)[{nr}][{nc}] = calloc(2 * (hi - lo) + 1, sizeof(*part));")
    if per > 1:
      b.line(f"{_accs_type(k, ct)} (*carried)[{nr}][{nc}]{_accs_lanes(k, ct)} = "
             "TG_LINES_ALLOC((hi - lo + 1) * sizeof(*carried));")
      b.line("int64_t chunk_no = 0;")
    with ExitStack() as chunks:
      open_blocks(b, r, chunk, chunks)
      if per > 1:
        b.line(f"const int fresh = chunk_no % {per} == 0, flush = (chunk_no + 1) % {per} == 0 || "
               f"chunk_no + 1 == {total};")
      with each_block():
        whole = _every([_divides(rows.extent, nr), _divides(cols.extent, nc)])
        _whole_or_cut(b, lambda x, y: _emit_dots(b, k, x, y, ct, (nr, nc), chunk, per > 1), whole, (nr, nc),
                      ("rn", "cn"), columns_left=f"({cols.extent} % {nc})")
      if per > 1: b.line("chunk_no++;")
    with each_block(): _store_dots(b, k, "rn", "cn", True)
    b.line("free(part);")
    if per > 1: b.line("free(carried);")


def _each_tile(b: _Body, outer, fastest_first, cuts, width: str, ct: str, at: str | None = None) -> ExitStack:
  """The loop over a thread's share of a chunked kernel's register blocks (tile in [lo, hi)), naming each one's
  points: `fastest_first` gives each tile loop's index, count and step, the fastest first; `cuts` each cut size's
  name with its loop's extent, index and block size; its sums and carried errors point into the thread's `part`.
  With `at` ("start; condition"), the tiles from start while the condition holds, whose sums the caller points to."""
  stack = ExitStack()
  stack.enter_context(b.block(f"for (int64_t tile = {at or 'lo; tile < hi'}; tile++)"))
  b.line("int64_t rest = tile;")
  for name, count, size in fastest_first:
    b.line(f"const int64_t {name} = rest % {count}{'' if size == '1' else f' * {size}'};")
    b.line(f"rest /= {count};")
  for j, l in enumerate(outer): b.names[l.var] = f"i{j}"
  for name, extent, start, size in cuts:
    b.line(f"const int64_t {name} = {extent} - {start} < {size} ? {extent} - {start} : {size};")
  if at is None: b.line(f"{ct} (*sums)[{width}] = part[tile - lo], (*errs)[{width}] = part[hi - lo + tile - lo];")
  return stack


def _whole_or_cut(b: _Body, emit, whole: bool | str, sizes: tuple[str, str], cut: tuple[str, str],
                  rows_left: str | None = None, whole_columns: bool | str = False, repeat_rows: bool = False,
                  columns_left: str | None = None) -> None:
  """emit(rows, columns) of whole blocks: alone where the blocks divide the extents (`whole`: on every target, or
  where the preprocessor's condition holds), else when the block at hand is whole (its `cut` sizes equal `sizes`),
  with emit(*cut) for a block at the cut edge; with `rows_left` (the rows the last block of rows keeps, a constant),
  a block of whole columns in the last rows is emitted with that constant, so that it too runs unrolled, and with
  `columns_left` (the columns the last block of columns keeps, a constant), so is a block of whole rows in the last
  columns: its sums stay in registers, where variable bounds kept them in memory (128 x 784 @ 784 x 300 ran at 84
  GFLOPS, 194 with 300 % 64 columns a constant). Where the columns are cut whole (`whole_columns`: on every target, or
  where the preprocessor's condition holds), only the rows are cut, and no block of cut columns is emitted: code that
  never runs. With `repeat_rows` too, a quick build (TG_QUICK) runs every block whole, its rows past the last
  repeating it (emit(*sizes, rows)), so one block's code serves them all: each block's code costs compile time of its
  own (a GPT step's quick build spent a quarter of its time on the cut ones), while the full build's cut block runs
  6% quicker than a whole one's clamped rows (an MLP's weight gradients)."""
  if whole is True: return emit(*sizes)
  if whole:
    b.line(f"#if {whole}")
    with b.block(""): emit(*sizes)
  if isinstance(whole_columns, str):
    b.line(f"#elif {whole_columns}" if whole else f"#if {whole_columns}")
    _rows_cut(b, emit, sizes, cut, rows_left, repeat_rows)
    b.line("#else")
    _all_cut(b, emit, sizes, cut, rows_left, columns_left)
  else:
    if whole: b.line("#else")
    if whole_columns: _rows_cut(b, emit, sizes, cut, rows_left, repeat_rows)
    else: _all_cut(b, emit, sizes, cut, rows_left, columns_left)
  if whole or isinstance(whole_columns, str): b.line("#endif")


def _rows_cut(b: _Body, emit, sizes, cut, rows_left, repeat_rows: bool) -> None:
  """_whole_or_cut's blocks of whole columns, the last block of rows cut (or, in a quick build, repeating rows)."""
  if repeat_rows:
    b.line("#if defined(TG_QUICK)")
    with b.block(""): emit(*sizes, cut[0])
    b.line("#else")
  with b.block(f"if ({cut[0]} == {sizes[0]})"): emit(*sizes)
  with b.block("else"): emit(rows_left or cut[0], sizes[1])
  if repeat_rows: b.line("#endif")


def _all_cut(b: _Body, emit, sizes, cut, rows_left, columns_left) -> None:
  """_whole_or_cut's blocks where both rows and columns may be cut."""
  with b.block(f"if ({' && '.join(f'{c} == {n}' for c, n in zip(cut, sizes) if c != n)})"): emit(*sizes)
  if rows_left is not None and cut[1] != sizes[1]:
    with b.block(f"else if ({cut[1]} == {sizes[1]})"): emit(rows_left, sizes[1])
  if columns_left is not None and cut[0] != sizes[0]:
    with b.block(f"else if ({cut[0]} == {sizes[0]})"): emit(sizes[0], columns_left)
  with b.block("else"): emit(*cut)


def _whole_width_blocks(k: Kernel, nrows: str) -> bool | str:
  """Whether the target's register blocks of rows by width divide a kernel's last two loops (its one loop): a bool,
  or the preprocessor's condition."""
  rows = [] if len(k.loops) < 2 else [_divides(k.loops[-2].extent, nrows)]
  return _every([*rows, _whole_columns(k)])


REPEAT_MIN_ROWS = 32   # rows from which a last block cut short repeats its last row (at most 7 more of 32+) instead


def _repeats_rows(k: Kernel) -> bool:
  """Whether a register-blocked kernel's last block of rows, cut short, runs whole with its last row repeated."""
  return len(k.loops) >= 2 and k.loops[-2].extent >= REPEAT_MIN_ROWS


def _row_cuts(k: Kernel) -> dict[str, bool | str]:
  """_whole_or_cut's `whole_columns` and `repeat_rows` for a kernel in register blocks of rows by width."""
  return {"whole_columns": _whole_columns(k), "repeat_rows": _repeats_rows(k)}


def _whole_columns(k: Kernel) -> bool | str:
  """Whether the target's register blocks' width divides a kernel's last loop: a bool where it is known for every
  target (BLOCKS), else the preprocessor's condition."""
  opts, last, size = dict(k.opts), k.loops[-1], k.reduce.acc.dtype.itemsize
  if "width" in opts: return _whole(last.extent, opts["width"])
  widest = widest_lanes(k.reduce.acc.dtype)
  each = [last.extent % (t["TG_VBYTES"] // size) == 0 or last.extent < widest and last.extent <= t["TG_VBYTES"] // size
          for t in BLOCKS.values()]
  if all(each): return True
  lanes = f"TG_VBYTES / {size}"
  if last.extent >= widest: return _divides(last.extent, f"({lanes})")
  return f"{last.extent} <= {lanes} || {last.extent} % ({lanes}) == 0"   # TG_WIDTH: at most a vector


def widest_lanes(dtype: DType) -> int:
  """The elements of dtype in the widest target's register block row (BLOCKS' largest TG_VBYTES)."""
  return max(t["TG_VBYTES"] for t in BLOCKS.values()) // dtype.itemsize


def _vector_width(extent: int, dtype: DType) -> str:
  """A register block's width along a last loop of `extent`: the target's vector bytes, or the whole loop where it
  is narrower (ten logits take one block of ten columns, with constant bounds, not a cut block of 64)."""
  ct = CTYPE[dtype]
  return f"(TG_VBYTES / (int64_t)sizeof({ct}))" if extent >= widest_lanes(dtype) else f"TG_WIDTH({extent}, {ct})"


NARROW_ROWS_MAX = 8   # rows of a register block narrower than the target's TG_VBYTES, at most


def _narrow_rows(k: Kernel, t: dict[str, int]) -> int:
  """The rows of k's register blocks of a sum of products on target t (BLOCKS' sizes): TG_ROWS, or where the
  columns fill fewer vectors than TG_VBYTES, the most rows up to NARROW_ROWS_MAX that its registers hold and that
  divide k's rows (an attention's 64 x 32 products per head on AVX-512: 8 rows of 2 vectors, 160 -> 210 GFLOPS, where
  6 rows left a cut block of 4 and 12 accumulators); where none does, nor TG_ROWS, the most rows (a channels-last
  first layer's filter gradient, 27 taps and channels by 32 on AVX-512: 4 blocks of 8 rows, 194-225 -> 252-255
  GFLOPS alone, where 5 blocks of 6 shared out unevenly between two threads; the value gradient of attention over
  61 keys 266 -> 282)."""
  size, (rows, last) = k.reduce.acc.dtype.itemsize, k.loops[-2:]
  lanes = t["TG_VREG"] // size
  vectors = -(-min(dict(k.opts).get("width", last.extent), t["TG_VBYTES"] // size) // lanes)
  if vectors * lanes * size >= t["TG_VBYTES"]: return t["TG_ROWS"]
  most = min(NARROW_ROWS_MAX, (t["TG_REGS"] - vectors - 2) // vectors)
  fallback = t["TG_ROWS"] if rows.extent % t["TG_ROWS"] == 0 else max(most, t["TG_ROWS"])
  return next((n for n in range(most, t["TG_ROWS"], -1) if rows.extent % n == 0), fallback)


def _rows_on(k: Kernel, t: dict[str, int]) -> int:
  """The rows of k's register blocks along the row on target t (BLOCKS' sizes): its opts', else _narrow_rows for a
  sum of products (which shares each row's loads across the block); any other sum gains only code from more rows,
  and takes 1, as does a kernel of one output loop."""
  if len(k.loops) < 2: return 1
  if "rows" in (opts := dict(k.opts)): return int(opts["rows"])
  return _narrow_rows(k, t) if is_product(k.reduce.value) else 1


def _block_rows(k: Kernel) -> str:
  """_rows_on as C: a constant, TG_ROWS, or a constant expression on the target's TG_VBYTES."""
  got = {t["TG_VBYTES"]: _rows_on(k, t) for t in BLOCKS.values()}
  if all(got[t["TG_VBYTES"]] == t["TG_ROWS"] for t in BLOCKS.values()): return "TG_ROWS"
  if len(set(got.values())) == 1: return str(next(iter(got.values())))
  return "(" + "".join(f"TG_VBYTES == {v} ? {n} : " for v, n in got.items()) + "TG_ROWS)"


VECTOR = {dtypes.float32: ("tg_vf", "tg_vfu", "tg_vfmaf"), dtypes.float64: ("tg_vd", "tg_vdu", "tg_vfma")}


def _exactly_linear(index: UOp, var: UOp) -> bool:
  """Whether index steps by exactly one element along var (no clamp or division reads it)."""
  return _exactly_linear_by(index, var) == 1


def vector_factors(k: Kernel) -> tuple[UOp, UOp] | None:
  """The loads of a block of dot products' row and column operands, when its step multiplies them: both of the sum's
  dtype and contiguous along the reduction (their index exactly linear in it), so that each step reads them as whole
  vectors, a row's once for all the columns. None for any other step (a converted or computed operand runs lane by
  lane)."""
  r = k.reduce
  if r.value.op is not Ops.MUL or r.value.dtype is not r.acc.dtype or r.acc.dtype not in VECTOR: return None
  rows, cols, inner = k.loops[-2].var, k.loops[-1].var, r.loops[-1].var
  sides = {}
  for u in r.value.src:
    if u.op is not Ops.GATHER or u.src[0].dtype is not r.acc.dtype: return None
    idx = u.src[1].src[0]
    deps = set(idx.toposort())
    # exactly linear: coefficient() reads through clamps, and a clamped index is no run of consecutive elements
    if not _exactly_linear(idx, inner): return None
    if (rows in deps) == (cols in deps): return None
    sides[rows in deps] = u
  return (sides[True], sides[False]) if len(sides) == 2 else None


def _accs_type(k: Kernel, ct: str) -> str:
  """The C type of a block of dot products' partial sums at one point: a vector, or an array of lanes (_accs_lanes)."""
  return VECTOR[k.reduce.acc.dtype][0] if vector_factors(k) else ct


def _accs_lanes(k: Kernel, ct: str) -> str: return "" if vector_factors(k) else f"[TG_VREG / sizeof({ct})]"


def _emit_dots(b: _Body, k: Kernel, nr: str, nc: str, ct: str, size: tuple[str, str], chunk=None, carry=False):
  """One block of dot products: its sums, each a vector of partial sums along the reduction, then its stores. With
  `chunk` (a sum_plan whose loops the caller opened), one chunk of the sums only, added into the caller's `sums` and
  `errs`; with `carry`, into its `carried` partial sums, which are added into `sums` only at a `flush`."""
  r, n = k.reduce, len(k.loops)
  lanes, m = f"(TG_VREG / (int64_t)sizeof({ct}))", len(r.loops) - 1
  ext, plan = r.loops[-1].extent, chunk or sum_plan(r, DOT_LANES * b.sum_block)   # per lane, a block's worth of steps
  factors = vector_factors(k)
  points = f"for (int64_t q = 0; q < {nr}; q++) for (int64_t c = 0; c < {nc}; c++) "
  if not factors: points += f"for (int64_t l = 0; l < {lanes}; l++) "
  cell = "[q][c]" if factors else "[q][c][l]"
  b.line(f"{_accs_type(k, ct)} accs[{size[0]}][{size[1]}]{_accs_lanes(k, ct)};")
  zero = points + f"accs{cell} = {f'({VECTOR[r.acc.dtype][0]}){{0}}' if factors else '0'};"
  if factors: vt, vtu, fma = VECTOR[r.acc.dtype]
  if carry: b.line(f"if (fresh) {zero} else {points}accs{cell} = carried[tile - lo]{cell};")
  elif chunk: b.line(zero)
  elif plan: _declare_sums(b, nr, nc, ct, size, "c")
  else: b.line(zero)
  for j, l in enumerate(r.loops): b.names[l.var] = f"r{j}"
  unroll = "TG_BLOCK_UNROLL(16)" if nr == size[0] else None

  def row():
    b.line(f"const int64_t i{n - 2} = ib + q;")
    b.names[k.loops[-2].var] = f"i{n - 2}"

  def col():
    b.line(f"const int64_t i{n - 1} = jb + c;")
    b.names[k.loops[-1].var] = f"i{n - 1}"

  def point(): row(), col()

  def vector_step(last: str | None = None):
    """One step of every lane: the columns' vectors loaded, then each row's, multiplied into its accumulators; with
    `last`, only the last `last` lanes of each (the others zero)."""
    def at(load):
      got = f"*(const {vtu} *)&{b.bufs[load.src[0]]}[{b.emit([load.src[1].src[0]])[0]}]"
      return got if last is None else f"tg_last_{vt[3:]}({got}, {last})"
    b.line(f"const int64_t r{m} = rv;")
    if last is None:
      _prefetch_next_runs(b, k, [(k.loops[-2].var, "ib", nr), (k.loops[-1].var, "jb", nc)], plan, "rv", lanes,
                          DOT_RUN_BYTES)
    b.line(f"{vt} bv[{size[1]}];")
    with b.block(f"for (int64_t c = 0; c < {nc}; c++)", unroll):
      col()
      # kept in registers where the accumulators leave room for them and a row's vector: tuned for a Zen 3, the
      # compiler otherwise reloads them at every multiply-add once the registers are all but full (4 x 3 on AVX2: 16
      # loads a step for 12 multiply-adds; pinned, a first layer's filter gradient ran 1.7x faster, as it does tuned
      # for a generic x86-64). Pinned as a copy: the array itself pinned is stored back at every step
      load = at(factors[1])
      b.line(f"#if ({size[0]}) * ({size[1]}) + ({size[1]}) + 1 + TG_MADD_TEMPS <= TG_REGS")
      b.line(f"{{ {vt} v = {load}; TG_PIN(v); bv[c] = v; }}")
      b.line("#else")
      b.line(f"bv[c] = {load};")
      b.line("#endif")
    with b.block(f"for (int64_t q = 0; q < {nr}; q++)", unroll):
      row()
      b.line(f"{vt} av = {at(factors[0])};")
      b.line("TG_PIN(av);")
      with b.block(f"for (int64_t c = 0; c < {nc}; c++)", unroll): b.line(f"accs[q][c] = {fma}(av, bv[c], accs[q][c]);")

  lo, hi = ("rb", "re") if plan and plan[0] == m else ("0", str(ext))
  with ExitStack() as blocks:
    if plan and not chunk:
      open_blocks(b, r, plan, blocks)
      b.line(zero)
    with ExitStack() as rloops:
      for j in range(plan[0] if plan else 0, m):
        rloops.enter_context(b.block(block_loop(r, plan, j) if plan else _loop(f"r{j}", r.loops[j].extent)))
      for main in (True, False):
        head = (f"for (int64_t rv = {lo}; rv + {lanes} <= {hi}; rv += {lanes})" if main else
                f"for (int64_t r{m} = {hi} - {hi if lo == '0' else f'({hi} - {lo})'} % {lanes}; r{m} < {hi}; r{m}++)")
        n_unroll = dict(k.opts).get("unroll", short_dots_unroll(k, plan))
        if main and factors:
          with b.block(head, f"TG_UNROLL({n_unroll})" if n_unroll else None): vector_step()
          continue
        # the steps past the last whole vector of vector sums add up apart and join lane 0 by a vector add: a lane
        # of a vector variable written alone keeps every accumulator in memory (einsum "bip,bjp->ij" over 3 x 700
        # steps ran at 4 GFLOPS, over 3 x 704 at 209)
        tail = not main and factors
        with ExitStack() as steps:
          if tail:
            # a constant test where the extent is: a sum of whole vectors skips the join's adds. The steps past the
            # last whole vector are one more vector step, of the vector that ends with them, its earlier lanes zero:
            # lane by lane, they took 1000 steps of 64 x 130 dot products from 135 GFLOPS (AVX2: whole vectors) to 89
            # on AVX-512 (62 vectors and 8 steps)
            left = f"(({hi} - {lo}) % {lanes})"
            with b.block(f"if ({left} && {hi} - {lo} >= {lanes})"):
              b.line(f"const int64_t rv = {hi} - {lanes};")
              vector_step(left)
            steps.enter_context(b.block(f"else if ({left})"))
            b.line(f"{ct} tail[{size[0]}][{size[1]}] = {{{{0}}}};")
          with b.block(head, f"TG_UNROLL({n_unroll})" if n_unroll and main else None), \
               b.block(f"for (int64_t q = 0; q < {nr}; q++)", unroll), \
               b.block(f"for (int64_t c = 0; c < {nc}; c++)", unroll):
            with ExitStack() as simd:
              if main:
                simd.enter_context(b.block(f"for (int64_t l = 0; l < {lanes}; l++)", "#pragma omp simd"))
                b.line(f"const int64_t r{m} = rv + l;")
              point()
              _accumulate(b, r, ct, "tail[q][c]" if tail else f"accs[q][c][{'l' if main else '0'}]")
          if tail: b.line(f"{points}accs{cell} += ({vt}){{tail[q][c]}};")
    if carry: b.line(f"if (!flush) {points}carried[tile - lo]{cell} = accs{cell};")
    if plan:
      with b.block("else") if carry else ExitStack(), \
           b.block(f"for (int64_t q = 0; q < {nr}; q++)"), b.block(f"for (int64_t c = 0; c < {nc}; c++)"):
        _sum_lanes(b, ct, "part", "accs[q][c]", bool(factors))
        b.line(add_exactly("sums[q][c]", "errs[q][c]", "part", ct))
  if not chunk: _store_dots(b, k, nr, nc, bool(plan))


# a block of dot products' loop of vector steps at most this many of the widest target's vectors long unrolls whole by
# default: a first layer's filter gradient, rows of 32 positions, 236 -> 256 GFLOPS alone on AVX-512 and 8% faster in
# the CNN step (AVX2 code unchanged); rows of 64 (4 vectors) lost 5-10% unrolled
SHORT_DOT_VECTORS = 2


def short_dots_unroll(k: Kernel, plan) -> int | None:
  """How far a block of dot products' loop of vector steps unrolls without an `unroll` action: whole where it runs
  2 to SHORT_DOT_VECTORS of the widest target's vectors, else as far as the compiler chooses (None)."""
  r = k.reduce
  steps = plan[1] if plan and plan[0] == len(r.loops) - 1 else r.loops[-1].extent
  trips = steps // (max(t["TG_VREG"] for t in BLOCKS.values()) // r.acc.dtype.itemsize)
  return trips if 1 < trips <= SHORT_DOT_VECTORS else None


def _sum_lanes(b: _Body, ct: str, name: str, cell: str, vector: bool) -> None:
  """`name` declared as the sum of the lanes of a block of dot products' partial sums at `cell`: a vector's as a
  tree (tg_sum_vf), an array's lane by lane."""
  if vector: return b.line(f"{ct} {name} = tg_sum_{'vf' if ct == 'float' else 'vd'}({cell});")
  b.line(f"{ct} {name} = 0;")
  b.line(f"for (int64_t l = 0; l < (TG_VREG / (int64_t)sizeof({ct})); l++) {name} += {cell}[l];")


def _store_dots(b: _Body, k: Kernel, nr: str, nc: str, plan: bool):
  """The stores of a block of dot products: each point's sum (with its carried error, for a `plan`ned sum)."""
  r, n, ct = k.reduce, len(k.loops), CTYPE[k.reduce.acc.dtype]
  with b.block(f"for (int64_t q = 0; q < {nr}; q++)"), b.block(f"for (int64_t c = 0; c < {nc}; c++)"):
    b.line(f"const int64_t i{n - 2} = ib + q;")
    b.line(f"const int64_t i{n - 1} = jb + c;")
    b.names[k.loops[-2].var], b.names[k.loops[-1].var] = f"i{n - 2}", f"i{n - 1}"
    if plan:
      b.line(f"{ct} acc = sums[q][c];")
      b.line(add_error("acc", "errs[q][c]"))
    else:
      _sum_lanes(b, ct, "acc", "accs[q][c]", vector_factors(k) is not None)
    b.names[r.acc] = "acc"
    for s in k.stores: _emit_store(b, s)


def _declare_sums(b: _Body, nr: str, nc: str, ct: str, size: tuple[str, str], col: str):
  """The blocked sums of a register block's points, and their carried errors, zeroed."""
  b.line(f"{ct} sums[{size[0]}][{size[1]}], errs[{size[0]}][{size[1]}];")
  b.line(f"for (int64_t q = 0; q < {nr}; q++) for (int64_t {col} = 0; {col} < {nc}; {col}++) "
         f"sums[q][{col}] = errs[q][{col}] = 0;")


def _emit_interchanged(b: _Body, k: Kernel, pragmas: dict[int, str]):
  """Register blocks of TG_ROWS points of the second-last outer loop by TG_VBYTES of the last: a block of
  accumulators, the reduction's loops around the rows (unrolled) and the row's points (vectorised), then the stores.
  Whole blocks run with constant bounds, so the accumulators stay in registers; the edges run the same code with the
  bounds cut."""
  r, n = k.reduce, len(k.loops)
  last, rows = k.loops[-1], (k.loops[-2] if n >= 2 else None)
  ct, opts = CTYPE[r.acc.dtype], dict(k.opts)
  width = str(opts.get("width", _vector_width(last.extent, r.acc.dtype)))
  nrows = _block_rows(k)
  outer = k.loops[:-2] if rows else k.loops[:-1]
  chunk = block_chunk(b, k) if rows and opts.get("chunk", 1) else None
  load = panel_load(k) if opts.get("panel", 1) else None
  if load is not None:
    long = chunk is not None and math.prod(l.extent for l in r.loops) > PANEL_MAX_STEPS
    _emit_paneled(b, k, pragmas, load, width, nrows, ct, chunk if long else None)
    return
  if chunk is not None:
    _emit_interchanged_chunked(b, k, pragmas, chunk, nrows, width, ct)
    return
  plan = sum_plan(r, b.sum_block if is_product(r.value) else POINT_BLOCK)
  if pragmas and split_parts(k, plan, False) > 1:
    _emit_split(b, k, plan, nrows, width, ct, False)
    return
  with ExitStack() as loops:
    for j, l in enumerate(outer):
      b.names[l.var] = f"i{j}"
      loops.enter_context(b.block(_loop(f"i{j}", l.extent), _omp("parallel for", n) if j == 0 and pragmas else None))
    first = pragmas and not outer
    heads = [f"for (int64_t t = 0; t < {last.extent}; t += {width})"]
    if rows:
      heads.insert(0, f"for (int64_t ib = 0; ib < {rows.extent}; ib += {nrows})")
      if opts.get("order", columns_outside(k)): heads.reverse()
    for j, head in enumerate(heads):
      loops.enter_context(b.block(head, _omp("parallel for", len(heads)) if first and j == 0 else None))
    if rows: b.line(f"const int64_t rn = {rows.extent} - ib < {nrows} ? {rows.extent} - ib : {nrows};")
    b.line(f"const int64_t tn = {last.extent} - t < {width} ? {last.extent} - t : {width};")
    if rows: _prefetch_next_block(b, k, nrows, width, rows_inner=heads[-1].startswith("for (int64_t ib"))
    _whole_or_cut(b, lambda nr, nc, cut=None: _emit_block(b, k, nr, nc, ct, (nrows, width), rows_cut=cut),
                  _whole_width_blocks(k, nrows), (nrows if rows else "1", width), ("rn" if rows else "1", "tn"),
                  **_row_cuts(k), columns_left=f"({last.extent} % {width})")


# a sum longer than this, whose column panel (a vector wide: 256 KB on AVX2) outgrows the L2 cache, fills its panels
# a chunk of the sum at a time (block_chunk's chunks) where it may: a channels-last filter gradient over 8192
# positions ran in 4.0 ms with whole panels, 2.9 reading its columns in place in chunks, and at 71% of the matmul's
# speed inside the CNN step with chunked panels against 55% in place (a channels-first one: 68% against 58%)
PANEL_MAX_STEPS = 4096
BLOCK_CHUNK_BYTES = 1 << 20   # what a register block's columns read, beyond which it is read in chunks (an L2 cache)


def block_chunk(b: _Body, k: Kernel) -> tuple[int, int] | None:
  """The chunks (the blocks of its sum, a sum_plan) in which a register-blocked sum of products runs each of a
  thread's blocks of rows in turn, where what its columns read (the same for every block of rows) outgrows
  BLOCK_CHUNK_BYTES: each chunk of it then comes from memory once for all of the thread's blocks of rows and from
  the L2 cache for the others, where whole it came again for each (a first layer's channels-last filter gradient,
  its 27 taps and channels by 32 output channels: 4 MB of output gradients for each block of 8 rows, 1.28 -> 0.60
  ms). None for any other: one that fits the cache runs faster unchunked."""
  r, (rows, last) = k.reduce, k.loops[-2:]
  if not is_product(r.value) or rows.extent <= max(t["TG_ROWS"] for t in BLOCKS.values()): return None
  if (plan := sum_plan(r, b.sum_block)) is None: return None
  steps = math.prod(l.extent for l in r.loops)
  columns = sum(steps * last.extent * u.dtype.itemsize for u in r.value.toposort() if u.op is Ops.GATHER
                and last.var in (deps := set(u.src[1].src[0].toposort())) and rows.var not in deps)
  return plan if columns > BLOCK_CHUNK_BYTES else None


def _block_tiles(k: Kernel, nrows: str, width: str) -> tuple[str, list, list]:
  """A register-blocked sum's blocks as tiles a thread's share is counted in (_each_tile): (how many, as C; each
  tile loop's index, count and step, the blocks of rows the fastest, then of columns, then the outer loops; each cut
  size's name, loop extent, index and block size)."""
  rows, last = (k.loops[-2] if len(k.loops) >= 2 else None), k.loops[-1]
  outer = k.loops[:-2] if rows else k.loops[:-1]
  fastest = [("t", f"(({last.extent} + {width} - 1) / {width})", width)]
  cuts = [("tn", last.extent, "t", width)]
  if rows:
    fastest.insert(0, ("ib", f"(({rows.extent} + {nrows} - 1) / {nrows})", nrows))
    cuts.insert(0, ("rn", rows.extent, "ib", nrows))
  tiles = " * ".join([*(str(l.extent) for l in outer), *(count for _, count, _ in fastest)])
  return tiles, fastest + [(f"i{j}", str(l.extent), "1") for j, l in reversed(list(enumerate(outer)))], cuts


def _chunk_blocks(b: _Body, k: Kernel, chunk: tuple[int, int], nrows: str, width: str, ct: str) -> None:
  """One chunk of a register block's sum (a tile's, its points named by _each_tile), added into its sums and
  carried errors; whole blocks and cut ones."""
  rows = len(k.loops) >= 2
  _whole_or_cut(b, lambda nr, nc, cut=None: _emit_block(b, k, nr, nc, ct, (nrows, width), chunk, cut),
                _whole_width_blocks(k, nrows), (nrows if rows else "1", width), ("rn" if rows else "1", "tn"),
                **_row_cuts(k), columns_left=f"({k.loops[-1].extent} % {width})")


def _emit_interchanged_chunked(b: _Body, k: Kernel, pragmas: dict[int, str], chunk: tuple[int, int], nrows: str,
                               width: str, ct: str):
  """_emit_interchanged in chunks of the reduction (block_chunk): each thread takes its share of the blocks (its
  blocks of rows the fastest, so that its blocks share their columns), keeps their sums and carried errors in
  memory, and adds each chunk into all of them in turn; then it stores them."""
  if pragmas and split_parts(k, chunk, True) > 1: return _emit_split(b, k, chunk, nrows, width, ct, True)
  tiles, fastest_first, cuts = _block_tiles(k, nrows, width)
  each_block = lambda: _each_tile(b, k.loops[:-2], fastest_first, cuts, width, ct)
  with b.block("", "#pragma omp parallel" if pragmas else None):
    b.line("const int64_t nt = TG_THREADS(), id = TG_THREAD();")
    b.line(f"const int64_t lo = {tiles} * id / nt, hi = {tiles} * (id + 1) / nt;")
    b.line(f"{ct} (*part)[{nrows}][{width}] = calloc(2 * (hi - lo) + 1, sizeof(*part));")
    with ExitStack() as chunks:
      open_blocks(b, k.reduce, chunk, chunks)
      with each_block(): _chunk_blocks(b, k, chunk, nrows, width, ct)
    with each_block(): _store_block(b, k, "rn", "tn", ct, True)
    b.line("free(part);")


# a register-blocked sum shares its work out to the threads in SPLIT_PARTS parts of its reduction, each adding its
# share of the sum into every block, where its blocks cannot share it out (a channels-last bias gradient's 32 sums
# over 32768 positions, one block: one thread), or where it runs in chunks (block_chunk), whose operand along the
# columns each thread otherwise read whole (a channels-last first layer's filter gradient, 4 MB of output gradients
# read by both threads: 400-540 -> 240-350 us in the CNN step). A fixed number of parts: the same bits on any
# number of threads
SPLIT_PARTS = 2
SPLIT_MIN_STEPS = 1 << 16   # a single block's steps (each point's summed values) at least, for its parts to pay


def split_parts(k: Kernel, plan: tuple[int, int] | None, chunked: bool) -> int:
  """The parts of its reduction a register-blocked sum along the row (_emit_interchanged) of a parallel kernel
  shares out (SPLIT_PARTS), where it is summed in chunks of its outermost loop (`plan`), at least one a part: in
  `chunked` ones (block_chunk's), or a single block on every target of SPLIT_MIN_STEPS or more; else 1."""
  r = k.reduce
  if plan is None or plan[0] != 0 or -(-r.loops[0].extent // plan[1]) < SPLIT_PARTS: return 1
  if chunked: return SPLIT_PARTS
  blocks = math.prod(l.extent for l in k.loops[:-1]) * -(-k.loops[-1].extent // widest_lanes(r.acc.dtype))
  steps = math.prod(l.extent for l in (*k.loops, *r.loops))
  return SPLIT_PARTS if blocks == 1 and steps >= SPLIT_MIN_STEPS else 1


def _emit_split(b: _Body, k: Kernel, chunk: tuple[int, int], nrows: str, width: str, ct: str, chunked: bool):
  """A register-blocked sum in split_parts' parts of its reduction (cut at `chunk`'s steps): the threads share out
  (part, block) pairs, each adding its part's chunks into the block's sums and carried errors, kept in memory that
  all threads see; then, past a barrier, each thread adds up the parts of its share of the blocks in order and
  stores them."""
  r, parts, (_, c) = k.reduce, split_parts(k, chunk, chunked), chunk
  rows = len(k.loops) >= 2
  outer = k.loops[:-2] if rows else k.loops[:-1]
  chunks = -(-r.loops[0].extent // c)
  tiles, fastest_first, cuts = _block_tiles(k, nrows, width)
  each = lambda at: _each_tile(b, outer, fastest_first, cuts, width, ct, at)
  b.line(f"{ct} (*shared)[{nrows if rows else 1}][{width}] = calloc(2 * {parts} * ({tiles}) + 1, sizeof(*shared));")
  with b.block("", "#pragma omp parallel"):
    b.line("const int64_t nt = TG_THREADS(), id = TG_THREAD();")
    b.line(f"const int64_t tiles = {tiles}, units = {parts} * tiles, lo = units * id / nt, hi = units * (id + 1) / nt;")
    with b.block(f"for (int64_t part = lo / tiles; part < TG_MIN2((hi + tiles - 1) / tiles, {parts}); part++)"):
      for j, l in enumerate(r.loops): b.names[l.var] = f"r{j}"
      b.line(f"const int64_t first = {chunks} * part / {parts} * {c}, end = {chunks} * (part + 1) / {parts} * {c};")
      with b.block(f"for (int64_t rb = first; rb < end; rb += {c})"):
        b.line(f"const int64_t re = rb + {c} < {r.loops[0].extent} ? rb + {c} : {r.loops[0].extent};")
        with each("TG_MAX2(lo, part * tiles) - part * tiles; tile < TG_MIN2(hi, (part + 1) * tiles) - part * tiles"):
          b.line(f"{ct} (*sums)[{width}] = shared[part * tiles + tile], "
                 f"(*errs)[{width}] = shared[({parts} + part) * tiles + tile];")
          _chunk_blocks(b, k, chunk, nrows, width, ct)
    b.line("#pragma omp barrier")
    with each("tiles * id / nt; tile < tiles * (id + 1) / nt"):
      b.line(f"{ct} (*sums)[{width}] = shared[tile], (*errs)[{width}] = shared[{parts} * tiles + tile];")
      with b.block(f"for (int64_t part = 1; part < {parts}; part++)"), \
           b.block(f"for (int64_t q = 0; q < {'rn' if rows else 1}; q++)"), b.block("for (int64_t j = 0; j < tn; j++)"):
        b.line(f"const {ct} more = shared[part * tiles + tile][q][j] + shared[({parts} + part) * tiles + tile][q][j];")
        b.line(add_exactly("sums[q][j]", "errs[q][j]", "more", ct))
      _store_block(b, k, "rn" if rows else "1", "tn", ct, True)
  b.line("free(shared);")


def columns_outside(k: Kernel) -> int:
  """A register-blocked kernel's default order: 1 when its blocks of columns are the outer (parallel) loop, so that
  a column panel of the right operand serves every block of rows; 0 when its blocks of rows are, where the operand
  read along the rows is the bigger one (a weight gradient's activations), so that each thread reads its share of
  that operand once rather than all of it. Blocks of dot products take the same order (a filter gradient's windows
  are its bigger, column operand: the CNN's 3x3 filter gradients ran 10-15% faster inside the step)."""
  r = k.reduce
  if r is None or len(k.loops) < 2: return 1
  rows, last = k.loops[-2].var, k.loops[-1].var
  size = {True: 0, False: 0}
  for u in r.value.toposort():
    if u.op is not Ops.GATHER: continue
    deps = set(u.src[1].src[0].toposort())
    if (rows in deps) != (last in deps): size[rows in deps] = max(size[rows in deps], u.src[0].shape[0])
  return int(size[True] <= size[False])


PANEL_MIN_ROWS = 64          # a right operand is copied into column panels only for this many rows or more, which
PANEL_MIN_BYTES = 1 << 20    # reuse them, and only when it is this big (a smaller one stays in the L2 cache as it is)
# a thread copies as many column panels at once as fit this many bytes (up to PANEL_GROUP), then runs each block of
# rows across all of them: the rows' loads, which come from the L3 cache, then serve several panels
PANEL_GROUP_BYTES, PANEL_GROUP = 1 << 18, 8


def panel_load(k: Kernel) -> UOp | None:
  """The load of a matmul-like kernel's right operand (the same for every row, in panels_read's layouts) to copy
  into contiguous column panels, or None."""
  return None if k.reduce is None else panels_read(k.loops, k.reduce)


def panels_read(loops, r: Reduce) -> UOp | None:
  """The load of a sum of products over two output loops that its register blocks read from column panels: one
  strided along the reduction and contiguous along the columns, or contiguous along the reduction and strided along
  the columns (x @ w.T), the same for every row. Read in place, each step of the reduction reads a new row of it,
  pages apart: past the cache's reach and the prefetchers' (a narrow vector's register block had too few
  multiply-adds a step to hide that). A transposed one is filled a square of vectors at a time where
  transposed_panels, else element by element (a sum of 1000 steps, not whole vectors: 128 x 512 ran as dot blocks
  at 108 GFLOPS, from panels at 251)."""
  if len(loops) != 2 or loops[0].extent < PANEL_MIN_ROWS or not r.acc.dtype.is_float: return None
  if math.prod(l.extent for l in r.loops) * loops[1].extent * r.acc.dtype.itemsize < PANEL_MIN_BYTES: return None
  rows, last, inner = loops[0].var, loops[1].var, r.loops[-1].var
  def fills(idx: UOp) -> bool:   # contiguous one way and strided the other (transposed_panels' loads among them)
    along, across = coefficient(idx, last), coefficient(idx, inner)
    return along == 1 and across not in (0, 1, None) or across == 1 and along not in (0, 1, None)
  found = [u for u in r.value.toposort() if u.op is Ops.GATHER and rows not in u.src[1].src[0].toposort() and
           fills(u.src[1].src[0])]
  return found[0] if len(found) == 1 else None


def transposed_panels(load: UOp, loops, r: Reduce) -> bool:
  """Whether `load` is read contiguously along the reduction's innermost loop, a whole number of every target's
  vectors long, and at a stride along the last output loop (x @ w.T; a filter gradient's windows, summed over the
  batch and the positions): its panels are filled a square of vectors at a time, transposed in registers, where a
  packing copy would first write the transposed operand whole for the panels to be copied from."""
  if load.dtype not in VECTOR or load.src[0].dtype is not load.dtype: return False
  lanes = max(t["TG_VREG"] for t in BLOCKS.values()) // load.dtype.itemsize
  idx, inner = load.src[1].src[0], r.loops[-1]
  return inner.extent % lanes == 0 and _exactly_linear(idx, inner.var) and \
      _exactly_linear_by(idx, loops[-1].var) not in (0, 1)


def _emit_paneled(b: _Body, k: Kernel, pragmas: dict[int, str], load: UOp, width: str, nrows: str, ct: str,
                  chunk: tuple[int, int] | None = None):
  """_emit_interchanged with each column panel of the right operand (its `width` columns, every step of the
  reduction) first copied by the thread that takes it into a contiguous array, then read from there by every row
  block in turn. The threads share out the blocks, a panel's blocks of rows in turn, and a panel two threads share
  is filled by both: panels shared out whole left a thread idle (5 panels of 64 columns, 288 on AVX-512, gave one
  of two threads 3; one panel, one thread); where the rows outnumber the columns and every panel fits one lap, the
  threads share out blocks of rows instead, each filling every panel. A thread fills as many of its panels at once
  as fit PANEL_GROUP_BYTES, and runs each row block across them. With `chunk` (a sum_plan of a sum whose panels
  outgrow the L2 cache), a panel holds one chunk of the sum: chunk by chunk, a thread fills its panels, as many at
  once as fit, and runs its row blocks across them, adding into sums and carried errors kept in memory (the other
  operand's chunk stays in the L2 cache for all the panels; a 3x3 filter gradient over 8192 positions ran 15-25%
  faster than with whole panels, which came from the L3 cache for each row block after a first pass copying them
  from memory)."""
  r, (rows, last) = k.reduce, k.loops
  transposed = transposed_panels(load, k.loops, r)
  value = load if transposed else _of_load(r.value, load)   # what the panels hold
  i64, mem = dtypes.int64, MEMTYPE[value.dtype]
  held = r.loops[chunk[0]:] if chunk else r.loops   # the loops whose steps a panel holds
  steps = math.prod(l.extent for l in held) if not chunk else chunk[1] * math.prod(l.extent for l in held[1:])
  panel, t, w, rb = UOp.param((steps,), value.dtype), UOp.param((), i64), UOp.param((), i64), UOp.param((), i64)
  b.bufs[panel], b.names[t], b.names[w], b.names[rb], b.panel = "panel", "t", width, "rb", panel
  flat = held[0].var - rb if chunk else held[0].var
  for l in held[1:]: flat = flat * UOp.const(i64, l.extent) + l.var
  at = flat * w + (last.var - t)
  paneled = dataclasses.replace(k, reduce=dataclasses.replace(r, value=substitute([r.value], {
    value: panel.gather(at.reshape((1,)))})[0]))
  span = f"({steps} * {width} * (int64_t)sizeof({mem}))"   # one panel's bytes

  @contextmanager
  def each_panel():
    """The loop over the lap's panels, with each one's first column t, width tn and copy."""
    with b.block("for (int64_t p = g0; p < g1; p++)"):
      b.line(f"const int64_t t = p * {width};")
      b.line(f"const int64_t tn = {last.extent} - t < {width} ? {last.extent} - t : {width};")
      b.line(f"{mem} *panel = panels + (p - g0) * {steps} * {width};")
      yield

  def fill(stack: ExitStack):
    """The copy of the lap's panels' steps (the chunk's): a square of vectors at a time where transposed, else a
    step of every panel in turn (one stretch of the operand's row, where a panel at a time read a line of each row
    per pass), a whole panel's width a constant (the 1024^2 matmul as AVX2 code 96 -> 98 GFLOPS on one core)."""
    if transposed:
      stack.enter_context(each_panel())
      _fill_transposed(b, load, last.var, r.loops, width, stack, chunk)
    for j, l in enumerate(r.loops):
      b.names[l.var] = f"r{j}"
      if not chunk or j >= chunk[0]:
        stack.enter_context(b.block(block_loop(r, chunk, j) if chunk else _loop(f"r{j}", l.extent)))
    if not transposed: stack.enter_context(each_panel())
    _prefetch(b, k, "1", width, (load,))

    def copy(n: str):
      with b.block(f"for (int64_t j = 0; j < {n}; j++)", "#pragma omp simd"):
        b.line("const int64_t i1 = t + j;")
        b.names[last.var] = "i1"
        idx, v = b.emit([at, value])
        b.line(f"panel[{idx}] = {v};")
    _whole_or_cut_columns(b, copy, width, "tn", _whole_columns(k))

  @contextmanager
  def each_block():
    """The loop over the row blocks of a panel."""
    with b.block(f"for (int64_t ib = 0; ib < {rows.extent}; ib += {nrows})"):
      b.line(f"const int64_t rn = {rows.extent} - ib < {nrows} ? {rows.extent} - ib : {nrows};")
      yield

  def owned():
    """Skips a block (of panel p, rows ib) that another thread takes; a chunked sum's sums and errors for it."""
    b.line(f"const int64_t unit = by_rows ? ib / {nrows} * npanels + p : p * nrb + ib / {nrows};")
    b.line("if (unit < lo || unit >= hi) continue;")
    if chunk:
      b.line(f"{ct} (*sums)[{width}] = part[ib / {nrows} * np + p - p0], "
             f"(*errs)[{width}] = part[(nrb + ib / {nrows}) * np + p - p0];")

  # a last panel cut short runs as a whole one, its columns past the cut (zeros, or an earlier panel's values) summed
  # but not stored: its blocks of cut columns, their sums in memory, took longer than a whole panel's (288 columns
  # on AVX-512: 4 panels of 64 and one of 32); unless another load reads along the columns
  others = [u for u in paneled.reduce.value.toposort() if u.op is Ops.GATHER and u.src[0] is not panel]
  padded = not any(last.var in u.src[1].src[0].toposort() for u in others)
  block = lambda nr, nc, cut=None: _emit_block(b, paneled, nr, nc, ct, (nrows, width), chunk, rows_cut=cut,
                                               columns="tn" if padded else None)
  whole, cuts = (_divides(rows.extent, nrows), {**_row_cuts(k), "whole_columns": True}) if padded else \
      (_whole_width_blocks(k, nrows), _row_cuts(k))
  blocks = lambda: _whole_or_cut(b, block, whole, (nrows, width), ("rn", width if padded else "tn"),
                                 f"({rows.extent} % {nrows})", **cuts, columns_left=f"({last.extent} % {width})")
  with b.block("", "#pragma omp parallel" if pragmas else None):
    b.line("const int64_t nt = TG_THREADS(), id = TG_THREAD();")
    b.line(f"const int64_t npanels = ({last.extent} + {width} - 1) / {width}, "
           f"nrb = ({rows.extent} + {nrows} - 1) / {nrows}, units = npanels * nrb;")
    b.line("const int64_t lo = units * id / nt, hi = units * (id + 1) / nt;")
    b.line(f"const int64_t fit = TG_CLAMP({PANEL_GROUP_BYTES} / {span}, 1, {PANEL_GROUP});")
    # where the rows' operand is the bigger and every panel fits one lap, the threads share out the blocks of rows
    # (each filling every panel), so that each reads its share of that operand once, not all of it
    b.line(f"const int by_rows = {int(rows.extent > last.extent)} && npanels <= fit;")
    b.line("const int64_t p0 = by_rows ? 0 : lo / nrb, p1 = by_rows ? npanels : (hi + nrb - 1) / nrb, "
           "np = p1 - p0;")
    b.line(f"{mem} *panels = ({mem} *)TG_LINES_ALLOC(fit * {span});")
    if padded: b.line(f"if ({last.extent} % {width}) memset(panels, 0, fit * {span});")

    def laps():
      """The laps of as many of the thread's panels as fit: each filled, then every block of rows run across them."""
      with b.block("for (int64_t g0 = p0; g0 < p1; g0 += fit)"):
        b.line("const int64_t g1 = TG_MIN2(g0 + fit, p1);")
        with ExitStack() as loops: fill(loops)
        with each_block(), each_panel():
          owned()
          blocks()

    if chunk:
      b.line(f"{ct} (*part)[{nrows}][{width}] = calloc(2 * nrb * np + 1, sizeof(*part));")
      for j, l in enumerate(r.loops): b.names[l.var] = f"r{j}"
      with ExitStack() as chunks:
        open_blocks(b, r, chunk, chunks)
        laps()
      with b.block("", None):
        b.line("const int64_t g0 = p0, g1 = p1;")
        with each_panel(), each_block():
          owned()
          _store_block(b, k, "rn", "tn", ct, True)
      b.line("free(part);")
    else:
      laps()
    b.line("free(panels);")


def _of_load(value: UOp, load: UOp) -> UOp:
  """The widest part of a sum's step that is computed from `load` alone (with constants): a conversion of the
  operand (a bfloat16 weight's rounding), which its panels then hold, converted once per element rather than at
  every multiply-add; `load` itself where it is read by more than one such part."""
  alone = {load}
  for u in value.toposort():   # sources before users
    if u.op in ELEMENTWISE and any(s in alone for s in u.src) and all(s in alone or s.op is Ops.CONST for s in u.src):
      alone.add(u)
  tops = [u for u in alone if not any(u in v.src for v in alone)]
  return tops[0] if len(tops) == 1 else load


def _fill_transposed(b: _Body, load: UOp, last: UOp, loops, width: str, stack: ExitStack,
                     chunk: tuple[int, int] | None = None) -> None:
  """A panel of a load read along the reduction's innermost loop (transposed_panels), a whole number of vectors wide,
  filled a square of vectors at a time: each of the square's columns read as a vector along it, the square
  transposed in registers, and its rows written into the panel (the reduction's steps in order, its outer loops'
  slowest), a last panel cut short too; the code after it, on `stack`'s else branch, fills any other panel element
  by element. With `chunk` (a sum_plan whose loops the caller opened), the chunk's steps only: the loops outside its
  cut loop stay at the caller's step."""
  vec, vecu, _ = VECTOR[load.dtype]
  lanes = f"(TG_VREG / (int64_t)sizeof({CTYPE[load.dtype]}))"
  cut = chunk[0] if chunk else 0
  *outer, inner = loops
  step = "rt" if chunk else "r0"   # the caller's loops are r0, r1, ...
  with b.block(f"if (tn % {lanes} == 0 && {width} % {lanes} == 0)"), ExitStack() as steps:
    row = None
    for j, l in enumerate(outer):
      if j < cut: continue
      b.names[l.var] = f"ro{j}"
      head, at = (f"for (int64_t ro{j} = rb; ro{j} < re; ro{j}++)", f"ro{j} - rb") if chunk and j == cut else \
          (_loop(f"ro{j}", l.extent), f"ro{j}")
      steps.enter_context(b.block(head))
      row = at if row is None else f"({row}) * {l.extent} + {at}"
    lo, hi, at = ("rb", "re", f"{step} - rb") if chunk and cut == len(outer) else ("0", str(inner.extent), step)
    row = at if row is None else f"({row}) * {inner.extent} + {at}"
    steps.enter_context(b.block(f"for (int64_t {step} = {lo}; {step} < {hi}; {step} += {lanes})"))
    with b.block(f"for (int64_t j0 = 0; j0 < {width}; j0 += {lanes})"):
      b.line("if (j0 == tn) break;")   # a cut panel's (the loop's bound a constant, as it runs for a whole one)
      b.line(f"{vec} v[{lanes}];")
      with b.block(f"for (int64_t q = 0; q < {lanes}; q++)", "TG_UNROLL(16)"):
        b.line("const int64_t i1 = t + j0 + q;")
        b.names[last], b.names[inner.var] = "i1", step
        idx, = b.emit([load.src[1].src[0]])
        b.line(f"v[q] = *(const {vecu} *)&{b.bufs[load.src[0]]}[{idx}];")
      b.line(f"tg_tr_{vec[3:]}(v);")
      with b.block(f"for (int64_t q = 0; q < {lanes}; q++)", "TG_UNROLL(16)"):
        b.line(f"*({vecu} *)&panel[({row} + q) * {width} + j0] = v[q];")
  stack.enter_context(b.block("else"))


# how many steps of a register block's reduction ahead its strided loads are prefetched: about a memory latency's
# worth of steps (a step of 8 rows by a vector register's width takes some 10 ns)
PREFETCH_STEPS = 16
CACHED_BYTES = 16 << 10   # a buffer this small stays in the L1 cache once read (a convolution's filter): no prefetches


def _cached(u: UOp) -> bool:
  """Whether a load's buffer (or a buffer) fits CACHED_BYTES."""
  buf = u.src[0] if u.op is Ops.GATHER else u
  return buf.shape[0] * buf.dtype.itemsize <= CACHED_BYTES


def _prefetch(b: _Body, k: Kernel, nr: str, nc: str, loads=None):
  """Prefetches of a register block's loads (or of `loads`) that are strided along the reduction (a weight gradient's
  operands, read a row of the activations per step), PREFETCH_STEPS steps ahead: the hardware's prefetchers lose
  such a stream at each page, and a step whose operands come from memory (they were written long before, in the
  forward pass) waits on them. One prefetch per cache line the block reads of each. A column panel (_emit_paneled),
  read a row a step from the L2 cache, is prefetched too: the 1024^2 matmul as AVX2 code 183 -> 186 GFLOPS."""
  r, i64 = k.reduce, dtypes.int64
  inner, last = r.loops[-1].var, k.loops[-1].var
  rows = k.loops[-2].var if len(k.loops) >= 2 else None
  ib, t = UOp.param((), i64), UOp.param((), i64)
  b.names[ib], b.names[t] = "ib", "t"
  for u in (r.value.toposort() if loads is None else loads):
    if u.op is not Ops.GATHER or u.src[0] not in b.bufs: continue
    idx, paneled = u.src[1].src[0], u.src[0] is b.panel   # a panel's row is its width, a C expression
    if not paneled and (_cached(u) or coefficient(idx, inner) in (0, 1, None)): continue
    cr = coefficient(idx, rows) if rows is not None else 0
    cj = coefficient(idx, last)
    if cr is None or cj is None: continue
    line = 64 // u.dtype.itemsize
    sq = nr if not cr else (line if cr == 1 else 1)
    sj = nc if not cj else (line if cj == 1 else 1)
    mapping = {inner: inner + UOp.const(i64, PREFETCH_STEPS), last: t}
    if rows is not None: mapping[rows] = ib
    at = b.emit([substitute([idx], mapping)[0]])[0]
    b.line(f"for (int64_t pq = 0; pq < {nr}; pq += {sq}) for (int64_t pj = 0; pj < {nc}; pj += {sj}) "
           f"TG_PREFETCH(&{b.bufs[u.src[0]]}[{at} + pq * {cr} + pj * {cj}]);")


RUN_BYTES = (256, 4096)   # runs this long (bytes) along a sum's innermost loop are prefetched a run ahead
DOT_RUN_BYTES = 512       # ... and in blocks of dot products, this long at least: with runs of 4 lines (ResNet-8's
                          # third stage's weight gradients, 9 prefetches a vector step) no faster or slower


def _prefetch_next_runs(b: _Body, k: Kernel, blocks, plan: tuple[int, int] | None, step: str, lanes: str = "1",
                        shortest: int = RUN_BYTES[0]):
  """Prefetches, spread over the steps of a register block's innermost reduction loop, of the runs the block reads
  next of an operand read in short runs along that loop (`shortest` to RUN_BYTES[1] bytes) and along one of the
  block's dimensions (`blocks`: each one's loop variable, the C of its first index and of its size; the block's rows,
  and the columns of a block of dot products), its runs next to each other: those of the next step of the loop
  outside it, or after its last, of the next block along that dimension. `step` is the C of the innermost loop's
  index, `lanes` of its steps' elements. Such runs (an im2col's rows, one batch element's positions) are too short
  for the hardware's prefetchers, which lose each at its jump: the CNN's conv2 and conv3 filter gradients, reading
  9.8 and 4.6 MB of windows written in the forward pass, 1760 -> 1287 and 723 -> 531 us; ResNet-8's second-stage
  weight gradients (dot products) 573 -> 397 and 143 -> 92 us."""
  r, i64, n = k.reduce, dtypes.int64, len(k.reduce.loops)
  if n - 2 != (plan[0] if plan else 0): return   # the loop outside the innermost is the block's outermost
  inner, outer = r.loops[-1], r.loops[-2]
  lo, hi = ("rb", "re") if plan else ("0", str(outer.extent))
  nxt, nb = UOp.param((), i64), UOp.param((), i64)
  b.names[nxt], b.names[nb] = "no", "nb"
  for u in r.value.toposort():
    if u.op is not Ops.GATHER or u.src[0] not in b.bufs or u.src[0] is b.panel or _cached(u): continue
    idx, size = u.src[1].src[0], u.dtype.itemsize
    if not shortest <= inner.extent * size <= RUN_BYTES[1] or coefficient(idx, inner.var) != 1: continue
    along = [(v, first, nx) for v, first, nx in blocks if coefficient(idx, v) != 0]
    if len(along) != 1 or not coefficient(idx, outer.var): continue
    (v, first, nx), cd = along[0], coefficient(idx, along[0][0])
    if not cd or cd > 2 * inner.extent: continue
    span, line = f"(({nx}) * {cd})", 64 // size   # the elements a block reads an outer step; a line's
    with b.block(""):
      b.line(f"const int64_t no = r{n - 2} + 1 < {hi} ? r{n - 2} + 1 : {lo}, "
             f"nb = r{n - 2} + 1 < {hi} ? {first} : {first} + {nx};")
      at = b.emit([substitute([idx], {outer.var: nxt, v: nb, inner.var: UOp.const(i64, 0)})[0]])[0]
      b.line(f"for (int64_t pl = 0; pl < ({lanes}) * {span} / {inner.extent * line} + 1; pl++) "
             f"TG_PREFETCH(&{b.bufs[u.src[0]]}[{at} + {step} * {span} / {inner.extent} + pl * {line}]);")


AHEAD_LINES = 4   # a row's first lines of the next block's row operand are prefetched; the hardware follows the rest


def _prefetch_next_block(b: _Body, k: Kernel, nr: str, width: str, rows_inner: bool):
  """Prefetches, at the start of a register block, of what the thread's next block reads first and writes: the first
  lines of its rows' operand and its output's lines, for writing. A short reduction (attention's 32 steps) otherwise
  waits at each block for those lines to come from memory, a few rows of a few lines each, which no prefetcher
  foresees."""
  r, i64 = k.reduce, dtypes.int64
  inner, rows, last = r.loops[-1].var, k.loops[-2].var, k.loops[-1].var
  (R, T), ib, t = (k.loops[-2].extent, k.loops[-1].extent), UOp.param((), i64), UOp.param((), i64)
  b.names[ib], b.names[t] = "nib", "nt"
  if rows_inner:
    b.line(f"const int64_t nib = ib + {nr} < {R} ? ib + {nr} : 0, nt = ib + {nr} < {R} ? t : t + {width};")
  else:
    b.line(f"const int64_t nt = t + {width} < {T} ? t + {width} : 0, nib = t + {width} < {T} ? ib : ib + {nr};")
  at_start = {rows: ib, last: t, **{l.var: UOp.const(i64, 0) for l in r.loops}}
  for u in r.value.toposort():
    if u.op is not Ops.GATHER or u.src[0] not in b.bufs or _cached(u): continue
    idx = u.src[1].src[0]
    cr = coefficient(idx, rows)
    if coefficient(idx, inner) != 1 or cr in (0, None) or coefficient(idx, last) != 0: continue
    line = 64 // u.dtype.itemsize
    lines = min(-(-r.loops[-1].extent // line), AHEAD_LINES)
    at = b.emit([substitute([idx], at_start)[0]])[0]
    b.line(f"for (int64_t pq = 0; pq < {nr}; pq++) for (int64_t pj = 0; pj < {lines * line}; pj += {line}) "
           f"TG_PREFETCH(&{b.bufs[u.src[0]]}[{at} + pq * {cr} + pj]);")
  for st in k.stores:
    cr = coefficient(st.index, rows)
    if st.mode is not None or cr in (0, None) or coefficient(st.index, last) != 1 or _cached(st.buf): continue
    line = 64 // st.buf.dtype.itemsize
    at = b.emit([substitute([st.index], {rows: ib, last: t})[0]])[0]
    b.line(f"for (int64_t pq = 0; pq < {nr}; pq++) for (int64_t pj = 0; pj < {width}; pj += {line}) "
           f"TG_PREFETCH(&{b.bufs[st.buf]}[{at} + pq * {cr} + pj], 1);")


def _block_point(b: _Body, k: Kernel, rows_cut: str | None = None) -> None:
  """A register block's point (q, j) named as the kernel's last two loops' indices; with `rows_cut` (the rows the
  block has), rows past it repeat its last."""
  n = len(k.loops)
  if n >= 2:
    b.line(f"const int64_t i{n - 2} = ib + {'q' if rows_cut is None else f'TG_MIN2(q, {rows_cut} - 1)'};")
    b.names[k.loops[-2].var] = f"i{n - 2}"
  b.line(f"const int64_t i{n - 1} = t + j;")
  b.names[k.loops[-1].var] = f"i{n - 1}"


def default_unroll(k: Kernel) -> int | None:
  """How far the reduction loop of a register block along the row (_emit_block) unrolls without an `unroll` action:
  not at all when it is the last of several and short (SHORT_STEPS), else as far as the compiler chooses (None)."""
  r = k.reduce
  return 1 if r is not None and len(r.loops) > 1 and r.loops[-1].extent <= SHORT_STEPS else None


def _emit_block(b: _Body, k: Kernel, nr: str, nc: str, ct: str, size: tuple[str, str], chunk=None,
                rows_cut: str | None = None, columns: str | None = None):
  """One register block: its sums, then its stores. With `chunk` (a sum_plan whose loops the caller opened), one
  chunk of the sums only, added into the caller's `sums` and `errs`. With `rows_cut` (the rows the block has), the
  rows past it repeat its last and are not stored; with `columns`, only that many columns are stored."""
  r = k.reduce
  # each point adds its steps in turn: a plain sum's blocks are shorter, a product's (a matmul's) as long as usual
  plan = chunk or sum_plan(r, b.sum_block if is_product(r.value) else POINT_BLOCK)
  b.line(f"{ct} accs[{size[0]}][{size[1]}];")
  ident = render_const(reduce_identity(r.op, r.acc.dtype), r.acc.dtype)
  zero = f"for (int64_t q = 0; q < {nr}; q++) for (int64_t j = 0; j < {nc}; j++) accs[q][j] = {ident};"
  if plan and not chunk: _declare_sums(b, nr, nc, ct, size, "j")
  elif not plan: b.line(zero)
  for j, l in enumerate(r.loops): b.names[l.var] = f"r{j}"
  unroll = dict(k.opts).get("unroll", default_unroll(k) if not plan else None)
  with ExitStack() as blocks:
    if plan and not chunk: open_blocks(b, r, plan, blocks)
    if plan: b.line(zero)
    with ExitStack() as rloops:
      for j in range(plan[0] if plan else 0, len(r.loops)):
        last = j == len(r.loops) - 1
        head = block_loop(r, plan, j) if plan else _loop(f"r{j}", r.loops[j].extent)
        rloops.enter_context(b.block(head, f"TG_UNROLL({unroll})" if unroll and last else None))
      _prefetch(b, k, nr, nc)
      if len(k.loops) >= 2: _prefetch_next_runs(b, k, [(k.loops[-2].var, "ib", nr)], plan, f"r{len(r.loops) - 1}")
      with b.block(f"for (int64_t q = 0; q < {nr}; q++)", "TG_BLOCK_UNROLL(16)" if nr != "rn" else None):
        with b.block(f"for (int64_t j = 0; j < {nc}; j++)", "#pragma omp simd"):
          _block_point(b, k, rows_cut)
          _accumulate(b, r, ct, "accs[q][j]")
    if plan:
      with b.block(f"for (int64_t q = 0; q < {nr}; q++)"), b.block(f"for (int64_t j = 0; j < {nc}; j++)"):
        b.line(add_exactly("sums[q][j]", "errs[q][j]", "accs[q][j]", ct))
  if chunk: return
  if columns is None: return _store_block(b, k, nr, nc, ct, bool(plan), rows_cut)
  _whole_or_cut_columns(b, lambda n: _store_block(b, k, nr, n, ct, bool(plan), rows_cut), nc, columns,
                        _whole_columns(k))


def _whole_or_cut_columns(b: _Body, emit, width: str, cut: str, whole: bool | str) -> None:
  """emit(columns) of a panel's columns: `width`, a constant, where the panel is whole (every one where `whole`, the
  target's widths dividing the columns: a bool, or the preprocessor's condition; else every one but the last, cut to
  `cut` columns), else `cut`. A copy of a variable count of floats became a call of memcpy (a row of a matmul's block
  stored by `rep movsq`: 3% of the 1024^2 matmul's time as AVX2 code)."""
  if whole is True: return emit(width)
  if whole:
    b.line(f"#if {whole}")
    emit(width)
    b.line("#else")
  with b.block(f"if ({cut} == {width})"): emit(width)
  with b.block("else"): emit(cut)
  if whole: b.line("#endif")


def _store_block(b: _Body, k: Kernel, nr: str, nc: str, ct: str, plan: bool, rows_cut: str | None = None):
  """The stores of a register block: each point's sum (with its carried error, for a `plan`ned sum), of its first
  `rows_cut` rows where given."""
  r = k.reduce
  with b.block(f"for (int64_t q = 0; q < {nr}; q++)"), ExitStack() as kept:
    if rows_cut is not None: kept.enter_context(b.block(f"if (q < {rows_cut})"))
    with b.block(f"for (int64_t j = 0; j < {nc}; j++)"):
      _block_point(b, k)
      if plan:
        b.line(f"{ct} acc = sums[q][j];")
        b.line(add_error("acc", "errs[q][j]"))
      else: b.line(f"const {ct} acc = accs[q][j];")
      b.names[r.acc] = "acc"
      for s in k.stores: _emit_store(b, s)


def transposed_copy(k: Kernel) -> UOp | None:
  """The load of a copy that reads along its second-last loop and writes along its last (a transposing packing
  copy, a transpose) when both loops are whole squares of vectors on every target; None for any other kernel."""
  if k.reduce is not None or k.epilogue or k.phases or len(k.stores) != 1 or len(k.loops) < 2: return None
  s, (a, c) = k.stores[0], k.loops[-2:]
  load = s.value
  if s.mode not in (None, "set") or s.valid is not None or load.op is not Ops.GATHER: return None
  if load.dtype not in VECTOR or s.buf.dtype is not load.dtype or load.src[0].dtype is not load.dtype: return None
  lanes = max(t["TG_VREG"] for t in BLOCKS.values()) // load.dtype.itemsize
  if a.extent % lanes or c.extent % lanes: return None
  idx = load.src[1].src[0]
  return load if _exactly_linear(s.index, c.var) and _exactly_linear(idx, a.var) and \
      coefficient(idx, c.var) not in (0, 1, None) else None


def _emit_transposed(b: _Body, k: Kernel, pragmas: dict[int, str], load: UOp):
  """A transposing copy a square of vectors at a time: the square's rows read along the second-last loop as
  vectors, transposed in registers, and written along the last."""
  (a, c), s, n = k.loops[-2:], k.stores[0], len(k.loops)
  vec, vecu, _ = VECTOR[load.dtype]
  width = f"(TG_VREG / (int64_t)sizeof({CTYPE[load.dtype]}))"
  with ExitStack() as loops:
    for j, l in enumerate(k.loops):
      b.names[l.var] = f"i{j}"
      pragma = pragmas.get(j)
      if pragma is not None: pragma = None if j == n - 1 else pragma.replace("parallel for simd", "parallel for")
      header = _loop(f"i{j}", l.extent) if j < n - 2 else f"for (int64_t i{j} = 0; i{j} < {l.extent}; i{j} += {width})"
      loops.enter_context(b.block(header, pragma))
    b.line(f"{vec} r[{width}];")

    @contextmanager
    def each_vector(l: Loop, j: int):
      """The square's vectors, l's variable stepping through them inside (and its own name again after)."""
      with b.block(f"for (int64_t q = 0; q < {width}; q++)", "TG_UNROLL(16)"):
        b.line(f"const int64_t m = i{j} + q;")
        b.names[l.var] = "m"
        yield
      b.names[l.var] = f"i{j}"

    with each_vector(c, n - 1):   # row q of the square: its elements along the second-last loop
      idx, = b.emit([load.src[1].src[0]])
      b.line(f"r[q] = *(const {vecu} *)&{b.bufs[load.src[0]]}[{idx}];")
    b.line(f"tg_tr_{vec[3:]}(r);")
    with each_vector(a, n - 2):   # column q: the elements along the last loop
      idx, = b.emit([s.index])
      b.line(f"*({vecu} *)&{b.bufs[s.buf]}[{idx}] = r[q];")


def _emit_store(b: _Body, s):
  if s.buf not in b.bufs: raise ValueError(f"render_c: a store writes {s.buf!r}, which is not a buffer of the kernel")
  with ExitStack() as guard:
    if s.valid is not None: guard.enter_context(b.block(f"if ({b.emit([s.valid])[0]})"))
    value = s.value
    if s.mode in STORE_ALU: value = combine(STORE_ALU[s.mode], s.buf.gather(s.index.reshape((1,))), s.value)
    elif s.mode not in (None, "set"): raise ValueError(f"render_c: unknown store mode {s.mode!r}")
    idx, v = b.emit([s.index, value])
    b.line(f"{b.bufs[s.buf]}[{idx}] = {f'{STORE[s.buf.dtype]}({v})' if s.buf.dtype in STORE else v};")
    b.stored(s.buf)


def _emit_step(b: _Body, k: Kernel):
  """k's reduction, then its stores in its epilogue loops, at one point of its outer loops."""
  with ExitStack() as loops:
    if k.reduce is not None: _emit_reduce(b, k)
    simd = not any(s.mode for s in k.stores)   # a scatter's points may combine into one element, in order
    if k.epilogue:   # a value loaded once before the loop (gcc vectorises no loop loading what the kernel stores)
      _hoist(b, [u for s in k.stores for u in (s.index, s.value, s.valid) if u is not None],
             {l.var for l in k.epilogue}, frozenset(s.buf for s in k.stores))
    stores, bounds = k.stores, None
    if (ranged := guarded_ranges(k.stores, k.epilogue)) is not None: (stores, bounds), simd = ranged, True
    for j, l in enumerate(k.epilogue):
      b.names[l.var] = f"e{j}"
      head = _loop(f"e{j}", l.extent) if bounds is None else _ranged_loop(b, l, bounds[j])
      vectorised = simd and j == len(k.epilogue) - 1
      loops.enter_context(b.block(head, "#pragma omp simd" if vectorised else None))
      if vectorised: b.simd = l.var
    for s in stores: _emit_store(b, s)
    if k.epilogue: b.simd = None


def guarded_ranges(stores, loops) -> tuple[tuple, list] | None:
  """Where one guarded store (a strided convolution's input gradient adding its windows' taps where they lie inside
  the input) holds along its loops: for each loop, innermost first, the lower and upper bounds that the guard's
  compares of its variable (times a positive step, plus what the loops outside give) with what the loops outside
  give set, each (numerator, step) of a floor division; and the store without those compares. None where the guard
  has none along the innermost loop, or where two of its points could add to one element. The loops then run over
  those ranges alone, the innermost as whole vectors: gcc vectorised no loop storing under a guard at a stride."""
  if len(stores) != 1 or (s := stores[0]).valid is None or s.mode not in ("add", None) or not loops: return None
  if not _exactly_linear_by(s.index, loops[-1].var): return None
  parts = conjuncts(s.valid)
  left = [u for u in toposort([s.valid]) if u in parts]
  bounds, inner = [None] * len(loops), set()
  for j in reversed(range(len(loops))):
    var, lows, highs, kept = loops[j].var, [], [], []
    at0 = lambda u: simplify(substitute([u], {var: UOp.const(var.dtype, 0)})[0], {})
    for c in left:
      a, z = c.src if c.op is Ops.CMPLT else (None, None)
      deps = [set() if u is None else set(u.toposort()) for u in (a, z)]
      if c.op is not Ops.CMPLT or inner & (deps[0] | deps[1]): kept.append(c)
      elif var in deps[0] and var not in deps[1] and (step := _exactly_linear_by(a, var)) > 0:
        highs.append((z - at0(a) + UOp.const(var.dtype, step - 1), step))   # step*v + rest < z
      elif var in deps[1] and var not in deps[0] and (step := _exactly_linear_by(z, var)) > 0:
        lows.append((a - at0(z) + UOp.const(var.dtype, step), step))   # a < step*v + rest
      else: kept.append(c)
    if j == len(loops) - 1 and not lows and not highs: return None
    bounds[j], left = (lows, highs), kept
    inner.add(var)
  valid = None
  for c in left: valid = c if valid is None else valid.alu(Ops.AND, c)
  return (dataclasses.replace(s, valid=valid),), bounds


def _exactly_linear_by(index: UOp, var: UOp) -> int:
  """The step of index along var when it moves by a constant step there (no clamp or division reading var), else 0."""
  terms, _ = _linear(index)
  step = terms.get(var, 0)
  return step if isinstance(step, int) and not any(var in t.toposort() for t in terms if t is not var) else 0


def conjuncts(c: UOp) -> set[UOp]:
  """The terms of a bool AND (of ANDs), or c itself."""
  out, stack = set(), [c]
  while stack:
    u = stack.pop()
    if u.op is Ops.AND and u.dtype is dtypes.bool_: stack.extend(u.src)
    else: out.add(u)
  return out


def _ranged_loop(b: _Body, loop: Loop, bounds: tuple[list, list]) -> str:
  """The header of `loop` over [max(0, lows), min(extent, highs)), each bound floor(numerator / step)."""
  name = b.names[loop.var]
  parts = {"lo": ["0"], "hi": [str(loop.extent)]}
  for key, bs in zip(("lo", "hi"), bounds):
    for num, step in bs:
      n, = b.emit([num])
      parts[key].append(f"TG_FLOOR_DIV({n}, {step})")
  lo = functools.reduce(lambda a, x: f"TG_MAX2({a}, {x})", parts["lo"])
  hi = functools.reduce(lambda a, x: f"TG_MIN2({a}, {x})", parts["hi"])
  return f"for (int64_t {name} = {lo}; {name} < {hi}; {name}++)"


def c_name(name: str) -> str:
  """A C identifier from a kernel name (kernels never take the tg_ prefix of the prelude)."""
  s = re.sub(r"\W", "_", name) or "kernel"
  return f"k_{s}" if s[0].isdigit() or s.startswith("tg_") else s


def render_kernel(k: Kernel, name: str | None = None, restrict: bool = True, storage: str = "static") -> str:
  """The C function of one kernel: `static void name(T *restrict b0, const T *restrict b1, ...)`."""
  b = _Body(k)
  stored = {s.buf for p in k.steps() for s in p.stores}
  params = ", ".join(f"{'' if p in stored else 'const '}{MEMTYPE[p.dtype]} *{'restrict ' if restrict else ''}{n}"
                     for p, n in b.bufs.items())
  pragmas, blocked = _loop_pragmas(k), dict(k.opts).get("block", 1)
  if blocked and (interchanged(k) or dot_blocked(k)):
    (_emit_interchanged if interchanged(k) else _emit_dot_blocked)(b, k, pragmas)
  elif blocked and (load := transposed_copy(k)) is not None:
    _emit_transposed(b, k, pragmas, load)
  elif (short := phase_loops(k)) is not None:
    _emit_unrolled(b, k, pragmas, short)
  elif (pieces := split_pieces(k, pragmas)) is not None:
    _emit_pieces(b, k, pragmas, pieces)
  else:
    with ExitStack() as loops:
      _open_loops(b, k.loops, pragmas, loops)
      for p in k.phase_kernels():
        with b.block(""): _emit_step(b, p)   # its accumulator and values stay inside
      _emit_step(b, k)
  lines = b.declarations() + b.lines
  return f"{storage} void {name or c_name(k.name)}({params or 'void'}) {{\n" + "".join(l + "\n" for l in lines) + "}"


def _open_loops(b: _Body, loops, pragmas: dict[int, str], stack: ExitStack) -> None:
  """The loops i0, i1, ... opened on `stack`, each with its pragma (the innermost's simd makes it b.simd)."""
  for j, l in enumerate(loops):
    b.names[l.var] = f"i{j}"
    stack.enter_context(b.block(_loop(f"i{j}", l.extent), pragmas.get(j)))
  if loops and any("simd" in pragmas.get(j, "") for j in (0, len(loops) - 1)): b.simd = loops[-1].var


MAX_PIECES = 8


def _cut(u: UOp, var: UOp) -> int | None:
  """Where the compare or clamp u of a positive multiple of var plus a constant with a constant turns: the first
  value of var on its other side (a clamp's at the point where both sides are equal goes with the side before)."""
  for e, c, before in ((u.src[0], u.src[1], False), (u.src[1], u.src[0], True)):
    if c.op is not Ops.CONST or not e.dtype.is_int: continue
    terms, offset = _linear(e)
    if len(terms) == 1 and (a := terms.get(var, 0)) > 0:
      q = c.arg - offset
      return q // a + 1 if u.op is Ops.MIN or (before and u.op is Ops.CMPLT) else -(-q // a)
  return None


def split_pieces(k: Kernel, pragmas: dict[int, str]) -> list[tuple[int, int]] | None:
  """The ranges of an elementwise kernel's innermost loop in each of which every compare and clamp of that loop's
  variable with a constant goes one way (a concatenation's parts, a pad's edges), or None. Each range runs as a loop
  of its own, where the selects and clamps fold away: GCC vectorises no loop that loads at a clamped index."""
  n = len(k.loops)
  if not n or k.reduce is not None or k.epilogue or k.phases or any(s.mode for s in k.stores): return None
  if pragmas.get(n - 1, "#pragma omp simd") != "#pragma omp simd" or "collapse(%d)" % n in pragmas.get(0, ""):
    return None
  return _pieces(k.stores, k.loops[-1])


def _pieces(stores, loop) -> list[tuple[int, int]] | None:
  roots = [x for s in stores for x in (s.index, s.value, s.valid) if x is not None]
  cuts = {c for u in toposort(roots) if u.op in (Ops.CMPLT, Ops.MAX, Ops.MIN)
          and (c := _cut(u, loop.var)) is not None and 0 < c < loop.extent}
  if not cuts or len(cuts) >= MAX_PIECES: return None
  ends = [0, *sorted(cuts), loop.extent]
  return list(zip(ends, ends[1:]))


def _folded(s, at: dict, simp: Simplifier | None = None):
  """The store s with `at`'s substitutions made and, given a Simplifier, its expressions simplified by it."""
  given = {f: u for f in ("index", "value", "valid") if (u := getattr(s, f)) is not None}
  got = substitute(list(given.values()), at) if at else list(given.values())
  return dataclasses.replace(s, **{f: u if simp is None else simp(u) for f, u in zip(given, got)})


def _emit_in_pieces(b: _Body, stores, loop, j: int, ranges: dict, pragma: str | None, pieces: list[tuple[int, int]]):
  """The innermost loop (named i{j}) as one loop a piece, each with the stores simplified for its range."""
  for lo, hi in pieces:
    var = loop.var if (lo, hi) == (0, loop.extent) else UOp.param((), dtypes.int64)
    b.names[var] = f"i{j}"
    with b.block(_loop(f"i{j}", hi - lo), pragma):
      at = {loop.var: var + UOp.const(dtypes.int64, lo) if lo else var} if var is not loop.var else {}
      simp = Simplifier({**ranges, var: hi - lo})   # the stores share most of their terms
      b.simd = var if pragma and "simd" in pragma else None
      for s in stores: _emit_store(b, _folded(s, at, simp))
      b.simd = None


def _emit_pieces(b: _Body, k: Kernel, pragmas: dict[int, str], pieces: list[tuple[int, int]]):
  """k's loops with the innermost one run as one loop a piece (split_pieces)."""
  *outer, last = k.loops
  with ExitStack() as loops:
    _open_loops(b, outer, pragmas, loops)
    _emit_in_pieces(b, k.stores, last, len(outer), {l.var: l.extent for l in outer}, pragmas.get(len(outer)), pieces)


PHASE_MAX, PHASE_COPIES = 4, 16


def _compared(u: UOp, var: UOp) -> bool:
  """Whether the compare or clamp u sets a constant against a linear form of var."""
  return any(c.op is Ops.CONST and e.dtype.is_int and var in _linear(e)[0]
             for e, c in ((u.src[0], u.src[1]), (u.src[1], u.src[0])))


def phase_loops(k: Kernel) -> set[int] | None:
  """The positions of an elementwise kernel's short loops (PHASE_MAX or fewer steps, not the outermost) on whose
  variable a compare with a constant turns, or None: an interleave's phases, whose parts a select picks. They run
  unrolled, each step with its stores' expressions simplified (the selects fold to one part), and the loop inside
  them vectorises over whole parts rather than over a loop of two or three steps."""
  n = len(k.loops)
  if n < 2 or k.reduce is not None or k.epilogue or k.phases or any(s.mode for s in k.stores): return None
  roots = [x for s in k.stores for x in (s.index, s.value, s.valid) if x is not None]
  turns = [u for u in toposort(roots) if u.op in (Ops.CMPLT, Ops.MAX, Ops.MIN)]
  short = {j for j, l in enumerate(k.loops)
           if j and 1 < l.extent <= PHASE_MAX and any(_compared(u, l.var) for u in turns)}
  if not short or math.prod(k.loops[j].extent for j in short) > PHASE_COPIES: return None
  return short


def _emit_unrolled(b: _Body, k: Kernel, pragmas: dict[int, str], short: set[int]):
  """k's loops with those in `short` unrolled (phase_loops): threads share the loops outside the first of them, the
  innermost of the others runs as vectors."""
  first, last = min(short), max(j for j in range(len(k.loops)) if j not in short)
  threads = re.search(r"collapse\((\d+)\)", pragmas.get(0, ""))
  # the threads' loops enclose the innermost one (cut into pieces, it cannot be collapsed with them) unless it is the
  # outermost, whose pieces then each share their steps out
  shared = min(int(threads.group(1)) if threads else 1, first, max(last, 1)) if "parallel" in pragmas.get(0, "") else 0
  ranges = {l.var: l.extent for j, l in enumerate(k.loops) if j not in short}
  heads = {0: _omp("parallel for simd" if last < shared else "parallel for", shared)} if shared else {}
  if last >= shared: heads[last] = "#pragma omp simd"

  def emit(j: int, at: dict):
    l = k.loops[j]
    if j == last:   # the innermost loop, with the steps of those inside it unrolled, cut where their compares turn
      inner = k.loops[j + 1:]
      # simplified per piece, in _emit_in_pieces
      stores = [_folded(s, {**at, **{i.var: UOp.const(dtypes.int64, v) for i, v in zip(inner, vs)}})
                for vs in itertools.product(*[range(i.extent) for i in inner]) for s in k.stores]
      _emit_in_pieces(b, stores, l, j, ranges, heads.get(j), _pieces(stores, l) or [(0, l.extent)])
      return
    if j in short:
      for v in range(l.extent): emit(j + 1, {**at, l.var: UOp.const(dtypes.int64, v)})
      return
    b.names[l.var] = f"i{j}"
    with b.block(_loop(f"i{j}", l.extent), heads.get(j)):
      emit(j + 1, at)

  emit(0, {})


Kernel.source = property(render_kernel, doc="The kernel as C source.")
Kernel.__str__ = render_kernel


def program_prelude() -> str:
  """What every program's source starts with: types, helpers, block sums and the unit split."""
  return PRELUDE + BLOCK_PRELUDE + UNITS


# tg_wake(): a parallel region doing nothing (but kept: an empty one compiles to nothing), which wakes the threads of
# the team, asleep while programs ran on one
WAKE = "void tg_wake(void) {\n  #pragma omp parallel\n  { __asm__ __volatile__(\"\"); }\n}\n"


def render_program(prog: Program, timed: bool = False) -> str:
  """One C source: the prelude, every kernel, `void tg_wake(void)` (WAKE) where a kernel shares its work out to
  threads, and `void tg_run(void **bufs)` running the program's items in order
  (control flow as C loops over its sub-programs; a host callback as a call through the function pointer the caller
  puts after the buffers' pointers, given the callback's number in host_calls(prog) and its operands' and results'
  pointers). `timed` adds a clock around each item and `void tg_times(double *ns)`, which copies out the last run's
  nanoseconds per item."""
  entry = _Entry(prog.buffers, {id(c): i for i, c in enumerate(host_calls(prog))})
  lines = entry.items(prog, 1, timed)
  parts = [program_prelude(), *_units(entry.functions), "#if !defined(TG_UNIT) || TG_UNIT == 0",
           *(f.split(" {\n", 1)[0] + ";" for f in entry.functions)]
  if timed:
    parts.append(f"static double tg_ns[{max(len(prog.kernels), 1)}];\n"
                 "static double tg_elapsed(struct timespec t0) {\n  struct timespec t1;\n"
                 "  clock_gettime(CLOCK_MONOTONIC, &t1);\n"
                 "  return (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);\n}\n"
                 "void tg_times(double *ns) { memcpy(ns, tg_ns, sizeof tg_ns); }\n")
    lines.insert(0, "  struct timespec t0;")
  if not prog.kernels: lines.append("  (void)bufs;")
  if any("#pragma omp parallel" in f for f in entry.functions): parts.append(WAKE)
  parts.append("void tg_run(void **bufs) {\n" + "".join(l + "\n" for l in lines) + "}\n#endif\n")
  return "\n".join(parts)


# A program's kernels fall in two halves that the device may compile as two translation units at once (-DTG_UNIT=0
# and 1, then linked); compiled as one source, everything is static as before.
UNITS = r"""
#if defined(TG_UNIT)
#define TG_KERNEL __attribute__((visibility("hidden")))
#else
#define TG_KERNEL static
#endif
"""


DOTS_COST = 2.5   # the compile time of a character of blocked dot products (_emit_dots), in another function's


def _units(functions: list[str]) -> list[str]:
  """The functions in two units of about equal compile time (blocked dot products cost more), the costliest placed
  first, each into the cheaper unit so far."""
  units, costs = ([], []), [0, 0]
  cost = lambda f: len(f) * (DOTS_COST if "accs[q][c][l]" in f else 1)
  for f in sorted(functions, key=cost, reverse=True):
    i = costs.index(min(costs))
    units[i].append(f)
    costs[i] += cost(f)
  return ["#if !defined(TG_UNIT) || TG_UNIT == 0", *units[0], "#endif",
          "#if !defined(TG_UNIT) || TG_UNIT == 1", *units[1], "#endif"]


class _Entry:
  """The statements of tg_run: kernel calls, and control flow as loops that point each sub-program's inputs at its
  operands and copy its outputs into the results, or point the outputs at the results' bytes (swappable)."""

  def __init__(self, buffers, hosts: dict[int, int]):
    self.buffers, self.functions, self.seen, self.hosts = buffers, [], set(), hosts
    self.bodies: dict[str, str] = {}   # a kernel's C text under a placeholder name -> the function rendered for it
    self.texts: dict[tuple, str] = {}   # (restrict, a kernel's structure) -> its C text under the placeholder name
    self.structures: dict[tuple, tuple] = {}   # a kernel's parts -> its structure (kernels scheduled again share them)

  def nbytes(self, n: int) -> int: return self.buffers[n].nbytes

  def items(self, prog: Program, depth: int, timed: bool = False, only=None) -> list[str]:
    """The lines of prog's items (those numbered in `only`, when given)."""
    pad, lines = "  " * depth, []
    for j, (k, nums) in enumerate(zip(prog.kernels, prog.calls)):
      if only is not None and j not in only: continue
      if timed: lines.append(pad + "clock_gettime(CLOCK_MONOTONIC, &t0);")
      if isinstance(k, Control): lines += [pad + l for l in self.control(k, depth)]
      else: lines.append(pad + self.call(j, k, nums))
      if timed: lines.append(pad + f"tg_ns[{j}] = tg_elapsed(t0);")
    return lines

  def call(self, j: int, k: Kernel, nums) -> str:
    if len(nums) != len(k.bufs):
      raise ValueError(f"render_program: kernel {j} ({k.name}) takes {len(k.bufs)} buffers, its call binds {len(nums)}")
    parts = tuple(getattr(k, f.name) for f in dataclasses.fields(k) if f.name != "name")
    if (key := self.structures.get(parts)) is None: key = self.structures[parts] = k.structure()
    restrict = len(set(nums)) == len(nums)
    if (text := self.texts.get((restrict, key))) is None:   # a kernel alike one rendered already is not rendered again
      text = self.texts[restrict, key] = render_kernel(k, "TG_SAME", restrict=restrict, storage="TG_KERNEL")
    name = self.bodies.get(text)
    if name is None:   # kernels with one body (each layer's, forward and backward) share one function
      name = c_name(k.name)
      while name in self.seen: name = f"{name}_{len(self.seen)}"
      self.seen.add(name)
      self.bodies[text] = name
      self.functions.append(text.replace(" void TG_SAME(", f" void {name}(", 1) + "\n")
    return f"{name}({', '.join(f'({MEMTYPE[p.dtype]} *)bufs[{n}]' for p, n in zip(k.bufs, nums))});"

  def bind(self, ins, ops) -> list[str]: return [f"bufs[{b}] = bufs[{o}];" for b, o in zip(ins, ops)]

  def body(self, prog: Program, depth: int, only=None) -> list[str]:
    return [l[2 * depth:] for l in self.items(prog, depth, only=only)]

  @staticmethod
  def invariant(prog: Program, n_consts: int) -> tuple[set[int], set[int]]:
    """(the numbers of a loop body's packing copies of its constant inputs, which run once before the loop rather
    than at each step (a scanned RNN's weights, packed for its gradient's contractions), the others)."""
    consts = set(prog.inputs[:n_consts])
    once = {j for j, (k, nums) in enumerate(zip(prog.kernels, prog.calls))
            if isinstance(k, Kernel) and k.packing and nums[0] in consts}
    return once, set(range(len(prog.kernels))) - once

  def carried(self, body: Program, each: set[int], carry, bound: list[list[int]], depth: int):
    """How a loop hands its body's carry outputs to the next step: (lines before the loop, at the end of each step,
    after the loop). An output the loop may trade (swappable) swaps pointers with its carry buffer (`bound[j]`: the
    inputs bound to carry j); after the loop the carry is copied back into its own bytes if an odd number of
    steps left it in the output's, and the pointers restored. The others are copied at every step."""
    outs = [o for o, _ in body.outputs[:len(carry)]]
    swap = self.swappable(body, outs, each)
    before, step, after = [], [], []
    for j, (r, o) in enumerate(zip(carry, outs)):
      if j not in swap:
        step.append(f"memcpy(bufs[{r}], bufs[{o}], {self.nbytes(r)});")
        continue
      held, to = f"held{depth}_{j}", " = ".join(f"bufs[{i}]" for i in (r, *bound[j]))
      before.append(f"void *{held}[2] = {{bufs[{r}], bufs[{o}]}};")
      step.append(f"{{ void *p = bufs[{r}]; {to} = bufs[{o}]; bufs[{o}] = p; }}")
      after += [f"if (bufs[{r}] != {held}[0]) memcpy({held}[0], bufs[{r}], {self.nbytes(r)});",
                f"{to} = {held}[0]; bufs[{o}] = {held}[1];"]
    return before, step, after

  @staticmethod
  def swappable(prog: Program, outs: list[int], items: set[int]) -> set[int]:
    """The positions in `outs` (a sub-program's outputs) whose buffer may point at other bytes instead of being
    copied there: a loop trades it with its carry's after each step, a COND's branch writes its result in place. One
    written afresh by `items` (at every step), neither one of the sub-program's inputs nor another output; its
    buffers each have bytes of their own (buffer_plan), so nothing else points at them."""
    written = set()
    for j in items:
      k, nums = prog.kernels[j], prog.calls[j]
      if isinstance(k, Control): written |= set(k.results)
      else: written |= {nums[k.bufs.index(st.buf)] for p in k.steps() for st in p.stores}
    every = [o for o, _ in prog.outputs]
    return {j for j, o in enumerate(outs) if o in written and o not in prog.inputs and every.count(o) == 1}

  def control(self, c: Control, depth: int) -> list[str]:
    """The C block of a COND, SCAN or WHILE (its lines, indented relative to the block)."""
    ops, res, inner = c.operands, c.results, depth + 1
    lines = [f"{{  /* {c.name} */"]
    if c.op is Ops.CALLBACK:
      io = ", ".join(f"bufs[{n}]" for n in (*ops, *res)) or "0"
      lines += [f"  void *io[] = {{{io}}};",
                f"  ((void (*)(int64_t, void **))bufs[{len(self.buffers)}])({self.hosts[id(c)]}, io);"]
    elif c.op is Ops.COND:
      d = self.buffers[ops[0]].dtype
      last = len(c.bodies) - 1
      lines += [f"  int64_t b = (int64_t)*(const {MEMTYPE[d]} *)bufs[{ops[0]}];",
                f"  switch (b < 0 ? 0 : b > {last} ? {last} : b) {{"]
      for i, br in enumerate(c.bodies):
        lines.append(f"  case {i}: {{")
        outs = [o for o, _ in br.outputs]
        direct = self.swappable(br, outs, set(range(len(br.kernels))))
        into = [(f"held{depth}_{j}", r, o) for j, (r, o) in enumerate(zip(res, outs)) if j in direct]
        block = self.bind(br.inputs, ops[1:]) + [f"void *{h} = bufs[{o}]; bufs[{o}] = bufs[{r}];" for h, r, o in into]
        block += self.body(br, inner) + [f"bufs[{o}] = {h};" for h, _, o in into]
        block += [f"memcpy(bufs[{r}], bufs[{o}], {self.nbytes(r)});"
                  for j, (r, o) in enumerate(zip(res, outs)) if j not in direct] + ["break;"]
        lines += ["    " + l for l in block] + ["  }"]
      lines.append("  }")
    elif c.op is Ops.SCAN:
      n_consts, n_carry, length, reverse = c.arg
      (body,) = c.bodies
      ins, carry = body.inputs, res[:n_carry]
      lines += [f"  memcpy(bufs[{r}], bufs[{i}], {self.nbytes(r)});" for r, i in zip(carry, ops[n_consts:n_consts + n_carry])]
      lines += ["  " + l for l in self.bind(ins[:n_consts], ops[:n_consts]) + self.bind(ins[n_consts:n_consts + n_carry], carry)]
      once, each = self.invariant(body, n_consts)
      lines += ["  " + l for l in self.body(body, inner - 1, once)]
      before, trade, after = self.carried(body, each, carry, [[i] for i in ins[n_consts:n_consts + n_carry]], depth)
      lines += ["  " + l for l in before]
      t = f"t{depth}"
      lines.append(f"  for (int64_t {t} = {length - 1}; {t} >= 0; {t}--) {{" if reverse else
                   f"  for (int64_t {t} = 0; {t} < {length}; {t}++) {{")
      step = [f"bufs[{b}] = (char *)bufs[{x}] + {t} * {self.nbytes(b)}LL;"
              for b, x in zip(ins[n_consts + n_carry:], ops[n_consts + n_carry:])]
      step += self.body(body, inner, each)
      step += [f"memcpy((char *)bufs[{r}] + {t} * {self.nbytes(o)}LL, bufs[{o}], {self.nbytes(o)});"
               for r, (o, _) in zip(res[n_carry:], body.outputs[n_carry:])]
      lines += ["    " + l for l in step + trade] + ["  }"] + ["  " + l for l in after]
    else:
      (n_consts,) = c.arg
      cond, body = c.bodies
      lines += [f"  memcpy(bufs[{r}], bufs[{i}], {self.nbytes(r)});" for r, i in zip(res, ops[n_consts:])]
      for g in (cond, body): lines += ["  " + l for l in self.bind(g.inputs[:n_consts], ops[:n_consts]) + self.bind(g.inputs[n_consts:], res)]
      once, each = self.invariant(body, n_consts)
      lines += ["  " + l for l in self.body(body, inner - 1, once)]
      before, trade, after = self.carried(body, each, res, [[c, b] for c, b in zip(cond.inputs[n_consts:],
                                                                                    body.inputs[n_consts:])], depth)
      (flag, _), = cond.outputs
      step = self.body(cond, inner) + [f"if (!*(const _Bool *)bufs[{flag}]) break;"]
      step += self.body(body, inner, each) + trade
      lines += ["  " + l for l in before] + ["  for (;;) {"] + ["    " + l for l in step] + ["  }"]
      lines += ["  " + l for l in after]
    return lines + ["}"]
