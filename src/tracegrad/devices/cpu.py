"""The CPU device: compiles one C source per program with the system compiler, keeps the shared library in a disk
cache and runs it through cffi (ABI mode). Eager operations run on the interp device and never pay a compile.

The source comes from lower/render_c.py and exports `void tg_run(void **bufs)`; a program (lower/kernel.py) is read
by its fields only, since devices do not import the lowering.
"""
from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import warnings
import weakref
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping

import cffi
import numpy as np

from ..ir import UOp
from .base import Device
from .interp import InterpDevice

FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-fopenmp", "-fwrapv", "-ffp-contract=off", "-fno-math-errno",
         "-fno-trapping-math")
OPTIONAL_FLAGS = ("-fopenmp", "-march=native")   # dropped, in this order, by a compiler that rejects them
COMPILERS = ("cc", "gcc", "clang")

_ffi = cffi.FFI()
_ffi.cdef("void tg_run(void **bufs);")


@dataclass(frozen=True)
class Toolchain:
  cmd: tuple[str, ...]
  flags: tuple[str, ...]
  version: str

  def command(self, out: str) -> list[str]: return [*self.cmd, *self.flags, "-x", "c", "-", "-o", out, "-lm"]


def _compiles(tc: Toolchain) -> bool:
  with tempfile.TemporaryDirectory() as d:
    try:
      r = subprocess.run(tc.command(os.path.join(d, "probe.so")), input="int tg_probe(void) { return 0; }\n",
                         capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
      return False
    return r.returncode == 0


def _version(cmd: list[str]) -> str | None:
  try:
    r = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=30)
  except (OSError, subprocess.SubprocessError):
    return None
  return r.stdout.strip() if r.returncode == 0 else None


@lru_cache(None)
def find_toolchain(cc: str | None) -> Toolchain | None:
  """The compiler `cc` (from $CC), else the first of cc, gcc, clang that compiles a shared library, with FLAGS less
  the optional flags it rejects; None when there is none."""
  for cmd in ([shlex.split(cc)] if cc else [[c] for c in COMPILERS]):
    if not cmd or shutil.which(cmd[0]) is None or (version := _version(cmd)) is None: continue
    flags = FLAGS
    for drop in (None, *OPTIONAL_FLAGS):
      flags = tuple(f for f in flags if f != drop)
      if _compiles(tc := Toolchain(tuple(cmd), flags, version)): return tc
  return None


@lru_cache(None)
def _cpu_id() -> str:
  """What -march=native depends on, so that a cache shared between machines never loads foreign code."""
  try:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
  except OSError:
    return os.uname().machine
  return os.uname().machine + "".join(sorted({l for l in lines if l.startswith(("model name", "flags"))}))


def cache_dir() -> Path:
  return Path(os.environ.get("TRACEGRAD_CACHE_DIR") or Path.home() / ".cache" / "tracegrad") / "cpu"


class Library:
  """A loaded shared library: `tg_run(ptrs)` runs the program whose buffers `ptrs` points at."""

  def __init__(self, path: Path):
    self.path = path
    self._lib = _ffi.dlopen(str(path))
    self.tg_run = self._lib.tg_run

  def __repr__(self) -> str: return f"Library({self.path.name})"


def _numbered(source: str) -> str:
  return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(source.splitlines(), 1))


def _build(tc: Toolchain, source: str, path: Path) -> None:
  """Compile into a temporary file beside `path` and move it into place, so `path` is whole or absent."""
  fd, tmp = tempfile.mkstemp(prefix=path.stem[:16] + "-", suffix=".tmp", dir=path.parent)
  os.close(fd)
  try:
    r = subprocess.run(tc.command(tmp), input=source, capture_output=True, text=True)
    if r.returncode != 0:
      raise RuntimeError(f"cpu: the C compiler failed ({' '.join(tc.command(tmp))}):\n{r.stderr.strip()}\n\n"
                         f"source:\n{_numbered(source)}")
    os.replace(tmp, path)
  finally:
    if os.path.exists(tmp): os.unlink(tmp)


_warned: set[str | None] = set()


