"""Kernel IR to C: the rendered text, and compiled programs checked against the interp device bit for bit (with a
tolerance only for transcendental functions and float sums)."""
import math
import platform
import re
import shutil
import subprocess

import ml_dtypes

import numpy as np
import pytest

from oracles import tol, ulps, x64
from tracegrad.devices.cpu import FLAGS
from tracegrad.devices.interp import InterpDevice
from tracegrad.ir import Ops, UOp, dtypes
from tracegrad.devices.base import BufferSpec, Program
from tracegrad.lower.kernel import Kernel, Loop, Reduce, Store, acc_dtype
from tracegrad.lower.render_c import render_const, render_kernel, render_program

I64 = dtypes.int64
FLOATS = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]
INTS = [dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64,
        dtypes.uint64]
WIDE = {dtypes.int64, dtypes.uint64, dtypes.float64}


def K(v, d=I64): return UOp.const(d, v)
def like(a, v, d=None): return UOp.const(d or a.dtype, v, a.shape)
def at(buf, i): return buf.gather(i.reshape((1,)))


def run(cpu, prog, inputs):
  return cpu.run_program(prog, cpu.compile(render_program(prog)), inputs)


def elementwise(fns, in_dtypes, n, parallel=True):
  """One kernel over n points storing fns[k](*loads) into output k; buffers are the inputs, then the outputs."""
  i = UOp.param((), I64)
  ins = [UOp.param((n,), d) for d in in_dtypes]
  vals = [f(*(at(b, i) for b in ins)) for f in fns]
  outs = [UOp.param((n,), v.dtype) for v in vals]
  k = Kernel("elementwise", (*ins, *outs), (Loop(i, n),), tuple(Store(o, i, v) for o, v in zip(outs, vals)),
             parallel=parallel)
  specs = [BufferSpec(n, b.dtype) for b in (*ins, *outs)]
  m = len(ins)
  return Program([k], [tuple(range(len(specs)))], specs, list(range(m)), [(m + j, (n,)) for j in range(len(fns))])


def oracle(fns, arrays):
  bufs = [UOp.buffer(np.array(a)) for a in arrays]
  return InterpDevice().execute([f(*bufs) for f in fns], {})


def assert_same(got, want, what=""):
  """Equal bit for bit, except that any NaN equals any NaN."""
  assert got.dtype == want.dtype and got.shape == want.shape, what
  if want.dtype.kind in "fV":
    gn, wn = np.isnan(got), np.isnan(want)
    bits = np.dtype(f"u{want.dtype.itemsize}")
    bad = (gn != wn) | (~wn & (got.view(bits) != want.view(bits)))
  else:
    bad = got != want
  assert not bad.any(), f"{what}: at {np.flatnonzero(bad)[:8]}: got {got[bad][:8]}, want {want[bad][:8]}"


RTOL_ULPS = {dtypes.float16: 2, dtypes.bfloat16: 1.25, dtypes.float32: 16, dtypes.float64: 450}   # ulps of each dtype


def assert_close(got, want, d, what="", scale=1):
  rtol = scale * ulps(RTOL_ULPS[d], d.np)
  np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=rtol * 1e-3,
                             equal_nan=True, err_msg=what)


def float_values(d):
  info = ml_dtypes.finfo(d.np)
  return np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, 100.0, -7.25, math.inf, -math.inf, math.nan,
                   float(info.smallest_subnormal), float(info.max)], dtype=d.np)


def int_values(d):
  info = np.iinfo(d.np)
  vals = [0, 1, 2, 7, 100 % (info.max + 1), info.max, info.max - 1, info.min, info.min + 1]
  if not d.is_unsigned: vals += [-1, -7, -100 % (info.min - 1)]
  return np.array(vals, dtype=d.np)


def pairs(v):
  a, b = np.meshgrid(v, v)
  return a.reshape(-1), b.reshape(-1)


def binary(op): return lambda a, b, c=None: a.alu(op, b)
def unary(op): return lambda a, b, c=None: a.alu(op)


FLOAT_EXACT = {op: unary(op) for op in (Ops.NEG, Ops.RECIP, Ops.SQRT, Ops.FLOOR)} | {
  op: binary(op) for op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.DIV, Ops.MOD, Ops.MAX, Ops.MIN, Ops.CMPLT, Ops.CMPEQ,
                            Ops.CMPNE)}
FLOAT_EXACT |= {
  Ops.WHERE: lambda a, b: a.alu(Ops.CMPLT, b).where(a, b),
  Ops.CONST: lambda a, b: (a + like(a, -1.5)).alu(Ops.MUL, like(a, math.inf).alu(Ops.NEG)),
  Ops.DETACH: lambda a, b: a.detach() + a,
}
FLOAT_APPROX = {op: unary(op) for op in (Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.COS)} | {
  op: binary(op) for op in (Ops.POW, Ops.ATAN2)}


@pytest.mark.parametrize("d", FLOATS, ids=str)
def test_float_ops(cpu, d):
  with x64(d in WIDE):
    a, b = pairs(float_values(d))
    fns = list(FLOAT_EXACT.values()) + list(FLOAT_APPROX.values())
    got = run(cpu, elementwise(fns, [d, d], a.size), [a, b])
    want = oracle(fns, [a, b])
    for op, g, w in zip([*FLOAT_EXACT, *FLOAT_APPROX], got, want):
      if op in FLOAT_EXACT: assert_same(g, w, f"{d} {op}")
      else: assert_close(g, w, d, f"{d} {op}")


def shift_count(a, b): return b.alu(Ops.AND, like(a, a.dtype.bits - 1))


INT_OPS = {op: binary(op) for op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.MIN, Ops.CMPLT,
                                     Ops.CMPEQ, Ops.CMPNE, Ops.AND, Ops.OR, Ops.XOR)} | {
  Ops.NEG: unary(Ops.NEG),
  Ops.SHL: lambda a, b: a.alu(Ops.SHL, shift_count(a, b)),
  Ops.SHR: lambda a, b: a.alu(Ops.SHR, shift_count(a, b)),
  Ops.WHERE: lambda a, b: a.alu(Ops.CMPLT, b).where(b, a),
  Ops.CONST: lambda a, b: a.alu(Ops.MUL, like(a, 250 if a.dtype.is_unsigned else -3))
                          + like(a, dtypes.min_value(a.dtype)),
}


@pytest.mark.parametrize("d", INTS, ids=str)
def test_int_ops(cpu, d):
  with x64(d in WIDE):
    a, b = pairs(int_values(d))
    got = run(cpu, elementwise(list(INT_OPS.values()), [d, d], a.size), [a, b])
    for op, g, w in zip(INT_OPS, got, oracle(list(INT_OPS.values()), [a, b])): assert_same(g, w, f"{d} {op}")


def test_bool_ops(cpu):
  fns = [binary(op) for op in (Ops.AND, Ops.OR, Ops.XOR, Ops.CMPLT, Ops.CMPEQ, Ops.CMPNE, Ops.MAX, Ops.MIN)]
  fns += [lambda a, b: a.where(b, like(b, True)), lambda a, b: a.alu(Ops.XOR, like(a, True))]
  a, b = pairs(np.array([False, True]))
  for g, w in zip(run(cpu, elementwise(fns, [dtypes.bool_] * 2, a.size), [a, b]), oracle(fns, [a, b])):
    assert_same(g, w, "bool")


def saturating_values(src, dst):
  """Values of float type src to convert to integer type dst: fractions, NaN, infinities, and the values at and
  beside dst's bounds and src's largest value (XLA saturates what C leaves undefined)."""
  info = np.iinfo(dst.np)
  v = [0.0, -0.0, 0.3, 0.99, -0.7, 1.0, -1.5, 2.5, 99.9, -127.9, math.nan, -math.nan, math.inf, -math.inf]
  v += [b * f for b in (info.min, info.max + 1.0) for f in (1, -1, 2, 1e10)]
  with np.errstate(all="ignore"):
    x = np.concatenate([np.array(v).astype(src.np), np.array([ml_dtypes.finfo(src.np).max], src.np)])
  bits = np.dtype(f"u{src.itemsize}")
  own = x[np.isfinite(x.astype(np.float64)) & (x != 0)].view(bits)
  return np.concatenate([x, (own + 1).view(src.np), (own - 1).view(src.np)])


def cast_values(src, dst):
  """Values of src to convert to dst."""
  if src.is_bool: return np.array([False, True])
  if src.is_int:
    extra = [(1 << 24) + (1 << 16) + 1, (1 << 24) + 1] if src.bits >= 32 else []
    extra += [(1 << 40) + (1 << 32) + 1, -(1 << 62) - (1 << 54) - 1] if src.bits == 64 else []
    return np.concatenate([int_values(src), np.array(extra, np.int64).astype(src.np)])
  if dst.is_int: return saturating_values(src, dst)
  extra = [1 + 2**-8 + 2**-30, 1 + 2**-11 + 2**-40, 65519.99, 65520.0, 1e-40, 3e-8] if src is dtypes.float64 else []
  return np.concatenate([float_values(src), np.array(extra, np.float64).astype(src.np)])


ALL = [dtypes.bool_, *INTS, *FLOATS]


@pytest.mark.parametrize("src", ALL, ids=str)
def test_casts(cpu, src):
  with x64(True):
    for_dst = {dst: cast_values(src, dst) for dst in ALL if dst is not src}
    fns = [lambda a, dst=dst: a.cast(dst) for dst in for_dst]
    n = max(v.size for v in for_dst.values())
    # one input per destination, padded with its first value
    ins = [np.resize(v, n) for v in for_dst.values()]
    prog = elementwise([lambda *xs, j=j, f=f: f(xs[j]) for j, f in enumerate(fns)], [src] * len(ins), n)
    got = run(cpu, prog, ins)
    want = oracle([lambda *xs, j=j, f=f: f(xs[j]) for j, f in enumerate(fns)], ins)
    for dst, g, w in zip(for_dst, got, want): assert_same(g, w, f"{src} -> {dst}")


def gcc(source: str, out, *flags: str) -> subprocess.CompletedProcess:
  return subprocess.run(["gcc", *(f for f in FLAGS if f != "-shared"), *flags, "-x", "c", "-", "-o", str(out), "-lm"],
                        input=source, capture_output=True, text=True)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_float_to_int_casts_vectorise(tmp_path):
  """A saturating conversion is compares and selects, and its loop stays vectorised."""
  for src, dst in [(dtypes.float32, dtypes.int32), (dtypes.float32, dtypes.uint8), (dtypes.float64, dtypes.int32),
                   (dtypes.float16, dtypes.int16), (dtypes.bfloat16, dtypes.uint32)]:
    prog = elementwise([lambda a, dst=dst: a.cast(dst)], [src], 4096, parallel=False)
    r = gcc(render_program(prog), tmp_path / "k.o", "-c", "-fopt-info-vec-optimized")
    assert r.returncode == 0, r.stderr
    assert "loop vectorized" in r.stderr, f"{src} -> {dst}"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
@pytest.mark.parametrize("dst", FLOATS, ids=str)
def test_bool_to_float_casts_vectorise(tmp_path, dst):
  """A bool becomes a float by a select: GCC leaves a loop that converts a _Bool by a cast unvectorised (a ReLU's
  gradient, a mask from a compare, ran 5x slower)."""
  for fn, src in [(lambda a: a.alu(Ops.CMPLT, like(a, 0.0)).cast(dst), dtypes.float32),
                  (lambda a: a.cast(dst), dtypes.bool_)]:
    prog = elementwise([fn], [src], 4096, parallel=False)
    r = gcc(render_program(prog), tmp_path / "k.o", "-c", "-fopt-info-vec-optimized")
    assert r.returncode == 0, r.stderr
    assert "loop vectorized" in r.stderr, f"{src} -> {dst}"


MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  static const long sizes[] = {%s};
  void *bufs[%d];
  for (int i = 0; i < %d; i++) bufs[i] = calloc((size_t)sizes[i] + 1, 1);
  for (int i = 0; i < %d; i++) if (fread(bufs[i], 1, (size_t)sizes[i], stdin) != (size_t)sizes[i]) return 2;
  tg_run(bufs);
  for (int i = %d; i < %d; i++) fwrite(bufs[i], 1, (size_t)sizes[i], stdout);
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_float_to_int_casts_are_defined(tmp_path):
  """Float to integer conversions of NaN, infinities and values beyond the range run clean under gcc's
  float-cast-overflow sanitizer (which does catch a plain C cast here), and give what the interp device gives."""
  flags = ("-fsanitize=float-cast-overflow", "-fno-sanitize-recover=all")
  probe = gcc("int main(void) { volatile float x = 3e9f; return (int)x == 7; }", tmp_path / "probe", *flags)
  if probe.returncode != 0: pytest.skip(f"no float-cast-overflow sanitizer: {probe.stderr.strip()[:200]}")
  assert subprocess.run([str(tmp_path / "probe")], capture_output=True).returncode != 0
  with x64(True):
    casts = [(s, d) for s in FLOATS for d in INTS]
    ins = [saturating_values(s, d) for s, d in casts]
    n = max(x.size for x in ins)
    ins = [np.resize(x, n) for x in ins]
    fns = [lambda *xs, j=j, d=d: xs[j].cast(d) for j, (_, d) in enumerate(casts)]
    prog = elementwise(fns, [s for s, _ in casts], n)
    m, sizes = len(ins), [b.size * b.dtype.itemsize for b in prog.buffers]
    main = MAIN % (", ".join(map(str, sizes)), len(sizes), len(sizes), m, m, len(sizes))
    r = gcc(render_program(prog) + main, tmp_path / "casts", *flags)
    assert r.returncode == 0, r.stderr
    done = subprocess.run([str(tmp_path / "casts")], input=b"".join(x.tobytes() for x in ins), capture_output=True)
    assert done.returncode == 0 and b"runtime error" not in done.stderr, done.stderr.decode()
    got = np.frombuffer(done.stdout, np.uint8)
    offsets = np.cumsum([0] + sizes[m:])
    for j, ((s, d), w) in enumerate(zip(casts, oracle(fns, ins))):
      assert_same(got[offsets[j]:offsets[j + 1]].view(d.np), w, f"{s} -> {d}")


def rounding_cases(d):
  """Every value of a half type, the midpoints between neighbours and the floats just beside them, as float32."""
  h = np.arange(1 << 16, dtype=np.uint16).view(d.np)
  v = np.sort(h[np.isfinite(h)].astype(np.float64))
  mid = ((v[1:] + v[:-1]) / 2).astype(np.float32)
  return np.concatenate([h.astype(np.float32), mid, np.nextafter(mid, np.float32(np.inf)),
                         np.nextafter(mid, np.float32(-np.inf))])


def test_half_conversions_exhaustive(cpu):
  ins = [rounding_cases(dtypes.float16), rounding_cases(dtypes.bfloat16)]
  n = max(x.size for x in ins)
  ins = [np.resize(x, n) for x in ins]
  fns = [lambda a, b: a.cast(dtypes.float16), lambda a, b: b.cast(dtypes.bfloat16),
         lambda a, b: a.cast(dtypes.float16).cast(dtypes.float32),
         lambda a, b: b.cast(dtypes.bfloat16).cast(dtypes.float32)]
  got = run(cpu, elementwise(fns, [dtypes.float32] * 2, n), ins)
  with np.errstate(all="ignore"):
    want = [ins[0].astype(np.float16), ins[1].astype(ml_dtypes.bfloat16)]
  for g, w in zip(got, want + [w.astype(np.float32) for w in want]): assert_same(g, w, str(g.dtype))


