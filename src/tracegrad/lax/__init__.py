"""tracegrad.lax, as jax.lax: operations without promotion (`ops.py`), control flow (`control.py`), convolutions
(`conv.py`), windowed reductions (`windows.py`) and collectives over named axes (`collectives.py`).

>>> from tracegrad import lax
>>> lax.fori_loop(0, 4, lambda i, x: x + i, 0)
Array(6, dtype=int32)
"""
from .ops import (add, broadcast_in_dim, convert_element_type, max, min, mul, pad, reduce_sum, reshape,  # noqa: A004
                  slice, sub, transpose)  # max, min and slice shadow the builtins here
from .control import (bitcast_convert_type, cond, fori_loop, optimization_barrier, scan, select, stop_gradient, switch,
                      while_loop)
from .conv import conv, conv_general_dilated
from .windows import reduce_window
from .collectives import (all_gather, all_to_all, axis_index, pmax, pmean, pmin, ppermute, psum, psum_scatter,
                          with_sharding_constraint)

__all__ = ["add", "sub", "mul", "max", "min", "convert_element_type", "broadcast_in_dim", "reshape", "transpose",
           "slice", "pad", "reduce_sum", "stop_gradient", "optimization_barrier", "cond", "switch", "select", "scan",
           "fori_loop", "while_loop", "bitcast_convert_type", "conv", "conv_general_dilated", "reduce_window", "psum",
           "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "all_to_all", "axis_index",
           "with_sharding_constraint"]
