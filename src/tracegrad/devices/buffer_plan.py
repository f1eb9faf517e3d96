"""Where a program's intermediate buffers live: one arena per run, in which buffers that are never needed at the same
time share bytes. A buffer is needed from the first item (kernel or control block) of the program that touches it to
the last; a control block's sub-programs touch all their buffers at its position. Each buffer is placed, biggest
first, at the lowest offset that overlaps no placed buffer needed at an overlapping time (XLA's heap simulation and
TFLite's greedy-by-size planner work on the same principle).

Giving every intermediate bytes of its own made a GPT training step touch 41 MB per call, more than the last-level
cache holds: each kernel then wrote to lines fetched from memory and read operands evicted since they were written.

>>> plan([(0, 4, 1024), (1, 4, 1024), (2, 4, 1024)], {0: {0}, 1: {0, 1}, 2: {1, 2}})
({0: 0, 1: 4096, 2: 0}, 8192)
"""
from __future__ import annotations

ALIGN = 64   # every buffer starts on a cache line (and an AVX-512 register's width)


def uses(prog) -> list[set[int]]:
  """For each item of `prog` (a devices.base.Program), the buffer numbers it reads or writes, its sub-programs'
  included."""
  out = []
  for k, nums in zip(prog.kernels, prog.calls):
    touched = set(nums)
    for body in getattr(k, "bodies", ()): touched |= _everything(body)
    out.append(touched)
  return out


def _everything(prog) -> set[int]:
  touched = set(prog.inputs) | {n for n, _ in prog.outputs}
  for s in uses(prog): touched |= s
  return touched


def plan(sizes: list[tuple[int, int, int]], used: dict[int, set[int]]) -> tuple[dict[int, int], int]:
  """Byte offsets of buffers `sizes` ((number, itemsize, count) each) in one arena, and the arena's size, given the
  items `used[n]` at which buffer n is needed."""
  live = {n: (min(used[n]), max(used[n])) for n, _, _ in sizes if used.get(n)}
  nbytes = {n: -(-i * c // ALIGN) * ALIGN for n, i, c in sizes}
  placed: list[tuple[int, int, int]] = []   # (offset, end, number), by offset
  offsets = {}
  for n in sorted(nbytes, key=lambda n: (-nbytes[n], n)):
    lo, hi = live.get(n, (-1, -1))
    at = 0
    for off, end, m in placed:
      a, b = live.get(m, (-1, -1))
      if b < lo or hi < a: continue   # never needed at the same time
      if off >= at + nbytes[n]: break
      at = max(at, end)
    offsets[n] = at
    placed.append((at, at + nbytes[n], n))
    placed.sort()
  return offsets, max((end for _, end, _ in placed), default=0)
