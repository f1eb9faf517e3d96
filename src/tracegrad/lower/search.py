"""BEAM search over each kernel's optimisation actions (lower/opt.py), with a persistent cache.

For a kernel with actions, the search starts from the hand-coded default and, round by round, tries every action set
one action away from the `width` best so far, on random buffers; one that fails to compile, crashes, hangs or computes
another result than the default is dropped. On the cpu, candidates compile in parallel, then each runs in a process
of its own in turn with the default, ranked by the median ratio of its runs' times to the default's
(`CPUDevice.time_against`: on a busy host, bests timed apart differed by a third for the same code); on a GPU-style
device (opencl, cuda) each candidate's kernel is timed in this process by the device's clock (`Runner.time`: OpenCL
profiling events, CUDA events). The best action set is kept in an sqlite table in the cache directory, keyed by the
kernel's source and what runs it (compiler and CPU, or the GPU and its driver), so a search is paid once per machine
and processes share it.

`TRACEGRAD_SEARCH=<width>` turns it on for every compiled program; `jit(f, search=width)` for one function.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
import stat
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..devices.base import BufferSpec, Program
from . import opt, render_gpu
from .kernel import Control, Kernel
from .render_c import BLOCKS, render_kernel, render_program

MAX_ROUNDS = 4
TIMEOUT = 10.0      # seconds a candidate may run before it counts as hung
MIN_TIME = 0.025    # seconds each candidate is timed for, in turn with the default on the cpu
MIN_KERNEL_TIME = 50e-6   # a kernel whose default runs quicker is not searched
WIN = 0.97          # a searched kernel or program replaces the default only at this fraction of its time or less
PROGRAM_TIME = 0.075   # seconds the searched program and the default are timed for, in turn
COMPILE_TIMEOUT = 120.0


def search_width() -> int:
  """The beam width TRACEGRAD_SEARCH asks for (0: no search)."""
  try:
    return max(int(os.environ.get("TRACEGRAD_SEARCH", "0") or 0), 0)
  except ValueError:
    raise ValueError(f"TRACEGRAD_SEARCH={os.environ['TRACEGRAD_SEARCH']!r}: give a beam width, an int >= 0") from None


_CORRUPT = ("SQLITE_NOTADB", "SQLITE_CORRUPT")


class Cache:
  """Searched action sets by kernel key, in the device's `search.sqlite` (beside its compiled code), private to this
  user. A file that is not a database is moved aside, with a warning, and a new one made; a row that does not hold
  an action set is a miss, and is deleted."""

  def __init__(self, device):
    self.path = device.search_path()

  def _db(self) -> sqlite3.Connection:
    st = _lstat(self.path)
    if st is not None and not stat.S_ISREG(st.st_mode): self._move_aside("is not a regular file")
    if st is None or not stat.S_ISREG(st.st_mode):   # made here, so sqlite's journals get its mode too
      try: os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
      except FileExistsError: pass
    elif st.st_mode & 0o077 and st.st_uid == os.geteuid():
      os.chmod(self.path, 0o600)
    db = sqlite3.connect(self.path, timeout=60)
    try:
      db.execute("CREATE TABLE IF NOT EXISTS search (key TEXT PRIMARY KEY, opts TEXT NOT NULL, seconds REAL)")
    except BaseException:
      db.close()
      raise
    return db

  def _run(self, fn):
    """fn(db) in one transaction; a corrupt file is moved aside and fn runs on a new one."""
    for retry in (False, True):
      try:
        db = self._db()
        try:
          with db: return fn(db)
        finally:
          db.close()
      except sqlite3.DatabaseError as e:
        if retry or getattr(e, "sqlite_errorname", "") not in _CORRUPT: raise
        self._move_aside(f"is not a database ({e})")

  def _move_aside(self, why: str) -> None:
    aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
    for suffix in ("", "-journal", "-wal", "-shm"):
      try: os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
      except FileNotFoundError: pass
    warnings.warn(f"search: the cache {self.path} {why}; moved it to {aside} and started a new one", RuntimeWarning,
                  stacklevel=4)

  def get(self, key: str) -> dict | None:
    def read(db):
      row = db.execute("SELECT opts FROM search WHERE key = ?", (key,)).fetchone()
      opts = None if row is None else _opts(row[0])
      if row is not None and opts is None: db.execute("DELETE FROM search WHERE key = ?", (key,))
      return opts
    return self._run(read)

  def put(self, key: str, opts: dict, seconds: float) -> None:
    self._run(lambda db: db.execute("INSERT OR REPLACE INTO search VALUES (?, ?, ?)",
                                    (key, json.dumps(opts, sort_keys=True), seconds)))


def _lstat(path) -> os.stat_result | None:
  try:
    return os.lstat(path)
  except FileNotFoundError:
    return None


def _opts(text) -> dict | None:
  """The action set a row holds: a JSON object of action names to ints; None for anything else."""
  try:
    opts = json.loads(text)
  except (TypeError, ValueError):
    return None
  ok = isinstance(opts, dict) and all(isinstance(k, str) and type(v) is int for k, v in opts.items())
  return opts if ok else None


def _applies(k: Kernel, opts: dict, target: str) -> bool:
  try:
    opt.apply(k, opts, target)
  except ValueError:
    return False
  return True


def _gpu(device) -> bool: return device.platform in opt.GPU_TARGETS


def _target(device) -> str: return device.platform if _gpu(device) else "c"


def _host(device) -> str | None:
  """The target the device's compiler builds for: the first key of BLOCKS (vector extensions, "__AVX__") its flags
  predefine, else None (the generic sizes); "" on a GPU."""
  if _gpu(device): return ""
  defined = device.predefined()
  return next(macro for macro in BLOCKS if macro is None or macro in defined)


def kernel_key(k: Kernel, device) -> str:
  """The cache key of a kernel: its default source and what runs it (the compiler, its flags and the CPU; or the GPU
  and its driver)."""
  plain = dataclasses.replace(k, opts=())
  if _gpu(device):
    source, _ = render_gpu.render_kernel(plain, device.platform, "k")
    return hashlib.sha256("\0".join([source, device.describe()]).encode()).hexdigest()
  return device.library_path(render_kernel(plain, "k")).stem


def _build(k: Kernel, prog: Program, device):
  """The one-kernel program `prog` running k, compiled for device (None when it does not compile)."""
  p = dataclasses.replace(prog, kernels=[k])
  try:
    if _gpu(device):
      src = render_gpu.render_program(p, device.platform)
      return device.runner(p, device.compile(src.source, [n for n, _ in src.launches.values()]), src.launches)
    return device.compile(render_program(p), timeout=COMPILE_TIMEOUT)
  except RuntimeError:
    return None


def _time(built, arrays: list[np.ndarray], stored: list[int], device) -> tuple[float, list[np.ndarray]] | None:
  """(best seconds of one run, the stored buffers) of a built candidate; None when it failed."""
  if built is None: return None
  if not _gpu(device): return device.time_library(built, arrays, stored, MIN_TIME, TIMEOUT)
  try:
    return built.time(arrays, stored, MIN_TIME)
  except RuntimeError:
    return None


def _against(built, default, arrays: list[np.ndarray], stored: list[int], device, seconds: float):
  """(seconds of one run, the stored buffers) of a built candidate on the cpu, from the median ratio of its runs to
  the default's (`seconds` a run) run in turn with them; None when it failed."""
  if built is None: return None
  got = device.time_against(built, default, arrays, stored, MIN_TIME, TIMEOUT)
  return None if got is None else (got[0] * seconds, got[1])


