"""The float32 exp2, exp, log2, log, sin and cos of lower/c_math.py, compiled as kernels: special values as numpy, at
most 2 ulp from the correctly rounded result over a sweep of every float32 exponent, and loops that gcc vectorises."""
import platform
import re
import shutil
import subprocess

import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from tracegrad.devices.cpu import FLAGS, CPUDevice
from tracegrad.devices.interp import InterpDevice
from tracegrad.ir import Ops, UOp, dtypes
from tracegrad.devices.base import BufferSpec, Program
from tracegrad.lower.kernel import Kernel, Loop, Store
from tracegrad.lower.render_c import render_program
from tracegrad.lower.schedule import schedule

F32 = dtypes.float32
OPS = {Ops.EXP2: np.exp2, Ops.LOG2: np.log2, Ops.SIN: np.sin, Ops.COS: np.cos}
INF, NAN = np.inf, np.nan


def unary(op: Ops | str, n: int, d=F32, parallel=True) -> Program:
  """One kernel storing op(x) for the n points of x ("exp": EXP2(x * log2(e)), "log": LOG2(x) * ln(2), as tnp.exp and
  tnp.log build them)."""
  i = UOp.param((), dtypes.int64)
  x, y = UOp.param((n,), d), UOp.param((n,), d)
  v = x.gather(i.reshape((1,)))
  if op == "exp": v = (v * UOp.const(d, 1 / np.log(2.0))).alu(Ops.EXP2)
  elif op == "log": v = v.alu(Ops.LOG2) * UOp.const(d, np.log(2.0))
  else: v = v.alu(op)
  k = Kernel(f"k_{getattr(op, 'name', op).lower()}", (x, y), (Loop(i, n),), (Store(y, i, v),), parallel=parallel)
  return Program([k], [(0, 1)], [BufferSpec(n, d), BufferSpec(n, d)], [0], [(1, (n,))])


def run(cpu, op: Ops, x: np.ndarray) -> np.ndarray:
  prog = unary(op, x.size)
  return cpu.run_program(prog, cpu.compile(render_program(prog)), [x])[0]


def correct(op: Ops, x: np.ndarray) -> np.ndarray:
  """The float32 result, rounded once from float64."""
  with np.errstate(all="ignore"): return OPS[op](x.astype(np.float64)).astype(np.float32)


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  """Floats between a and b (0 for two NaNs, 2^32 for a NaN and a number)."""
  def line(v):
    i = v.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7fffffff), i)
  d = np.abs(line(a) - line(b))
  na, nb = np.isnan(a), np.isnan(b)
  return np.where(na | nb, np.where(na & nb, 0, 2 ** 32), d)


def assert_ulps(op, x, got, want, limit):
  err = ulps(got, want)
  bad = np.flatnonzero(err > limit)
  assert bad.size == 0, (f"{op.name}: {bad.size} results over {limit} ulp, worst {err.max()}: x={x[bad[:6]]}, "
                         f"got {got[bad[:6]]}, want {want[bad[:6]]}")


SPECIAL = np.array([0.0, -0.0, INF, -INF, NAN, -NAN, 1.0, -1.0, 2.0, 0.5, 1e-45, -1e-45, 1e-38, 1.1754942e-38,
                    3.4028235e38, -3.4028235e38, 1e-30, 0.25, 1.5707964, -1.5707964, 3.1415927, 6.2831855, 0.7853982,
                    0.78539807, 105414.35, 1e5, 1e6, 16777216.0, 1e20, 1e30, 127.0, 127.99999, 128.0, 129.0, 1e3,
                    -126.0, -126.5, -127.0, -140.3, -149.0, -149.5, -150.0, -150.5, -151.0, -1e3], np.float32)


@pytest.mark.parametrize("op", list(OPS), ids=lambda o: o.name)
def test_special_values(cpu, op):
  got, want = run(cpu, op, SPECIAL), correct(op, SPECIAL)
  assert_ulps(op, SPECIAL, got, want, 1)
  same = np.isinf(want) | (want == 0) | np.isnan(want)
  assert_ulps(op, SPECIAL[same], got[same], want[same], 0)
  assert np.array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0])), f"{op.name}: the sign of a zero"


def test_exp_is_within_two_ulp_everywhere(cpu):
  """EXP2(x * log2(e)) renders as e^x (c_math's tg_expf): every 997th bit pattern, the ranges around overflow and
  the subnormal results, and special values."""
  sweep = np.arange(0, 2 ** 32, 997, dtype=np.uint64).astype(np.uint32).view(np.float32)
  edges = [np.arange(np.float32(lo).view(np.int32), np.float32(hi).view(np.int32), 13, dtype=np.int32)
           .view(np.float32) for lo, hi in ((88.0, 89.0), (-105.0, -86.0))]
  x = np.concatenate([sweep, -edges[1], *edges, SPECIAL])
  with np.errstate(all="ignore"): want = np.exp(x.astype(np.float64)).astype(np.float32)
  got = run(cpu, "exp", x)
  assert_ulps(Ops.EXP2, x, got, want, 2)
  assert "tg_expf(" in render_program(unary("exp", 8)) and "exp(" in render_program(unary("exp", 8, dtypes.float64))


