"""Functions of scipy, as jax.scipy."""
from . import linalg, special, stats  # noqa: F401
