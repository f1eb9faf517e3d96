"""The CPU device: compiling with a disk cache, compile errors, running Programs, the interp fallback."""
import os
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

from tracegrad.devices import cpu as cpu_mod
from tracegrad.devices.cpu import CPUDevice
from tracegrad.devices.interp import InterpDevice
from tracegrad.ir import Ops, UOp, dtypes
from tracegrad.devices.base import BufferSpec, Program
from tracegrad.lower.kernel import Kernel, Loop, Store
from tracegrad.lower.render_c import render_program

F32 = dtypes.float32
HAS_CC = CPUDevice().toolchain() is not None
needs_cc = pytest.mark.skipif(not HAS_CC, reason="no C compiler")


@pytest.fixture
def cache(tmp_path, monkeypatch):
  monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))
  return tmp_path / "cpu"


def at(buf, i): return buf.gather(i.reshape((1,)))


def axpy(n=5, a=2.0):
  """out = a * x + y over buffers [x, y, out]."""
  i = UOp.param((), dtypes.int64)
  x, y, out = (UOp.param((n,), F32) for _ in range(3))
  k = Kernel("axpy", (out, x, y), (Loop(i, n),), (Store(out, i, UOp.const(F32, a) * at(x, i) + at(y, i)),))
  return Program([k], [(2, 0, 1)], [BufferSpec(n, F32)] * 3, [0, 1], [(2, (n,))])


def test_device_names():
  d = CPUDevice()
  assert (d.name, d.platform) == ("cpu", "cpu") and repr(d) == "CpuDevice(id=0)"


def test_execute_runs_on_interp_without_compiling(monkeypatch):
  d = CPUDevice()
  monkeypatch.setattr(d, "compile", lambda src: pytest.fail("eager execution compiled"))
  x = UOp.buffer(np.arange(4, dtype=np.float32))
  (got,) = d.execute([(x * x).alu(Ops.SQRT)], {})
  np.testing.assert_array_equal(got, np.arange(4, dtype=np.float32))


def test_no_compiler_warns_once(monkeypatch):
  monkeypatch.setenv("CC", "/nonexistent/tracegrad-test-cc")
  d = CPUDevice()
  with pytest.warns(RuntimeWarning, match="no working C compiler.*interp"):
    assert not d.available()
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert not d.available()
  with pytest.raises(RuntimeError, match="no working C compiler"):
    d.compile("void tg_run(void **bufs) {}")


@needs_cc
def test_the_compiler_probe_is_remembered_until_the_compiler_or_the_flags_change(cache, tmp_path, monkeypatch):
  cc = " ".join(CPUDevice().toolchain().cmd)
  wrapper = tmp_path / "cc-wrapper"
  wrapper.write_text(f'#!/bin/sh\nexec {cc} "$@"\n')
  wrapper.chmod(0o755)
  probes = []
  real = cpu_mod._compiles
  monkeypatch.setattr(cpu_mod, "_compiles", lambda tc: probes.append(tc) or real(tc))
  find = lambda: cpu_mod.find_toolchain.__wrapped__(str(wrapper))   # past the in-process memo
  first = find()
  assert first is not None and (n := len(probes)) >= 1 and (cache / "toolchains.json").exists()
  assert find() == first and len(probes) == n
  monkeypatch.setattr(cpu_mod, "FLAGS", (*cpu_mod.FLAGS, "-fno-strict-aliasing"))
  assert "-fno-strict-aliasing" in find().flags and len(probes) > n
  n = len(probes)
  wrapper.write_text(f'#!/bin/sh\n# another compiler now\nexec {cc} "$@"\n')
  find()
  assert len(probes) > n


