"""Device counts and meshes of the default devices: device_count, local_device_count, make_mesh (as jax's).

>>> tracegrad.device_count() >= 1
True
"""
from __future__ import annotations

from typing import Sequence

from . import run
from .parallel import sharding


def device_count(backend: str | None = None) -> int:
  """How many devices `backend` (default: the default backend) has, over every process."""
  return len(run.devices(backend))


def local_device_count(backend: str | None = None) -> int:
  """How many devices of `backend` this process holds."""
  return len(run.local_devices(backend))


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], axis_types=None, *, devices=None):
  """A Mesh of shape `axis_shapes` over the first devices (default: tracegrad.devices()), as jax.make_mesh.

  >>> tracegrad.make_mesh((1,), ("data",))
  Mesh(device_ids=[0], axis_names=('data',))
  """
  return sharding.make_mesh(axis_shapes, axis_names, axis_types, devices=run.devices() if devices is None else devices)
