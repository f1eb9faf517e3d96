"""What every device answers (its name, and how it evaluates the nodes of a graph whose leaves are concrete), the
Program a compiling device runs, and the directories devices keep their caches in (`cache_dir`)."""
from __future__ import annotations

import atexit
import base64
import os
import shutil
import stat
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from ..ir import Ops, UOp
from ..ir.dtypes import DType, dtype_from_name
from . import buffer_plan


def cache_root() -> Path:
  """Where the devices keep what they compile and what search found: $TRACEGRAD_CACHE_DIR, default
  ~/.cache/tracegrad."""
  return Path(os.environ.get("TRACEGRAD_CACHE_DIR") or Path.home() / ".cache" / "tracegrad")


STALE_SECONDS = 600   # a temporary file this old was left by a process killed while writing it
_distrusted: dict[str, str] = {}   # directories found unusable while writing, and why
_warned: set[str] = set()
_swept: set[str] = set()
_private: list[Path] = []
_private_lock = threading.Lock()


def cache_dir(platform: str) -> Path:
  """cache_root()/`platform`, created private (0700): the directory a device keeps compiled code and search results
  in. It and the root must be real directories (not symbolic links), owned by this user, writable, and closed to
  writes by anyone else, since what is loaded from there runs; otherwise one RuntimeWarning says why and how to fix
  it, and this process uses a private temporary directory (no disk cache). Stale temporaries are removed on first
  use."""
  root = cache_root()
  d = root / platform
  bad, why = root, _unusable(root)
  if not why: bad, why = d, _distrusted.get(str(d)) or _unusable(d)
  if why:
    _warn(bad, why)
    d = _private_root() / platform
    d.mkdir(mode=0o700, exist_ok=True)
  if str(d) not in _swept:
    _swept.add(str(d))
    sweep(d, "*.tmp")
  return d


def distrust(d: Path, error: OSError) -> None:
  """Use no disk cache in `d` from now on in this process: writing there failed with `error`."""
  _distrusted[str(d)] = f"writing there failed ({error.strerror or error})"


def _unusable(d: Path) -> str:
  """Why directory d cannot hold code this process runs ('' when it can), after creating it (0700) if absent."""
  try:
    try:
      st = os.lstat(d)
    except FileNotFoundError:
      d.mkdir(mode=0o700, parents=True)
      st = os.lstat(d)
  except OSError as e:
    return f"it cannot be created ({e.strerror or e})"
  if stat.S_ISLNK(st.st_mode): return "it is a symbolic link"
  if not stat.S_ISDIR(st.st_mode): return "it is not a directory"
  if st.st_uid != os.geteuid(): return f"it is owned by another user (uid {st.st_uid})"
  if st.st_mode & 0o022: return f"others may write to it (mode {stat.S_IMODE(st.st_mode):o})"
  if not os.access(d, os.W_OK | os.X_OK): return "it is not writable"
  return ""


def _warn(d: Path, why: str) -> None:
  if str(d) in _warned: return
  _warned.add(str(d))
  fix = f"chmod 700 {d}" if "others may write" in why else f"make {d} a writable directory of yours, mode 700"
  warnings.warn(f"tracegrad: not using the cache directory {d}: {why}; compiled code goes to a private temporary "
                f"directory for this process instead (no disk cache). To fix: {fix}, or set TRACEGRAD_CACHE_DIR to "
                "such a directory", RuntimeWarning, stacklevel=3)


def _private_root() -> Path:
  """This process's private cache directory (mkdtemp: 0700), removed when it exits."""
  with _private_lock:
    if not _private:
      _private.append(Path(tempfile.mkdtemp(prefix="tracegrad-cache-")))
      pid = os.getpid()
      atexit.register(lambda: os.getpid() == pid and shutil.rmtree(_private[0], ignore_errors=True))
    return _private[0]


def sweep(d: Path, pattern: str) -> None:
  """Remove what `pattern` matches in d that this user owns and that has not changed for STALE_SECONDS: what a killed
  process left half written."""
  cutoff = time.time() - STALE_SECONDS
  for p in d.glob(pattern):
    try:
      st = os.lstat(p)
      if st.st_uid != os.geteuid() or st.st_mtime > cutoff: continue
      if stat.S_ISDIR(st.st_mode): shutil.rmtree(p)
      else: p.unlink()
    except OSError:
      continue


def numbered(source: str) -> str:
  """A source with line numbers, for a compiler's error message."""
  return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(source.splitlines(), 1))