@needs_cc
def test_the_gather_flag_is_the_first_the_compiler_takes(cache, tmp_path, monkeypatch):
  """A compiler that knows -mgather gets it; one that knows neither gather flag compiles with the other flags."""
  cc = " ".join(CPUDevice().toolchain().cmd)
  takes_mgather = tmp_path / "cc-mgather"   # takes -mgather (and leaves it out), rejects -mtune-ctrl
  takes_mgather.write_text('#!/bin/sh\nfor a in "$@"; do shift; case "$a" in -mgather) ;; -mtune-ctrl=*) exit 1;; '
                           f'*) set -- "$@" "$a";; esac; done\nexec {cc} "$@"\n')
  takes_neither = tmp_path / "cc-no-gather"
  takes_neither.write_text('#!/bin/sh\nfor a in "$@"; do case "$a" in -mgather|-mtune-ctrl=*) exit 1;; esac; done\n'
                           f'exec {cc} "$@"\n')
  for w in (takes_mgather, takes_neither): w.chmod(0o755)
  tc = cpu_mod.find_toolchain.__wrapped__(str(takes_mgather))
  assert tc.flags == (*cpu_mod.FLAGS, "-mgather")
  tc = cpu_mod.find_toolchain.__wrapped__(str(takes_neither))
  assert tc.flags == cpu_mod.FLAGS


@needs_cc
def test_a_compiler_that_rejects_the_vector_width_preference_compiles_without_it(cache, tmp_path):
  """-mprefer-vector-width is x86's: a compiler for another architecture rejects it and keeps every other flag."""
  cc = " ".join(CPUDevice().toolchain().cmd)
  wrapper = tmp_path / "cc-no-width"
  wrapper.write_text('#!/bin/sh\nfor a in "$@"; do case "$a" in -mprefer-vector-width=*) exit 1;; esac; done\n'
                     f'exec {cc} "$@"\n')
  wrapper.chmod(0o755)
  tc = cpu_mod.find_toolchain.__wrapped__(str(wrapper))
  assert not any(f.startswith("-mprefer-vector-width") for f in tc.flags)
  assert {"-fopenmp", "-march=native", "-O3"} <= set(tc.flags)


@needs_cc
def test_compiler_without_openmp(cache, tmp_path, monkeypatch):
  cc = " ".join(CPUDevice().toolchain().cmd)
  wrapper = tmp_path / "cc-no-openmp"
  wrapper.write_text('#!/bin/sh\n'
                     'for a in "$@"; do [ "$a" = -fopenmp ] && { echo "unsupported: -fopenmp" >&2; exit 1; }; done\n'
                     f'exec {cc} "$@"\n')
  wrapper.chmod(0o755)
  monkeypatch.setenv("CC", str(wrapper))
  d = CPUDevice()
  assert d.available() and "-fopenmp" not in d.toolchain().flags and "-fwrapv" in d.toolchain().flags
  prog = axpy(n=1 << 16)
  assert "#pragma omp parallel" in render_program(prog)
  (got,) = d.run_program(prog, d.compile(render_program(prog)), [np.ones(1 << 16, np.float32)] * 2)
  assert (got == 3).all()


@needs_cc
def test_run_program(cache):
  d = CPUDevice()
  assert d.available()
  prog = axpy()
  lib = d.compile(render_program(prog))
  x, y = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
  (got,) = d.run_program(prog, lib, [x, y])
  np.testing.assert_array_equal(got, 2 * x + y)
  (got,) = d.run_program(prog, lib, [x.astype(np.float64), [1, 2, 3, 4, 5]])   # converted to the buffer dtype
  np.testing.assert_array_equal(got, 2 * x + np.arange(1, 6))
  with pytest.raises(ValueError, match="takes 2 inputs, got 1"):
    d.run_program(prog, lib, [x])
  with pytest.raises(ValueError, match="holds 5 elements"):
    d.run_program(prog, lib, [x, np.ones(4, np.float32)])


@needs_cc
def test_outputs_may_be_inputs_or_constants(cache):
  d = CPUDevice()
  c = np.arange(6, dtype=np.int32)
  c.flags.writeable = False
  prog = Program([], [], [BufferSpec(6, dtypes.int32), BufferSpec(6, dtypes.int32, c)], [0], [(0, (2, 3)), (1, (3, 2))])
  x = np.full(6, 7, np.int32)
  out_x, out_c = d.run_program(prog, d.compile(render_program(prog)), [x])
  assert out_x.shape == (2, 3) and not np.shares_memory(out_x, x) and (out_x == 7).all()
  assert out_c.shape == (3, 2) and np.shares_memory(out_c, c)


