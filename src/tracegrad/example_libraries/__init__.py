"""Small example libraries, as jax.example_libraries: `stax` (layers as (init_fun, apply_fun) pairs) and
`optimizers` (optimizers as (init_fun, update_fun, get_params) triples).

>>> from tracegrad.example_libraries import optimizers, stax
>>> stax.Dense(3)[0](tracegrad.random.key(0), (2, 4))[0]
(2, 3)
"""
from . import optimizers, stax  # noqa: F401

__all__ = ["optimizers", "stax"]
