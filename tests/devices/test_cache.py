"""The disk cache holds code that runs: its directories and files are private, an entry loads only when its bytes
match the digest recorded when it was written, symbolic links are not followed, a directory others may write (or one
that cannot be used) is replaced by a private temporary one, a corrupt search table is moved aside, what killed
processes leave is swept, and libraries are unloaded once no program uses them."""
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import run
from tracegrad.devices import base
from tracegrad.devices.cpu import CPUDevice
from tracegrad.devices.gpu import GPUDevice
from tracegrad.lower import search
from tracegrad.lower.render_c import render_program
from tracegrad.lower.schedule import schedule

HAS_CC = CPUDevice().toolchain() is not None
needs_cc = pytest.mark.skipif(not HAS_CC, reason="no C compiler")
X = np.arange(6, dtype=np.float32)
JIT = ("import numpy as np, tracegrad as tg\n"
       "print(np.asarray(tg.jit(lambda x: x * 2 + 1)(np.arange(6, dtype=np.float32))).tolist())\n")


@pytest.fixture
def cache(tmp_path, monkeypatch):
  """The cpu's cache directory under a cache root of this test's own."""
  monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path / "cache"))
  return tmp_path / "cache" / "cpu"


def double(x): return x * 2 + 1


def triple(x): return x * 3 - 1


def _prog(fn):
  """The Program and C source of fn on X, as jit would compile them."""
  prog = schedule(tg.make_graph(fn)(X))
  return prog, render_program(prog)


def _runs(dev, fn):
  """The library dev compiled fn into, after checking that it computes fn."""
  prog, src = _prog(fn)
  lib = dev.compile(src)
  (got,) = dev.run_program(prog, lib, [X])
  np.testing.assert_array_equal(got, fn(X))
  return lib


def _digest_matches(entry) -> bool:
  return hashlib.sha256(entry.read_bytes()).hexdigest() == entry.with_suffix(".sha256").read_text().strip()


def _planted(tmp_path, marker) -> bytes:
  """A valid library exporting tg_run whose constructor creates `marker` (what someone else would plant)."""
  src = (f'#include <stdio.h>\n__attribute__((constructor)) static void planted(void) {{\n'
         f'  FILE *f = fopen("{marker}", "w");\n  if (f) fclose(f);\n}}\n'
         'void tg_run(void **bufs) { (void)bufs; }\n')
  out = tmp_path / "planted.so"
  subprocess.run(CPUDevice().toolchain().command(str(out)), input=src, text=True, check=True, capture_output=True)
  return out.read_bytes()


def _plant(entry, data: bytes) -> None:
  entry.write_bytes(data)
  entry.with_suffix(".sha256").write_text(hashlib.sha256(data).hexdigest() + "\n")


def _child(code: str, **env) -> subprocess.CompletedProcess:
  """python -c code in a fresh process on the cpu device (this test's cache: TRACEGRAD_CACHE_DIR is set)."""
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                        env={**os.environ, "TRACEGRAD_DEVICE": "cpu", "TRACEGRAD_SEARCH": "0", **env})


def _jit_in_child(**env) -> None:
  r = _child(JIT, **env)
  assert r.returncode == 0, r.stderr
  assert json.loads(r.stdout) == double(X).tolist()


def _age(paths) -> None:
  """Make paths look left behind long ago."""
  old = time.time() - base.STALE_SECONDS - 60
  for p in paths: os.utime(p, (old, old), follow_symlinks=False)


def _kill_when(code: str, appeared, log, **env) -> None:
  """Run python -c code in a process group of its own and SIGKILL the group once appeared() is true."""
  env = {**os.environ, "TRACEGRAD_DEVICE": "cpu", **env}
  with open(log, "w") as err:
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=err,
                         start_new_session=True)
  try:
    deadline = time.monotonic() + 60
    while not appeared():
      assert p.poll() is None, f"it ended before it was killed:\n{open(log).read()}"
      assert time.monotonic() < deadline, "nothing appeared in time"
      time.sleep(0.005)
  finally:
    with contextlib.suppress(ProcessLookupError): os.killpg(p.pid, signal.SIGKILL)
    p.wait()


