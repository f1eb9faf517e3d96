"""Shardings as jax.sharding: a Mesh names the axes of an array of devices, a PartitionSpec says which mesh axes
split each dimension of an array, and NamedSharding pairs the two. device_put(x, sharding) gives each device its own
buffer holding its block of x. The types are data with index arithmetic only, so the running layer (Array) reads them.

>>> mesh = Mesh(np.array(tracegrad.devices()[:1]), ("data",))
>>> NamedSharding(mesh, P("data")).shard_shape((4, 3))
(4, 3)
"""
from __future__ import annotations

import enum
import math
from typing import Sequence

import numpy as np

__all__ = ["AxisType", "Mesh", "PartitionSpec", "P", "NamedSharding", "SingleDeviceSharding", "Shard", "make_mesh"]


class AxisType(enum.Enum):
  """How a mesh axis is sharded, as jax.sharding.AxisType; tracegrad treats every axis alike (as Auto)."""
  Auto = enum.auto()
  Explicit = enum.auto()
  Manual = enum.auto()

  def __repr__(self) -> str: return self.name


class Mesh:
  """Devices laid out in an n-d array whose axes have names: Mesh(np.array(devices).reshape(2, 2), ("data", "model")).
  `axis_types` (AxisType per axis) is kept and does not change what runs."""

  def __init__(self, devices, axis_names: Sequence[str] | str, axis_types=None):
    self.devices = np.asarray(devices, dtype=object)
    self.axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    self.axis_types = _axis_types(axis_types, len(self.axis_names), "Mesh")
    if self.devices.ndim != len(self.axis_names):
      raise ValueError(f"Mesh: devices has {self.devices.ndim} dimensions {self.devices.shape} but {len(self.axis_names)}"
                       f" axis names {self.axis_names} were given; give one name per dimension")
    if len(set(self.axis_names)) != len(self.axis_names) or not all(isinstance(a, str) for a in self.axis_names):
      raise ValueError(f"Mesh: axis names must be distinct strings, got {self.axis_names}")
    flat = list(self.devices.flat)
    if len({id(d) for d in flat}) != len(flat):
      raise ValueError(f"Mesh: a device appears twice in {flat}")

  @property
  def shape(self) -> dict[str, int]: return dict(zip(self.axis_names, self.devices.shape))
  @property
  def size(self) -> int: return self.devices.size
  @property
  def device_ids(self) -> np.ndarray: return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

  def __eq__(self, other) -> bool:
    return isinstance(other, Mesh) and self.axis_names == other.axis_names and \
        self.devices.shape == other.devices.shape and all(a is b for a, b in zip(self.devices.flat, other.devices.flat))

  def __hash__(self) -> int: return hash((self.axis_names, self.devices.shape, tuple(id(d) for d in self.devices.flat)))

  def __repr__(self) -> str:
    return f"Mesh(device_ids={self.device_ids.tolist()}, axis_names={self.axis_names})"


def _axis_types(axis_types, n: int, fn: str) -> tuple:
  if axis_types is None: return (AxisType.Explicit,) * n
  types = (axis_types,) if isinstance(axis_types, AxisType) else tuple(axis_types)
  if len(types) != n or not all(isinstance(t, AxisType) for t in types):
    raise ValueError(f"{fn}: axis_types must be one AxisType per axis ({n} axes), got {axis_types!r}")
  return types


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], axis_types=None, *, devices=None) -> Mesh:
  """A Mesh of the first prod(axis_shapes) of `devices` in order, as jax.make_mesh (tracegrad.make_mesh gives the
  default devices when `devices` is None).

  >>> make_mesh((1,), ("i",), devices=tracegrad.devices()).shape
  {'i': 1}
  """
  shape = tuple(axis_shapes) if isinstance(axis_shapes, (tuple, list)) else None
  if shape is None or not all(isinstance(n, (int, np.integer)) and n > 0 for n in shape):
    raise ValueError(f"make_mesh: axis_shapes must be a sequence of positive ints, got {axis_shapes!r}")
  names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
  if len(names) != len(shape):
    raise ValueError(f"make_mesh: {len(shape)} axis_shapes {shape} but {len(names)} axis_names {names}")
  if devices is None: raise ValueError("make_mesh: devices is None; pass the devices (tracegrad.make_mesh does)")
  devices = list(devices)
  if math.prod(shape) > len(devices):
    raise ValueError(f"make_mesh: the mesh {shape} needs {math.prod(shape)} devices, but {len(devices)} are given")
  grid = np.empty(len(devices), dtype=object)
  grid[:] = devices
  return Mesh(grid[:math.prod(shape)].reshape(shape), names, axis_types)