BITCASTS = [(dtypes.float32, dtypes.int32), (dtypes.int32, dtypes.float32), (dtypes.uint32, dtypes.float32),
            (dtypes.float16, dtypes.int16), (dtypes.int16, dtypes.float16), (dtypes.uint16, dtypes.bfloat16),
            (dtypes.bfloat16, dtypes.uint16), (dtypes.float16, dtypes.bfloat16), (dtypes.bfloat16, dtypes.float16),
            (dtypes.float64, dtypes.int64), (dtypes.uint64, dtypes.float64), (dtypes.int8, dtypes.uint8),
            (dtypes.bool_, dtypes.int8)]


def test_bitcasts(cpu):
  rng = np.random.default_rng(0)
  with x64(True):
    ins = []
    for src, dst in BITCASTS:
      bits = rng.integers(0, 256, size=64 * src.itemsize, dtype=np.uint8).view(f"u{src.itemsize}")
      special = {2: [0x7c01, 0xfe00, 0x7f81, 0xffc1, 0x8000, 0x0001], 4: [0x7f800001, 0xffc00000, 0x80000000, 1],
                 8: [0x7ff0000000000001, 0x8000000000000000], 1: [0, 1]}[src.itemsize]
      bits = np.concatenate([bits, np.array(special, bits.dtype)])[:64]
      ins.append(np.array(bits % 2 if src.is_bool else bits).astype(src.np) if src.is_bool else bits.view(src.np))
    fns = [lambda *xs, j=j, dst=dst: xs[j].bitcast(dst) for j, (_, dst) in enumerate(BITCASTS)]
    got = run(cpu, elementwise(fns, [s for s, _ in BITCASTS], 64), ins)
    for (src, dst), x, g in zip(BITCASTS, ins, got):
      want = x.view(dst.np)
      assert np.array_equal(g.view(f"u{dst.itemsize}"), want.view(f"u{dst.itemsize}")), f"{src} -> {dst}"


CONSTS = [(dtypes.float32, [0.1, -0.0, math.inf, -math.inf, math.nan, 1e-45, 3.4028234663852886e38, 1e20, 7.0]),
          (dtypes.float64, [0.1, -0.0, math.inf, math.nan, 5e-324, 1.7976931348623157e308, 1 / 3]),
          (dtypes.float16, [0.1, 65504.0, 6e-8, -0.0, math.inf, 1 + 2**-11 + 2**-40]),
          (dtypes.bfloat16, [0.1, 1e-40, 3e38, 1 + 2**-8 + 2**-30, -math.inf]),
          (dtypes.int64, [-2**63, 2**63 - 1, -5, 0]), (dtypes.uint64, [2**64 - 1, 0]),
          (dtypes.int32, [-2**31, 2**31 - 1, -1]), (dtypes.uint32, [2**32 - 1]), (dtypes.int8, [-128, 127]),
          (dtypes.uint8, [255]), (dtypes.int16, [-32768]), (dtypes.uint16, [65535]), (dtypes.bool_, [True, False])]


def test_constants(cpu):
  with x64(True):
    cases = [(d, v) for d, vs in CONSTS for v in vs]
    fns = [lambda x, d=d, v=v: like(x, v, d) for d, v in cases]
    got = run(cpu, elementwise(fns, [dtypes.int32], 1), [np.zeros(1, np.int32)])
    for (d, v), g in zip(cases, got): assert_same(g, np.array([v], d.np), f"{d} {v!r}")


def test_const_literals():
  assert render_const(0.1, dtypes.float32) == "0.100000001f"
  assert render_const(-0.0, dtypes.float32) == "(-0.0f)"
  assert render_const(1.0, dtypes.float64) == "1.0"
  assert render_const(math.inf, dtypes.float32) == "INFINITY"
  assert render_const(-math.inf, dtypes.float64) == "(-INFINITY)"
  assert render_const(math.nan, dtypes.float16) == "NAN"
  assert render_const(-2**63, dtypes.int64) == "(-9223372036854775807LL - 1)"
  assert render_const(2**64 - 1, dtypes.uint64) == "18446744073709551615ULL"
  assert render_const(-2**31, dtypes.int32) == "(-2147483647 - 1)"
  assert render_const(0.1, dtypes.bfloat16) == f"{float(ml_dtypes.bfloat16(0.1)):.9g}f"


# ---- reductions ----

def reduce_program(op, d, n, m, value=lambda x: x):
  """out[i] = op over j of value(a[i*m + j]), accumulated in acc_dtype(d)."""
  i, j = UOp.param((), I64), UOp.param((), I64)
  a, out = UOp.param((n * m,), d), UOp.param((n,), d)
  acc = UOp.param((), acc_dtype(d))
  red = Reduce(op, acc, (Loop(j, m),), value(at(a, i * K(m) + j)).cast(acc.dtype))
  k = Kernel(f"reduce_{op.name.lower()}", (out, a), (Loop(i, n),), (Store(out, i, acc.cast(d)),), red)
  return k


def reduce_values(d, n, m, rng):
  if d.is_bool: return rng.random(n * m) < 0.7
  if d.is_int: return rng.integers(-3 if not d.is_unsigned else 0, 4, n * m).astype(d.np)
  x = rng.uniform(0.5, 1.5, n * m).astype(np.float32)
  x[3], x[m + 2], x[2 * m + 1], x[3 * m] = math.nan, math.inf, -math.inf, math.nan
  return x.astype(d.np)


REDUCES = (Ops.REDUCE_SUM, Ops.REDUCE_PROD, Ops.REDUCE_MAX, Ops.REDUCE_MIN)


@pytest.mark.parametrize("d", [dtypes.float32, dtypes.float16, dtypes.bfloat16, dtypes.int32, dtypes.uint8,
                               dtypes.bool_, dtypes.float64, dtypes.int64], ids=str)
def test_reduce(cpu, d):
  n, m = 8, 33
  with x64(d in WIDE):
    x = reduce_values(d, n, m, np.random.default_rng(1))
    kernels = [reduce_program(op, d, n, m) for op in REDUCES]
    prog = Program(kernels, [(1 + j, 0) for j in range(4)], [BufferSpec(n * m, d)] + [BufferSpec(n, d)] * 4, [0],
                   [(1 + j, (n,)) for j in range(4)])
    got = run(cpu, prog, [x])
    want = InterpDevice().execute([UOp.buffer(x.reshape(n, m)).reduce(op, (1,)) for op in REDUCES], {})
    for op, g, w in zip(REDUCES, got, want):
      w = w.reshape(n)
      # numpy rounds a half-type product or sum at every step; the kernel accumulates in float32
      if d.is_float and op in (Ops.REDUCE_SUM, Ops.REDUCE_PROD): assert_close(g, w, d, f"{d} {op}", scale=5)
      else: assert_same(g, w, f"{d} {op}")


def test_big_reduce_over_two_loops(cpu):
  """Threads over two outer loops, two reduce loops, a hoisted loop-invariant load."""
  n1, n2, m1, m2 = 16, 24, 12, 10
  i1, i2, j1, j2 = (UOp.param((), I64) for _ in range(4))
  a, s, out = (UOp.param((size,), dtypes.float32) for size in (n1 * n2 * m1 * m2, n1, n1 * n2))
  acc = UOp.param((), dtypes.float32)
  flat = ((i1 * K(n2) + i2) * K(m1) + j1) * K(m2) + j2
  red = Reduce(Ops.REDUCE_SUM, acc, (Loop(j1, m1), Loop(j2, m2)), at(a, flat) * at(s, i1))
  k = Kernel("r", (out, a, s), (Loop(i1, n1), Loop(i2, n2)), (Store(out, i1 * K(n2) + i2, acc),), red)
  src = render_kernel(k)
  assert "parallel for collapse(2)" in src and src.index("b2[i0]") < src.index("float acc")
  prog = Program([k], [(2, 0, 1)], [BufferSpec(a.size, dtypes.float32), BufferSpec(n1, dtypes.float32),
                                    BufferSpec(n1 * n2, dtypes.float32)], [0, 1], [(2, (n1, n2))])
  rng = np.random.default_rng(2)
  x, y = rng.standard_normal(a.size).astype(np.float32), rng.standard_normal(n1).astype(np.float32)
  (got,) = run(cpu, prog, [x, y])
  want = (x.reshape(n1, n2, m1 * m2).astype(np.float64) * y[:, None, None]).sum(-1)
  np.testing.assert_allclose(got, want, rtol=ulps(84), atol=ulps(84))


def test_long_float_sums_are_accurate(cpu):
  """Sums add blocks of values summed on their own: 2^31 ones (a running float32 sum stops at 2^24 per
  accumulator) come out exact, threaded (each block's sum kept, then added in order) when the sum is one value, and
  long rows keep numpy's accuracy."""
  j = UOp.param((), I64)
  one, out, acc = UOp.param((1,), dtypes.float32), UOp.param((1,), dtypes.float32), UOp.param((), dtypes.float32)
  k = Kernel("ones", (out, one), (), (Store(out, K(0), acc),), Reduce(Ops.REDUCE_SUM, acc, (Loop(j, 2 ** 31),),
                                                                      at(one, K(0))))
  prog = Program([k], [(1, 0)], [BufferSpec(1, dtypes.float32)] * 2, [0], [(1, (1,))])
  assert "#pragma omp parallel for" in render_program(prog) and "parts[" in render_program(prog)
  assert run(cpu, prog, [np.ones(1, np.float32)])[0][0] == 2.0 ** 31
  n, m = 3, 300_001
  x = np.random.default_rng(0).random(n * m).astype(np.float32)
  (got,) = run(cpu, Program([reduce_program(Ops.REDUCE_SUM, dtypes.float32, n, m)], [(1, 0)],
                            [BufferSpec(n * m, dtypes.float32), BufferSpec(n, dtypes.float32)], [0], [(1, (n,))]), [x])
  exact = x.reshape(n, m).astype(np.float64).sum(1)
  assert np.all(np.abs(got - exact) <= np.abs(x.reshape(n, m).sum(1) - exact) + 4 * np.spacing(exact.astype(np.float32)))


@pytest.mark.parametrize("w,lanes", [(32, 32), (34, 32), (20, 16), (12, 0)])
def test_long_sums_of_short_rows_keep_a_lane_per_element_of_a_row(w, lanes):
  """A long sum whose rows are shorter than SUM_LANES' 64 floats (a batch norm's sum over 64 x 32 x w, its rows of a
  padded gradient read 34 apart) keeps as many partial sums as fit a row (32 or 16), so the row still runs as
  vectors: the same sums as float64 numpy, the rows' tails included."""
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  x = np.random.default_rng(3).standard_normal((4, 40, 32, w + 2)).astype(np.float32)
  f = lambda x: x[:, :, :, 1:w + 1].sum((0, 2, 3))
  (k,) = [k for k in schedule(tg.make_graph(f)(x)).kernels if k.reduce is not None]
  assert (f"float part[{lanes}];" in k.source) == bool(lanes) and ("float part = 0.0f;" in k.source) == (not lanes)
  if tg.default_backend() == "cpu":
    n = 4 * 32 * w
    np.testing.assert_allclose(np.asarray(tg.jit(f)(x)), x[:, :, :, 1:w + 1].astype(np.float64).sum((0, 2, 3)),
                               rtol=ulps(np.sqrt(n)), atol=ulps(4 * np.sqrt(n)))


def test_empty_reduce(cpu):
  k = reduce_program(Ops.REDUCE_MAX, dtypes.float32, 3, 0)
  prog = Program([k], [(1, 0)], [BufferSpec(0, dtypes.float32), BufferSpec(3, dtypes.float32)], [0], [(1, (3,))])
  (got,) = run(cpu, prog, [np.zeros(0, np.float32)])
  assert np.all(got == -np.inf)


def _avx2_host() -> bool:
  try:
    return platform.machine() == "x86_64" and "avx2" in open("/proc/cpuinfo").read().split()
  except OSError:
    return False


@pytest.mark.parametrize("target", ["native", "x86-64-v3"])
def test_int_max_min_of_compares(cpu, monkeypatch, target):
  """Short rows of an int max or min of compares: gcc 12 vectorising them unrolled for AVX2 took the compare's mask
  (-1) for the int, so that max(x > 0) came out 0 where some x > 0."""
  if target != "native":
    if not _avx2_host(): pytest.skip("compiling for x86-64-v3 needs an x86-64 host with AVX2")
    monkeypatch.setenv("TRACEGRAD_CPU_TARGET", target)
  rng = np.random.default_rng(3)
  for n, m in ((2, 4), (3, 4), (5, 8)):
    x = rng.standard_normal(n * m).astype(np.float32)
    i, j = UOp.param((), I64), UOp.param((), I64)
    a, acc = UOp.param((n * m,), dtypes.float32), UOp.param((), dtypes.int32)
    hit = like(acc, 0.5, dtypes.float32).alu(Ops.CMPLT, at(a, i * K(m) + j).alu(Ops.MAX, -at(a, i * K(m) + j)))
    kernels = []
    for op in (Ops.REDUCE_MAX, Ops.REDUCE_MIN):
      out = UOp.param((n,), dtypes.int32)
      kernels.append(Kernel(f"reduce_{op.name.lower()}", (out, a), (Loop(i, n),), (Store(out, i, acc),),
                            Reduce(op, acc, (Loop(j, m),), hit.cast(dtypes.int32))))
    prog = Program(kernels, [(1, 0), (2, 0)], [BufferSpec(n * m, dtypes.float32)] + [BufferSpec(n, dtypes.int32)] * 2,
                   [0], [(1, (n,)), (2, (n,))])
    got_max, got_min = run(cpu, prog, [x])
    want = (np.abs(x) > 0.5).astype(np.int32).reshape(n, m)
    np.testing.assert_array_equal(got_max, want.max(1), err_msg=f"max over rows of {m}, {target}")
    np.testing.assert_array_equal(got_min, want.min(1), err_msg=f"min over rows of {m}, {target}")