@needs_cc
def test_directories_and_files_are_private(cache):
  _runs(CPUDevice(), double)
  search.Cache(CPUDevice()).put("k", {"rows": 4}, 1.0)
  modes = {p.suffix or p.name: stat.S_IMODE(os.lstat(p).st_mode) for p in [cache.parent, cache, *cache.iterdir()]}
  assert modes == {"cache": 0o700, "cpu": 0o700, ".so": 0o600, ".sha256": 0o600, ".sqlite": 0o600}


@needs_cc
def test_truncated_entry_is_rebuilt_in_a_new_process(cache):
  _runs(CPUDevice(), double)
  (entry,) = cache.glob("*.so")
  size = entry.stat().st_size
  os.truncate(entry, size // 2)
  _jit_in_child()
  assert list(cache.glob("*.so")) == [entry] and entry.stat().st_size == size and _digest_matches(entry)


@needs_cc
def test_replaced_entry_is_rebuilt(cache, tmp_path):
  dev = CPUDevice()
  _runs(dev, double)
  _runs(dev, triple)
  entry, other = dev.library_path(_prog(double)[1]), dev.library_path(_prog(triple)[1])
  shutil.copy(other, entry)   # a valid library exporting tg_run, computing something else
  _runs(CPUDevice(), double)
  assert _digest_matches(entry) and entry.read_bytes() != other.read_bytes()
  marker = tmp_path / "constructor-ran"
  entry.write_bytes(_planted(tmp_path, marker))
  _runs(CPUDevice(), double)
  assert not marker.exists() and _digest_matches(entry)


@needs_cc
def test_symbolic_link_entry_is_not_followed(cache, tmp_path):
  _runs(CPUDevice(), double)
  (entry,) = cache.glob("*.so")
  elsewhere = tmp_path / "elsewhere.so"
  shutil.copy(entry, elsewhere)   # the very bytes the digest records
  entry.unlink()
  entry.symlink_to(elsewhere)
  _runs(CPUDevice(), double)
  assert not entry.is_symlink() and _digest_matches(entry)


@needs_cc
def test_symbolic_link_directory_is_not_used(cache, tmp_path):
  cache.parent.mkdir(mode=0o700)
  target = tmp_path / "elsewhere"
  target.mkdir(mode=0o700)
  cache.symlink_to(target)
  with pytest.warns(RuntimeWarning, match=re.escape(str(cache)) + ": it is a symbolic link"):
    lib = _runs(CPUDevice(), double)
  assert not list(target.iterdir()) and not lib.path.is_relative_to(cache.parent)


@needs_cc
@pytest.mark.parametrize("how", ["root-mode", "cpu-mode", "cpu-owner"])
def test_directory_others_may_write_is_not_used(cache, tmp_path, how):
  if how == "cpu-owner" and os.geteuid() != 0: pytest.skip("giving a directory to another user needs root")
  dev = CPUDevice()
  entry = dev.library_path(_prog(double)[1])   # makes the directories, trusted so far
  marker = tmp_path / "constructor-ran"
  _plant(entry, _planted(tmp_path, marker))   # with its digest: whoever can write there can write both
  bad = cache.parent if how == "root-mode" else cache
  if how.endswith("mode"): bad.chmod(0o777)
  else: os.chown(cache, 12345, 12345)
  why = "others may write to it.*chmod 700" if how.endswith("mode") else "it is owned by another user"
  with pytest.warns(RuntimeWarning, match=re.escape(str(bad)) + f": {why}.*TRACEGRAD_CACHE_DIR"):
    lib = _runs(dev, double)
  assert not marker.exists() and not lib.path.is_relative_to(cache.parent)
  with warnings.catch_warnings():
    warnings.simplefilter("error")   # warned once
    _runs(dev, triple)


@needs_cc
@pytest.mark.parametrize("how", ["file", "proc", "read-only", "mkstemp"])
def test_unusable_directory_falls_back_to_a_private_one(tmp_path, monkeypatch, how):
  """jit keeps working, with one warning naming the directory."""
  root = Path("/proc/self/tracegrad-cache") if how == "proc" else tmp_path / "cache"
  monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(root))
  bad, why = root, {"file": "it is not a directory", "proc": "it cannot be created", "read-only": "it is not writable",
                    "mkstemp": "writing there failed"}[how]
  if how == "file": root.write_text("in the way\n")
  if how == "read-only":
    access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: not str(p).startswith(str(root)) and access(p, mode, **kw))
  if how == "mkstemp":
    mkstemp = tempfile.mkstemp

    def refused(*a, dir=None, **kw):
      if str(dir).startswith(str(root)): raise PermissionError(13, "Permission denied", str(dir))
      return mkstemp(*a, dir=dir, **kw)
    monkeypatch.setattr(tempfile, "mkstemp", refused)
    bad = root / "cpu"
  a = {"file": 3.0, "proc": 4.0, "read-only": 5.0, "mkstemp": 6.0}[how]   # a program of its own, built afresh
  graph = tg.make_graph(lambda x: x * a - 2)(X)
  with pytest.warns(RuntimeWarning, match=re.escape(str(bad)) + f": {why}") as record:
    (got,) = run.Executable(graph, "cpu")([X])
  np.testing.assert_array_equal(got, X * a - 2)
  assert sum(str(bad) in str(w.message) for w in record) == 1


