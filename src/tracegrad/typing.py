"""Types for annotations, as jax.typing, and jaxtyping's shape-and-dtype annotations for tracegrad Arrays.

`ArrayLike` and `DTypeLike` are what tracegrad's functions take. jaxtyping's `Float`, `Int`, `Bool`, `Shaped`, ...
work on Arrays eagerly and on the traced values inside jit, vmap, grad and scan (shapes and dtypes known when
tracing). `typechecked` checks a function's annotations at each call (at trace time under a transform);
`TRACEGRAD_TYPECHECK=1` (or `config.update("tracegrad_typecheck", True)`) does so for every jitted function.

>>> @typechecked
... def mean_rows(x: Float[Array, "b n"]) -> Float[Array, " b"]:
...   return x.mean(1)
>>> mean_rows(tnp.ones((2, 3))).shape
(2,)
>>> mean_rows(tnp.ones(3))
Traceback (most recent call last):
...
jaxtyping.TypeCheckError: Type-check error whilst checking the parameters of ...mean_rows.
...
"""
from __future__ import annotations

from typing import Callable, Union

import numpy as np
from jaxtyping import (AbstractArray, AbstractDtype, Bool, Complex, Complex64, Float, Float16, Float32, Float64,
                       Inexact, Int, Int8, Int16, Int32, Int64, Integer, Num, Real, Shaped, TypeCheckError, UInt, UInt8,
                       UInt32, jaxtyped)

from .array import Array
from .ir.dtypes import DType

__all__ = ["Array", "ArrayLike", "DTypeLike", "Matrices", "Shape", "AbstractArray", "AbstractDtype", "Bool", "Complex",
           "Complex64", "Float", "Float16", "Float32", "Float64", "Inexact", "Int", "Int8", "Int16", "Int32", "Int64",
           "Integer", "Num", "Real", "Shaped", "UInt", "UInt8", "UInt32", "TypeCheckError", "jaxtyped", "typechecked"]

ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
Matrices = Union[Array, np.ndarray]   # what a function taking (stacks of) matrices accepts, in its annotations
DTypeLike = Union[str, type, np.dtype, DType]
Shape = tuple[int, ...]


def checker():
  """beartype's checker, or an ImportError saying how to install it."""
  try:
    from beartype import beartype
  except ImportError:
    raise ImportError("tracegrad.typing: checking annotations needs beartype; pip install 'tracegrad[typecheck]' "
                      "(or pip install beartype)") from None
  return beartype


def typechecked(fun: Callable) -> Callable:
  """fun with its jaxtyping annotations checked at each call, dimension names bound consistently across arguments and
  results (jaxtyped with beartype). Under jit, vmap, grad or scan the check runs once, when fun is traced.

  >>> @typechecked
  ... def dot(a: Float[Array, " n"], b: Float[Array, " n"]) -> Float[Array, ""]:
  ...   return a @ b
  >>> float(tracegrad.jit(dot)(tnp.ones(3), tnp.ones(3)))
  3.0
  """
  return jaxtyped(typechecker=checker())(fun)
