"""Functions of scipy, as jax.scipy."""
from . import special, stats  # noqa: F401