@pytest.mark.parametrize("target", ["native", "x86-64-v3", "x86-64"])
def test_a_transposing_copy_moves_squares_of_vectors_through_registers(cpu, monkeypatch, target):
  """A transpose (as a contraction's packing copy is) reads a square of vectors along one loop, shuffles it in
  registers and writes it along the other, on every target's vector width: numpy's values for floats and doubles.
  A copy whose last two loops are not whole squares, or that converts what it copies, stays a loop of elements."""
  import tracegrad.numpy as tnp
  from tracegrad import make_graph
  from tracegrad.lower.schedule import schedule
  if target != "native":
    if not _avx2_host(): pytest.skip("compiling for an x86-64 target needs an x86-64 host")
    monkeypatch.setenv("TRACEGRAD_CPU_TARGET", target)
  rng = np.random.default_rng(5)
  cases = [(np.float32, (64, 48), (1, 0), None), (np.float64, (3, 32, 80), (0, 2, 1), None),
           (np.float32, (32, 5, 16), (2, 1, 0), None), (np.float64, (16, 16), (1, 0), None),
           (np.float32, (40, 24), (1, 0), None), (np.float32, (32, 48), (1, 0), np.float64)]
  for dt, shape, perm, to in cases:
    x = rng.standard_normal(shape).astype(dt)
    f = lambda v: tnp.transpose(v if to is None else v.astype(to), perm)
    with x64():
      (k,) = (prog := schedule(make_graph(f)(x))).kernels
      (got,) = run(cpu, prog, [x])
    # (32, 5, 16) -> (16, 5, 32): the scheduler puts the loop along which x is read second-last (16 by 32)
    whole = to is None and all(l.extent % 16 == 0 for l in k.loops[-2:])
    assert ("tg_tr_v" in k.source) == whole, k.source
    np.testing.assert_array_equal(got, np.transpose(x, perm).astype(to or dt), err_msg=f"{shape} {perm} {target}")

@pytest.mark.parametrize("target", ["native", "x86-64-v3"])
def test_a_transposing_elementwise_kernel_runs_along_its_near_reads_with_strides_gcc_vectorises(cpu, monkeypatch,
                                                                                               target):
  """A ReLU's mask applied to a channels-last cotangent read from a channels-first one (a convolution's layouts): the
  channels-first read steps 1 KB a channel, so the loop along the width (where it is contiguous, and the other
  accesses step a line) runs innermost, with the channels just outside it, whose lines it reuses. The width's
  stride of 32 floats reaches gcc as an opaque value (TG_OPAQUE): at a constant power of two of 128 bytes or more,
  gcc 12 leaves the loop scalar, branching on the mask. numpy's values."""
  import tracegrad.numpy as tnp
  from tracegrad import make_graph
  from tracegrad.lower.schedule import schedule
  if target != "native":
    if not _avx2_host(): pytest.skip("compiling for an x86-64 target needs an x86-64 host")
    monkeypatch.setenv("TRACEGRAD_CPU_TARGET", target)
  rng = np.random.default_rng(6)
  a = rng.standard_normal((2, 16, 16, 32)).astype(np.float32)
  b = rng.standard_normal((2, 32, 16, 16)).astype(np.float32)
  f = lambda a, b: tnp.where(tnp.transpose(b, (0, 2, 3, 1)) > 0, a, 0.0)
  (k,) = (prog := schedule(make_graph(f)(a, b))).kernels
  assert [l.extent for l in k.loops] == [2, 16, 32, 16] and "TG_OPAQUE(32LL)" in k.source, k.source
  (got,) = run(cpu, prog, [a, b])
  np.testing.assert_array_equal(got.reshape(a.shape), np.where(np.transpose(b, (0, 2, 3, 1)) > 0, a, 0.0))


@pytest.mark.parametrize("target", ["native", "x86-64-v3"])
def test_a_mirrored_read_of_complex_pairs_reaches_gcc_as_an_opaque_stride(cpu, monkeypatch, target):
  """A real FFT's gradient reads the spectrum's pairs (re, im) mirrored, at a stride of -2 floats along the
  vectorised loop: at a constant negative power of two, gcc 12 leaves the loop scalar (11 -> 0.85 ms for one such
  kernel), so the stride reaches it as TG_OPAQUE(-2). numpy's values."""
  import tracegrad.numpy as tnp
  from tracegrad import make_graph
  from tracegrad.lower.schedule import schedule
  if target != "native":
    if not _avx2_host(): pytest.skip("compiling for an x86-64 target needs an x86-64 host")
    monkeypatch.setenv("TRACEGRAD_CPU_TARGET", target)
  x = np.random.default_rng(8).standard_normal((4, 64, 2)).astype(np.float32)
  f = lambda x: x[:, ::-1, 0] * tnp.exp(x[:, ::-1, 1]) + x[:, :, 1]
  (k,) = (prog := schedule(make_graph(f)(x))).kernels
  assert "TG_OPAQUE(-2LL)" in k.source and "tg_sm2" in k.source, k.source
  (got,) = run(cpu, prog, [x])
  want = x[:, ::-1, 0] * np.exp(x[:, ::-1, 1].astype(np.float64)) + x[:, :, 1]
  np.testing.assert_allclose(got.reshape(want.shape), want, **tol("float32", 8, 8))


@pytest.mark.parametrize("dt", [np.uint32, np.int64, np.uint8])
def test_a_parity_test_beside_a_float_compare_renders_as_a_shift(cpu, dt):
  """(n & 1) == 0 is rendered as (n << 31) == 0 (63 for 64-bit n): gcc 12 takes the first for a bool of n's width
  and leaves a loop scalar that combines it with a float compare (a dropout mask's round-to-nearest-even, which
  then branched on every element). numpy's values, odd and even, negative and at the type's ends."""
  import tracegrad.numpy as tnp
  from tracegrad import make_graph
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(7)
  info = np.iinfo(dt)
  n = np.concatenate([rng.integers(info.min, info.max, 1000, dtype=dt, endpoint=True),
                      np.array([info.min, info.max, 0, 1], dt)])
  x = rng.standard_normal(n.shape).astype(np.float32)
  f = lambda x, n: tnp.where(((n & 1) == 0) & (x > 0), x, tnp.where((n & 1) != 0, -1.0, 1.0))
  with x64():
    (k,) = (prog := schedule(make_graph(f)(x, n))).kernels
    assert f"<< {63 if np.dtype(dt).itemsize == 8 else 31}) == 0" in k.source and "& 1" not in k.source, k.source
    (got,) = run(cpu, prog, [x, n])
  np.testing.assert_array_equal(got, np.where(((n & 1) == 0) & (x > 0), x, np.where((n & 1) != 0, -1.0, 1.0)))


def test_a_scans_packing_copies_of_its_constants_run_once_before_its_loop(cpu):
  """The gradient of a scanned RNN contracts with its weights, transposed, at every step: their packing copies read
  only the scan's constants, so they run once before the loop, not at each of its steps. JAX's gradients."""
  import tracegrad as tg
  import tracegrad.numpy as tnp
  from tracegrad import lax, make_graph
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(9)
  xs = rng.standard_normal((6, 16, 32)).astype(np.float32)
  wh = (rng.standard_normal((64, 64)) * 0.1).astype(np.float32)
  wx = (rng.standard_normal((32, 64)) * 0.1).astype(np.float32)

  def loss(np_, lax_, wh, wx, xs):
    def cell(h, x):
      h = np_.tanh(x @ wx + h @ wh)
      return h, h
    return np_.mean(lax_.scan(cell, np_.zeros((16, 64), np.float32), xs)[1] ** 2)
  prog = schedule(make_graph(tg.grad(lambda wh, wx, xs: loss(tnp, lax, wh, wx, xs), argnums=(0, 1)))(wh, wx, xs))
  src = render_program(prog)
  scans = [block for block in src.split("/* c")[1:] if "_scan */" in block.split("\n", 1)[0]]
  assert any("_pack(" in b for b in scans), src
  for b in scans: assert "_pack(" not in b.split("for (int64_t", 1)[1].split("\n  }\n", 1)[0], b
  got = run(cpu, prog, [wh, wx, xs])
  jax = pytest.importorskip("jax")
  want = jax.grad(lambda wh, wx, xs: loss(jax.numpy, jax.lax, wh, wx, xs), argnums=(0, 1))(wh, wx, xs)
  for g, w in zip(got, want): np.testing.assert_allclose(g.reshape(w.shape), w, rtol=ulps(256), atol=ulps(256))


@pytest.mark.parametrize("steps", [1, 4, 5])
def test_loops_trade_carry_buffers_rather_than_copying_them_and_keep_the_values(cpu, steps):
  """A scan or while loop whose body writes its next carry afresh swaps that buffer with the carry's after each step
  (no copy); after an odd number of steps the carry is copied back. A cond's branch writes its result in place. Carries
  passed through, set to a constant, also stacked as ys, made by a cond or carried by an inner loop keep their values
  (against the interp device)."""
  import tracegrad as tg
  import tracegrad.numpy as tnp
  from tracegrad import lax, make_graph
  from tracegrad.lower.schedule import schedule

  def f(x, xs):
    def inner(c, y): return c * 0.5 + y, c.sum()
    def body(carry, y):
      a, b, same, zero = carry
      a = lax.cond(y.sum() > 0, lambda a: tnp.tanh(a[::-1] + y), lambda a: a * 0.5 - y, a)
      b, sums = lax.scan(inner, b + a, xs[:3])
      return (a, b, same, tnp.zeros(4)), (a, sums)
    out, ys = lax.scan(body, (x, x * 2, x + 1, x), xs)
    w = lax.while_loop(lambda c: c[1] < steps, lambda c: (c[0][::-1] * 1.5 - 1.0, c[1] + 1), (x, 0))
    return out, ys, w
  rng = np.random.default_rng(steps)
  x, xs = rng.standard_normal(4).astype(np.float32), rng.standard_normal((steps, 4)).astype(np.float32)
  graph = make_graph(f)(x, xs)
  prog = schedule(graph)
  src = render_program(prog)
  outer = [b for b in src.split("/* c")[1:] if "_scan */" in b.split("\n", 1)[0]][0]
  assert "void *held" in outer and outer.count("memcpy(bufs") < 8, outer
  assert re.search(r"case 1: \{[^}]*void \*held", src), src
  got = run(cpu, prog, [x, xs])
  want = tg.run.Executable(graph, "interp").run([x, xs])
  for g, w in zip(got, want): np.testing.assert_allclose(g, w, rtol=ulps(8), atol=ulps(8))


def test_a_converted_right_operand_is_converted_once_into_its_panels(cpu):
  """x @ w.astype(bfloat16) with w big enough for column panels: each element of w is rounded to bfloat16 once, as
  its panel is filled, not at each multiply-add that reads it (a bfloat16 MLP's forward contraction ran at half the
  speed). numpy's values on the rounded operands."""
  import tracegrad.numpy as tnp
  from tracegrad import make_graph
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(8)
  x, w = rng.standard_normal((128, 784)).astype(np.float32), rng.standard_normal((784, 512)).astype(np.float32)
  f = lambda x, w: x @ w.astype(tnp.bfloat16).astype(tnp.float32)
  (k,) = (prog := schedule(make_graph(f)(x, w))).kernels
  fill, blocks = k.source.split("for (int64_t ib = 0;", 1)
  assert "panel[" in fill and "tg_rb(" in fill and "tg_rb(" not in blocks, k.source
  (got,) = run(cpu, prog, [x, w])
  want = x.astype(np.float64) @ w.astype(ml_dtypes.bfloat16).astype(np.float64)
  np.testing.assert_allclose(got.reshape(want.shape), want, rtol=ulps(64), atol=ulps(64) * np.abs(want).max())


@pytest.mark.parametrize("target", ["native", "x86-64-v3", "x86-64"])
def test_a_transposed_right_operand_fills_its_panels_through_registers(cpu, monkeypatch, target):
  """x @ w.T with a big w: one kernel, whose threads fill their column panels from w's rows a square of vectors at
  a time (transposed in registers), with no packing copy of w.T before it; a last panel narrower than a register
  block is filled element by element. numpy's values for floats and doubles, on every target's vector width."""
  import tracegrad.numpy as tnp
  from tracegrad import make_graph
  from tracegrad.lower.render_c import PANEL_MAX_STEPS
  from tracegrad.lower.schedule import schedule
  if target != "native":
    if not _avx2_host(): pytest.skip("compiling for an x86-64 target needs an x86-64 host")
    monkeypatch.setenv("TRACEGRAD_CPU_TARGET", target)
  rng = np.random.default_rng(6)
  for dt, (m, n, k) in ((np.float32, (136, 520, 512)), (np.float64, (128, 136, 1024))):
    x, w = rng.standard_normal((m, k)).astype(dt), rng.standard_normal((n, k)).astype(dt)
    with x64():
      (kern,) = (prog := schedule(make_graph(lambda x, w: x @ w.T)(x, w))).kernels
      (got,) = run(cpu, prog, [x, w])
    assert "tg_tr_v" in kern.source and "panels" in kern.source
    np.testing.assert_allclose(got.reshape(m, n), x.astype(np.float64) @ w.T.astype(np.float64),
                               **tol(np.dtype(dt).name, 4 * k, 4 * k), err_msg=f"{dt.__name__} {target}")
  # a sum over two loops whose inner one is contiguous in both (a filter gradient: output gradients by windows,
  # summed over the batch and the positions) fills its panels the same way, the batch's steps slowest; a long one
  # too (8192 steps, 4 MB of columns), whose panels each hold one chunk of the sum at a time
  for dt, (b, m, n, p) in ((np.float32, (4, 128, 136, 512)), (np.float64, (2, 128, 260, 256)),
                           (np.float32, (16, 128, 136, 512))):
    dy, win = rng.standard_normal((b, m, p)).astype(dt), rng.standard_normal((b, n, p)).astype(dt)
    with x64():
      (kern,) = (prog := schedule(make_graph(lambda a, c: tnp.einsum("bip,bjp->ij", a, c))(dy, win))).kernels
      (got,) = run(cpu, prog, [dy, win])
    assert "tg_tr_v" in kern.source and "panels" in kern.source and len(kern.reduce.loops) == 2
    assert ("for (int64_t ro0 = rb; ro0 < re; ro0++)" in kern.source) == (b * p > PANEL_MAX_STEPS)
    np.testing.assert_allclose(got.reshape(m, n), np.einsum("bip,bjp->ij", dy.astype(np.float64), win),
                               **tol(np.dtype(dt).name, 4 * b * p, 4 * b * p), err_msg=f"{dt.__name__} {target}")
  # a reduction that no target's vectors divide is packed as before
  x, w = rng.standard_normal((256, 520)).astype(np.float32), rng.standard_normal((512, 520)).astype(np.float32)
  assert [k.name.endswith("_pack") for k in schedule(make_graph(lambda x, w: x @ w.T)(x, w)).kernels] == [True, False]


@pytest.mark.parametrize("target", ["native", "x86-64-v3"])
def test_a_transposed_right_operand_whose_sum_is_not_whole_vectors_fills_its_panels_element_by_element(monkeypatch,
                                                                                                       target):
  """x @ w.T over 1000 steps (not a whole number of any target's vectors), w too big to pack first: column panels
  filled element by element, where it ran as blocks of dot products at less than half the speed; over 5000 steps a
  chunk of the sum at a time. numpy's values, the same bits on 1, 2 and 3 threads."""
  from tracegrad import make_graph
  from tracegrad.lower.schedule import schedule
  if target != "native":
    if not _avx2_host(): pytest.skip("compiling for an x86-64 target needs an x86-64 host")
    monkeypatch.setenv("TRACEGRAD_CPU_TARGET", target)
  rng = np.random.default_rng(9)
  for m, n, k in ((128, 512, 1000), (100, 300, 5000)):
    x, w = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32)
    graph = make_graph(lambda x, w: x @ w.T)(x, w)
    (kern,) = schedule(graph).kernels
    assert "panels" in kern.source and "tg_tr_v" not in kern.source and "TG_DOT_ROWS" not in kern.source
    got = _on_1_2_and_3_threads(graph, [x, w])
    np.testing.assert_allclose(got[0], x.astype(np.float64) @ w.T, **tol("float32", 4 * k, 4 * k))


