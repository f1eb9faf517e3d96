"""The arguments of a distribution's function as arrays of one floating dtype, as JAX promotes them."""
from __future__ import annotations

from ..special import _float as promote  # noqa: F401

__all__ = ["promote"]
