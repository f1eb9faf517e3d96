"""Neural-network functions as jax.nn."""
from .functions import *  # noqa: F401,F403
from .functions import __all__