@pytest.mark.parametrize("target", ["native", "x86-64-v3"])
def test_a_short_rows_loop_of_a_transposed_product_swaps_with_the_longer(monkeypatch, target):
  """A filter gradient's shape, 64 output channels by 288 taps over 8 x 1024 positions, both operands contiguous
  along the sum: the 288 become the register blocks' rows and the output gradients fill the column panels (each
  chunk of the sum in as many panels at once as fit: on AVX2 all four, the threads then sharing out blocks of rows);
  numpy's values, the same bits on 1, 2 and 3 threads. A product with 128 rows or more keeps its order."""
  import tracegrad.numpy as tnp
  from tracegrad import make_graph
  from tracegrad.lower.schedule import schedule
  if target != "native":
    if not _avx2_host(): pytest.skip("compiling for an x86-64 target needs an x86-64 host")
    monkeypatch.setenv("TRACEGRAD_CPU_TARGET", target)
  rng = np.random.default_rng(7)
  dy, win = rng.standard_normal((8, 64, 1024)).astype(np.float32), rng.standard_normal((8, 288, 1024)).astype(np.float32)
  graph = make_graph(lambda a, c: tnp.einsum("bip,bjp->ij", a, c))(dy, win)
  (kern,) = schedule(graph).kernels
  assert [l.extent for l in kern.loops] == [288, 64] and "(*sums)" in kern.source and "by_rows = 1 &&" in kern.source
  got = _on_1_2_and_3_threads(graph, [dy, win])
  np.testing.assert_allclose(got[0], np.einsum("bip,bjp->ij", dy.astype(np.float64), win),
                             **tol("float32", 4 * 8192, 4 * 8192))
  x, w = rng.standard_normal((128, 512)).astype(np.float32), rng.standard_normal((520, 512)).astype(np.float32)
  (kern,) = schedule(make_graph(lambda x, w: x @ w.T)(x, w)).kernels
  assert [l.extent for l in kern.loops] == [128, 520]


# ---- sequential scatter with each store mode ----

MODES = [None, "set", "add", "mul", "min", "max"]


def scatter_program(d, n, m):
  """out = x; then for each j, where 0 <= idx[j] < n: out[idx[j]] (mode)= upd[j], one kernel pair per mode."""
  kernels, calls = [], []
  i, j = UOp.param((), I64), UOp.param((), I64)
  for t, mode in enumerate(MODES):
    x, out, ix, upd = UOp.param((n,), d), UOp.param((n,), d), UOp.param((m,), dtypes.int32), UOp.param((m,), d)
    kernels.append(Kernel(f"copy_{t}", (out, x), (Loop(i, n),), (Store(out, i, at(x, i)),)))
    target = at(ix, j).cast(I64)
    ok = K(-1).alu(Ops.CMPLT, target).alu(Ops.AND, target.alu(Ops.CMPLT, K(n)))
    safe = target.alu(Ops.MAX, K(0)).alu(Ops.MIN, K(n - 1))
    kernels.append(Kernel(f"scatter_{t}", (out, ix, upd), (Loop(j, m),), (Store(out, safe, at(upd, j), mode, ok),),
                          parallel=False))
    calls += [(3 + t, 0), (3 + t, 1, 2)]
  specs = [BufferSpec(n, d), BufferSpec(m, dtypes.int32), BufferSpec(m, d)] + [BufferSpec(n, d)] * len(MODES)
  return Program(kernels, calls, specs, [0, 1, 2], [(3 + t, (n,)) for t in range(len(MODES))])


@pytest.mark.parametrize("d", [dtypes.float32, dtypes.float16, dtypes.bfloat16, dtypes.int32, dtypes.bool_], ids=str)
def test_scatter_modes(cpu, d):
  n, m = 7, 40
  rng = np.random.default_rng(3)
  ix = rng.integers(-2, n + 2, m).astype(np.int32)
  if d.is_bool: x, upd = rng.random(n) < 0.5, rng.random(m) < 0.5
  else:
    x, upd = rng.integers(-4, 5, n).astype(d.np), (rng.integers(-4, 5, m) * (1 if d.is_int else 0.75)).astype(d.np)
    if d.is_float: upd[5] = np.nan
  got = run(cpu, scatter_program(d, n, m), [x, ix, upd])
  for mode, g in zip(MODES, got):
    scatter = UOp.buffer(x).scatter(UOp.buffer(ix.reshape(m, 1)), UOp.buffer(upd), mode or "set")
    (w,) = InterpDevice().execute([scatter], {})
    assert_same(g, w, f"{d} {mode}")


