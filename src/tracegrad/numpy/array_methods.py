"""Array's operators and methods, each forwarding to the tracegrad.numpy function of the same meaning: tracegrad.numpy
installs them on Array (a lower layer) and hands itself over, so neither module imports the other's package."""
from __future__ import annotations

from types import ModuleType

from ..array import Array
from ..ir import dtypes
from .core import cast

# dunder -> (numpy function name, whether the Array is the right operand)
OPERATORS = {
  "__add__": ("add", False), "__radd__": ("add", True), "__sub__": ("subtract", False), "__rsub__": ("subtract", True),
  "__mul__": ("multiply", False), "__rmul__": ("multiply", True), "__truediv__": ("true_divide", False),
  "__rtruediv__": ("true_divide", True), "__floordiv__": ("floor_divide", False), "__rfloordiv__": ("floor_divide", True),
  "__mod__": ("remainder", False), "__rmod__": ("remainder", True), "__pow__": ("power", False), "__rpow__": ("power", True),
  "__matmul__": ("matmul", False), "__rmatmul__": ("matmul", True), "__and__": ("bitwise_and", False),
  "__rand__": ("bitwise_and", True), "__or__": ("bitwise_or", False), "__ror__": ("bitwise_or", True),
  "__xor__": ("bitwise_xor", False), "__rxor__": ("bitwise_xor", True), "__lshift__": ("left_shift", False),
  "__rlshift__": ("left_shift", True), "__rshift__": ("right_shift", False), "__rrshift__": ("right_shift", True),
  "__lt__": ("less", False), "__le__": ("less_equal", False), "__gt__": ("greater", False),
  "__ge__": ("greater_equal", False), "__eq__": ("equal", False), "__ne__": ("not_equal", False),
  "__divmod__": ("divmod", False), "__rdivmod__": ("divmod", True),
}
UNARY = {"__neg__": "negative", "__pos__": "positive", "__abs__": "abs", "__invert__": "invert"}
# method -> numpy function taking the array first
METHODS = ["sum", "mean", "prod", "max", "min", "argmax", "argmin", "var", "std", "any", "all", "cumsum", "cumprod",
           "swapaxes", "squeeze", "ravel", "clip", "round", "dot", "sort", "argsort", "take", "diagonal", "trace",
           "repeat", "nonzero", "conj", "conjugate", "searchsorted", "ptp", "cumulative_sum"]


def _binary(name: str, reflected: bool):
  def op(self, other):
    if not isinstance(other, (Array, int, float, complex, bool)) and not hasattr(other, "__array__") and not isinstance(other, (list, tuple)):
      return NotImplemented
    f = getattr(tnp, name)
    return f(other, self) if reflected else f(self, other)
  op.__name__ = name
  return op


def _unary(name: str):
  def op(self): return getattr(tnp, name)(self)
  return op


def _method(name: str):
  def m(self, *args, **kwargs): return getattr(tnp, name)(self, *args, **kwargs)
  m.__name__ = name
  m.__doc__ = f"Same as tracegrad.numpy.{name}(self, ...)."
  return m


def _reshape(self, *shape, order: str = "C"):
  """a.reshape(2, 3) or a.reshape((2, 3))."""
  if len(shape) == 1 and not isinstance(shape[0], int): shape = tuple(shape[0])
  return tnp.reshape(self, shape, order=order)


def _transpose(self, *axes):
  if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)): axes = axes[0]
  return tnp.transpose(self, axes or None)


def _astype(self, dtype, copy: bool = False):
  """The array converted to `dtype` (values converted as numpy's astype)."""
  return cast(self, dtypes.canonicalize(dtypes.as_dtype(dtype, "astype")))


def _array_namespace(self, /, *, api_version: str | None = None):
  """tracegrad.numpy, the Array API namespace of Array."""
  if api_version is not None and api_version != tnp.__array_api_version__:
    raise ValueError(f"__array_namespace__: api_version {api_version!r} is not supported; tracegrad.numpy implements "
                     f"{tnp.__array_api_version__!r}")
  return tnp


def _iter(self):
  if self.ndim == 0: raise TypeError("iteration over a 0-d Array")
  return (self[i] for i in range(self.shape[0]))


tnp: ModuleType   # tracegrad.numpy, set by install()


def install(numpy_module: ModuleType) -> None:
  global tnp
  tnp = numpy_module
  for dunder, (name, refl) in OPERATORS.items(): setattr(Array, dunder, _binary(name, refl))
  for dunder, name in UNARY.items(): setattr(Array, dunder, _unary(name))
  for name in METHODS: setattr(Array, name, _method(name))
  Array.__hash__ = None  # defining __eq__ would otherwise restore nothing; arrays stay unhashable
  Array.reshape = _reshape
  Array.transpose = _transpose
  Array.astype = _astype
  Array.flatten = lambda self, order="C": tnp.ravel(self)
  Array.copy = lambda self: self
  Array._stack = staticmethod(tnp.stack)
  Array.__iter__ = _iter
  Array.__getitem__ = lambda self, key: tnp.indexing_getitem(self, key)
  Array.T = property(lambda self: tnp.transpose(self))
  Array.mT = property(lambda self: tnp.swapaxes(self, -1, -2))
  Array.at = property(lambda self: tnp.indexing_at(self))
  Array.__array_namespace__ = _array_namespace
  Array.real = property(lambda self: tnp.real(self))
  Array.imag = property(lambda self: tnp.imag(self))
