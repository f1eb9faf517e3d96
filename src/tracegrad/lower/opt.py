"""Optimisation actions: the choices the C renderer makes for a kernel, each set on Kernel.opts as a (name, amount)
pair. A kernel without opts gets the hand-coded defaults (register blocks sized for the target's vectors, from the
program's prelude); search (lower/search.py) tries others and keeps what runs fastest.

- `threads`: 0 runs the kernel on one core (threads cost more than they bring to a small kernel)
- `collapse`: how many outer loops, outermost first, the threads share out (the parallel axes)
- `block`: 0 runs a matmul-like kernel as plain loops instead of register blocks
- `rows`: points of the second-last output loop in one register block
- `width`: points of the last output loop in one block (a matmul whose right operand is read along the row)
- `cols`: outputs of the last output loop in one block of dot products (both operands read along the reduction)
- `unroll`: how far the compiler unrolls a block's reduction loop
- `order`: 0 runs a matmul's row blocks outside its column blocks (by default the column blocks are outside, so a
  panel of the right operand stays in cache while every row block uses it)

>>> import tracegrad, tracegrad.numpy as tnp
>>> from tracegrad.lower.schedule import schedule
>>> k = schedule(tracegrad.make_graph(lambda x, y: x @ y)(tnp.ones((64, 32)), tnp.ones((32, 64)))).kernels[0]
>>> shape(k), sorted(ACTIONS[shape(k)])
('rows_by_width', ['block', 'order', 'rows', 'threads', 'unroll', 'width'])
"""
from __future__ import annotations

import dataclasses

from .kernel import Kernel

AMOUNTS = {"threads": (0, 1), "collapse": (1, 2, 3), "block": (0, 1), "rows": (1, 2, 4, 6, 8, 12, 16), "width": (16, 32, 48, 64, 96, 128, 256),
           "cols": (1, 2, 3, 4, 6, 8), "unroll": (1, 2, 4, 8), "order": (0, 1)}
DEFAULTS = {"threads": 1, "block": 1, "order": 1}   # the others default to the prelude's sizes for the target
ACTIONS = {"rows_by_width": ("threads", "block", "rows", "width", "unroll", "order"),
           "dots": ("threads", "block", "rows", "cols", "unroll"), "plain": ("threads",),
           "plain_nest": ("threads", "collapse")}


def shape(k: Kernel) -> str | None:
  """Which template the renderer uses for k by default: register blocks of a matmul-like kernel, plain parallel
  loops (one, or a nest), or None for a kernel with no actions (sequential, or no loops)."""
  from .render_c import _dot_blocked, _interchange
  if _interchange(k): return "rows_by_width"
  if _dot_blocked(k): return "dots"
  if not k.parallel or not k.loops: return None
  return "plain" if len(k.loops) == 1 else "plain_nest"


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
  if opts.get("block") == 0: return [{}, {"block": 0, "threads": 1 - opts.get("threads", 1)}]
  out = []
  for name in ACTIONS.get(shape(k), ()):
    for amount in AMOUNTS[name]:
      if opts.get(name, DEFAULTS.get(name)) != amount:
        out.append({**opts, name: amount} if name != "block" or amount else {"block": 0})
  return out
