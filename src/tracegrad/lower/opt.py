"""Optimisation actions: the choices the C renderer makes for a kernel, each set on Kernel.opts as a (name, amount)
pair. A kernel without opts gets the hand-coded defaults (register blocks sized for the target's vectors, from the
program's prelude); search (lower/search.py) tries others and keeps what runs fastest.

- `block`: 0 runs a matmul-like kernel as plain loops instead of register blocks
- `rows`: points of the second-last output loop in one register block
- `width`: points of the last output loop in one block (a matmul whose right operand is read along the row)
- `cols`: outputs of the last output loop in one block of dot products (both operands read along the reduction)

>>> import tracegrad, tracegrad.numpy as tnp
>>> from tracegrad.lower.schedule import schedule
>>> k = schedule(tracegrad.make_graph(lambda x, y: x @ y)(tnp.ones((64, 32)), tnp.ones((32, 64)))).kernels[0]
>>> shape(k), sorted(ACTIONS[shape(k)])
('rows_by_width', ['block', 'rows', 'width'])
"""
from __future__ import annotations

import dataclasses

from .kernel import Kernel

AMOUNTS = {"block": (0, 1), "rows": (1, 2, 4, 6, 8, 12, 16), "width": (16, 32, 48, 64, 96, 128, 256),
           "cols": (1, 2, 3, 4, 6, 8)}
ACTIONS = {"rows_by_width": ("block", "rows", "width"), "dots": ("block", "rows", "cols")}


def shape(k: Kernel) -> str | None:
  """Which register-block template the renderer uses for k by default, if any."""
  from .render_c import _dot_blocked, _interchange
  if _interchange(k): return "rows_by_width"
  if _dot_blocked(k): return "dots"
  return None


def apply(k: Kernel, opts: dict) -> Kernel:
  """k with these actions (checked against the ones its shape allows)."""
  allowed = ACTIONS.get(shape(k), ())
  for name, amount in opts.items():
    if name not in allowed or amount not in AMOUNTS[name]:
      raise ValueError(f"opt: {name}={amount} is not an action for kernel {k.name} ({shape(k) or 'no blocks'}); "
                       f"its actions: {', '.join(f'{a} in {AMOUNTS[a]}' for a in allowed) or 'none'}")
  return dataclasses.replace(k, opts=tuple(sorted(opts.items())))


def neighbours(k: Kernel, opts: dict) -> list[dict]:
  """The action sets one action away from opts."""
  if opts.get("block") == 0: return [{}]
  out = []
  for name in ACTIONS.get(shape(k), ()):
    for amount in AMOUNTS[name]:
      if opts.get(name) != amount: out.append({**opts, name: amount} if name != "block" or amount else {"block": 0})
  return out
