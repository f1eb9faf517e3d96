"""Functions of scipy, as jax.scipy."""
from . import special  # noqa: F401