class PartitionSpec(tuple):
  """One entry per leading dimension of an array: None (not split), a mesh axis name, or a tuple of names (split
  over their product). Dimensions past the spec's length are not split. P("data", None) splits rows over "data"."""

  def __new__(cls, *parts):
    for p in parts:
      names = p if isinstance(p, tuple) else (p,)
      if not all(n is None or isinstance(n, str) for n in names) or (isinstance(p, tuple) and None in p):
        raise TypeError(f"PartitionSpec: each entry must be None, a mesh axis name or a tuple of names, got {p!r}")
    return super().__new__(cls, parts)

  def __repr__(self) -> str: return f"PartitionSpec{tuple.__repr__(self)}"


P = PartitionSpec


def spec_axes(spec: PartitionSpec, ndim: int = 0) -> list[tuple[str, ...]]:
  """The mesh axes splitting each dimension (at least `ndim` entries; those past the spec split nothing)."""
  axes = [() if p is None else p if isinstance(p, tuple) else (p,) for p in spec]
  return axes + [()] * (ndim - len(axes))


def _key(index: tuple) -> tuple:
  """A block's index as a hashable key: blocks with equal keys are replicas."""
  return tuple((sl.start, sl.stop) for sl in index)


class Sharding:
  """How an array of a given shape is laid out over devices: the block (index) each device holds."""

  def devices_indices_map(self, shape: tuple[int, ...]) -> dict:
    raise NotImplementedError

  @property
  def device_set(self) -> set: raise NotImplementedError

  def shard_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
    raise NotImplementedError


class SingleDeviceSharding(Sharding):
  """The whole array on one device."""

  def __init__(self, device): self.device = device

  def devices_indices_map(self, shape) -> dict: return {self.device: tuple(slice(None) for _ in shape)}
  @property
  def device_set(self) -> set: return {self.device}
  def shard_shape(self, shape) -> tuple[int, ...]: return tuple(shape)
  @property
  def is_fully_replicated(self) -> bool: return True
  def __eq__(self, other) -> bool: return isinstance(other, SingleDeviceSharding) and other.device is self.device
  def __hash__(self) -> int: return hash(id(self.device))
  def __repr__(self) -> str: return f"SingleDeviceSharding(device={self.device!r})"


class NamedSharding(Sharding):
  """A PartitionSpec over a Mesh: dimension i is split into equal blocks over the mesh axes spec[i] names, and the
  array is replicated over the mesh axes the spec does not name."""

  def __init__(self, mesh: Mesh, spec: PartitionSpec):
    if not isinstance(mesh, Mesh): raise TypeError(f"NamedSharding: mesh must be a Mesh, got {type(mesh).__name__}")
    self.mesh, self.spec = mesh, spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec)
    self.axes = spec_axes(self.spec)
    used: list[str] = []
    for dim, names in enumerate(self.axes):
      for n in names:
        if n not in mesh.shape:
          raise ValueError(f"NamedSharding: {self.spec} names mesh axis {n!r} for dimension {dim}, but the mesh's axes "
                           f"are {mesh.axis_names}")
        if n in used: raise ValueError(f"NamedSharding: {self.spec} uses mesh axis {n!r} twice")
        used.append(n)

  def check(self, shape: tuple[int, ...], fn: str) -> None:
    """ValueError, from `fn`, unless an array of `shape` splits evenly as the spec says."""
    if len(self.spec) > len(shape):
      raise ValueError(f"{fn}: {self.spec} has {len(self.spec)} entries but the array has {len(shape)} dimensions "
                       f"{tuple(shape)}")
    for dim, names in enumerate(self.axes):
      parts = math.prod(self.mesh.shape[n] for n in names)
      if shape[dim] % parts:
        sizes = " x ".join(f"{n}={self.mesh.shape[n]}" for n in names)
        raise ValueError(f"{fn}: dimension {dim} of shape {tuple(shape)} has size {shape[dim]}, which does not divide "
                         f"into the {parts} blocks of mesh axes {sizes}")

  def shard_shape(self, shape) -> tuple[int, ...]:
    """The shape of each device's block; ValueError when a split dimension does not divide evenly."""
    shape = tuple(shape)
    self.check(shape, "NamedSharding")
    return tuple(n // self._parts(names) for n, names in zip(shape, spec_axes(self.spec, len(shape))))

  def global_shape(self, block_shape) -> tuple[int, ...]:
    """The shape of the array whose blocks have `block_shape` (shard_shape's inverse)."""
    return tuple(n * self._parts(names) for n, names in zip(block_shape, spec_axes(self.spec, len(block_shape))))

  def unsplit_front(self) -> "NamedSharding":
    """This sharding for the array with a new unsplit dimension in front (a batch of such arrays)."""
    return NamedSharding(self.mesh, PartitionSpec(None, *self.spec))

  def _parts(self, names: tuple[str, ...]) -> int: return math.prod(self.mesh.shape[n] for n in names)

  def devices_indices_map(self, shape) -> dict:
    """{device: the tuple of slices of the global array it holds}."""
    shape = tuple(shape)
    block, axes = self.shard_shape(shape), spec_axes(self.spec, len(shape))
    out = {}
    for pos in np.ndindex(*self.mesh.devices.shape):
      coord = dict(zip(self.mesh.axis_names, pos))
      index = []
      for dim, names in enumerate(axes):
        k = 0
        for n in names: k = k * self.mesh.shape[n] + coord[n]
        index.append(slice(k * block[dim], (k + 1) * block[dim]) if names else slice(None))
      out[self.mesh.devices[pos]] = tuple(index)
    return out

  @property
  def device_set(self) -> set: return set(self.mesh.devices.flat)
  @property
  def is_fully_replicated(self) -> bool: return all(not names for names in self.axes)
  @property
  def num_devices(self) -> int: return self.mesh.size

  def __eq__(self, other) -> bool:
    return isinstance(other, NamedSharding) and self.mesh == other.mesh and _trim(self.axes) == _trim(other.axes)

  def __hash__(self) -> int: return hash((self.mesh, _trim(self.axes)))
  def __repr__(self) -> str: return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"


def _trim(axes: list) -> tuple:
  """Axes without the unsplit dimensions at the end: P("x") and P("x", None) lay arrays out alike."""
  n = len(axes)
  while n and not axes[n - 1]: n -= 1
  return tuple(axes[:n])


class Shard:
  """One device's block of an array: .device, .index (slices of the global array) and .data (an Array)."""

  def __init__(self, device, index: tuple, data, replica_id: int = 0):
    self.device, self.index, self.data, self.replica_id = device, index, data, replica_id

  def __repr__(self) -> str:
    return f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, data={self.data!r})"


