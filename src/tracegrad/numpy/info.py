"""The Array API inspection namespace: which devices and dtypes tracegrad.numpy has, and its defaults.

>>> info = tnp.__array_namespace_info__()
>>> info.default_dtypes()["integral"], sorted(info.dtypes(kind="unsigned integer"))
(DType(int32), ['uint16', 'uint32', 'uint8'])
"""
from __future__ import annotations

from .. import run
from ..ir import dtypes

__all__ = ["__array_namespace_info__", "__array_api_version__"]

__array_api_version__ = "2024.12"

_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "real floating": "f", "complex floating": "c"}
_GROUPS = {"integral": ("signed integer", "unsigned integer"), "numeric": ("signed integer", "unsigned integer",
                                                                           "real floating", "complex floating")}
# the Array API's dtypes (float16 and bfloat16 are extensions of tracegrad's, not in the standard)
_STANDARD = (dtypes.bool_, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16,
             dtypes.uint32, dtypes.uint64, dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


class __array_namespace_info__:  # noqa: N801  (the standard's name)
  """What tracegrad.numpy offers, as the Array API's inspection object.

  >>> tnp.__array_namespace_info__().capabilities()["boolean indexing"]
  True
  """

  def capabilities(self) -> dict:
    # boolean masks and unique/nonzero give data-dependent shapes on concrete arrays (not under a transform)
    return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}

  def default_device(self):
    return run.default_device()

  def devices(self) -> list:
    return run.devices()

  def default_dtypes(self, *, device=None) -> dict:
    """The default floating, complex and integer dtypes (32-bit unless 64-bit mode is on)."""
    i = dtypes.default_int()
    return {"real floating": dtypes.default_float(), "complex floating": dtypes.default_complex(), "integral": i,
            "indexing": i}

  def dtypes(self, *, device=None, kind=None) -> dict:
    """The standard's dtypes tracegrad has now (64-bit ones only in 64-bit mode), by name, of `kind` if given: a kind
    name ('bool', 'signed integer', 'unsigned integer', 'integral', 'real floating', 'complex floating', 'numeric')
    or a tuple of them."""
    kinds = set()
    for k in (() if kind is None else kind if isinstance(kind, tuple) else (kind,)):
      if k in _GROUPS: kinds.update(_KINDS[g] for g in _GROUPS[k])
      elif k in _KINDS: kinds.add(_KINDS[k])
      else:
        raise ValueError(f"__array_namespace_info__.dtypes: unknown kind {k!r}; expected one of "
                         f"{', '.join(map(repr, [*_KINDS, *_GROUPS]))}")
    return {d.name: d for d in _STANDARD
            if dtypes.canonicalize(d) is d and (kind is None or d.kind in kinds)}
