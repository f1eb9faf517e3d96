"""Settings, as jax.config: `tracegrad.config.update("jax_enable_x64", True)` turns on 64-bit types.

>>> tracegrad.config.read("jax_threefry_partitionable")
True
"""
from __future__ import annotations

import os

from .ir import dtypes

# JAX's flags that tracegrad accepts and keeps, with JAX 0.10's defaults; jax_enable_x64 is the one that changes
# what tracegrad computes (jax_threefry_partitionable is read by tracegrad.random, jax_default_matmul_precision by
# float32 contractions on a GPU).
_DEFAULTS = {
  "jax_threefry_partitionable": True, "jax_platform_name": "", "jax_platforms": None, "jax_debug_nans": False,
  "jax_debug_infs": False, "jax_default_matmul_precision": None, "jax_disable_jit": False,
  "jax_numpy_rank_promotion": "allow", "jax_numpy_dtype_promotion": "standard", "jax_default_prng_impl": "threefry2x32",
  "jax_log_compiles": False, "jax_traceback_filtering": "auto", "jax_compilation_cache_dir": None,
  "jax_persistent_cache_min_compile_time_secs": 1.0, "jax_persistent_cache_min_entry_size_bytes": 0,
  "jax_enable_checks": False, "jax_check_tracer_leaks": False, "jax_explain_cache_misses": False,
  "jax_spmd_mode": "allow_all", "jax_use_shardy_partitioner": True, "jax_dynamic_shapes": False,
}
_X64 = ("jax_enable_x64", "enable_x64")
# tracegrad's own: check every jitted function's jaxtyping annotations when it is traced (tracegrad.typing)
_OWN = {"tracegrad_typecheck": os.environ.get("TRACEGRAD_TYPECHECK", "").lower() in ("1", "true")}


class Config:
  """The settings: `update(name, value)`, `read(name)`, and each setting as an attribute (`config.jax_enable_x64`)."""

  def __init__(self):
    self._values = dict(_DEFAULTS) | _OWN
    env = os.environ.get("TRACEGRAD_ENABLE_X64", os.environ.get("JAX_ENABLE_X64", "")).lower()
    if env in ("1", "true"): dtypes.set_x64(True)
    self._renew()

  def update(self, name: str, value) -> None:
    """Set a setting; AttributeError for a name JAX does not know either.

    >>> tracegrad.config.update("jax_debug_nans", False)
    """
    if name in _X64:
      dtypes.set_x64(bool(value))
    elif name in self._values:
      self._values[name] = value
    else:
      raise AttributeError(f"config.update: unknown option {name!r}; known: {', '.join(self.names())}")
    self._renew()

  def read(self, name: str):
    """The value of a setting."""
    if name in _X64: return dtypes.x64_enabled()
    if name not in self._values:
      raise AttributeError(f"config.read: unknown option {name!r}; known: {', '.join(self.names())}")
    return self._values[name]

  def names(self) -> list[str]: return [_X64[0], *self._values]

  def __getattr__(self, name: str):
    if name.startswith("_"): raise AttributeError(name)
    if name in self.__dict__.get("_values", {}): return self._values[name]
    raise AttributeError(f"config has no setting {name!r}")

  def _renew(self) -> None:
    # trace_key: the settings a traced graph depends on (x64, the random bits' scheme, whether implicit rank
    # promotion is allowed, whether annotations are checked when tracing, a GPU's float32 contractions' precision),
    # part of jit's cache keys
    self.__dict__["trace_key"] = (dtypes.x64_enabled(), self._values["jax_threefry_partitionable"],
                                  self._values["jax_numpy_rank_promotion"], self._values["tracegrad_typecheck"],
                                  str(self._values["jax_default_matmul_precision"]))

  @property
  def jax_enable_x64(self) -> bool: return dtypes.x64_enabled()
  enable_x64 = jax_enable_x64

  def config_with_absl(self) -> None:
    """Nothing: tracegrad reads no absl flags."""

  def parse_flags_with_absl(self) -> None:
    """Nothing: tracegrad reads no absl flags."""


config = Config()