@pytest.mark.parametrize("stride,pad,dil", [(2, (1, 1), 1), (3, (2, 0), 1), (2, (0, 3), 2), (2, (-1, 2), 1)])
def test_a_strided_convolutions_input_gradient_adds_its_taps_over_ranges(stride, pad, dil):
  """The input gradient of a strided convolution, differentiated through its body (here under vmap, which leaves the
  convolution's transpose rule behind), adds each window's taps onto the input where they lie inside it: a scatter
  whose guard compares its innermost loops' variables (times the stride, plus a tap) with the input's edges. Those
  loops run over the ranges where the guard holds (floor divisions of the edges by the stride), the innermost as
  whole vectors, with no guard; numpy's gradient (np.add.at of the windows' cotangents)."""
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(8)
  x, w = rng.standard_normal((2, 3, 13, 11)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
  one = lambda x, w: tg.lax.conv_general_dilated(x[None], w, (stride, stride), [pad, pad], rhs_dilation=(dil, dil))[0]
  conv = lambda x, w: tg.vmap(one, (0, None))(x, w)
  out = conv(x, w)
  dy = rng.standard_normal(out.shape).astype(np.float32)
  f = tg.grad(lambda x, w, dy: (conv(x, w) * dy).sum())
  scatters = [k for k in schedule(tg.make_graph(f)(x, w, dy)).kernels if k.stores[0].mode == "add"]
  assert scatters and all("TG_FLOOR_DIV(" in k.source and "#pragma omp simd" in k.source for k in scatters)
  want = np.zeros(x.shape)
  for i in range(3):
    for j in range(3):
      for a in range(out.shape[2]):
        for c in range(out.shape[3]):
          p, q = a * stride + i * dil - pad[0], c * stride + j * dil - pad[0]   # the tap's element of x, if inside
          if 0 <= p < x.shape[2] and 0 <= q < x.shape[3]:
            want[:, :, p, q] += np.einsum("no,oc->nc", dy[:, :, a, c].astype(np.float64), w[:, :, i, j])
  np.testing.assert_allclose(np.asarray(tg.jit(f)(x, w, dy)), want, **tol("float32", 64, 64))


# ---- the rendered text ----

def test_statements_once_per_node():
  i, x, out = UOp.param((), I64), UOp.param((8,), dtypes.float32), UOp.param((8,), dtypes.float32)
  sq = at(x, i) * at(x, i)
  src = render_kernel(Kernel("k", (out, x), (Loop(i, 8),), (Store(out, i, sq + sq),)))
  assert src.count("b1[i0]") == 1 and src.count("v0 * v0") == 1 and "v1 + v1" in src
  assert "static void k(float *restrict b0, const float *restrict b1)" in src and "#pragma omp simd" in src


def test_deep_expression_renders():
  i, x, out = UOp.param((), I64), UOp.param((4,), dtypes.float32), UOp.param((4,), dtypes.float32)
  v = at(x, i)
  for _ in range(5000): v = v + K(1.0, dtypes.float32)
  src = render_kernel(Kernel("deep", (out, x), (Loop(i, 4),), (Store(out, i, v),)))
  assert src.count(" + 1.0f;") == 5000


def test_pragmas():
  i, x, out = UOp.param((), I64), UOp.param((1 << 16,), dtypes.float32), UOp.param((1 << 16,), dtypes.float32)
  big = Kernel("big", (out, x), (Loop(i, 1 << 16),), (Store(out, i, at(x, i)),))
  assert "#pragma omp parallel for simd" in render_kernel(big)
  seq = Kernel("seq", (out, x), (Loop(i, 1 << 16),), (Store(out, i, at(x, i), "add"),), parallel=False)
  assert "#pragma" not in render_kernel(seq)
  assert "reduction(+:acc)" in render_kernel(reduce_program(Ops.REDUCE_SUM, dtypes.float32, 4, 4))
  assert "reduction(max:acc) reduction(|:nan)" in render_kernel(reduce_program(Ops.REDUCE_MAX, dtypes.float32, 4, 4))
  assert "reduction(max:acc)" in render_kernel(reduce_program(Ops.REDUCE_MAX, dtypes.int32, 4, 4))


def test_program_entry():
  i = UOp.param((), I64)
  x, y = UOp.param((4,), dtypes.float16), UOp.param((4,), dtypes.float16)
  k = Kernel("tg_add", (x, y), (Loop(i, 4),), (Store(x, i, at(x, i) + at(y, i)),))
  prog = Program([k, k], [(1, 0), (1, 1)], [BufferSpec(4, dtypes.float16)] * 2, [0], [(1, (4,))])
  src = render_program(prog)
  assert "k_tg_add((uint16_t *)bufs[1], (uint16_t *)bufs[0]);" in src
  assert "k_tg_add_1((uint16_t *)bufs[1], (uint16_t *)bufs[1]);" in src
  assert "TG_KERNEL void k_tg_add_1(uint16_t *b0, const uint16_t *b1)" in src   # aliased buffers: no restrict
  assert src.index("k_tg_add(") < src.index("k_tg_add_1(") and "void tg_run(void **bufs)" in src
  assert str(k) == render_kernel(k)


def test_bad_kernels():
  i, x, y = UOp.param((), I64), UOp.param((4,), dtypes.float32), UOp.param((4,), dtypes.float32)
  with pytest.raises(ValueError, match="not a buffer of the kernel"):
    render_kernel(Kernel("k", (x,), (Loop(i, 4),), (Store(x, i, at(y, i)),)))
  with pytest.raises(ValueError, match="not a loop variable"):
    render_kernel(Kernel("k", (x,), (Loop(i, 4),), (Store(x, i, UOp.param((), dtypes.float32)),)))


def test_a_strided_convolution_runs_register_blocked():
  import tracegrad as tg
  if tg.default_backend() != "cpu": pytest.skip("the compiled cpu backend's kernels")
  x = np.random.default_rng(0).normal(size=(2, 8, 16, 16)).astype(np.float32)
  w = np.random.default_rng(1).normal(size=(4, 8, 3, 3)).astype(np.float32)
  conv = lambda x, w: tg.lax.conv_general_dilated(x, w, (2, 2), "SAME")
  kernels = tg.jit(conv).lower(x, w).compile().kernels
  assert any("accs[" in k.source for k in kernels if k.reduce is not None)   # vectorised along the output row
  want = tg.jit(conv)(x, w)
  np.testing.assert_allclose(np.asarray(want), np.asarray(tg.lax.conv_general_dilated(x, w, (2, 2), "SAME")),
                             rtol=1e-5, atol=1e-5)


def test_kernels_with_one_body_share_one_function():
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  x = np.ones((8, 16), np.float32)
  # column sums: register blocks along the rows, which no other kernel joins
  prog = schedule(tg.make_graph(lambda a, b: (tg.numpy.exp(a).sum(0), tg.numpy.exp(b).sum(0)))(x, x + 1))
  src = render_program(prog)
  assert len(prog.kernels) == 2 and src.count("TG_KERNEL void") == 1 + 1   # one definition, one declaration


# groups of panels with a cut last group and a cut last panel, rows that leave a last block short of the target's
@pytest.mark.parametrize("m,k,n", [(64, 512, 512), (100, 700, 390), (70, 300, 1000)])
def test_a_big_right_operand_is_read_from_contiguous_column_panels(m, k, n):
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  (kern,) = schedule(tg.make_graph(lambda x, y: x @ y)(a, b)).kernels
  assert "panel[" in kern.source
  if tg.default_backend() == "cpu":
    np.testing.assert_allclose(np.asarray(tg.jit(lambda x, y: x @ y)(a, b)), a.astype(np.float64) @ b,
                               rtol=ulps(4 * k), atol=ulps(4 * k) * math.sqrt(k))


@pytest.mark.parametrize("target", ["native", "x86-64-v3", "x86-64"])
def test_a_last_block_of_rows_cut_short_runs_the_whole_blocks_code(cpu, monkeypatch, target):
  """Where every target's vectors divide the columns and there are REPEAT_MIN_ROWS rows or more, a quick build's last
  block of rows, cut short (50 or 100 rows in blocks of 8, 6 or 4), runs the whole blocks' code: its rows past the
  last read the last again and are not stored, so each kernel compiles one block's code and no cut copy of it; the
  full build keeps its cut block, and neither has a block of cut columns. A matmul with a bias and relu, one with
  paneled columns, x.T @ g, and x.T @ g over 8192 rows (2 MB of columns: summed in chunks, in two parts shared out
  to the threads, split_parts); float64's values, from
  the quick build and the full one (the same bits on 1, 2 and 3 threads)."""
  import tracegrad as tg
  from tracegrad import run
  from tracegrad.lower.render_c import REPEAT_MIN_ROWS
  from tracegrad.lower.schedule import schedule
  if target != "native":
    if not _avx2_host(): pytest.skip("compiling for an x86-64 target needs an x86-64 host")
    monkeypatch.setenv("TRACEGRAD_CPU_TARGET", target)
  rng = np.random.default_rng(9)
  cases = [  # f, its arguments, its value in float64, the sum's length
    (lambda x, w, c: tg.numpy.maximum(x @ w + c, 0.0), [(50, 40), (40, 64), (64,)],
     lambda x, w, c: np.maximum(x @ w + c, 0.0), 40),
    (lambda x, w: x @ w, [(100, 700), (700, 512)], lambda x, w: x @ w, 700),
    (lambda x, g: x.T @ g, [(64, 50), (64, 128)], lambda x, g: x.T @ g, 64),
    (lambda x, g: x.T @ g, [(8192, 40), (8192, 64)], lambda x, g: x.T @ g, 8192),
  ]
  for f, shapes, want, n in cases:
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    graph = tg.make_graph(f)(*args)
    blocked = [k for k in schedule(graph).kernels if k.reduce is not None and "accs[" in k.source]
    assert blocked and all(k.loops[-2].extent >= REPEAT_MIN_ROWS for k in blocked)
    for k in blocked:
      quick = k.source.split("#if defined(TG_QUICK)", 1)[1].split("#else", 1)[0]
      assert "TG_MIN2(q, rn - 1)" in quick and "rn ==" not in quick and "tn ==" not in k.source, k.source
    assert ("shared[part" in blocked[0].source) == (n == 8192)
    ref = want(*(a.astype(np.float64) for a in args))
    exe = run.Executable(graph, "cpu")
    quick = cpu.run_program(exe.program, cpu.compile("#define TG_QUICK 1\n" + exe.source), args)[0]
    for got in (_on_1_2_and_3_threads(graph, args)[0], quick):
      np.testing.assert_allclose(got.reshape(ref.shape), ref, rtol=ulps(4 * n), atol=ulps(4 * n) * np.sqrt(n),
                                 err_msg=f"{shapes} {target}")


@pytest.mark.parametrize("n", [512, 520, 1024])
def test_a_weight_gradients_operands_with_rows_a_few_cache_sets_apart_are_copied_with_longer_rows(n):
  """x.T @ g steps through both operands a row per step of its sum: rows 2 or 4 KB apart put every step's line in
  the same one or two of the L1 cache's sets, so the lines a block reads evict each other before the next block
  reads them again. Such an operand is copied first: g, the columns', with its rows PAD_BYTES longer; x, the rows',
  transposed (16 x 16 tiles in blocks of 128 x 128), each of its rows' 128 steps in a run PAD_BYTES longer
  (_read_across); rows of 520 floats
  spread over the sets as they are. float64 sums' values, on 1, 2 and 3 threads."""
  import tracegrad as tg
  from tracegrad.lower.schedule import PAD_BYTES, schedule
  rng = np.random.default_rng(4)
  x, g = rng.standard_normal((128, n)).astype(np.float32), rng.standard_normal((128, n)).astype(np.float32)
  graph = tg.make_graph(lambda x, g: x.T @ g)(x, g)
  prog = schedule(graph)
  copies = [k for k in prog.kernels if k.reduce is None]
  if n == 520:
    assert not copies
  else:
    pad = PAD_BYTES // 4
    assert all(k.packing for k in copies) and sorted(b.shape[0] for k in copies for b in k.bufs) == \
        sorted([128 * n] * 2 + [128 * (n + pad), n * (128 + pad)])
    assert any("tg_tr_v" in k.source and [l.extent for l in k.loops] == [n // 128, 1, 8, 8, 16, 16] for k in copies)
  if tg.default_backend() == "cpu":
    got = _on_1_2_and_3_threads(graph, [x, g])[0]
    np.testing.assert_allclose(got, x.T.astype(np.float64) @ g, rtol=ulps(4 * 128), atol=ulps(4 * 128) * 16)


@pytest.mark.parametrize("t,m,n", [(512, 512, 128), (170, 37, 30)])
def test_a_weight_gradients_strided_operands_are_prefetched(t, m, n):
  """x.T @ g reads a row of x and of g per step of the sum: each block prefetches the lines it will read
  PREFETCH_STEPS steps ahead (past the end of a buffer too: a prefetch never faults), with the same sums; the
  blocks of rows are the outer loop. A buffer that fits the L1 cache gets no prefetches."""
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(2)
  x, g = rng.standard_normal((t, m)).astype(np.float32), rng.standard_normal((t, n)).astype(np.float32)
  f = lambda x, g: x.T @ g
  (kern,) = [k for k in schedule(tg.make_graph(f)(x, g)).kernels if k.reduce is not None]   # x's rows padded at 512
  assert len(set(re.findall(r"TG_PREFETCH\(&(b\d+)\[[^\]]*\]\)", kern.source))) == 2   # both operands, no store
  (small,) = schedule(tg.make_graph(f)(x[:40, :30], g[:40, :20])).kernels
  assert "TG_PREFETCH" not in small.source
  # x, the operand read along the rows, is the bigger: the threads share out blocks of rows, each reading its part
  assert kern.source.index("for (int64_t ib = 0") < kern.source.index("for (int64_t t = 0")
  if tg.default_backend() == "cpu":
    np.testing.assert_allclose(np.asarray(tg.jit(f)(x, g)), x.T.astype(np.float64) @ g,
                               rtol=ulps(4 * t), atol=ulps(4 * t) * math.sqrt(t) * 4)


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_columns_whole_on_some_targets_only_compile_no_cut_column_block_there(cpu):
  """x.T @ g with 96 columns: whole blocks of 8 (SSE) and 16 (AVX) floats, not of 64 (AVX-512), so the preprocessor
  decides. Where the target's width divides them, the kernel compiles no block of cut columns, and a quick build only
  the whole block, its last rows repeated; on AVX-512 the cut blocks are there. Both builds' values against numpy."""
  import tracegrad as tg
  from tracegrad import run
  from tracegrad.lower.render_c import BLOCK_PRELUDE
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(4)
  x, g = rng.standard_normal((64, 50)).astype(np.float32), rng.standard_normal((64, 96)).astype(np.float32)
  graph = tg.make_graph(lambda x, g: x.T @ g)(x, g)
  (kern,) = [k for k in schedule(graph).kernels if k.reduce is not None and "accs[" in k.source]
  assert "#elif 96 % (TG_VBYTES / 4) == 0" in kern.source
  cc = shutil.which("cc") or shutil.which("gcc")
  for isa, whole in (([], True), (["-mavx2", "-mfma"], True), (["-mavx512f"], False)):
    for quick in (False, True):
      out = subprocess.run([cc, "-E", "-P", *isa, *(["-DTG_QUICK"] if quick else []), "-x", "c", "-"], text=True,
                           check=True, input=BLOCK_PRELUDE + kern.source, capture_output=True).stdout
      body = out[out.index("k0_reduce_sum"):]
      assert ("tn ==" not in body.split("panels[")[-1]) == whole, (isa, quick)
      assert ("rn - 1" in body) == (whole and quick), (isa, quick)   # TG_MIN2(q, rn - 1): rows repeated
  exe = run.Executable(graph, "cpu")
  ref = x.T.astype(np.float64) @ g
  for lib in (cpu.compile(exe.source), cpu.compile("#define TG_QUICK 1\n" + exe.source)):
    got = cpu.run_program(exe.program, lib, [x, g])[0]
    np.testing.assert_allclose(got.reshape(ref.shape), ref, rtol=ulps(4 * 64), atol=ulps(4 * 64) * 8)


@pytest.mark.parametrize("target", ["native", "x86-64-v3", "x86-64"])
def test_a_last_block_of_columns_cut_short_runs_with_a_constant_width(cpu, monkeypatch, target):
  """A matmul whose columns the target's blocks do not divide (300: 4 x 64 + 44 on AVX-512, 18 x 16 + 12 on AVX2,
  37 x 8 + 4 with SSE) runs its last block of columns, in whole rows, with the columns left as a constant (the
  extent modulo the width), so that its sums stay in registers; only the corner block, rows and columns cut, has
  both bounds in variables. Its rows too (128: 21 x 6 + 2); x.T @ g, whole and summed in chunks; x @ y.T as dot
  products (65 columns in blocks of 2 or 3). float64's values on 1, 2 and 3 threads."""
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  if target != "native":
    if not _avx2_host(): pytest.skip("compiling for an x86-64 target needs an x86-64 host")
    monkeypatch.setenv("TRACEGRAD_CPU_TARGET", target)
  rng = np.random.default_rng(3)
  for f, shapes, n in ((lambda x, w: x @ w, [(128, 100), (100, 300)], 100),
                       (lambda x, g: x.T @ g, [(64, 130), (64, 300)], 64),
                       (lambda x, g: x.T @ g, [(8192, 40), (8192, 300)], 8192),   # summed in chunks
                       (lambda x, y: x @ y.T, [(65, 1000), (131, 1000)], 1000)):   # dot products, 2 or 3 columns a block
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    graph = tg.make_graph(f)(*args)
    (kern,) = [k for k in schedule(graph).kernels if k.reduce is not None]
    cols = "(?:65|131)" if n == 1000 else "300"
    assert re.search(r"else if \(rn == \w+\) \{[^}]*?\(%s %% " % cols, kern.source), kern.source
    ref = f(*(a.astype(np.float64) for a in args))
    for got in _on_1_2_and_3_threads(graph, args):
      np.testing.assert_allclose(got.reshape(ref.shape), ref, rtol=ulps(4 * n), atol=ulps(4 * n) * np.sqrt(n),
                                 err_msg=f"{shapes} {target}")


def test_dot_products_over_two_vectors_unroll_their_vector_steps_whole():
  """A block of dot products whose reduction's last loop is two of the widest vectors long (a first layer's filter
  gradient, rows of 32 float32 positions) unrolls its loop of vector steps whole (TG_UNROLL(2)); rows of 64 are left
  to the compiler. Search does not try the default again, and the gradient matches the direct sum."""
  import tracegrad as tg
  from tracegrad.lower import opt
  from tracegrad.lower.render_c import dot_blocked, short_dots_unroll
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(17)
  x, w = rng.standard_normal((2, 3, 32, 32)).astype(np.float32), rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
  ct = rng.standard_normal((2, 8, 32, 32)).astype(np.float32)
  loss = lambda w, x, ct: (tg.lax.conv_general_dilated(x, w, (1, 1), "SAME") * ct).sum()
  (kern,) = [k for k in schedule(tg.make_graph(tg.grad(loss))(w, x, ct)).kernels
             if k.reduce is not None and dot_blocked(k)]
  assert kern.reduce.loops[-1].extent == 32 and short_dots_unroll(kern, None) == 2 and "TG_UNROLL(2)" in kern.source
  assert {"unroll": 2} not in opt.neighbours(kern, {}) and {"unroll": 4} in opt.neighbours(kern, {})
  a, b = rng.standard_normal((4, 16, 64)).astype(np.float32), rng.standard_normal((4, 24, 64)).astype(np.float32)
  (long,) = [k for k in schedule(tg.make_graph(lambda a, b: tg.numpy.einsum("nop,nqp->oq", a, b))(a, b)).kernels
             if k.reduce is not None]
  assert dot_blocked(long) and short_dots_unroll(long, None) is None and "TG_UNROLL(" not in long.source
  if tg.default_backend() == "cpu":
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.stack([np.einsum("nchw,nohw->oc", xp[:, :, i:i + 32, j:j + 32], ct) for i in range(3) for j in range(3)],
                    -1).reshape(w.shape)
    np.testing.assert_allclose(np.asarray(tg.jit(tg.grad(loss))(w, x, ct)), want, rtol=ulps(4 * 2048),
                               atol=ulps(4 * 2048) * 50)


@pytest.mark.parametrize("target", ["native", "x86-64-v3", "x86-64"])
def test_dot_products_add_their_last_steps_short_of_a_vector_as_one_vector_step(cpu, monkeypatch, target):
  """x @ y.T over 1001 steps (62 vectors of 16 and 9 steps, 125 of 8 and 1): the steps past the last whole vector are
  one more vector step, of the vector that ends with them, its lanes the last step summed already zero
  (tg_last_vf, tg_last_vd); a sum shorter than a vector keeps the lane by lane code. float32 and float64; the values
  against float64's, on 1, 2 and 3 threads."""
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  if target != "native":
    if not _avx2_host(): pytest.skip("compiling for an x86-64 target needs an x86-64 host")
    monkeypatch.setenv("TRACEGRAD_CPU_TARGET", target)
  rng = np.random.default_rng(5)
  for steps, dtype in ((1001, np.float32), (1001, np.float64)):
    args = [rng.standard_normal((m, steps)).astype(dtype) for m in (40, 66)]
    ref = args[0].astype(np.float64) @ args[1].astype(np.float64).T
    rule = ulps(4 * steps, np.dtype(dtype))
    with x64(dtype == np.float64):
      graph = tg.make_graph(lambda x, y: x @ y.T)(*args)
      (kern,) = [k for k in schedule(graph).kernels if k.reduce is not None]
      assert f"tg_last_v{'f' if dtype == np.float32 else 'd'}(" in kern.source and "tail[" in kern.source, kern.source
      for got in _on_1_2_and_3_threads(graph, args):
        np.testing.assert_allclose(got.reshape(ref.shape), ref, rtol=rule, atol=rule * np.sqrt(steps), err_msg=target)


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_a_block_of_dot_products_pins_its_columns_vectors_where_the_registers_hold_them(cpu):
  """A block of dot products keeps its columns' vectors in registers (TG_PIN) where they fit beside its accumulators,
  a row's vector and, without a fused multiply-add, a product: a first layer's filter gradient (4 x 3 on AVX2, 8 x 3
  on AVX-512; 4 x 3 takes 17 registers with SSE's separate product) and dot products of 2 columns (8 x 2 on AVX2 fills
  the registers with its accumulators; 4 x 2 with SSE). float64's values."""
  import tracegrad as tg
  from tracegrad.lower.render_c import dot_blocked, program_prelude
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(13)
  x, w = rng.standard_normal((2, 3, 32, 32)).astype(np.float32), rng.standard_normal((32, 3, 3, 3)).astype(np.float32)
  ct = rng.standard_normal((2, 32, 32, 32)).astype(np.float32)
  dy, win = rng.standard_normal((4, 56, 256)).astype(np.float32), rng.standard_normal((4, 288, 256)).astype(np.float32)
  conv = lambda w, x, ct: (tg.lax.conv_general_dilated(x, w, (1, 1), "SAME") * ct).sum()
  dots = lambda a, b: tg.numpy.einsum("nop,nqp->oq", a, b)
  cases = [(tg.make_graph(tg.grad(conv))(w, x, ct),
            {(): False, ("-mavx2", "-mfma"): True, ("-mavx512f", "-mfma"): True}),
           (tg.make_graph(dots)(dy, win), {(): True, ("-mavx2", "-mfma"): False, ("-mavx512f", "-mfma"): True})]
  cc = shutil.which("cc") or shutil.which("gcc")
  for graph, pinned in cases:
    (kern,) = [k for k in schedule(graph).kernels if k.reduce is not None and dot_blocked(k)]
    for isa, want in pinned.items():
      out = subprocess.run([cc, "-E", "-P", *isa, "-x", "c", "-"], text=True, check=True,
                           input=program_prelude() + kern.source, capture_output=True).stdout
      body = out[out.index(kern.name):]
      assert (body.count("__asm__") > body.count("av)")) == want, (kern.name, isa)
  win_x = np.lib.stride_tricks.sliding_window_view(np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1))),
                                                  (3, 3), axis=(2, 3))   # n, c, h, w, kh, kw
  np.testing.assert_allclose(np.asarray(tg.jit(tg.grad(conv))(w, x, ct)), np.einsum("nohw,nchwab->ocab", ct, win_x),
                             rtol=ulps(2048), atol=ulps(2048) * 64)
  np.testing.assert_allclose(np.asarray(tg.jit(dots)(dy, win)), np.einsum("nop,nqp->oq", dy.astype(np.float64), win),
                             rtol=ulps(1024), atol=ulps(1024) * 32)