def test_log_is_within_one_ulp_everywhere(cpu):
  """LOG2(x) * ln(2) renders as log(x) (c_math's tg_logf), rounded once: every 997th bit pattern, every float from
  1/2 to 2 (where log(1 + f)'s terms cancel least) a 7th, the subnormals and special values within 1 ulp; zeros,
  infinities and NaN exactly. The interp device computes the same node as numpy's log."""
  sweep = np.arange(0, 2 ** 32, 997, dtype=np.uint64).astype(np.uint32).view(np.float32)
  near = np.arange(np.float32(0.5).view(np.int32), np.float32(2.0).view(np.int32), 7, dtype=np.int32).view(np.float32)
  tiny = np.arange(1, 0x00800000, 101, dtype=np.int32).view(np.float32)
  x = np.concatenate([sweep, near, tiny, SPECIAL])
  with np.errstate(all="ignore"): want = np.log(x.astype(np.float64)).astype(np.float32)
  got = run(cpu, "log", x)
  assert_ulps(Ops.LOG2, x, got, want, 1)
  same = np.isinf(want) | np.isnan(want)
  assert_ulps(Ops.LOG2, x[same], got[same], want[same], 0)
  assert "tg_logf(" in render_program(unary("log", 8)) and "log(" in render_program(unary("log", 8, dtypes.float64))
  y = np.abs(sweep[np.isfinite(sweep)][:2000])
  (ref,) = InterpDevice().execute([UOp.buffer(y).alu(Ops.LOG2) * UOp.const(F32, np.log(2.0), y.shape)], {})
  with np.errstate(all="ignore"): np.testing.assert_array_equal(ref, np.log(y))


def test_exact_cases(cpu):
  k = np.arange(-149, 128, dtype=np.float32)
  p = np.ldexp(np.float32(1), k.astype(np.int32))
  assert np.array_equal(run(cpu, Ops.EXP2, k), p)
  assert np.array_equal(run(cpu, Ops.LOG2, p), k)


@pytest.mark.parametrize("op", list(OPS), ids=lambda o: o.name)
def test_sweep(cpu, op):
  """Every 997th float32 bit pattern (both signs, every exponent, subnormals, inf and NaN)."""
  x = np.arange(0, 2 ** 32, 997, dtype=np.uint64).astype(np.uint32).view(np.float32)
  got = run(cpu, op, x)
  assert_ulps(op, x, got, correct(op, x), 2 if op in (Ops.EXP2, Ops.LOG2) else 1)


@pytest.mark.skipif(platform.machine() != "x86_64" or shutil.which("gcc") is None, reason="x86-64 gcc only")
def test_sweep_without_fma(tmp_path):
  """exp2 and log2 evaluate their polynomials with fma where the target has it, else with a multiply and an add."""
  with pytest.MonkeyPatch.context() as mp:
    mp.setenv("CC", "gcc -mno-fma")
    mp.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))
    dev = CPUDevice()
    if not dev.available(): pytest.skip("gcc -mno-fma does not compile")
    x = np.arange(0, 2 ** 32, 1999, dtype=np.uint64).astype(np.uint32).view(np.float32)
    for op in (Ops.EXP2, Ops.LOG2, "exp", "log"):
      prog = unary(op, x.size)
      source = render_program(prog)
      assert "vfmadd" not in subprocess.run(["gcc", "-mno-fma", *FLAGS, "-S", "-x", "c", "-", "-o", "-"], input=source,
                                            capture_output=True, text=True).stdout
      with np.errstate(all="ignore"):
        want = {"exp": np.exp, "log": np.log}[op](x.astype(np.float64)).astype(np.float32) if isinstance(op, str) \
            else correct(op, x)
      assert_ulps(Ops.EXP2, x, dev.run_program(prog, dev.compile(source), [x])[0], want, 2)


