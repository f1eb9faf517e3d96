"""Neural-network functions as jax.nn, and parameter initializers (tracegrad.nn.initializers)."""
from . import initializers  # noqa: F401
from .functions import *  # noqa: F401,F403
from .functions import __all__ as _functions

__all__ = [*_functions, "initializers"]