class CPUDevice(Device):
  name = "cpu"
  platform = "cpu"

  def __init__(self):
    self._interp = InterpDevice()
    self._libs: dict[Path, Library] = {}
    self._written: "weakref.WeakKeyDictionary[object, frozenset[int]]" = weakref.WeakKeyDictionary()

  def toolchain(self) -> Toolchain | None: return find_toolchain(os.environ.get("CC") or None)

  def available(self) -> bool:
    """Whether a working C compiler was found; when not, warns once that callers fall back to interp."""
    if self.toolchain() is not None: return True
    cc = os.environ.get("CC") or None
    if cc not in _warned:
      _warned.add(cc)
      warnings.warn(f"cpu: no working C compiler ({'$CC=' + cc if cc else 'tried ' + ', '.join(COMPILERS)}); "
                    "programs run on the interp device instead", RuntimeWarning, stacklevel=2)
    return False

  def library_path(self, source: str) -> Path:
    """Where the disk cache keeps the library of `source`: keyed by the source, the compiler, its flags and the CPU."""
    tc = self.toolchain()
    if tc is None: raise RuntimeError(f"cpu: no working C compiler; set $CC or install one of {', '.join(COMPILERS)}")
    key = hashlib.sha256("\0".join([source, *tc.cmd, *tc.flags, tc.version, _cpu_id()]).encode()).hexdigest()
    return cache_dir() / f"{key}.so"

  def compile(self, source: str) -> Library:
    """The library of a C source, from the disk cache ($TRACEGRAD_CACHE_DIR, default ~/.cache/tracegrad) when an
    earlier compile left it there. A compile error raises RuntimeError with the compiler's message and the source."""
    path = self.library_path(source)
    if path in self._libs: return self._libs[path]
    path.parent.mkdir(parents=True, exist_ok=True)
    lib = None
    if path.exists():
      try:
        lib = Library(path)
      except OSError:
        path.unlink(missing_ok=True)   # a damaged entry: build it again
    if lib is None:
      _build(self.toolchain(), source, path)
      lib = Library(path)
    self._libs[path] = lib
    return lib

  def _written_bufs(self, prog) -> frozenset[int]:
    if prog not in self._written:
      self._written[prog] = frozenset(nums[k.bufs.index(s.buf)] for k, nums in zip(prog.kernels, prog.calls)
                                      for s in k.stores)
    return self._written[prog]

  def run_program(self, prog, lib: Library, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run a compiled Program once on `inputs` (in the order of prog.inputs); its outputs, shaped."""
    if len(inputs) != len(prog.inputs):
      raise ValueError(f"run_program: the program takes {len(prog.inputs)} inputs, got {len(inputs)}")
    written = self._written_bufs(prog)
    arrays: list = [None] * len(prog.buffers)
    for n, x in zip(prog.inputs, inputs):
      spec = prog.buffers[n]
      a = np.asarray(x, dtype=spec.dtype.np)
      if a.size != spec.size:
        raise ValueError(f"run_program: input buffer {n} holds {spec.size} elements of {spec.dtype}, got an array of "
                         f"shape {a.shape}")
      arrays[n] = np.array(a.reshape(-1)) if n in written else np.ascontiguousarray(a).reshape(-1)
    for n, spec in enumerate(prog.buffers):
      if arrays[n] is not None: continue
      if spec.data is None: arrays[n] = np.empty(spec.size, spec.dtype.np)
      else:
        data = np.ascontiguousarray(spec.data, dtype=spec.dtype.np).reshape(-1)
        arrays[n] = data.copy() if n in written else data
    ptrs = _ffi.new("void *[]", max(len(arrays), 1))
    for i, a in enumerate(arrays): ptrs[i] = _ffi.cast("void *", a.__array_interface__["data"][0])
    lib.tg_run(ptrs)
    inputs_set = set(prog.inputs) - written
    return [(arrays[n].copy() if n in inputs_set else arrays[n]).reshape(shape) for n, shape in prog.outputs]

  def execute(self, outputs: list[UOp], known: Mapping[UOp, np.ndarray]) -> list[np.ndarray]:
    return self._interp.execute(outputs, known)