BEYOND = r"""
#include <fenv.h>
#include <stdio.h>
int main(void) {
  static const float xs[] = {-1e9f, -200.0f, -151.5f, -104.5f, -INFINITY, 104.5f, 151.5f, 1e30f, INFINITY};
  volatile float sink = 0.0f;
  feclearexcept(FE_ALL_EXCEPT);
  for (int i = 0; i < 9; i++) sink += tg_expf(xs[i]) + tg_exp2f(1.5f * xs[i]);
  int flags = fetestexcept(FE_UNDERFLOW | FE_OVERFLOW);
  for (int i = 0; i < 9; i++) printf("%a %a\n", tg_expf(xs[i]), tg_exp2f(1.5f * xs[i]));
  return flags ? 3 : 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_exp_beyond_its_range_is_selected_without_underflow(tmp_path):
  """e^x and 2^x of an x past where they round to 0 or overflow (a mask's -1e9 in a softmax) are 0 and infinity,
  selected: no operation underflows or overflows on the way, which some hosts handle in microcode, one vector at a
  time."""
  from tracegrad.lower.render_c import program_prelude
  exe = tmp_path / "beyond"
  r = subprocess.run(["gcc", *(f for f in FLAGS if f not in ("-shared", "-fPIC")), "-fno-fast-math", "-x", "c", "-",
                      "-o", str(exe), "-lm"], input=program_prelude() + BEYOND, capture_output=True, text=True)
  assert r.returncode == 0, r.stderr
  out = subprocess.run([str(exe)], capture_output=True, text=True)
  assert out.returncode == 0, f"an underflow or overflow was raised:\n{out.stdout}"
  got = [[float.fromhex(v) for v in line.split()] for line in out.stdout.split("\n") if line]
  assert got == [[0.0, 0.0]] * 5 + [[INF, INF]] * 4


@pytest.mark.parametrize("op", list(OPS), ids=lambda o: o.name)
def test_dense_ranges(cpu, op):
  """Every float32 in the ranges where the reductions change case: exp2's subnormal results, log2 near 1, sin and cos
  near pi/4 and pi/2."""
  lo, hi = {Ops.EXP2: (-150.5, -125.0), Ops.LOG2: (0.70710677, 1.4142135),
            Ops.SIN: (0.78, 1.58), Ops.COS: (0.78, 1.58)}[op]
  x = np.arange(np.float32(lo).view(np.int32), np.float32(hi).view(np.int32), 7, dtype=np.int32).view(np.float32)
  assert_ulps(op, x, run(cpu, op, x), correct(op, x), 2 if op in (Ops.EXP2, Ops.LOG2) else 1)


def test_rendered_calls():
  """float16, bfloat16 and float32 call c_math's functions (the half types compute in float), float64 calls libm."""
  for d in (dtypes.float16, dtypes.bfloat16, F32, dtypes.float64):
    src = render_program(unary(Ops.SIN, 8, d))
    body = src[src.index("TG_KERNEL void"):]
    assert ("tg_sinf(" in body, "= sin(" in body) == (d is not dtypes.float64, d is dtypes.float64), d


def test_jit(cpu):
  x = np.linspace(-85, 85, 1001, dtype=np.float32)
  for f, g in ((tnp.exp2, np.exp2), (tnp.exp, np.exp), (tnp.sin, np.sin), (tnp.cos, np.cos)):
    got = np.asarray(tracegrad.jit(f)(x))
    assert ulps(got, g(x.astype(np.float64)).astype(np.float32)).max() <= 2, f
  y = np.abs(x) + np.float32(0.01)
  assert ulps(np.asarray(tracegrad.jit(tnp.log2)(y)), np.log2(y.astype(np.float64)).astype(np.float32)).max() <= 2


def vectorised_loops(src: str, tmp_path) -> int:
  r = subprocess.run(["gcc", *FLAGS, "-fopt-info-vec-optimized", "-c", "-x", "c", "-", "-o", str(tmp_path / "k.o")],
                     input=src, capture_output=True, text=True)
  assert r.returncode == 0, r.stderr
  return len({l.split(": ")[0] for l in r.stderr.splitlines() if "loop vectorized" in l})


def x86_without_avx2() -> bool:
  """sin and cos shift 64-bit lanes by lane amounts, which x86 vectors can only from AVX2 on."""
  if platform.machine() != "x86_64": return False
  try:
    return " avx2" not in open("/proc/cpuinfo").read()
  except OSError:
    return True


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
@pytest.mark.parametrize("op", list(OPS), ids=lambda o: o.name)
def test_vectorised(op, tmp_path):
  """gcc vectorises the loop without an OpenMP simd pragma, by its own cost model."""
  if op in (Ops.SIN, Ops.COS) and x86_without_avx2(): pytest.skip("x86 without AVX2")
  src = render_program(unary(op, 4096, parallel=False))
  assert "#pragma" not in src
  assert vectorised_loops(src, tmp_path) == 1


FUSED = {
  "benchmark": lambda x: tnp.tanh(1.5 * x + 0.5) * tnp.exp(-x * x) + x / (1 + tnp.abs(x)),
  "chains": lambda x: tnp.sin(tnp.log2(tnp.abs(x) + 1)) + tnp.cos(tnp.exp2(-x * x)) * tnp.log(tnp.exp(x) + 1),
  "checks": lambda x: tnp.where(tnp.isnan(tnp.log(x)), tnp.maximum(tnp.exp2(x), tnp.sin(x)), tnp.minimum(x, 1.0)),
}


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
@pytest.mark.parametrize("name", list(FUSED))
def test_vectorised_fused(name, tmp_path):
  """Fused kernels that call several of the functions, and compare their results, stay vectorised."""
  if name != "benchmark" and x86_without_avx2(): pytest.skip("x86 without AVX2")
  prog = schedule(tracegrad.make_graph(FUSED[name])(np.zeros(1 << 16, np.float32)))
  assert len(prog.kernels) == 1 and re.search(r"tg_\w+f\(", prog.kernels[0].source)
  assert vectorised_loops(render_program(prog), tmp_path) == 1