@pytest.mark.skipif(shutil.which("gcc") is None or platform.machine() not in ("x86_64", "AMD64"), reason="no x86 gcc")
@pytest.mark.parametrize("march, register", [("skylake-avx512", "zmm"), ("icelake-server", "zmm"), ("znver1", "ymm")])
def test_register_blocks_multiply_add_whole_vectors_on_targets_tuned_for_narrower_ones(tmp_path, march, register):
  """gcc tunes Intel's AVX-512 CPUs for 256-bit vectors and the first Zen for 128-bit ones; with that preference its
  vectoriser left a multiply-add over a tg_vf's lanes scalar, and every register block ran lane by lane. FLAGS ask for
  the widest vectors: a first layer's filter gradient (a block of dot products) and a matmul multiply-add whole
  vectors (the last -march given wins, as -march=native names that CPU)."""
  import tracegrad as tg
  from tracegrad import run
  rng = np.random.default_rng(3)
  x, w = rng.standard_normal((2, 3, 32, 32)).astype(np.float32), rng.standard_normal((32, 3, 3, 3)).astype(np.float32)
  ct = rng.standard_normal((2, 32, 32, 32)).astype(np.float32)
  a, b = rng.standard_normal((96, 64)).astype(np.float32), rng.standard_normal((64, 128)).astype(np.float32)
  conv = lambda w, x, ct: (tg.lax.conv_general_dilated(x, w, (1, 1), "SAME") * ct).sum()
  for graph in (tg.make_graph(tg.grad(conv))(w, x, ct), tg.make_graph(lambda a, b: a @ b)(a, b)):
    r = gcc(run.Executable(graph, "cpu").source, tmp_path / "k.s", "-S", f"-march={march}")
    assert r.returncode == 0, r.stderr
    asm = (tmp_path / "k.s").read_text()
    assert re.search(rf"vfmadd\d+ps\s+[^\n]*%{register}", asm), (march, [k for k in re.findall(r"^(k\w+):", asm, re.M)])


@pytest.mark.skipif(shutil.which("gcc") is None or platform.machine() not in ("x86_64", "AMD64"), reason="no x86 gcc")
def test_a_quick_builds_register_block_multiply_adds_a_whole_row_of_vectors_at_each_step(tmp_path):
  """A quick build (QUICK_FLAGS, -O1) unrolls a register block's row of vectors (4 on AVX-512) as well as its rows,
  so that the block's accumulators live in registers: 6 x 4 multiply-adds of whole vectors in a matmul's step, where
  the row stayed a loop of one (its sums in memory; 2.4x the full build's time)."""
  import tracegrad as tg
  from tracegrad import run
  from tracegrad.devices.cpu import QUICK_FLAGS
  from tracegrad.lower.render_c import BLOCKS
  a, b = np.ones((96, 64), np.float32), np.ones((64, 128), np.float32)
  source = run.Executable(tg.make_graph(lambda a, b: a @ b)(a, b), "cpu").source
  r = gcc(source, tmp_path / "k.s", "-S", "-march=skylake-avx512", *QUICK_FLAGS)
  assert r.returncode == 0, r.stderr
  sizes = BLOCKS["__AVX512F__"]
  block = sizes["TG_ROWS"] * sizes["TG_VBYTES"] // sizes["TG_VREG"]
  assert len(re.findall(r"vfmadd\d+ps\s+[^\n]*%zmm", (tmp_path / "k.s").read_text())) >= block


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_a_quick_build_leaves_out_unrolling_and_prefetches_but_not_a_blocks_rows():
  """TG_UNROLL and TG_PREFETCH are the pragma and the builtin in a full build, nothing under TG_QUICK (the quick
  build that runs the first calls, where they cost a fifth of the compiler's time); TG_BLOCK_UNROLL, on the loop over
  a register block's rows, unrolls in both (its accumulators stay in registers only so): x.T @ g, and a 3x3
  convolution whose short tap loop stays a loop (TG_UNROLL(1))."""
  import tracegrad as tg
  from tracegrad.lower.render_c import BLOCK_PRELUDE
  from tracegrad.lower.schedule import schedule
  x, g = np.ones((128, 512), np.float32), np.ones((128, 512), np.float32)
  xc, w = np.ones((2, 3, 16, 16), np.float32), np.ones((8, 3, 3, 3), np.float32)
  conv = lambda x, w: tg.lax.conv_general_dilated(x, w, (1, 1), "SAME")
  kerns = [k for graph in (tg.make_graph(lambda x, g: x.T @ g)(x, g), tg.make_graph(conv)(xc, w))
           for k in schedule(graph).kernels if k.reduce is not None]
  assert "TG_PREFETCH(" in kerns[0].source and "TG_UNROLL(1)" in kerns[1].source
  cc, counts = shutil.which("cc") or shutil.which("gcc"), []
  for kern in kerns:
    assert "TG_BLOCK_UNROLL(16)" in kern.source
    unrolled = {}
    for quick in (False, True):
      out = subprocess.run([cc, "-E", "-P", *(["-DTG_QUICK"] if quick else []), "-x", "c", "-"], text=True,
                           check=True, input=BLOCK_PRELUDE + kern.source, capture_output=True).stdout
      body = out[out.index(kern.name):]
      assert ("__builtin_prefetch" in body) == (not quick and "TG_PREFETCH(" in kern.source)
      unrolled[quick] = [after.split("\n", 1)[1].lstrip().startswith("for (int64_t q = 0;")
                         for after in body.split("GCC unroll")[1:]]
    assert all(unrolled[True]) and 0 < len(unrolled[True]) <= len(unrolled[False]), kern.name
    counts.append(len(unrolled[False]) - len(unrolled[True]))
  assert counts[1] > 0   # the convolution's tap loop: kept a loop in a full build only


def test_a_convolutions_short_tap_loop_stays_a_loop():
  """A register block's reduction over several loops whose last is short (a 3x3 convolution's taps over 3 channels)
  keeps that loop a loop (TG_UNROLL(1): gcc would unroll all three whole, which ran the CNN's first layer 29% slower);
  one short loop alone, and a long last loop, are left to the compiler. Search does not try the default again, and
  the values match the direct sum."""
  import tracegrad as tg
  from tracegrad.lower import opt
  from tracegrad.lower.render_c import default_unroll
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(5)
  x, w = rng.standard_normal((2, 3, 16, 16)).astype(np.float32), rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
  f = lambda x, w: tg.lax.conv_general_dilated(x, w, (1, 1), "SAME")
  (kern,) = [k for k in schedule(tg.make_graph(f)(x, w)).kernels if k.reduce is not None]
  assert [l.extent for l in kern.reduce.loops][-1] == 3 and len(kern.reduce.loops) > 1
  assert opt.shape(kern) == "rows_by_width" and default_unroll(kern) == 1 and "TG_UNROLL(1)" in kern.source
  assert {"unroll": 1} not in opt.neighbours(kern, {}) and {"unroll": 2} in opt.neighbours(kern, {})
  a, b = rng.standard_normal((64, 8)).astype(np.float32), rng.standard_normal((8, 64)).astype(np.float32)
  (mm,) = schedule(tg.make_graph(lambda a, b: a @ b)(a, b)).kernels
  assert default_unroll(mm) is None and "TG_UNROLL(1)" not in mm.source
  if tg.default_backend() == "cpu":
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = sum(np.einsum("nchw,oc->nohw", xp[:, :, i:i + 16, j:j + 16], w[:, :, i, j]) for i in range(3) for j in range(3))
    np.testing.assert_allclose(np.asarray(tg.jit(f)(x, w)), want, rtol=ulps(4 * 27), atol=ulps(4 * 27) * 20)


@pytest.mark.parametrize("s,d", [(64, 32), (20, 12)])
def test_attention_blocks_prefetch_what_the_next_block_reads_and_writes(s, d):
  """Each register block of attention's scores (heads of s x s, d steps) prefetches the first lines of the next
  block's rows of q and, for writing, its lines of the output: with a 32-step sum those would come from memory
  while the block waits (not where they fit the L1 cache). Whole and cut blocks give the same scores as numpy."""
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(4)
  q, k = rng.standard_normal((2, s, 3, d)).astype(np.float32), rng.standard_normal((2, s, 3, d)).astype(np.float32)
  f = lambda q, k: tg.numpy.einsum("bqhd,bkhd->bhqk", q, k)
  (kern,) = [kk for kk in schedule(tg.make_graph(f)(q, k)).kernels if kk.reduce is not None]
  assert "const int64_t nib = " in kern.source
  assert ("], 1);" in kern.source) == (q.nbytes > 16 << 10)   # an output that fits the L1 cache is left alone
  if tg.default_backend() == "cpu":
    np.testing.assert_allclose(np.asarray(tg.jit(f)(q, k)), np.einsum("bqhd,bkhd->bhqk", q.astype(np.float64), k),
                               rtol=ulps(4 * d), atol=ulps(4 * d) * math.sqrt(d) * 4)


def test_dot_product_blocks_take_a_column_count_that_divides_the_columns():
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(0)
  f = lambda a, b: tg.numpy.einsum("nop,nqp->oq", a, b)   # a filter gradient over 27 taps
  for n, p in ((4, 64), (32, 1024)):
    dy, win = rng.standard_normal((n, 32, p)).astype(np.float32), rng.standard_normal((n, 27, p)).astype(np.float32)
    (k,) = [k for k in schedule(tg.make_graph(f)(dy, win)).kernels if k.reduce is not None]
    # whole blocks of 3 columns, of as many rows as the target's registers hold 3 columns of (TG_DOT3_ROWS: 4 x 3
    # partial sums, 3 columns' and a row's vectors fill AVX2's 16); rows cut into whole blocks where those divide them
    assert "accs[TG_DOT3_ROWS][3]" in k.source and "#if (32 % TG_DOT3_ROWS == 0)\n" in k.source
    assert ("errs[q][c]" in k.source) == (n * p > 16384)   # a long sum adds up blocks, carrying their errors
    assert "TG_PIN(av)" in k.source   # each step reads whole vectors of both operands
    np.testing.assert_allclose(np.asarray(tg.jit(f)(dy, win)), np.einsum("nop,nqp->oq", dy.astype(np.float64), win),
                               rtol=ulps(4 * n * p), atol=ulps(4 * n * p) * np.sqrt(n * p))


@pytest.mark.parametrize("o", [16, 20])
def test_two_column_dot_product_blocks_take_the_targets_dot_rows(o):
  """A filter gradient by windows (72 columns: two a block on AVX2) takes TG_DOT_ROWS rows a block, its sum long
  (summed in blocks, carrying their errors) or short: 8 on AVX2, where 8 x 2 partial sums ran ResNet-8's such
  gradients 6-21% faster than 6 or 4 rows. Rows cut at 20 give numpy's values."""
  import tracegrad as tg
  from tracegrad.lower.render_c import BLOCKS
  from tracegrad.lower.schedule import schedule
  assert BLOCKS["__AVX__"]["TG_DOT_ROWS"] == 8 and BLOCKS["__AVX__"]["TG_DOT_COLS"] == 2
  rng = np.random.default_rng(1)
  f = lambda a, b: tg.numpy.einsum("nop,nqp->oq", a, b)
  for n, p in ((4, 64), (64, 512)):
    dy, win = rng.standard_normal((n, o, p)).astype(np.float32), rng.standard_normal((n, 72, p)).astype(np.float32)
    (k,) = [k for k in schedule(tg.make_graph(f)(dy, win)).kernels if k.reduce is not None]
    assert "accs[TG_DOT_ROWS][TG_DOT_COLS]" in k.source and f"#if ({o} % TG_DOT_ROWS == 0" in k.source
    assert ("errs[q][c]" in k.source) == (n * p > 16384)
    if tg.default_backend() == "cpu":
      np.testing.assert_allclose(np.asarray(tg.jit(f)(dy, win)), np.einsum("nop,nqp->oq", dy.astype(np.float64), win),
                                 rtol=ulps(4 * n * p), atol=ulps(4 * n * p) * np.sqrt(n * p))


def _on_1_2_and_3_threads(graph, args) -> list[np.ndarray]:
  """The first output of graph compiled for the cpu device on args, run on 1, 2 and 3 threads, asserted to be the
  same bits each time."""
  from tracegrad import run
  from tracegrad.devices import cpu as cpu_mod
  exe, base = run.Executable(graph, "cpu"), cpu_mod._threads.base
  try:
    got = []
    for threads in (1, 2, 3):
      cpu_mod.limit_threads(threads)
      got.append(np.asarray(exe(args)[0]))
  finally:
    cpu_mod.limit_threads(base)
  assert got[0].tobytes() == got[1].tobytes() == got[2].tobytes()
  return got


@pytest.mark.parametrize("o,q,n,p", [(56, 288, 8, 256), (32, 27, 6, 1024), (13, 10, 5, 1000), (5, 3, 2, 30001)])
def test_big_dot_products_sum_in_chunks_with_the_same_bits_on_any_thread_count(o, q, n, p):
  """A block of dot products whose operands outgrow the L2 cache adds its reduction in chunks, every block of a
  thread taking each chunk in turn, its sums kept in memory between chunks: the same sums as float64 einsum, for
  whole blocks and cut ones, chunks cut inside the last loop (30001 long), rows that end in a part of a vector (1000
  and 30001 long), and the same bits on 1, 2 or 3 threads."""
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(7)
  dy, win = rng.standard_normal((n, o, p)).astype(np.float32), rng.standard_normal((n, q, p)).astype(np.float32)
  g = tg.make_graph(lambda a, b: tg.numpy.einsum("nop,nqp->oq", a, b))(dy, win)
  (k,) = [k for k in schedule(g).kernels if k.reduce is not None]
  chunked = min(o, q) * 4 * n * p > 384 << 10   # the operand read again (the smaller) outgrows DOT_CHUNK_BYTES
  assert ("TG_THREAD()" in k.source) == chunked
  # the steps past a row's last whole vector add up in scalars that join lane 0 by a vector add: a lane of a vector
  # accumulator written alone kept them all in memory (50 times slower)
  assert "tail[q][c]" in k.source and "accs[q][c][0]" not in k.source
  # behind a test of the rows' length the compiler folds: rows of whole vectors add no zeros to every accumulator
  # at every row (the first layer's filter gradient ran 14% slower)
  assert f"if ((({p} - 0) % (TG_VREG" in k.source or f"if (((re - rb) % (TG_VREG" in k.source
  if tg.default_backend() != "cpu": return
  got = _on_1_2_and_3_threads(g, [dy, win])
  np.testing.assert_allclose(got[0], np.einsum("nop,nqp->oq", dy.astype(np.float64), win),
                             rtol=ulps(4 * n * p), atol=ulps(4 * n * p) * np.sqrt(n * p))



