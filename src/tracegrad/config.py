"""Settings, as jax.config: `tracegrad.config.update("jax_enable_x64", True)` turns on 64-bit types."""
from __future__ import annotations

import os

from .ir import dtypes


class Config:
  _names = ("jax_enable_x64", "enable_x64")

  def __init__(self):
    if os.environ.get("TRACEGRAD_ENABLE_X64", "").lower() in ("1", "true"): dtypes.set_x64(True)

  def update(self, name: str, value) -> None:
    if name not in self._names:
      raise ValueError(f"config.update: unknown option {name!r}; known: {', '.join(self._names)}")
    dtypes.set_x64(bool(value))

  @property
  def jax_enable_x64(self) -> bool: return dtypes.x64_enabled()
  enable_x64 = jax_enable_x64


config = Config()
