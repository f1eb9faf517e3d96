"""Optimisation actions: the choices the C renderer makes for a kernel, each set on Kernel.opts as a (name, amount)
pair. A kernel without opts gets the hand-coded defaults (register blocks sized for the target's vectors, from the
program's prelude); search (lower/search.py) tries others and keeps what runs fastest.

- `threads`: 0 runs the kernel on one core (threads cost more than they bring to a small kernel)
- `collapse`: how many outer loops, outermost first, the threads share out (the parallel axes)
- `block`: 0 runs a matmul-like kernel as plain loops instead of register blocks
- `rows`: points of the second-last output loop in one register block
- `width`: points of the last output loop in one block (a matmul whose right operand is read along the row)
- `cols`: outputs of the last output loop in one block of dot products (both operands read along the reduction)
- `unroll`: how far the compiler unrolls a block's reduction loop (by default as far as it chooses, but in a register
  block along the row not at all when short and the last of several: render_c.default_unroll; and a block of dot
  products' vector steps whole when they are two of the widest vectors: render_c.short_dots_unroll)
- `order`: 0 runs a matmul's row blocks outside its column blocks (by default the column blocks are outside, so a
  panel of the right operand stays in cache while every row block uses it)
- `panel`: 0 reads a big right operand in place rather than from contiguous copies of its column panels
  (render_c.panel_load)

The GPU renderer (lower/render_gpu.py, targets opencl and cuda) has actions of its own:

- `local`: work items per group
- `group`: 1 runs a reduction as one work-group per output point, its items combining partial results through
  local memory; 0 as one item per output point (by default: grouped when the reduction is long and the points few)
- `upcast`: points of the last outer loop one item computes (it loads what they share once, and reads and writes
  consecutive elements as one vector where the index allows)
- `upcast_rows`: points of the second-last outer loop one item computes (with `upcast`, a register tile of a matmul)
- `grid`: 0 numbers the items along one launch dimension; g > 0 launches a 2-d grid, the last loop along the first
  dimension, the other loops along the second, in groups g items wide
- `stage`: c > 0 runs the reduction's last loop in chunks of c steps; for each chunk the items of a group (a 2-d
  grid's) copy the rows and columns they all read (`stage_loads`) into local memory together, wait at a barrier,
  and read them from there

>>> import tracegrad, tracegrad.numpy as tnp
>>> from tracegrad.lower.schedule import schedule
>>> k = schedule(tracegrad.make_graph(lambda x, y: x @ y)(tnp.ones((64, 32)), tnp.ones((32, 64)))).kernels[0]
>>> shape(k), sorted(ACTIONS[shape(k)])
('rows_by_width', ['block', 'order', 'panel', 'rows', 'threads', 'unroll', 'width'])
"""
from __future__ import annotations

import dataclasses
import math

from ..ir import Ops, UOp
from .kernel import Kernel

AMOUNTS = {"threads": (0, 1), "collapse": (1, 2, 3), "block": (0, 1), "rows": (1, 2, 4, 6, 8, 12, 16), "width": (16, 32, 48, 64, 96, 128, 256),
           "cols": (1, 2, 3, 4, 6, 8), "unroll": (1, 2, 4, 8), "order": (0, 1), "panel": (0, 1)}
# the others default to the prelude's sizes for the target
DEFAULTS = {"threads": 1, "block": 1, "panel": 1}   # and "order": render_c.columns_outside's choice
ACTIONS = {"rows_by_width": ("threads", "block", "rows", "width", "unroll", "order", "panel"),
           "dots": ("threads", "block", "rows", "cols", "unroll"), "plain": ("threads",),
           "plain_nest": ("threads", "collapse")}


GPU_AMOUNTS = {"local": (16, 32, 64, 128, 256), "group": (0, 1), "upcast": (1, 2, 4, 8), "upcast_rows": (1, 2, 4, 8),
               "grid": (0, 4, 8, 16, 32), "stage": (0, 8, 16, 32)}
GPU_DEFAULTS = {"local": 64, "upcast": 1, "upcast_rows": 1, "grid": 0, "stage": 0}   # group: grouped()'s choice
GPU_TARGETS = ("opencl", "cuda")
MAX_GRID_Y = 65535   # groups along a launch's second dimension (CUDA's limit)
GROUP_MIN_STEPS = 1024   # a reduction this long over few enough outer points runs as a work-group per point
GROUP_MAX_POINTS = 4096
STAGE_BYTES = 32768   # local memory a staged reduction may take
TILE = 4             # a matmul-like kernel's default register tile: TILE x TILE outputs per item
TILE_MIN_ITEMS = 1024   # ... when that leaves this many items or more
TILE_MIN_STEPS = 16     # ... and its reduction is this long or longer
# ... and where the edges allow, groups of 16 x 16 such items sharing 16-step chunks of the operands through local
# memory (a 64 x 64 block of outputs per group)
STAGED = {"local": 256, "grid": 16, "stage": 16}