def time_alone(k: Kernel, device) -> float | None:
  """The best seconds of one run of kernel k by itself, with its actions (opts), on random inputs that stay in the
  cache from run to run (on the cpu, in a process of its own); None when it does not compile or run. Inside a whole
  program the same kernel may read operands written long before, from memory.

  >>> import tracegrad, tracegrad.numpy as tnp
  >>> from tracegrad.lower.schedule import schedule
  >>> k = schedule(tracegrad.make_graph(lambda x, y: x @ y)(tnp.ones((64, 64)), tnp.ones((64, 64)))).kernels[0]
  >>> time_alone(k, tracegrad.local_devices(backend="cpu")[0]) > 0
  True
  """
  if not hasattr(device, "compile"): raise ValueError(f"time_alone: {device} runs no compiled kernels")
  prog, stored = _program(k)
  got = _time(_build(k, prog, device), _arrays(k, np.random.default_rng(0)), stored, device)
  return None if got is None else got[0]


def _arrays(k: Kernel, rng) -> list[np.ndarray]: return [_random(b.dtype, b.shape[0], rng) for b in k.bufs]


def _random(d, n: int, rng) -> np.ndarray:
  if d.is_float: return rng.standard_normal(n).astype(d.np)
  if d.is_bool: return rng.random(n) < 0.5
  return rng.integers(0, 4, n).astype(d.np)


def _program(k: Kernel) -> tuple[Program, list[int]]:
  stored = sorted({k.bufs.index(s.buf) for p in k.steps() for s in (*p.stores, *(p.reduce.stores if p.reduce else ()))})
  n = len(k.bufs)
  specs = [BufferSpec(b.shape[0], b.dtype) for b in k.bufs]
  return Program([k], [tuple(range(n))], specs, list(range(n)), [(i, (specs[i].size,)) for i in stored]), stored