@needs_cc
def test_inputs_and_constants_written_in_place_are_copied(cache):
  d = CPUDevice()
  i = UOp.param((), dtypes.int64)
  x, c = UOp.param((3,), F32), UOp.param((3,), F32)
  k = Kernel("inplace", (x, c), (Loop(i, 3),), (Store(x, i, at(x, i) + at(c, i)), Store(c, i, at(x, i))))
  const = np.array([1, 2, 3], np.float32)
  prog = Program([k], [(0, 1)], [BufferSpec(3, F32), BufferSpec(3, F32, const)], [0], [(0, (3,)), (1, (3,))])
  x_in = np.array([10, 20, 30], np.float32)
  got_x, got_c = d.run_program(prog, d.compile(render_program(prog)), [x_in])
  np.testing.assert_array_equal(got_x, [11, 22, 33])
  np.testing.assert_array_equal(got_c, [11, 22, 33])
  np.testing.assert_array_equal(x_in, [10, 20, 30])
  np.testing.assert_array_equal(const, [1, 2, 3])


@needs_cc
def test_constant_buffers_and_intermediates(cache):
  """Two kernels through an intermediate buffer; a constant of a half type read by the second."""
  d = CPUDevice()
  i = UOp.param((), dtypes.int64)
  n = 4
  x, t, c, out = (UOp.param((n,), dt) for dt in (dtypes.float16, dtypes.float16, dtypes.float16, dtypes.float32))
  k1 = Kernel("square", (t, x), (Loop(i, n),), (Store(t, i, at(x, i) * at(x, i)),))
  k2 = Kernel("shift", (out, t, c), (Loop(i, n),), (Store(out, i, (at(t, i) + at(c, i)).cast(F32)),))
  const = np.array([0.1, 0.2, 0.3, 1e-7], np.float16)
  specs = [BufferSpec(n, dtypes.float16), BufferSpec(n, dtypes.float16), BufferSpec(n, dtypes.float16, const),
           BufferSpec(n, F32)]
  prog = Program([k1, k2], [(1, 0), (3, 1, 2)], specs, [0], [(3, (n,)), (1, (n,))])
  xs = np.array([1.5, -3.0, 300.0, 1e-3], np.float16)
  with np.errstate(over="ignore"):
    want = (xs * xs + const).astype(np.float32)
  got, mid = d.run_program(prog, d.compile(render_program(prog)), [xs])
  np.testing.assert_array_equal(got, want)
  with np.errstate(over="ignore"):
    np.testing.assert_array_equal(mid, xs * xs)


@needs_cc
def test_disk_cache(cache, monkeypatch):
  src = render_program(axpy())
  CPUDevice().compile(src)
  (entry,) = cache.glob("*.so")
  assert not list(cache.glob("*.tmp"))
  monkeypatch.setattr(cpu_mod, "_build", lambda *a: pytest.fail("a cached library was compiled again"))
  lib = CPUDevice().compile(src)
  assert lib.path == entry


@needs_cc
def test_disk_cache_in_another_process(cache):
  src = render_program(axpy())
  CPUDevice().compile(src)
  code = ("import sys\nfrom tracegrad.devices import cpu\n"
          "cpu._build = lambda *a: sys.exit('compiled again')\n"
          f"cpu.CPUDevice().compile({src!r})\n")
  r = subprocess.run([sys.executable, "-c", code], env={**os.environ, "TRACEGRAD_CACHE_DIR": str(cache.parent)},
                     capture_output=True, text=True, timeout=60)
  assert r.returncode == 0, r.stderr


@needs_cc
def test_damaged_entry_and_stale_temporaries(cache):
  prog = axpy(a=3.0)
  src = render_program(prog)
  d = CPUDevice()
  entry = d.library_path(src)
  cache.mkdir(parents=True, exist_ok=True)
  entry.write_bytes(b"not a shared library")
  (cache / f"{entry.stem[:16]}-stale.tmp").write_bytes(b"\x7fELF half written")
  lib = d.compile(src)
  (got,) = d.run_program(prog, lib, [np.ones(5, np.float32), np.zeros(5, np.float32)])
  np.testing.assert_array_equal(got, np.full(5, 3, np.float32))
  assert entry.read_bytes()[:4] == b"\x7fELF"