def groupable(k: Kernel) -> bool:
  """Whether k's reduction can run as a work-group per output point."""
  r = k.reduce
  return r is not None and k.parallel and not r.stores and not k.epilogue and not k.phases and bool(r.loops)


def grouped(k: Kernel, opts: dict) -> bool:
  """Whether k runs as a work-group per output point: as opts' `group` says, else when its reduction is long and
  its points few."""
  if not groupable(k): return False
  if "group" in opts: return bool(opts["group"])
  points, steps = math.prod(l.extent for l in k.loops), math.prod(l.extent for l in k.reduce.loops)
  return steps >= GROUP_MIN_STEPS and points <= GROUP_MAX_POINTS


def gpu_default(k: Kernel) -> dict:
  """The GPU actions of a kernel without opts: a register tile for a matmul-like kernel big enough to keep the chip
  busy with a tile per item, staged through local memory where its edges allow (STAGED), else none (one point per
  item, GPU_DEFAULTS)."""
  r = k.reduce
  if r is None or len(k.loops) < 2 or not k.parallel or not r.loops or k.phases: return {}
  acts = gpu_actions(k, {})
  if TILE not in acts.get("upcast", ()) or TILE not in acts.get("upcast_rows", ()): return {}
  items = math.prod(l.extent for l in k.loops) // TILE ** 2
  if items < TILE_MIN_ITEMS or math.prod(l.extent for l in r.loops) < TILE_MIN_STEPS: return {}
  tile = {"upcast": TILE, "upcast_rows": TILE}
  staged = {**tile, **STAGED}
  legal = gpu_actions(k, {a: v for a, v in staged.items() if a != "stage"})
  return staged if all(v in legal.get(a, ()) for a, v in staged.items()) else tile


def stage_loads(k: Kernel) -> list[UOp]:
  """The loads of k's reduction that a work-group can stage through local memory: each reads along the reduction's
  last loop and along exactly one of the last two outer loops (a matmul's rows, or its columns), at an index of
  loop variables alone, from a buffer the kernel does not store to."""
  r = k.reduce
  if r is None or len(k.loops) < 2 or not r.loops: return []
  rows, cols, inner = k.loops[-2].var, k.loops[-1].var, r.loops[-1].var
  stored, out = {s.buf for s in k.stores}, []
  for u in r.value.toposort():
    if u.op is not Ops.GATHER or u.src[0] in stored: continue
    index = u.src[1].src[0].toposort()
    if any(n.op is Ops.GATHER for n in index) or inner not in index or (rows in index) == (cols in index): continue
    out.append(u)
  return out


def stage_shape(k: Kernel, opts: dict, load: UOp) -> tuple[int, int]:
  """(rows, columns) of the local array holding a staged load's chunk: the group's rows by the chunk's steps, or
  the chunk's steps by the group's columns."""
  g, chunk = opts["grid"], opts["stage"]
  if k.loops[-2].var in load.src[1].src[0].toposort():
    return opts.get("local", GPU_DEFAULTS["local"]) // g * opts.get("upcast_rows", 1), chunk
  return chunk, g * opts.get("upcast", 1)