def _same(got: list[np.ndarray], want: list[np.ndarray]) -> bool:
  for g, w in zip(got, want):
    if g.dtype.kind == "f":
      scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=1.0))
      if not np.allclose(g, w, rtol=1e-3, atol=1e-4 * scale, equal_nan=True): return False
    elif not np.array_equal(g, w): return False
  return True


def _frozen(opts: dict) -> tuple: return tuple(sorted(opts.items()))


def best_opts(k: Kernel, width: int, device, progress=None) -> dict:
  """The fastest action set found for k (from the cache when it has one)."""
  target = _target(device)
  if opt.shape(k, target) is None: return {}
  cache, key = Cache(device), kernel_key(k, device)
  hit = cache.get(key)
  if hit is not None and _applies(k, hit, target): return hit
  arrays = _arrays(k, np.random.default_rng(0))
  prog, stored = _program(k)

  def libraries(cands: list[dict]) -> list:
    def build(o): return _build(opt.apply(k, o, target), prog, device)
    if _gpu(device): return [build(o) for o in cands]
    with ThreadPoolExecutor(max(os.cpu_count() or 1, 1)) as pool: return list(pool.map(build, cands))

  default = libraries([{}])[0]
  base = _time(default, arrays, stored, device)
  if base is None: return {}
  if base[0] < MIN_KERNEL_TIME:   # too quick for any action to pay for its search
    cache.put(key, {}, base[0])
    return {}
  want, timed = base[1], {(): base[0]}
  beam, host = [{}], _host(device)
  for _ in range(MAX_ROUNDS):
    cands = list({_frozen(c): c for o in beam for c in opt.neighbours(k, o, target, host)
                  if _frozen(c) not in timed}.values())
    if not cands: break
    for c, lib in zip(cands, libraries(cands)):
      res = _time(lib, arrays, stored, device) if _gpu(device) else _against(lib, default, arrays, stored, device,
                                                                              base[0])
      timed[_frozen(c)] = res[0] if res is not None and _same(res[1], want) else float("inf")
      if progress is not None: progress.update(1)
    ranked = sorted(timed, key=timed.get)
    new = [dict(o) for o in ranked[:width]]
    if new == beam: break
    beam = new
  best = min(timed, key=timed.get)
  if timed[best] > WIN * timed[()]: best = ()   # a win within the timer's noise is none
  cache.put(key, dict(best), timed[best])
  return dict(best)


def optimise(prog: Program, width: int, device) -> Program:
  """prog with each kernel's searched actions (kernels inside control flow too), with a progress bar while
  candidates run. On the cpu the searched program is then timed whole against prog, and kept only when it is
  faster by a clear margin: kernels timed alone can lose together (threads, caches), and a searched program is never
  the slower."""
  from tqdm import tqdm

  with tqdm(desc="tracegrad search", unit="candidate", leave=False, disable=None) as bar:
    def walk(p: Program) -> Program:
      items = []
      for k in p.kernels:
        if isinstance(k, Control): items.append(dataclasses.replace(k, bodies=tuple(walk(b) for b in k.bodies)))
        else: items.append(opt.apply(k, best_opts(k, width, device, bar), _target(device)))
      return dataclasses.replace(p, kernels=items)
    searched = walk(prog)
  if _gpu(device): return searched
  sources = render_program(prog), render_program(searched)
  if sources[0] == sources[1]: return searched
  return searched if _faster(prog, sources, device) else prog


def _faster(prog: Program, sources: tuple[str, str], device) -> bool:
  """Whether the second of two sources of prog's program (the default's, the searched one's) runs faster here by a
  clear margin (WIN), the two run in turn on random inputs (time_against), so that a slow spell of the host does not
  decide (the answer kept in the search cache, with the ratio)."""
  key = "program:" + device.library_path("".join(sources)).stem
  cache = Cache(device)
  if (hit := cache.get(key)) is not None: return bool(hit.get("searched"))
  rng = np.random.default_rng(0)
  arrays = [b.data.copy() if b.data is not None else _random(b.dtype, b.size, rng) for b in prog.buffers]
  stored = [n for n, _ in prog.outputs]
  try:
    libs = [device.compile(source, timeout=COMPILE_TIMEOUT) for source in sources]
  except RuntimeError:
    return False
  res = device.time_against(libs[1], libs[0], arrays, stored, PROGRAM_TIME, TIMEOUT)
  if res is None: return False
  won = res[0] <= WIN
  cache.put(key, {"searched": int(won)}, res[0])
  return won