@needs_cc
def test_interrupted_compile_leaves_nothing(cache, monkeypatch):
  def killed(cmd, **kw):
    with open(cmd[cmd.index("-o") + 1], "wb") as f: f.write(b"\x7fELF partial")
    raise KeyboardInterrupt
  src = render_program(axpy(a=4.0))
  with monkeypatch.context() as m:
    m.setattr(cpu_mod.subprocess, "run", killed)
    with pytest.raises(KeyboardInterrupt):
      CPUDevice().compile(src)
  assert not list(cache.iterdir())
  d = CPUDevice()
  (got,) = d.run_program(axpy(a=4.0), d.compile(src), [np.ones(5, np.float32), np.ones(5, np.float32)])
  np.testing.assert_array_equal(got, np.full(5, 5, np.float32))


@needs_cc
def test_compile_error(cache):
  src = "#include <stdint.h>\nvoid tg_run(void **bufs) {\n  int x = ;\n}\n"
  with pytest.raises(RuntimeError) as e:
    CPUDevice().compile(src)
  msg = str(e.value)
  assert "error" in msg and "   3    int x = ;" in msg and "cpu: the C compiler failed" in msg
  assert not list(cache.glob("*.so")) and not list(cache.glob("*.tmp"))


@needs_cc
def test_big_parallel_kernel_matches_interp(cache):
  """Big enough for threads: out[i, j] = max(x[i, j], y[j]) over a broadcast y."""
  n, m = 300, 257
  i, j = UOp.param((), dtypes.int64), UOp.param((), dtypes.int64)
  x, y, out = UOp.param((n * m,), F32), UOp.param((m,), F32), UOp.param((n * m,), F32)
  flat = i * UOp.const(dtypes.int64, m) + j
  store = Store(out, flat, at(x, flat).alu(Ops.MAX, at(y, j)))
  k = Kernel("bcast_max", (out, x, y), (Loop(i, n), Loop(j, m)), (store,))
  prog = Program([k], [(2, 0, 1)], [BufferSpec(n * m, F32), BufferSpec(m, F32), BufferSpec(n * m, F32)], [0, 1],
                 [(2, (n, m))])
  src = render_program(prog)
  assert "#pragma omp parallel for" in src
  rng = np.random.default_rng(0)
  xs, ys = rng.standard_normal(n * m).astype(np.float32), rng.standard_normal(m).astype(np.float32)
  xs[::97] = np.nan
  d = CPUDevice()
  (got,) = d.run_program(prog, d.compile(src), [xs, ys])
  bx, by = UOp.buffer(xs.reshape(n, m)), UOp.buffer(np.broadcast_to(ys, (n, m)))
  (want,) = InterpDevice().execute([bx.alu(Ops.MAX, by)], {})
  np.testing.assert_array_equal(got, want)


@needs_cc
def test_long_programs_compile_as_two_units_at_once(cache, monkeypatch):
  """Two kernels, each in its own translation unit (compiled in parallel), linked into one library."""
  calls = []
  real = cpu_mod._run_compiler
  monkeypatch.setattr(cpu_mod, "UNIT_MIN_CHARS", 0)
  monkeypatch.setattr(cpu_mod, "_run_compiler", lambda cmd, *a: (calls.append(cmd), real(cmd, *a))[1])
  first = axpy(5, 2.0)
  second = axpy(5, 3.0).kernels[0]
  prog = Program([first.kernels[0], second], [(2, 0, 1), (1, 2, 0)], [BufferSpec(5, F32)] * 3, [0, 1], [(1, (5,))])
  d = CPUDevice()
  x, y = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
  (got,) = d.run_program(prog, d.compile(render_program(prog)), [x, y])
  np.testing.assert_array_equal(got, 3 * (2 * x + y) + x)
  assert sorted("-DTG_UNIT=0" in c or "-DTG_UNIT=1" in c for c in calls) == [False, True, True]