def _stages(k: Kernel, opts: dict) -> tuple:
  """The chunks `stage` may take beside the other actions of opts."""
  r, g, local = k.reduce, opts.get("grid", 0), opts.get("local", GPU_DEFAULTS["local"])
  if not g or g >= local or r.stores or k.epilogue: return ()
  loads = stage_loads(k)
  if not loads: return ()
  steps = r.loops[-1].extent
  if (k.loops[-1].extent // opts.get("upcast", 1)) % g or (k.loops[-2].extent // opts.get("upcast_rows", 1)) % (local // g):
    return ()   # a group with items past the edge would leave before a barrier
  def fits(c):
    o = {**opts, "grid": g, "stage": c}
    return 2 * sum(math.prod(stage_shape(k, o, u)) * u.dtype.itemsize for u in loads) <= STAGE_BYTES   # two halves
  return tuple(c for c in GPU_AMOUNTS["stage"] if c == 0 or (steps % c == 0 and fits(c)))


def gpu_actions(k: Kernel, opts: dict) -> dict[str, tuple]:
  """The amounts each GPU action may take for k beside the other actions of opts (none: a sequential kernel)."""
  if not k.parallel: return {}
  out = {"group": GPU_AMOUNTS["group"]} if groupable(k) else {}
  if grouped(k, opts): return {**out, "local": tuple(n for n in GPU_AMOUNTS["local"] if n >= 32)}
  if not k.loops: return out
  out["local"] = GPU_AMOUNTS["local"]
  if k.phases: return out   # one point per item, its phases in order
  out["upcast"] = tuple(u for u in GPU_AMOUNTS["upcast"] if k.loops[-1].extent % u == 0)
  if len(k.loops) >= 2:
    out["upcast_rows"] = tuple(u for u in GPU_AMOUNTS["upcast_rows"] if k.loops[-2].extent % u == 0)
    local = opts.get("local", GPU_DEFAULTS["local"])
    rest = math.prod(l.extent for l in k.loops[:-1]) // opts.get("upcast_rows", 1)
    out["grid"] = tuple(g for g in GPU_AMOUNTS["grid"] if g == 0 or (g < local and -(-rest * g // local) <= MAX_GRID_Y))
    if k.reduce is not None and len(stages := _stages(k, opts)) > 1: out["stage"] = stages
  return out


def shape(k: Kernel, target: str = "c") -> str | None:
  """Which template the renderer uses for k by default: register blocks of a matmul-like kernel, plain parallel
  loops (one, or a nest), or None for a kernel with no actions (sequential, or no loops). On a GPU target: "items"
  (one or more points per work item) or "group" (a reduction by work-groups), or None."""
  from .render_c import dot_blocked, interchanged
  if target in GPU_TARGETS:
    return None if not gpu_actions(k, {}) else "group" if grouped(k, {}) else "items"
  if interchanged(k): return "rows_by_width"
  if dot_blocked(k): return "dots"
  if not k.parallel or not k.loops: return None
  return "plain" if len(k.loops) == 1 else "plain_nest"


def _legal(k: Kernel, opts: dict, target: str) -> dict[str, tuple]:
  if target in GPU_TARGETS: return gpu_actions(k, opts)
  return {a: AMOUNTS[a] for a in ACTIONS.get(shape(k), ())}


def apply(k: Kernel, opts: dict, target: str = "c") -> Kernel:
  """k with these actions (checked against the ones its shape allows on `target`: "c", "opencl" or "cuda")."""
  legal = _legal(k, opts, target)
  for name, amount in opts.items():
    if amount not in legal.get(name, ()):
      raise ValueError(f"opt: {name}={amount} is not an action for kernel {k.name} ({shape(k, target) or 'no blocks'} "
                       f"on {target}); its actions: {', '.join(f'{a} in {v}' for a, v in legal.items()) or 'none'}")
  return dataclasses.replace(k, opts=tuple(sorted(opts.items())))


def neighbours(k: Kernel, opts: dict, target: str = "c", host: str | None = "") -> list[dict]:
  """The action sets one action away from opts. On the cpu, given the target the compiler builds for (a key of
  render_c.BLOCKS: "__AVX__", or None for the generic one), an action at the default's amount is left out of each
  set (no set runs the default's code under another name), and no set has a register block with more accumulators
  than the target has vector registers. Without a loop of rows, a block has no rows to size or order."""
  if target in GPU_TARGETS:
    out, defaults = [], {**GPU_DEFAULTS, "group": int(grouped(k, {}))}
    opts = opts or gpu_default(k)
    for name, amounts in gpu_actions(k, opts).items():
      for amount in amounts:
        if opts.get(name, defaults[name]) == amount: continue
        cand = {**opts, name: amount}
        legal = gpu_actions(k, cand)
        if all(v in legal.get(a, ()) for a, v in cand.items()): out.append(cand)
    return out
  if opts.get("block") == 0: return [{}, {"block": 0, "threads": 1 - opts.get("threads", 1)}]
  from .render_c import (BLOCKS, REGISTERS, accumulators, block_sizes, columns_outside, default_unroll, panel_load,
                         short_dots_unroll)
  out, kind, sizes = [], shape(k), BLOCKS.get(host)
  defaults = {**DEFAULTS, "order": columns_outside(k), **(block_sizes(k, sizes) if sizes else {})}
  if kind == "rows_by_width": defaults["unroll"] = default_unroll(k)
  if kind == "dots": defaults["unroll"] = short_dots_unroll(k, None)
  for name in ACTIONS.get(kind, ()):
    if name == "panel" and panel_load(k) is None: continue   # no panel to copy: the same code either way
    if name in ("rows", "order") and kind == "rows_by_width" and len(k.loops) < 2: continue
    for amount in AMOUNTS[name]:
      if opts.get(name, defaults.get(name)) == amount: continue
      cand = {**opts, name: amount} if name != "block" or amount else {"block": 0}
      if sizes and cand.get("block", 1) and accumulators(apply(k, cand), sizes) > REGISTERS[host]: continue
      out.append({a: v for a, v in cand.items() if defaults.get(a) != v})
  return out