@pytest.mark.parametrize("n", [16, 40])
def test_a_filter_gradient_reads_each_block_of_output_gradients_once_a_chunk_for_every_tap(n):
  """The first layer's filter gradient (3 input channels): every tap's and channel's blocks read the same output
  gradients, which outgrow the L1 cache. A thread's tiles run each block of output channels across all taps
  (rows_first), in chunks of the sum whose slice of that block fits DOT_L1_BYTES, so each chunk of it is read from
  memory once and from L1 for the other 26 taps. A chunk is one image, shorter than a block of the sum: the vectors
  of partial sums are carried from chunk to chunk and summed across their lanes once a block of 16 images (for 40
  images, twice whole and once cut). It equals float64's filter gradient."""
  import tracegrad as tg
  from tracegrad.lower.render_c import DOT_L1_BYTES, carried_chunks, dot_blocked, dot_chunk, rows_first, _Body
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(11)
  x, w = rng.standard_normal((n, 3, 32, 32)).astype(np.float32), rng.standard_normal((32, 3, 3, 3)).astype(np.float32)
  dy = rng.standard_normal((n, 32, 32, 32)).astype(np.float32)
  conv = lambda x, w: tg.lax.conv_general_dilated(x, w, (1, 1), "SAME")
  # a square's gradient: each step a product of three, its partial sums arrays of lanes; given output gradients:
  # each step two vectors' product, its partial sums vectors
  f = (lambda w, x: (conv(x, w) ** 2).sum()) if n == 16 else (lambda w, x: (conv(x, w) * dy).sum())
  (k,) = [k for k in schedule(tg.make_graph(tg.grad(f))(w, x)).kernels if dot_blocked(k) and len(k.loops) > 2]
  j, c = dot_chunk(_Body(k), k)
  steps = c * math.prod(l.extent for l in k.reduce.loops[j + 1:])
  assert rows_first(k) and 8 * 4 * steps <= DOT_L1_BYTES and "TG_THREAD()" in k.source
  assert carried_chunks(_Body(k), k, (j, c)) == (16, n) and "carried[tile - lo][q][c]" in k.source
  assert ("carried[tile - lo][q][c] = accs[q][c];" in k.source) == (n == 40)
  # the tile's index: its block of rows the slowest part, its block of columns the fastest
  decode = k.source[k.source.index("int64_t rest = tile;"):k.source.index("const int64_t rn")]
  assert decode.index("const int64_t jb") < decode.index("const int64_t i0") < decode.index("const int64_t ib")
  if tg.default_backend() != "cpu": return
  win = np.lib.stride_tricks.sliding_window_view(np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1))),
                                                (3, 3), axis=(2, 3))   # n, c, h, w, kh, kw
  dout = 2 * np.einsum("nchwab,ocab->nohw", win, w) if n == 16 else dy
  want = np.einsum("nohw,nchwab->ocab", dout, win)
  np.testing.assert_allclose(np.asarray(tg.jit(tg.grad(f))(w, x)), want, rtol=ulps(n * 1024),
                             atol=ulps(n * 1024) * 8)


@pytest.mark.parametrize("form", ["x @ w.T", "bip,bjp->ij", "x.T @ g"])
def test_long_sums_fill_their_panels_a_chunk_at_a_time_with_the_same_bits_on_any_thread_count(form):
  """Sums of 8192 steps (one loop, or 8 images by 1024 positions as a filter gradient's) with 1.3 MB of columns,
  strided (x @ w.T: panels filled through registers) or contiguous (x.T @ g, a channels-last filter gradient): each
  panel holds one chunk of the sum, filled anew for each chunk (as many panels at once as fit), and every block of
  rows adds the chunk into its sums kept in memory; 70 rows end in a cut block, 40 columns in a narrower panel. The same bits on 1, 2 or 3 threads,
  and float64's values."""
  import tracegrad as tg
  import tracegrad.numpy as tnp
  from tracegrad import make_graph
  from tracegrad.lower.render_c import BLOCK_CHUNK_BYTES, PANEL_MAX_STEPS, block_chunk, panel_load, _Body
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(12)
  shapes, f, want = {
      "x @ w.T": ([(70, 8192), (40, 8192)], lambda x, w: x @ w.T, lambda x, w: x @ w.T),
      "bip,bjp->ij": ([(8, 70, 1024), (8, 40, 1024)], lambda x, w: tnp.einsum(form, x, w),
                      lambda x, w: np.einsum(form, x, w)),
      "x.T @ g": ([(8192, 70), (8192, 40)], lambda x, g: x.T @ g, lambda x, g: x.T @ g)}[form]
  args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
  g = make_graph(f)(*args)
  (k,) = schedule(g).kernels
  assert panel_load(k) is not None and block_chunk(_Body(k), k) is not None and args[1].nbytes > BLOCK_CHUNK_BYTES
  assert math.prod(l.extent for l in k.reduce.loops) > PANEL_MAX_STEPS
  assert ("tg_tr_v" in k.source) == (form != "x.T @ g")
  assert "(*sums)" in k.source and "rb; r" in k.source and "g0 += fit" in k.source
  if tg.default_backend() != "cpu": return
  got = _on_1_2_and_3_threads(g, args)
  np.testing.assert_allclose(got[0].reshape(70, 40), want(*(a.astype(np.float64) for a in args)), rtol=ulps(8192),
                             atol=ulps(8192) * np.sqrt(8192))


@pytest.mark.parametrize("form", ["x @ w.T", "x @ w"])
@pytest.mark.parametrize("n", [72, 200])
def test_threads_share_out_a_paneled_kernels_blocks_with_the_same_bits_on_any_thread_count(form, n):
  """Column panels of 4096 steps (whole, not chunked), filled through registers (x @ w.T) or element by element
  (x @ w): the threads share out the blocks of rows of every panel, so that one or two panels keep every thread busy,
  and a panel two threads share is filled by both; a last panel cut short (8 columns past the whole panels) runs as a
  whole one, its columns past the cut not stored. The same bits on 1, 2 or 3 threads, and float64's values."""
  import tracegrad as tg
  from tracegrad import make_graph
  from tracegrad.lower.render_c import PANEL_MAX_STEPS, panel_load
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(14)
  x = rng.standard_normal((70, PANEL_MAX_STEPS)).astype(np.float32)
  w = rng.standard_normal((n, PANEL_MAX_STEPS) if form == "x @ w.T" else (PANEL_MAX_STEPS, n)).astype(np.float32)
  f = (lambda x, w: x @ w.T) if form == "x @ w.T" else (lambda x, w: x @ w)
  g = make_graph(f)(x, w)
  (k,) = schedule(g).kernels
  assert panel_load(k) is not None and "panels + (p - g0)" in k.source and "unit < lo" in k.source
  if tg.default_backend() != "cpu": return
  got = _on_1_2_and_3_threads(g, [x, w])
  want = f(x.astype(np.float64), w.astype(np.float64))
  np.testing.assert_allclose(got[0].reshape(want.shape), want, rtol=ulps(PANEL_MAX_STEPS),
                             atol=ulps(PANEL_MAX_STEPS) * np.sqrt(PANEL_MAX_STEPS))


def test_register_blocks_whose_columns_outgrow_the_cache_sum_in_chunks_with_the_same_bits_on_any_thread_count():
  """A channels-last first layer's filter gradient runs as register blocks of its 27 taps and channels by its
  output channels, which read 2 MB of output gradients for each block of rows: it is summed in chunks (block_chunk),
  in SPLIT_PARTS parts of its sum shared out to the threads with its blocks, each thread adding each chunk of its
  part into all of its blocks in turn, whole blocks and the cut one of 3 rows, and then the parts added up in order.
  The same bits on 1, 2 or 3 threads, and float64's values."""
  import tracegrad as tg
  from tracegrad.lower.render_c import BLOCK_CHUNK_BYTES, SPLIT_PARTS, block_chunk, interchanged, split_parts, _Body
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(5)
  x, w = rng.standard_normal((16, 32, 32, 3)).astype(np.float32), rng.standard_normal((3, 3, 3, 32)).astype(np.float32)
  dy = rng.standard_normal((16, 32, 32, 32)).astype(np.float32)
  dn = ("NHWC", "HWIO", "NHWC")
  loss = lambda w, x, dy: (tg.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn) * dy).sum()
  g = tg.make_graph(tg.grad(loss))(w, x, dy)
  (k,) = [k for k in schedule(g).kernels if k.reduce is not None and k.loops[-1].extent == 32]
  assert interchanged(k) and [l.extent for l in k.loops] == [27, 32] and dy.nbytes > BLOCK_CHUNK_BYTES
  chunk = block_chunk(_Body(k), k)
  assert chunk is not None and split_parts(k, chunk, True) == SPLIT_PARTS and "shared[part * tiles + tile]" in k.source
  if tg.default_backend() != "cpu": return
  got = _on_1_2_and_3_threads(g, [w, x, dy])
  win = np.lib.stride_tricks.sliding_window_view(np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0))),
                                                (3, 3), axis=(1, 2))   # n, h, w, c, kh, kw
  want = np.einsum("nhwo,nhwcab->abco", dy, win)
  n = 16 * 1024
  np.testing.assert_allclose(got[0].reshape(want.shape), want, rtol=ulps(n), atol=ulps(n) * np.sqrt(n))


@pytest.mark.parametrize("n,cols,split", [(32, 32, True), (32, 10, True), (32, 128, False), (1, 32, False)])
def test_a_sum_of_one_register_block_is_shared_out_in_parts_of_its_rows(n, cols, split):
  """A channels-last bias gradient, column sums over 32768 rows of 32 (or 10) columns: one register block on every
  target, which a parallel loop over the blocks would leave to one thread; it runs in SPLIT_PARTS parts of its rows
  that the threads share out, then adds them up in order (split_parts). 128 columns, two blocks on AVX-512, are
  shared out as blocks, and one example's 1024 rows are too few to pay for parts. The same bits on 1, 2 or 3
  threads, and float64's values."""
  import tracegrad as tg
  from tracegrad.lower.render_c import interchanged
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(21)
  g = rng.standard_normal((n, 32, 32, cols)).astype(np.float32)
  graph = tg.make_graph(lambda g: g.sum(axis=(0, 1, 2)))(g)
  (k,) = [k for k in schedule(graph).kernels if k.reduce is not None]
  assert interchanged(k) and ("shared[part * tiles + tile]" in k.source) == split, k.source
  if tg.default_backend() != "cpu": return
  got = _on_1_2_and_3_threads(graph, [g])
  np.testing.assert_allclose(got[0], g.astype(np.float64).sum(axis=(0, 1, 2)), rtol=ulps(8),
                             atol=ulps(8) * np.sqrt(n * 1024))


@pytest.mark.parametrize("o,q", [(56, 288), (32, 27)])
def test_the_threads_share_out_the_bigger_operand_of_dot_products(o, q):
  """The outer, parallel loop of a block of dot products runs over the blocks of whichever operand is bigger (a
  filter gradient's windows, 288 taps by positions, over 56 output channels), so each thread reads its share once."""
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(3)
  dy, win = rng.standard_normal((4, o, 256)).astype(np.float32), rng.standard_normal((4, q, 256)).astype(np.float32)
  f = lambda a, b: tg.numpy.einsum("nop,nqp->oq", a, b)
  (k,) = [k for k in schedule(tg.make_graph(f)(dy, win)).kernels if k.reduce is not None]
  columns_first = k.source.index("for (int64_t jb = 0") < k.source.index("for (int64_t ib = 0")
  assert columns_first == (q > o)
  if tg.default_backend() == "cpu":
    np.testing.assert_allclose(np.asarray(tg.jit(f)(dy, win)), np.einsum("nop,nqp->oq", dy.astype(np.float64), win),
                               rtol=ulps(4 * 1024), atol=ulps(4 * 1024) * 32)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("o,q,n,p", [(16, 6, 2, 64), (5, 7, 3, 70)])
def test_dot_product_blocks_read_their_operands_as_vectors(dtype, o, q, n, p):
  """A step multiplying a row's load by a column's reads each as a vector, once per step (the row's kept in a
  register across the columns); a computed operand runs lane by lane. Both give the same sums as float64 einsum,
  whole blocks and cut ones, and a reduction with a tail shorter than a vector."""
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((n, o, p)).astype(dtype), rng.standard_normal((n, q, p)).astype(dtype)
  plain = lambda a, b: tg.numpy.einsum("nop,nqp->oq", a, b)
  computed = lambda a, b: tg.numpy.einsum("nop,nqp->oq", tg.numpy.exp(a), b)
  with x64(dtype == "float64"):
    for f, vector in ((plain, True), (computed, False)):
      (k,) = [k for k in schedule(tg.make_graph(f)(a, b)).kernels if k.reduce is not None]
      assert ("TG_PIN(av)" in k.source) == vector and "accs[q][c]" in k.source
      ref = np.einsum("nop,nqp->oq", np.exp(a.astype(np.float64)) if f is computed else a.astype(np.float64), b)
      got = np.asarray(tg.jit(f)(a, b))
      assert got.dtype == np.dtype(dtype)
      tol = ulps(4 * n * p, np.dtype(dtype))
      np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * math.sqrt(n * p) * np.abs(ref).max())


def test_only_a_product_of_two_operands_is_register_blocked():
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  a = np.ones((16, 8, 64), np.float32)
  rows = schedule(tg.make_graph(lambda a, b: ((a - b) * a).sum(-1))(a, a))   # each output reads its own row
  assert "accs[q][c]" not in rows.kernels[-1].source
  mm = schedule(tg.make_graph(lambda x, y: x @ y.T)(a[0], a[1]))   # rows of x serve every column, and y's every row
  assert "accs[q][c]" in mm.kernels[-1].source
  # a sum over the leading axis of other elementwise work runs one row to a block (more rows would share no loads,
  # only add code)
  f = lambda a, b: (tg.numpy.exp(a) + b).sum(0)
  cols = schedule(tg.make_graph(f)(a, a))
  assert "float accs[1][" in cols.kernels[-1].source
  np.testing.assert_allclose(np.asarray(tg.jit(f)(a, a)), (np.exp(1.0) + 1) * 16 * np.ones((8, 64)), rtol=ulps(16))


@pytest.mark.parametrize("n", [10, 24, 100])
def test_a_narrow_matmul_takes_its_columns_as_one_whole_block(n):
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((128, 256)).astype(np.float32), rng.standard_normal((256, n)).astype(np.float32)
  (kern,) = schedule(tg.make_graph(lambda x, y: x @ y)(a, b)).kernels
  # columns narrower than the widest target's vector bytes are one block of constant width where they fit
  assert (f"TG_WIDTH({n}, float)" in kern.source) == (n < 64)
  if tg.default_backend() == "cpu":
    np.testing.assert_allclose(np.asarray(tg.jit(lambda x, y: x @ y)(a, b)), a.astype(np.float64) @ b,
                               rtol=ulps(4 * 256), atol=ulps(4 * 256) * 16)


@pytest.mark.parametrize("keys,rows", [(64, 8), (70, 7), (61, 8), (66, 6)])
def test_register_blocks_of_fewer_vectors_than_the_targets_width_take_more_rows(keys, rows):
  """An attention's value gradient per head, P^T dO (keys x 32 columns over 64 queries): its columns fill two of
  AVX-512's four vectors, so its blocks take the most rows up to NARROW_ROWS_MAX that divide the keys (8 of 64, 7 of
  70; where none does, TG_ROWS where it divides them, 6 of 66, else the most, 8 of 61), a constant on TG_VBYTES; on
  AVX2 and narrower targets 32 columns fill the block's width and it keeps TG_ROWS. float64's values, the same bits on
  1, 2 and 3 threads."""
  import tracegrad as tg
  from tracegrad.lower.render_c import BLOCKS, block_sizes
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(5)
  p = rng.standard_normal((2, 4, 64, keys)).astype(np.float32)
  do = rng.standard_normal((2, 64, 4, 32)).astype(np.float32)
  spec = "bhqk,bqhd->bhkd"
  g = tg.make_graph(lambda p, do: tg.numpy.einsum(spec, p, do))(p, do)
  (k,) = [k for k in schedule(g).kernels if k.reduce is not None]
  assert [block_sizes(k, t)["rows"] for t in BLOCKS.values()] == [rows, 6, 4]
  assert ("TG_VBYTES == 256 ? " in k.source) == (rows != 6)
  if tg.default_backend() != "cpu": return
  got = _on_1_2_and_3_threads(g, [p, do])
  np.testing.assert_allclose(got[0], np.einsum(spec, p.astype(np.float64), do), rtol=ulps(4 * 64),
                             atol=ulps(4 * 64) * 8)