class Device:
  name: str = "?"
  platform: str = "?"
  id: int = 0
  process_index: int = 0   # the process holding it (tracegrad.distributed); others' devices are not addressable here

  def execute(self, outputs: list[UOp], known: Mapping[UOp, np.ndarray]) -> list[np.ndarray]:
    """The values of `outputs`; nodes in `known` already have values. Leaves are BUFFER, CONST or IOTA nodes."""
    raise NotImplementedError

  def __repr__(self) -> str: return f"{self.platform.capitalize()}Device(id={self.id})" if self.platform != "?" else self.name


@dataclass(frozen=True, eq=False)
class BufferSpec:
  size: int
  dtype: DType
  data: np.ndarray | None = None   # a constant's value (a BUFFER node of the graph), else None

  @property
  def nbytes(self) -> int: return self.size * self.dtype.itemsize


@dataclass(eq=False)
class Program:
  """Kernels (the lowering's loop nests, each with `bufs` and `stores`) over numbered buffers: inputs (the graph's
  inputs, in order), constants, intermediates and outputs.

  `calls[k]` gives, for kernel k, the buffer numbers bound to its `bufs`; `outputs[i]` the buffer and shape of
  output i (an output may also be an input or a constant, passed through)."""
  kernels: list
  calls: list[tuple[int, ...]]
  buffers: list[BufferSpec]
  inputs: list[int]
  outputs: list[tuple[int, tuple[int, ...]]]


def host_calls(prog: Program) -> list:
  """The CALLBACK items (lower.kernel.Control) of a Program and of its sub-programs, in the order the program's code
  is written: a call's position in this list is the number by which the compiled code names it."""
  out = []
  for k in prog.kernels:
    if getattr(k, "op", None) is Ops.CALLBACK: out.append(k)
    for b in getattr(k, "bodies", ()): out += host_calls(b)
  return out


@dataclass(frozen=True, eq=False)
class Layout:
  """What running a compiled Program needs besides its code: its buffers, which are the inputs and the outputs,
  which ones kernels write, how many kernels there are, and where its intermediates lie in one arena (buffer_plan).
  A device keeps it on disk beside the code (`to_json`), so that a program compiled in an earlier process runs again
  without being scheduled (a record without an arena, from before there was one, is not found).

  >>> one = Layout((BufferSpec(3, dtype_from_name("float32")),), (0,), ((0, (3,)),), frozenset(), 0)
  >>> Layout.from_json(one.to_json()).outputs
  ((0, (3,)),)
  """
  buffers: tuple[BufferSpec, ...]
  inputs: tuple[int, ...]
  outputs: tuple[tuple[int, tuple[int, ...]], ...]
  written: frozenset[int]
  kernels: int
  hosts: tuple = ()   # its host callbacks' Control items, numbered as the code calls them (never kept on disk)
  arena: tuple[tuple[int, int], ...] = ()   # (buffer, byte offset) of each intermediate in the run's one arena
  arena_bytes: int = 0

  @staticmethod
  def of(prog: Program) -> "Layout":
    written = frozenset(nums[k.bufs.index(s.buf)] for k, nums in zip(prog.kernels, prog.calls)
                        for p in (*getattr(k, "phases", ()), k) for s in p.stores)
    kept = set(prog.inputs) | {n for n, _ in prog.outputs}
    inner = [(n, b.dtype.np.itemsize, b.size) for n, b in enumerate(prog.buffers) if b.data is None and n not in kept]
    offsets, nbytes = buffer_plan.plan(inner, buffer_plan.live(prog))
    return Layout(tuple(prog.buffers), tuple(prog.inputs), tuple((n, tuple(sh)) for n, sh in prog.outputs), written,
                  len(prog.kernels), tuple(host_calls(prog)), tuple(sorted(offsets.items())), nbytes)

  def to_json(self) -> dict:
    def buf(b: BufferSpec) -> list:
      return [b.size, b.dtype.name, None if b.data is None else base64.b64encode(b.data.tobytes()).decode()]
    return {"buffers": [buf(b) for b in self.buffers], "inputs": list(self.inputs),
            "outputs": [[n, list(sh)] for n, sh in self.outputs], "written": sorted(self.written),
            "kernels": self.kernels, "arena": [list(a) for a in self.arena], "arena_bytes": self.arena_bytes}

  @staticmethod
  def from_json(d: dict) -> "Layout":
    def buf(size: int, name: str, data: str | None) -> BufferSpec:
      dt = dtype_from_name(name)
      return BufferSpec(size, dt, None if data is None else np.frombuffer(base64.b64decode(data), dt.np))
    return Layout(tuple(buf(*b) for b in d["buffers"]), tuple(d["inputs"]),
                  tuple((n, tuple(sh)) for n, sh in d["outputs"]), frozenset(d["written"]), d["kernels"], (),
                  tuple((n, off) for n, off in d["arena"]), d["arena_bytes"])