def test_gpu_devices_share_the_directory_checks(tmp_path, monkeypatch):
  class Fake(GPUDevice):
    platform = "fakegpu"
  root = tmp_path / "cache"
  monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(root))
  assert Fake().search_path() == root / "fakegpu" / "search.sqlite"
  assert stat.S_IMODE((root / "fakegpu").stat().st_mode) == 0o700
  (root / "fakegpu").chmod(0o775)
  with pytest.warns(RuntimeWarning, match=re.escape(str(root / "fakegpu")) + ": others may write"):
    assert not Fake().search_path().is_relative_to(root)


def test_ptx_marks_share_the_directory_checks(tmp_path, monkeypatch):
  from tracegrad.devices import cuda
  try:
    cuda.nvrtc_version()
  except Exception as e:   # no cuda-bindings, or no NVRTC library
    pytest.skip(f"no NVRTC ({e})")
  monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path / "cache"))
  marks = tmp_path / "cache" / "ptx"
  cuda.check_ptx('extern "C" __global__ void k(float *x) { x[0] = 1.0f; }')
  (mark,) = marks.iterdir()
  assert stat.S_IMODE(marks.stat().st_mode) == 0o700 and stat.S_IMODE(mark.stat().st_mode) == 0o600
  marks.chmod(0o777)
  with pytest.warns(RuntimeWarning, match=re.escape(str(marks)) + ": others may write"):
    cuda.check_ptx('extern "C" __global__ void k(float *x) { x[0] = 2.0f; }')
  assert list(marks.iterdir()) == [mark]


def test_corrupt_search_table_is_moved_aside(cache):
  cache.mkdir(parents=True)
  table = cache / "search.sqlite"
  table.write_bytes(b"not a database " * 512)
  c = search.Cache(CPUDevice())
  with pytest.warns(RuntimeWarning, match=re.escape(str(table)) + " is not a database"):
    assert c.get("k") is None
  (aside,) = cache.glob("search.sqlite.corrupt-*")
  assert aside.read_bytes().startswith(b"not a database")
  c.put("k", {"rows": 4}, 1.0)
  assert c.get("k") == {"rows": 4} and stat.S_IMODE(table.stat().st_mode) == 0o600


def test_poisoned_rows_are_misses(cache):
  c = search.Cache(CPUDevice())
  c.put("good", {"rows": 4}, 1.0)
  bad = {"json": "{not json", "list": "[1, 2]", "text": '{"rows": "4"}', "bool": '{"rows": true}', "int": 5}
  with contextlib.closing(sqlite3.connect(c.path)) as db, db:
    db.executemany("INSERT INTO search VALUES (?, ?, 1.0)", list(bad.items()))
  assert [c.get(k) for k in bad] == [None] * len(bad) and c.get("good") == {"rows": 4}
  with contextlib.closing(sqlite3.connect(c.path)) as db:
    assert [k for (k,) in db.execute("SELECT key FROM search")] == ["good"]   # deleted


@needs_cc
def test_illegal_action_set_is_searched_again(cache, monkeypatch):
  a = np.ones((24, 40), np.float32)
  k = schedule(tg.make_graph(lambda x, y: x @ y)(a, a.T)).kernels[0]
  dev = CPUDevice()
  key = search.kernel_key(k, dev)
  search.Cache(dev).put(key, {"rows": 5}, 1.0)   # well typed, but no action of this kernel
  monkeypatch.setattr(search, "MIN_KERNEL_TIME", float("inf"))   # the default alone is timed, and kept
  assert search.best_opts(k, 2, dev) == {} and search.Cache(dev).get(key) == {}