def test_intermediate_buffers_are_reused_and_results_are_not():
  # a program's inner buffers live in workspaces kept between calls; its outputs are fresh every call
  import threading
  import tracegrad
  import tracegrad.numpy as tnp
  f = tracegrad.jit(lambda x: (tnp.exp(x) @ x.T, tnp.tanh(x @ x.T).sum(0)))
  xs = [np.random.default_rng(i).normal(size=(64, 64)).astype(np.float32) for i in range(6)]
  want = [[np.asarray(v) for v in tracegrad.jit(lambda x: (tnp.exp(x) @ x.T, tnp.tanh(x @ x.T).sum(0)))(x)]
          for x in xs]
  first = [np.asarray(v).copy() for v in f(xs[0])]
  held = f(xs[0])
  for x in xs[1:]: f(x)
  for a, b in zip(held, first): np.testing.assert_array_equal(np.asarray(a), b)
  got = [None] * len(xs)

  def work(i):
    for _ in range(20): got[i] = [np.asarray(v) for v in f(xs[i])]

  threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
  for t in threads: t.start()
  for t in threads: t.join()
  for g, w in zip(got, want):
    for a, b in zip(g, w): np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def _sum_program():
  import tracegrad as tg
  from tracegrad import run
  x = np.random.default_rng(5).normal(size=(3, 2 ** 19)).astype(np.float32)
  return run.Executable(tg.make_graph(lambda a: (a.sum(), (a * a).sum(1)))(x), "cpu"), x


@needs_cc
def test_a_threaded_sum_gives_the_same_bits_on_any_number_of_threads(cache):
  exe, x = _sum_program()
  if "parts[" not in exe.source: pytest.skip("the sum is not threaded")
  base = cpu_mod._threads.base
  try:
    got = []
    for n in (1, 2, 3):
      cpu_mod.limit_threads(n)
      got.append([np.asarray(v).tobytes() for v in exe([x])])
  finally:
    cpu_mod.limit_threads(base)
  assert got[0] == got[1] == got[2]
  np.testing.assert_allclose(exe([x])[0], x.astype(np.float64).sum(), rtol=1e-6)


@needs_cc
@pytest.mark.parametrize("single_faster", [True, False])
def test_a_program_keeps_the_thread_count_its_probes_found_faster(cache, single_faster):
  if cpu_mod._threads.base == 1: pytest.skip("one core")
  import time
  exe, x = _sum_program()
  runner, base = exe._runner, cpu_mod._threads.base
  slow, fast = 0.002, 0.0005
  lib = runner.lib
  runner.lib = types.SimpleNamespace(building=False, tg_wake=lambda: None, tg_run=lambda ptrs: time.sleep(
    fast if (cpu_mod._threads.now == 1) == single_faster else slow))   # this runner's library only
  try:
    for _ in range(4 * cpu_mod.PROBE_MAX): runner([x])
    assert runner.single is single_faster
  finally:
    runner.lib = lib
    cpu_mod._threads.use(base)


@needs_cc
def test_a_source_of_tg_run_alone_loads_and_runs(cache):
  """compile() takes any source exporting tg_run: render_program's also export tg_wake, which one without it does
  without (its runs on every core are not woken first)."""
  lib = CPUDevice().compile("#include <stdint.h>\nvoid tg_run(void **bufs) { ((float *)bufs[0])[0] += 1.0f; }")
  x = np.zeros(1, np.float32)
  lib.tg_wake()
  lib.tg_run(cpu_mod._ffi.new("void *[]", [cpu_mod._ffi.from_buffer(x)]))
  assert x[0] == 1.0