class ShardedBuffers:
  """The value of an Array laid out by a sharding: one numpy buffer per device (of this process), each its block."""

  def __init__(self, blocks: dict, shape, dtype, sharding: Sharding, check_rep: str | None = None):
    """Each device's block ({device: array}, copied; devices absent are another process's). With check_rep (the
    caller's name), devices that the sharding says hold the same block must hold equal values."""
    self.shape, self.dtype, self.sharding, self.buffers = tuple(shape), dtype, sharding, {}
    first: dict = {}
    for device, index in sharding.devices_indices_map(self.shape).items():
      if device not in blocks: continue
      block = np.array(blocks[device], order="C")
      block.flags.writeable = False
      key = _key(index)
      if check_rep and key in first and not _same(first[key][1], block):
        raise ValueError(f"{check_rep}: out_specs {sharding.spec} leaves a mesh axis out, so the output should be the "
                         f"same on every device along it, but {device!r} and {first[key][0]!r} hold different values; "
                         f"name the axis in out_specs to keep each device's block, or make the values equal (lax.psum, "
                         f"lax.pmean)")
      first.setdefault(key, (device, block))
      self.buffers[device] = (index, block)

  @classmethod
  def cut(cls, value: np.ndarray, dtype, sharding: Sharding, local=None) -> "ShardedBuffers":
    """`value` cut into the blocks of the devices in `local` (default: every device of the sharding)."""
    blocks = {d: value[index] for d, index in sharding.devices_indices_map(value.shape).items()
              if local is None or d in local}
    return cls(blocks, value.shape, dtype, sharding)

  def assemble(self) -> np.ndarray:
    """The global array, each block written from the device that holds it; ValueError when some block lives only
    on another process's devices."""
    have = {_key(index) for index, _ in self.buffers.values()}
    if any(_key(index) not in have for index in self.sharding.devices_indices_map(self.shape).values()):
      raise ValueError(f"this array ({self.sharding}) has blocks on other processes' devices only; read it where it is "
                       f"replicated (out_specs without the process-spanning axis) or read .addressable_shards")
    out = np.empty(self.shape, self.dtype.np)
    for index, block in self.buffers.values(): out[index] = block
    out.flags.writeable = False
    return out

  def replica_ids(self) -> dict:
    """{device: how many devices before it hold the same block}."""
    seen: dict = {}
    out = {}
    for device, (index, _) in self.buffers.items():
      out[device] = seen.get(_key(index), 0)
      seen[_key(index)] = out[device] + 1
    return out


def _same(a: np.ndarray, b: np.ndarray) -> bool:
  return np.array_equal(a, b) or (a.dtype.kind == "f" and np.array_equal(a, b, equal_nan=True))
