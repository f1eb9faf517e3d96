"""BEAM search over each kernel's optimisation actions (lower/opt.py), with a persistent cache.

For a kernel with actions, the search starts from the hand-coded default and, round by round, tries every action set
one action away from the `width` best so far: candidates compile in parallel, then each runs alone in a process of its
own (`CPUDevice.time_library`) on random buffers, and one that fails to compile, crashes, hangs or computes another
result than the default is dropped. The best action set is kept in an sqlite table in the cache directory, keyed by
the kernel's source, the compiler and the CPU, so a search is paid once per machine and processes share it.

`TRACEGRAD_SEARCH=<width>` turns it on for every compiled program; `jit(f, search=width)` for one function.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..devices.base import BufferSpec, Program
from . import opt
from .kernel import Control, Kernel
from .render_c import render_kernel, render_program

MAX_ROUNDS = 4
TIMEOUT = 10.0      # seconds a candidate may run before it counts as hung
MIN_TIME = 0.05     # seconds each candidate is timed for
MIN_KERNEL_TIME = 50e-6   # a kernel whose default runs quicker is not searched
COMPILE_TIMEOUT = 120.0


def search_width() -> int:
  """The beam width TRACEGRAD_SEARCH asks for (0: no search)."""
  try:
    return max(int(os.environ.get("TRACEGRAD_SEARCH", "0") or 0), 0)
  except ValueError:
    raise ValueError(f"TRACEGRAD_SEARCH={os.environ['TRACEGRAD_SEARCH']!r}: give a beam width, an int >= 0") from None


class Cache:
  """Searched action sets by kernel key, in `search.sqlite` beside the compiled libraries."""

  def __init__(self, device):
    self.path = device.library_path("").parent / "search.sqlite"

  def _db(self) -> sqlite3.Connection:
    self.path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(self.path, timeout=60)
    db.execute("CREATE TABLE IF NOT EXISTS search (key TEXT PRIMARY KEY, opts TEXT NOT NULL, seconds REAL)")
    return db

  def get(self, key: str) -> dict | None:
    with self._db() as db:
      row = db.execute("SELECT opts FROM search WHERE key = ?", (key,)).fetchone()
    return None if row is None else json.loads(row[0])

  def put(self, key: str, opts: dict, seconds: float) -> None:
    with self._db() as db:
      db.execute("INSERT OR REPLACE INTO search VALUES (?, ?, ?)", (key, json.dumps(opts, sort_keys=True), seconds))


def kernel_key(k: Kernel, device) -> str:
  """The cache key of a kernel: its default source, the compiler, its flags and the CPU."""
  return device.library_path(render_kernel(dataclasses.replace(k, opts=()), "k")).stem


def _arrays(k: Kernel, rng) -> list[np.ndarray]:
  out = []
  for b in k.bufs:
    d, n = b.dtype, b.shape[0]
    if d.is_float: out.append(rng.standard_normal(n).astype(d.np))
    elif d.is_bool: out.append(rng.random(n) < 0.5)
    else: out.append(rng.integers(0, 4, n).astype(d.np))
  return out


def _program(k: Kernel) -> tuple[Program, list[int]]:
  stored = sorted({k.bufs.index(s.buf) for s in k.stores} | {k.bufs.index(s.buf) for s in (k.reduce.stores if k.reduce else ())})
  n = len(k.bufs)
  specs = [BufferSpec(b.shape[0], b.dtype) for b in k.bufs]
  return Program([k], [tuple(range(n))], specs, list(range(n)), [(i, (specs[i].size,)) for i in stored]), stored


def _same(got: list[np.ndarray], want: list[np.ndarray]) -> bool:
  for g, w in zip(got, want):
    if g.dtype.kind == "f":
      scale = float(np.max(np.abs(w), initial=1.0))
      if not np.allclose(g, w, rtol=1e-3, atol=1e-4 * scale, equal_nan=True): return False
    elif not np.array_equal(g, w): return False
  return True


def _frozen(opts: dict) -> tuple: return tuple(sorted(opts.items()))


def best_opts(k: Kernel, width: int, device, progress=None) -> dict:
  """The fastest action set found for k (from the cache when it has one)."""
  if opt.shape(k) is None: return {}
  cache, key = Cache(device), kernel_key(k, device)
  hit = cache.get(key)
  if hit is not None: return hit
  arrays = _arrays(k, np.random.default_rng(0))
  prog, stored = _program(k)

  def libraries(cands: list[dict]) -> list:
    def build(o):
      try:
        return device.compile(render_program(dataclasses.replace(prog, kernels=[opt.apply(k, o)])),
                              timeout=COMPILE_TIMEOUT)
      except RuntimeError:
        return None
    with ThreadPoolExecutor(max(os.cpu_count() or 1, 1)) as pool: return list(pool.map(build, cands))

  base = device.time_library(libraries([{}])[0], arrays, stored, MIN_TIME, TIMEOUT)
  if base is None: return {}
  if base[0] < MIN_KERNEL_TIME:   # too quick for any action to pay for its search
    cache.put(key, {}, base[0])
    return {}
  want, timed = base[1], {(): base[0]}
  beam = [{}]
  for _ in range(MAX_ROUNDS):
    cands = list({_frozen(c): c for o in beam for c in opt.neighbours(k, o) if _frozen(c) not in timed}.values())
    if not cands: break
    for c, lib in zip(cands, libraries(cands)):
      res = None if lib is None else device.time_library(lib, arrays, stored, MIN_TIME, TIMEOUT)
      timed[_frozen(c)] = res[0] if res is not None and _same(res[1], want) else float("inf")
      if progress is not None: progress.update(1)
    ranked = sorted(timed, key=timed.get)
    new = [dict(o) for o in ranked[:width]]
    if new == beam: break
    beam = new
  best = min(timed, key=timed.get)
  cache.put(key, dict(best), timed[best])
  return dict(best)


def optimise(prog: Program, width: int, device) -> Program:
  """prog with each kernel's searched actions (kernels inside control flow too), with a progress bar while
  candidates run."""
  from tqdm import tqdm

  with tqdm(desc="tracegrad search", unit="candidate", leave=False, disable=None) as bar:
    def walk(p: Program) -> Program:
      items = []
      for k in p.kernels:
        if isinstance(k, Control): items.append(dataclasses.replace(k, bodies=tuple(walk(b) for b in k.bodies)))
        else: items.append(opt.apply(k, best_opts(k, width, device, bar)))
      return dataclasses.replace(p, kernels=items)
    return walk(prog)

