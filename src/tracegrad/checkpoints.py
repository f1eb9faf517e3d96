"""Checkpoints: pytrees of arrays saved in the safetensors format, one tensor per leaf named by its path
("params/0/w"), written to a temporary file and renamed, so a checkpoint on disk is always whole. Loading takes a
pytree of the expected structure (arrays or ShapeDtypeStructs) and checks every leaf against it.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
>>> tracegrad.checkpoints.save(path, {"w": tnp.ones(2), "step": tnp.asarray(3)})
>>> tracegrad.checkpoints.load(path, {"w": tnp.zeros(2), "step": tnp.asarray(0)})["w"]
Array([1., 1.], dtype=float32)
"""
from __future__ import annotations

import os
import tempfile

import numpy as np

from . import numpy as tnp
from . import tree as tree_util
from .ir import dtypes

__all__ = ["save", "load"]

_VIEWED = {"bfloat16": np.uint16}   # types the safetensors numpy reader lacks: stored as their bits, named in metadata


def _name(path: tuple) -> str:
  return "/".join(str(p) for p in path) or "value"


def _named_leaves(tree, fn: str) -> dict:
  out = {}
  for path, leaf in tree_util.leaves_with_raw_path(tree):
    name = _name(path)
    if name in out: raise ValueError(f"{fn}: two leaves are both named {name!r}; give the tree distinct keys")
    out[name] = leaf
  return out


def save(path, tree, metadata: dict[str, str] | None = None) -> None:
  """Write the pytree's arrays to `path` (safetensors); `metadata` is kept as the file's string metadata."""
  from safetensors.numpy import save_file
  tensors, meta = {}, {str(k): str(v) for k, v in (metadata or {}).items()}
  for name, leaf in _named_leaves(tree, "save").items():
    a = np.asarray(leaf, order="C")   # (ascontiguousarray would make a scalar 1-d)
    if a.dtype.name in _VIEWED:
      meta[f"tracegrad.dtype.{name}"] = a.dtype.name
      a = a.view(_VIEWED[a.dtype.name])
    tensors[name] = a
  path = os.fspath(path)
  fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=os.path.dirname(path) or ".")
  os.close(fd)
  try:
    save_file(tensors, tmp, metadata=meta or None)
    os.replace(tmp, path)
  finally:
    if os.path.exists(tmp): os.unlink(tmp)


def load(path, like):
  """The pytree saved at `path`, in the structure of `like` (a pytree of arrays or ShapeDtypeStructs); a missing,
  extra or mismatching leaf raises an error naming it."""
  from safetensors import safe_open
  with safe_open(os.fspath(path), framework="numpy") as f:
    meta, names = f.metadata() or {}, set(f.keys())
    want = _named_leaves(like, "load")
    missing, extra = sorted(set(want) - names), sorted(names - set(want))
    if missing or extra:
      raise KeyError(f"load: {path} does not match the expected structure: "
                     + "; ".join(x for x in (f"missing leaves {missing}" if missing else "",
                                             f"unexpected leaves {extra}" if extra else "") if x))
    leaves = []
    for name, ref in want.items():
      a = f.get_tensor(name)
      if f"tracegrad.dtype.{name}" in meta: a = a.view(dtypes.as_dtype(meta[f"tracegrad.dtype.{name}"]).np)
      shape, dt = tuple(ref.shape), dtypes.as_dtype(ref.dtype, "load")
      if a.shape != shape or a.dtype != dt.np:
        raise ValueError(f"load: leaf {name!r} in {path} is {a.dtype}{list(a.shape)}, but the expected tree has "
                         f"{dt}{list(shape)}")
      leaves.append(tnp.asarray(a))
  return tree_util.unflatten(tree_util.structure(like), leaves)
