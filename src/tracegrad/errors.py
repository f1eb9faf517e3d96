"""The exceptions tracegrad raises where JAX raises its own, under jax.errors' names, so that a program catching
them keeps working with its imports changed.

>>> import tracegrad, tracegrad.numpy as tnp
>>> try:
...   tracegrad.jit(lambda x: 1 if x > 0 else 0)(tnp.ones(()))
... except tracegrad.errors.TracerBoolConversionError as e:
...   print(type(e).__name__, isinstance(e, TypeError))
TracerBoolConversionError True
"""


class JAXTypeError(TypeError):
  """A TypeError of JAX's kind."""


class JAXIndexError(IndexError):
  """An IndexError of JAX's kind."""


class ConcretizationTypeError(JAXTypeError):
  """A value that depends on the arguments of a function being traced was needed as a concrete value."""


TracedValueError = ConcretizationTypeError   # tracegrad's own name for it


class TracerBoolConversionError(ConcretizationTypeError):
  """bool() (an `if`, `while`, `and`, `or`) of a traced value."""


class TracerIntegerConversionError(ConcretizationTypeError):
  """int() or an index from a traced value."""


class TracerArrayConversionError(ConcretizationTypeError):
  """A traced value converted to a numpy array."""


class NonConcreteBooleanIndexError(JAXIndexError):
  """A boolean mask index whose values are traced: the result's shape would depend on them."""


class UnexpectedTracerError(JAXTypeError):
  """A traced value used after the trace it belongs to has ended."""


class KeyReuseError(JAXTypeError):
  """A random key used twice (not checked by tracegrad)."""


class JaxRuntimeError(RuntimeError):
  """A failure while running a compiled program."""