@needs_cc
def test_one_slow_call_on_every_core_does_not_keep_a_program_on_one_thread(cache):
  """A first timed call on every core ten times slower than the rest (threads starting, caches cold) left a program
  on one thread, each probe of every core paying the team's waking; a count's time is the median of its last calls,
  and a run on every core after one on one thread wakes the team first (tg_wake), untimed."""
  if cpu_mod._threads.base == 1: pytest.skip("one core")
  import time
  exe, x = _sum_program()
  runner, base = exe._runner, cpu_mod._threads.base
  lib, calls, woken = runner.lib, [], []

  def run(ptrs):
    calls.append(cpu_mod._threads.now)
    time.sleep(0.0007 if cpu_mod._threads.now == 1 else 0.01 if calls.count(base) == 2 else 0.0004)

  runner.lib = types.SimpleNamespace(building=False, tg_wake=lambda: woken.append(len(calls)), tg_run=run)
  try:
    for _ in range(4 * cpu_mod.PROBE_MAX): runner([x])
    assert runner.single is False and calls[-cpu_mod.PROBE_MAX // 2:].count(1) <= 1
    # every run on every core that follows one on one thread was woken first
    assert woken == [i for i in range(1, len(calls)) if calls[i - 1] == 1 and calls[i] == base]
  finally:
    runner.lib = lib
    cpu_mod._threads.use(base)


def test_the_timer_runs_programs_on_buffers_that_start_on_a_cache_line(tmp_path):
  from tracegrad.devices import cpu_timer
  rng = np.random.default_rng(0)
  inputs = [rng.standard_normal(n).astype(dt) for n, dt in [(5, np.float32), (1031, np.float32), (3, np.float64),
                                                             (4097, np.int8), (0, np.float32)]]
  inputs.append(rng.random(13) < 0.5)
  np.savez(tmp_path / "inputs.npz", *inputs)
  for _ in range(2):   # copies made afresh for each job, never the arrays kept for the next one
    got = cpu_timer._arrays(str(tmp_path / "inputs.npz"))
    assert [a.ctypes.data % cpu_timer.ALIGN for a in got if a.size] == [0] * 5
    for g, want in zip(got, inputs):
      assert g.dtype == want.dtype and g.flags.c_contiguous and g.flags.writeable
      np.testing.assert_array_equal(g, want)
    got[1][:] = 0


@needs_cc
def test_a_library_timed_against_another_gives_its_own_buffers_and_the_ratio_of_its_runs(cache):
  """axpy with a = 2 against a = 3 over the same buffers: the stored buffer is the first library's result, whatever
  the other one wrote after it."""
  d = CPUDevice()
  libs = [d.compile(render_program(axpy(4096, a))) for a in (2.0, 3.0)]
  x, y = np.arange(4096, dtype=np.float32), np.ones(4096, np.float32)
  ratio, (out,) = d.time_against(libs[0], libs[1], [x, y, np.zeros(4096, np.float32)], [2], 0.001)
  np.testing.assert_array_equal(out, 2 * x + y)
  assert 0 < ratio < float("inf")
  seconds, (out,) = d.time_library(libs[1], [x, y, np.zeros(4096, np.float32)], [2], 0.001)
  np.testing.assert_array_equal(out, 3 * x + y)
  assert seconds > 0


def test_the_timer_pairs_runs_of_two_libraries_taking_turns_first_and_gives_the_median_ratio(monkeypatch):
  """A clock that only the fake libraries move: lib takes 3 units, then 1 in every later run; the other 2 units,
  except one pair where a slow spell makes its run 20. The median ratio ignores the spell and the first pair."""
  from tracegrad.devices import cpu_timer
  clock, order = [0.0], []

  class Fake:
    def __init__(self, name, costs): self.name, self.costs = name, iter(costs)
    def tg_run(self, ptrs): order.append(self.name); clock[0] += next(self.costs)

  monkeypatch.setattr(cpu_timer.time, "perf_counter", lambda: clock[0])
  lib = Fake("lib", [3.0] + [1.0] * 20)
  other = Fake("other", [2.0] * 3 + [20.0] + [2.0] * 20)
  got = cpu_timer._paired(lib, other, None, min_time=0.0)
  assert got == {"seconds": 1.0, "ratio": 0.5}
  assert len(order) == 1 + 2 * cpu_timer.MIN_PAIRS and order[:5] == ["other", "lib", "other", "other", "lib"]