def test_a_clamped_operand_of_dot_products_is_read_lane_by_lane(cpu):
  """A load whose index clamps the reduction's variable (an edge-replicating read) is not a run of consecutive
  elements, so it is not read as a vector: each lane reads its own clamped element, and the sums match numpy's."""
  m, n, steps = 16, 48, 64
  i, j, r = (UOp.param((), I64) for _ in range(3))
  a, b = UOp.param((m * steps,), dtypes.float32), UOp.param((n * steps,), dtypes.float32)
  out = UOp.param((m * n,), dtypes.float32)
  acc = UOp.param((), dtypes.float32)
  clamped = (r - K(2)).alu(Ops.MAX, K(0)).alu(Ops.MIN, K(steps - 1))
  value = at(a, i * K(steps) + clamped) * at(b, j * K(steps) + r)
  k = Kernel("dots", (a, b, out), (Loop(i, m), Loop(j, n)), (Store(out, i * K(n) + j, acc),),
             Reduce(Ops.REDUCE_SUM, acc, (Loop(r, steps),), value))
  assert "accs[q][c]" in render_kernel(k) and "TG_PIN" not in render_kernel(k)
  specs = [BufferSpec(m * steps, dtypes.float32), BufferSpec(n * steps, dtypes.float32), BufferSpec(m * n, dtypes.float32)]
  prog = Program([k], [(0, 1, 2)], specs, [0, 1], [(2, (m * n,))])
  rng = np.random.default_rng(3)
  x, y = rng.standard_normal((m, steps)).astype(np.float32), rng.standard_normal((n, steps)).astype(np.float32)
  (got,) = run(cpu, prog, [x.reshape(-1), y.reshape(-1)])
  want = x.astype(np.float64)[:, np.clip(np.arange(steps) - 2, 0, steps - 1)] @ y.T
  np.testing.assert_allclose(got.reshape(m, n), want, rtol=ulps(4 * steps), atol=ulps(4 * steps) * math.sqrt(steps))


# a concatenation's parts; a pad's edges, one wide; parts of a last axis too short to vectorise (cut in 3s)
@pytest.mark.parametrize("case", ["concat", "pad", "short"])
def test_an_elementwise_loop_is_cut_where_its_compares_and_clamps_turn(case, tmp_path):
  """A kernel whose values compare the innermost loop's variable with constants (which part of a concatenation, the
  edge of a pad) runs that loop as one loop a range, each with its selects and clamps folded: no load at a clamped
  index is left, and each loop vectorises (the GPT's gradient of its fused qkv projection ran 4x faster)."""
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(0)
  xs = [rng.standard_normal((4, 6, w)).astype(np.float32) for w in ((32, 48, 16) if case != "short" else (3, 3))]
  f = {"concat": lambda a, b, c: tg.numpy.concatenate([a * 2, b, c + 1], axis=-1),
       "pad": lambda a, b, c: tg.numpy.pad(a + b[..., :32], ((0, 0), (0, 0), (1, 1))) * 3,
       "short": lambda a, b: tg.numpy.concatenate([a, -b], axis=-1)}[case]
  prog = schedule(tg.make_graph(f)(*xs))
  (kern,) = prog.kernels
  src = kern.source
  assert src.count("for (int64_t i2") == {"concat": 3, "pad": 3, "short": 2}[case] and " ? " not in src
  r = gcc(render_program(prog), tmp_path / "k.o", "-c", "-fopt-info-vec-optimized")
  assert r.returncode == 0, r.stderr
  assert r.stderr.count("loop vectorized") >= {"concat": 2, "pad": 1, "short": 0}[case]   # the parts of 32 or more
  want = {"concat": lambda a, b, c: np.concatenate([a * 2, b, c + 1], axis=-1),
          "pad": lambda a, b, c: np.pad(a + b[..., :32], ((0, 0), (0, 0), (1, 1))) * 3,
          "short": lambda a, b: np.concatenate([a, -b], axis=-1)}[case](*xs)
  np.testing.assert_array_equal(np.asarray(tg.jit(f)(*xs)), want)


@pytest.mark.parametrize("case", ["interleave", "pairs", "strided windows"])
def test_an_interleaves_short_phase_loops_run_unrolled(case, tmp_path):
  """A kernel picking among parts by a short loop's variable (an interleave of phases; a window's taps cut by the
  padding) runs that loop unrolled, each step's selects folded, and the loop inside it vectorised over whole rows;
  compares of a multiple of the innermost variable (a stride-2 window at the padding's edge) cut it into pieces."""
  import tracegrad as tg
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(0)
  if case == "interleave":   # (4, 6, 16, 2): a's and b's elements in turn
    xs = [rng.standard_normal((4, 6, 16)).astype(np.float32) for _ in range(2)]
    f = lambda a, b: tg.numpy.stack([a, b * 2], axis=-1).reshape(4, 6, 32) + 1
    want = np.stack([xs[0], xs[1] * 2], axis=-1).reshape(4, 6, 32) + 1
  elif case == "pairs":   # (16, 2): one loop outside the phases
    xs = [rng.standard_normal(16).astype(np.float32) for _ in range(2)]
    f = lambda a, b: tg.numpy.stack([a, b * 2], axis=-1).reshape(32) + 1
    want = np.stack([xs[0], xs[1] * 2], axis=-1).reshape(32) + 1
  else:   # a stride-2 convolution's windows of a 32 x 32 input, padded after: tap (i, j) of window (a, b) at
    # 2a + i, 2b + j
    xs = [rng.standard_normal((2, 3, 32, 32)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)]
    f = lambda x, w: tg.lax.conv_general_dilated(x, w, (2, 2), "SAME")
    xp = np.pad(xs[0].astype(np.float64), ((0, 0), (0, 0), (0, 1), (0, 1)))
    want = sum(np.einsum("nchw,oc->nohw", xp[:, :, i:i + 31:2, j:j + 31:2], xs[1][:, :, i, j])
               for i in range(3) for j in range(3))
  prog = schedule(tg.make_graph(f)(*xs))
  (kern,) = [k for k in prog.kernels if k.reduce is None]   # the windows (im2col)
  src = kern.source
  assert re.search(r"omp simd\s+for \(int64_t i\d = 0; i\d < 16;", src), src   # whole rows as vectors
  assert " ? " not in src or case == "strided windows", src
  r = gcc(render_program(prog), tmp_path / "k.o", "-c", "-fopt-info-vec-optimized")
  assert r.returncode == 0, r.stderr
  assert r.stderr.count("loop vectorized") >= (9 if case == "strided windows" else 1), r.stderr
  np.testing.assert_allclose(np.asarray(tg.jit(f)(*xs)), want, rtol=0, atol=1e-5 if case == "strided windows" else 0)


def test_the_librarys_polynomial_steps_are_multiply_adds_and_a_users_are_not():
  """tanh's polynomials are evaluated by fused multiply-adds (CONTRACT products); x * y + z written by the user is a
  multiply and an add, each rounded. tanh stays within 7 ulp (4.9 fused), at most 1, and 1 from the clamp on."""
  import tracegrad as tg, tracegrad.numpy as tnp
  from tracegrad.lax.float_math import _TANH_ONE
  from tracegrad.lower.schedule import schedule
  x = np.random.default_rng(0).uniform(-10, 10, 4096).astype(np.float32)
  body = lambda f, *a: (s := render_program(schedule(tg.make_graph(f)(*a))))[s.index("TG_KERNEL void"):]
  assert body(tnp.tanh, x).count("TG_FMAF(") == 9
  assert "TG_FMAF(" not in body(lambda a, b: a * b + 1.0, x, x)
  edge = np.array([np.nextafter(np.float32(_TANH_ONE), np.float32(0)), _TANH_ONE, 9.0, 1e30], np.float32)
  got = np.asarray(tg.jit(tnp.tanh)(np.concatenate([x, edge, -edge])))
  assert got[-8] <= 1 and (got[-7:-4] == 1).all() and got[-4] >= -1 and (got[-3:] == -1).all()
  want = np.tanh(x.astype(np.float64))
  assert (np.abs(got[:-8] - want) <= 7 * np.spacing(np.abs(want).astype(np.float32))).all()


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_a_minimum_or_maximum_with_a_number_tests_one_comparison_and_matches_numpy(dtype):
  """A constant operand is no NaN: a float32 kernel compares once (relu's max(x, 0)), and every dtype still gives
  numpy's NaN, signed zero and tie of every case, the constant first or second."""
  import tracegrad as tg, tracegrad.numpy as tnp
  from tracegrad.lower.schedule import schedule
  vals = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, 3.0, 1e-45], dtype)
  for c in (0.0, -0.0, 2.0, -np.inf):
    for tf, nf in ((tnp.maximum, np.maximum), (tnp.minimum, np.minimum)):
      for f, want in ((lambda v: tf(v, dtype(c)), nf(vals, dtype(c))), (lambda v: tf(dtype(c), v), nf(dtype(c), vals))):
        got = np.asarray(tg.jit(f)(vals))
        assert np.array_equal(np.isnan(got), np.isnan(want)), (c, got, want)
        real = ~np.isnan(want)
        assert np.array_equal(got[real], want[real]) and np.array_equal(np.signbit(got[real]), np.signbit(want[real]))
  if dtype is np.float32:
    src = render_kernel(schedule(tg.make_graph(lambda v: tnp.maximum(v, 0.0))(vals)).kernels[0])
    assert src.count("!=") == 0 and src.count(">=") == 1, src


def test_register_blocks_prefetch_the_column_panel_they_read():
  """A matmul's column panels hold a row of the right operand a step: each register block prefetches the row it reads
  PREFETCH_STEPS steps ahead (the panel's step is its width, a C expression the rule for strided loads skipped), and
  the product stays numpy's."""
  import tracegrad as tg, tracegrad.numpy as tnp
  from tracegrad.lower.schedule import schedule
  a, b = (np.random.default_rng(i).standard_normal((512, 512)).astype(np.float32) for i in range(2))
  k = schedule(tg.make_graph(lambda x, y: x @ y)(a, b)).kernels[-1]
  assert "TG_PREFETCH(&panel[" in render_kernel(k)
  got = np.asarray(tg.jit(lambda x, y: x @ y)(tnp.asarray(a), tnp.asarray(b)))
  np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=ulps(4 * 512), atol=ulps(4 * 512) * math.sqrt(512))


def _scaled(n: int, c: float) -> Kernel:
  """out[i] = x[i] * c over n elements, with parameters of its own."""
  x, out, i = UOp.param((n,), dtypes.float32), UOp.param((n,), dtypes.float32), UOp.param((), I64)
  return Kernel("k_scaled", (x, out), (Loop(i, n),), (Store(out, i, x.gather(i.reshape((1,))) * K(c, dtypes.float32)),))


def test_alike_kernels_have_one_structure_and_are_rendered_once(monkeypatch):
  """Kernels that differ only in their names and parameter nodes (a network's alike layers) have one structure and
  render to one function, rendered once; a different constant (-0.0 against 0.0 too) or extent is another."""
  import tracegrad.lower.render_c as rc
  a, b = _scaled(64, 2.0), _scaled(64, 2.0)
  assert a.structure() == b.structure() and render_kernel(a) == render_kernel(b)
  for other in (_scaled(64, 3.0), _scaled(32, 2.0)):
    assert other.structure() != a.structure()
  assert _scaled(8, 0.0).structure() != _scaled(8, -0.0).structure()
  rendered = []
  monkeypatch.setattr(rc, "render_kernel", lambda k, *args, **kw: rendered.append(k) or render_kernel(k, *args, **kw))
  kernels = [_scaled(64, 2.0), _scaled(64, 2.0), _scaled(64, 3.0)]
  prog = Program(kernels, [(0, 1), (1, 2), (2, 3)], [BufferSpec(64, dtypes.float32) for _ in range(4)], [0], [(3, (64,))])
  src = render_program(prog)
  assert len(rendered) == 2 and len(set(re.findall(r"void (k_scaled\w*)\(", src))) == 2


def test_a_filter_gradient_prefetches_the_window_runs_it_reads_next():
  """A strided convolution's filter gradient reads its stored windows in runs of one batch element's positions (1 KB
  a row), too short for the hardware's prefetchers: each register block prefetches, a line or so a step, the runs of
  the next batch element (after the last, of its next block of rows), and the gradient stays numpy's."""
  import tracegrad as tg
  from tracegrad import lax
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(7)
  x = rng.standard_normal((32, 32, 32, 32)).astype(np.float32)
  w = rng.standard_normal((64, 32, 3, 3)).astype(np.float32) * 0.1
  dy = rng.standard_normal((32, 64, 16, 16)).astype(np.float32)
  f = lambda w, x, dy: tg.grad(lambda w: (lax.conv_general_dilated(x, w, (2, 2), ((1, 1), (1, 1))) * dy).sum())(w)
  ahead = [k for k in schedule(tg.make_graph(f)(w, x, dy)).kernels if k.reduce is not None and "const int64_t no = r0 + 1 <" in k.source]
  assert ahead and all("TG_PREFETCH(&b" in k.source for k in ahead)
  if tg.default_backend() == "cpu":
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))).astype(np.float64)
    want = np.zeros(w.shape)
    for kh in range(3):
      for kw in range(3):
        want[:, :, kh, kw] = np.einsum("nohw,nchw->oc", dy, xp[:, :, kh:kh + 32:2, kw:kw + 32:2])
    steps = 32 * 16 * 16
    np.testing.assert_allclose(np.asarray(tg.jit(f)(w, x, dy)), want, rtol=ulps(4 * steps),
                               atol=ulps(4 * steps) * math.sqrt(steps) * 4)


def test_a_block_of_dot_products_prefetches_the_runs_it_reads_next():
  """A weight gradient summed over a batch and 256 positions as blocks of dot products (both operands read along the
  sum, in 1 KB runs per batch element) prefetches the runs of the next batch element of both, and its sums stay
  numpy's; runs of 64 positions (4 lines) are left to the hardware."""
  import tracegrad as tg, tracegrad.numpy as tnp
  from tracegrad.lower.opt import shape
  from tracegrad.lower.schedule import schedule
  rng = np.random.default_rng(8)
  a, g = rng.standard_normal((64, 16, 256)).astype(np.float32), rng.standard_normal((64, 72, 256)).astype(np.float32)
  f = lambda a, g: tnp.einsum("nip,njp->ij", a, g)
  (k,) = [k for k in schedule(tg.make_graph(f)(a, g)).kernels if k.reduce is not None]
  assert shape(k) == "dots" and len(re.findall(r"const int64_t no = r0 \+ 1 <", k.source)) >= 2
  (short,) = [k for k in schedule(tg.make_graph(f)(a[..., :64], g[..., :64])).kernels if k.reduce is not None]
  assert "const int64_t no = " not in short.source
  if tg.default_backend() == "cpu":
    steps = 64 * 256
    np.testing.assert_allclose(np.asarray(tg.jit(f)(a, g)), np.einsum("nip,njp->ij", a.astype(np.float64), g),
                               rtol=ulps(4 * steps), atol=ulps(4 * steps) * math.sqrt(steps) * 4)