LONG = "#include <math.h>\n" + "".join(
    f"void k{i}(float *x, int n) {{ for (int j = 0; j < n; j++) x[j] = sinf(x[j]) * {i}.0f + cosf(x[j]) / {i}.5f; }}\n"
    for i in range(100)) + "void tg_run(void **bufs) { k7((float *)bufs[0], 4); }\n"


@needs_cc
def test_killed_compile_leaves_nothing_for_long(cache, tmp_path):
  code = f"from tracegrad.devices.cpu import CPUDevice\nCPUDevice().compile({LONG!r})\n"
  _kill_when(code, lambda: any(cache.glob("*.tmp")), tmp_path / "log")
  left = list(cache.glob("*.tmp"))
  _age(left)
  young = cache / "another-compile-now.tmp"
  young.write_bytes(b"")
  _jit_in_child()
  assert not any(p.exists() for p in left) and young.exists()


@needs_cc
def test_killed_search_leaves_nothing_for_long(cache, tmp_path):
  tmp = tmp_path / "tmp"
  tmp.mkdir()
  code = "import numpy as np, tracegrad as tg\na = np.ones((64, 64), np.float32)\ntg.jit(lambda x, y: x @ y)(a, a)\n"
  _kill_when(code, lambda: any(tmp.glob("tracegrad-time-*")), tmp_path / "log", TMPDIR=str(tmp),
             TRACEGRAD_SEARCH="1")
  left = [*tmp.glob("tracegrad-time-*"), *cache.glob("*.tmp")]
  _age(left)
  _jit_in_child(TMPDIR=str(tmp))
  assert not any(p.exists() for p in left)
  search.Cache(CPUDevice()).put("k", {"rows": 4}, 1.0)   # the table survived the kill
  assert search.Cache(CPUDevice()).get("k") == {"rows": 4}


RELEASE = """
import gc, json, os, numpy as np, tracegrad as tg
from tracegrad.devices import cpu
cpu.LIBS_KEPT = 3
cache = os.environ["TRACEGRAD_CACHE_DIR"]
kept = tg.jit(lambda x: x - 1)
kept(np.ones(3, np.float32))
for n in range(1, 13):
  f = tg.jit(lambda x: x * 2 + 1)
  f(np.ones(n, np.float32))
  del f
gc.collect()
mapped = {line.split(maxsplit=5)[-1] for line in open("/proc/self/maps") if cache in line}
print(json.dumps({"mapped": len(mapped), "kept": np.asarray(kept(np.ones(3, np.float32))).tolist()}))
"""


@needs_cc
def test_libraries_no_program_uses_are_unloaded(cache):
  """12 programs compiled and dropped leave at most LIBS_KEPT libraries mapped, plus the one a live program
  holds (which still runs)."""
  r = _child(RELEASE)
  assert r.returncode == 0, r.stderr
  out = json.loads(r.stdout)
  assert out["kept"] == [0.0] * 3 and 1 <= out["mapped"] <= 4, out


NO_SCHEDULE = ("import sys\nfrom tracegrad.lower import schedule\nfrom tracegrad.devices import cpu\n"
               "schedule._Scheduler = lambda *a, **kw: sys.exit('scheduled again')\n"
               "cpu._build = lambda *a: sys.exit('compiled again')\n"
               "cpu._compiles = lambda *a: sys.exit('the compiler was probed again')\n")


@needs_cc
def test_program_record_in_another_process(cache):
  _jit_in_child(TRACEGRAD_CHECK_PTX="0")
  (record,) = cache.glob("program-*.json")
  assert _digest_matches(record) and stat.S_IMODE(os.lstat(record).st_mode) == 0o600
  r = _child(NO_SCHEDULE + JIT, TRACEGRAD_CHECK_PTX="0")
  assert r.returncode == 0, r.stderr
  assert json.loads(r.stdout) == double(X).tolist()


