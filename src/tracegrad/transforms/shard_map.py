"""shard_map, as jax.shard_map: f runs once per device of a mesh on that device's blocks of the arguments
(in_specs), its collectives (lax.psum, all_gather, ...) spanning the mesh axes they name, and the devices' results
are put together as out_specs say.

On concrete arguments every device runs its program on a thread of its own (parallel/spmd.py) and the results stay in
per-device buffers. Under a transform (jit, grad, vmap) the same function is the composition of vmaps over the mesh
axes, one per axis name, which every transform already goes through.

>>> from tracegrad.sharding import Mesh, P
>>> mesh = Mesh(tracegrad.devices()[:1], ("i",))
>>> shard_map(lambda x: lax.psum(x, "i"), mesh, in_specs=P("i"), out_specs=P())(tnp.ones(4))
Array([1., 1., 1., 1.], dtype=float32)
"""
from __future__ import annotations

import contextlib
import math
from typing import Callable

from .. import run
from .. import tree as tree_util
from ..array import Array, to_array
from ..parallel import spmd
from ..parallel.sharding import Mesh, NamedSharding, PartitionSpec, spec_axes
from ..trace import ShapeDtypeStruct, named_axis, trace
from .shard import run_on_mesh
from .vmap import _per_leaf, vmap

__all__ = ["shard_map"]


def shard_map(f: Callable, mesh: Mesh, in_specs, out_specs, check_rep: bool = True) -> Callable:
  """f over the blocks of its arguments, one call per device of `mesh`. in_specs and out_specs are PartitionSpecs
  (or pytree prefixes of the arguments and outputs holding them): P("i") splits dimension 0 over mesh axis "i";
  an output spec that leaves a mesh axis out declares the output the same on every device along it, which
  check_rep verifies on concrete runs (a ValueError when devices disagree)."""
  fn = f"shard_map({getattr(f, '__name__', type(f).__name__)})"
  if not isinstance(mesh, Mesh): raise TypeError(f"{fn}: mesh must be a tracegrad.sharding.Mesh, got {type(mesh).__name__}")
  plans: dict = {}

  def mapped(*args):
    leaves, treedef = tree_util.flatten(args)
    leaves = [to_array(x, fn=fn) for x in leaves]
    specs = _specs(in_specs, args, fn, "in_specs")
    shardings = [NamedSharding(mesh, s) for s in specs]
    for x, s in zip(leaves, shardings): s.check(x.shape, fn)
    if any(x.is_traced for x in leaves): return _as_vmaps(f, mesh, leaves, treedef, specs, out_specs, fn)
    avals = [ShapeDtypeStruct(s.shard_shape(x.shape), x.dtype, x.weak_type) for x, s in zip(leaves, shardings)]
    key = (treedef, tuple((a.shape, a.dtype, a.weak_type) for a in avals), tuple(specs))
    if key not in plans:
      with contextlib.ExitStack() as names:
        for name in mesh.axis_names: names.enter_context(named_axis(name, mesh.shape[name]))
        g, _ = trace(lambda *ls: f(*tree_util.unflatten(treedef, ls)), avals, fn=fn)
      plans[key] = spmd.Plan(g, run.executable)
    plan = plans[key]
    g = plan.graph
    shell = tree_util.unflatten(g.out_tree, [0] * len(g.outputs))
    outs = [NamedSharding(mesh, spec) for spec in _specs(out_specs, shell, fn, "out_specs")]
    res = run_on_mesh(plan, mesh, leaves, shardings, outs, check_rep and fn)
    return tree_util.unflatten(g.out_tree, res)

  mapped.__name__ = fn
  return mapped


def _specs(specs, tree, fn: str, what: str) -> list[PartitionSpec]:
  got = _per_leaf(specs, tree, PartitionSpec, f"{fn}: {what} {specs!r} is not a tree prefix of the {what[:-6]}s")
  for s in got:
    if not isinstance(s, PartitionSpec):
      raise TypeError(f"{fn}: {what} must hold PartitionSpecs (P(...)), got {s!r}")
  return got


# ---- under a transform: one vmap per mesh axis ----

def _to_lanes(x: Array, spec: PartitionSpec, mesh: Mesh):
  """x with each mesh axis its spec names split out as a leading axis, in the mesh's axis order, and which axes."""
  axes = spec_axes(spec, x.ndim)
  shape, where = [], {}
  for n, names in zip(x.shape, axes):
    for a in names:
      where[a] = len(shape)
      shape.append(mesh.shape[a])
    shape.append(n // math.prod(mesh.shape[a] for a in names))
  present = [a for a in mesh.axis_names if a in where]
  blocks = [i for i in range(len(shape)) if i not in where.values()]
  return x.reshape(shape).transpose([where[a] for a in present] + blocks), present


def _from_lanes(y: Array, spec: PartitionSpec, mesh: Mesh) -> Array:
  """The global array from y, which carries one leading lane axis per mesh axis (mesh order) before the block."""
  axes = spec_axes(spec)
  named = {a for names in axes for a in names}
  y = y[tuple(slice(None) if a in named else 0 for a in mesh.axis_names)]       # replicated: any lane's copy
  lane = {a: i for i, a in enumerate(a for a in mesh.axis_names if a in named)}
  nl = len(lane)
  block = y.shape[nl:]
  perm, shape = [], []
  for d, n in enumerate(block):
    names = axes[d] if d < len(axes) else ()
    perm += [lane[a] for a in names] + [nl + d]
    shape.append(n * math.prod(mesh.shape[a] for a in names))
  return y.transpose(perm).reshape(shape)


def _as_vmaps(f, mesh: Mesh, leaves: list[Array], treedef, specs, out_specs, fn: str):
  lanes = [_to_lanes(x, s, mesh) for x, s in zip(leaves, specs)]
  body = lambda *ls: f(*tree_util.unflatten(treedef, ls))
  for a in reversed(mesh.axis_names):
    body = vmap(body, in_axes=tuple(0 if a in present else None for _, present in lanes), axis_name=a,
                axis_size=mesh.shape[a])
  out = body(*(x for x, _ in lanes))
  ospecs = _specs(out_specs, out, fn, "out_specs")
  flat, otree = tree_util.flatten(out)
  return tree_util.unflatten(otree, [_from_lanes(y, s, mesh) for y, s in zip(flat, ospecs)])
