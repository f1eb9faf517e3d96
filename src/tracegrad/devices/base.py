"""What every device answers (its name, and how it evaluates the nodes of a graph whose leaves are concrete) and the
Program a compiling device runs."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from ..ir import UOp
from ..ir.dtypes import DType


def cache_root() -> Path:
  """Where the devices keep what they compile and what search found: $TRACEGRAD_CACHE_DIR, default
  ~/.cache/tracegrad."""
  return Path(os.environ.get("TRACEGRAD_CACHE_DIR") or Path.home() / ".cache" / "tracegrad")


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
