"""The one place that picks a device and computes values of graphs."""
from __future__ import annotations

import os
import weakref

import numpy as np

from .devices import Device, InterpDevice, TracedValueError
from .ir import UOp

_DEVICES: dict[str, list[Device]] = {"interp": [InterpDevice()]}
_realized: "weakref.WeakKeyDictionary[UOp, np.ndarray]" = weakref.WeakKeyDictionary()


def devices(backend: str | None = None) -> list[Device]:
  """The devices of `backend` (default: the default backend).

  >>> tracegrad.devices()
  [InterpDevice(id=0)]
  """
  name = backend or default_backend()
  if name not in _DEVICES:
    raise ValueError(f"devices: unknown backend {name!r}; available: {', '.join(_DEVICES)}")
  return list(_DEVICES[name])


def default_backend() -> str:
  name = os.environ.get("TRACEGRAD_DEVICE", "interp")
  if name not in _DEVICES:
    raise ValueError(f"TRACEGRAD_DEVICE={name!r} names no available device; available: {', '.join(_DEVICES)}")
  return name


def default_device() -> Device: return _DEVICES[default_backend()][0]


def realize(uops: list[UOp], what: str = "value") -> list[np.ndarray]:
  """The values of concrete nodes (no PARAM below them), computed on the default device and remembered."""
  for u in uops:
    if u.traced: raise TracedValueError(what)
  todo = [u for u in uops if u not in _realized]
  if todo:
    for u, v in zip(todo, default_device().execute(todo, _realized)):
      if v.flags.writeable: v.flags.writeable = False
      _realized[u] = v
  return [_realized[u] for u in uops]


def concrete(uops: list[UOp]) -> list[UOp]:
  """Each concrete node computed (all in one pass, sharing what they have in common) and held as a BUFFER;
  traced nodes are returned as they are. Transforms call this on their results outside a trace, so that values
  do not stay lazy graphs that a later computation would evaluate again."""
  todo = [u for u in uops if not u.traced and u.depth > 0]
  if not todo: return list(uops)
  vals = dict(zip(todo, realize(todo)))
  return [UOp.buffer(vals[u]) if u in vals else u for u in uops]


def run_graph(graph, leaves: list[np.ndarray]) -> list[np.ndarray]:
  """The outputs of `graph` for concrete input leaves (numpy arrays matching its inputs)."""
  from .ir import substitute
  if len(leaves) != len(graph.inputs):
    raise ValueError(f"run_graph: the graph takes {len(graph.inputs)} inputs, got {len(leaves)}")
  mapping = {p: UOp.buffer(np.asarray(v, dtype=p.dtype.np).reshape(p.shape)) for p, v in zip(graph.inputs, leaves)}
  return realize(substitute(list(graph.outputs), mapping))