@needs_cc
@pytest.mark.parametrize("damage", ["truncated", "replaced", "not json"])
def test_damaged_program_record_is_scheduled_again(cache, damage):
  _jit_in_child(TRACEGRAD_CHECK_PTX="0")
  (record,) = cache.glob("program-*.json")
  good = record.read_bytes()
  if damage == "truncated": os.truncate(record, len(good) // 2)
  elif damage == "replaced": record.write_bytes(good.replace(b'"kernels": ', b'"kernels": 1'))
  else: _plant(record, b"{not json")
  _jit_in_child(TRACEGRAD_CHECK_PTX="0")
  assert record.read_bytes() == good and _digest_matches(record)


@needs_cc
def test_kernels_of_a_program_from_its_record(cache, monkeypatch):
  monkeypatch.setattr(run, "_CHECK_PTX", False)
  graph = lambda: tg.make_graph(lambda x: tg.numpy.tanh(x) * 2 + x.sum())(X)   # a new graph, the same computation
  first = run.Executable(graph(), "cpu")
  scheduled, prepared = [], []
  real, real_prepare = schedule.__globals__["_Scheduler"], schedule.__globals__["prepare"]
  monkeypatch.setitem(schedule.__globals__, "_Scheduler", lambda *a, **kw: (scheduled.append(1), real(*a, **kw))[1])
  monkeypatch.setitem(schedule.__globals__, "prepare", lambda g: (prepared.append(1), real_prepare(g))[1])
  again = run.Executable(graph(), "cpu")
  np.testing.assert_array_equal(again([X])[0], first([X])[0])
  assert not scheduled and not prepared   # found by the graph as traced: not even prepared
  names = [k.name for k in again.program.kernels]
  assert names and names == [k.name for k in first.program.kernels] and scheduled


@needs_cc
def test_long_source_runs_a_quick_build_until_its_full_one_is_cached(cache, monkeypatch):
  mod = sys.modules[CPUDevice.__module__]
  monkeypatch.setattr(mod, "TIER_MIN_CHARS", 0)
  flags, build = [], mod._build
  monkeypatch.setattr(mod, "_build", lambda tc, *a, **k: (flags.append(tc.flags), build(tc, *a, **k))[1])
  dev = CPUDevice()
  prog, src = _prog(double)
  lib = dev.compile(src, tiered=True)
  (got,) = dev.run_program(prog, lib, [X])   # the quick build runs at once
  # -O1 and the vectoriser, with the source's unrolling and prefetches left out (TG_QUICK)
  assert {"-O1", "-ftree-vectorize", "-DTG_QUICK"} <= set(flags[0]) and "-O3" not in flags[0]
  np.testing.assert_array_equal(got, double(X))
  for t in [t for t in threading.enumerate() if t.name == "tracegrad-full-build"]: t.join(60)
  entry = dev.library_path(src)
  assert lib.better is not None and lib.tg_run is lib.better.tg_run and _digest_matches(entry) and not lib.building
  assert "-O3" in flags[1] and "-DTG_QUICK" not in flags[1]
  assert dev.compile(src, tiered=True) is lib.better   # the full build is what later programs get
  (got,) = dev.run_program(prog, lib, [X])
  np.testing.assert_array_equal(got, double(X))
  other = CPUDevice()
  monkeypatch.setenv("TRACEGRAD_TIERED", "0")
  assert other.compile(src, tiered=True).better is None   # a cached entry, or tiering off, builds no quick library


@needs_cc
def test_a_quick_build_runs_first_on_every_core_then_on_one_until_its_full_build_is_in(cache, monkeypatch):
  mod = sys.modules[CPUDevice.__module__]
  if mod._threads.base == 1: pytest.skip("one core")
  monkeypatch.setattr(mod, "TIER_MIN_CHARS", 0)
  monkeypatch.setattr(mod, "FIRST_RUN_WAIT", 60.0)   # the full build waits for the first run however slow the host
  release, started, counts = threading.Event(), threading.Event(), []
  build = mod._build
  monkeypatch.setattr(mod, "_build", lambda *a, **k: (started.set(), release.wait(60), build(*a, **k))[2]
                      if k.get("units") == 1 else build(*a, **k))   # the full build waits for the test
  dev = CPUDevice()
  prog, src = _prog(double)
  lib = dev.compile(src, tiered=True)
  run, base = lib.tg_run, mod._threads.base
  lib.tg_run = lambda ptrs: (counts.append(mod._threads.now), run(ptrs))
  runner = dev.runner(prog, lib)
  runner.threaded = True
  try:
    assert not started.is_set()   # the full build waits for the first run, which has every core
    for _ in range(3): runner([X])
    assert started.wait(60) and lib.building and counts == [base, 1, 1]
  finally:
    release.set()
    for t in [t for t in threading.enumerate() if t.name == "tracegrad-full-build"]: t.join(60)
    mod._threads.use(base)
  assert not lib.building and lib.better is not None
