"""tracegrad.lax, as jax.lax: operations without promotion (`ops.py`, `elementwise.py`), control flow (`control.py`),
slicing at run-time offsets (`slicing.py`), gather and scatter (`gather.py`), contractions (`dot.py`), making and
reshaping arrays (`shapes.py`), reductions and scans (`reductions.py`), sorting (`sorting.py`), convolutions
(`conv.py`, `conv_shapes.py`, `conv_variants.py`), windowed reductions (`windows.py`), special functions
(`special.py`), collectives over named axes (`collectives.py`), decompositions (`linalg.py`, as lax.linalg) and the
rest (`misc.py`). jax.lax names left out are listed in docs/api-exclusions.md.

>>> from tracegrad import lax
>>> lax.fori_loop(0, 4, lambda i, x: x + i, 0)
Array(6, dtype=int32)
"""
import sys

from .ops import (add, broadcast_in_dim, convert_element_type, max, min, mul, pad, reduce_sum, reshape,  # noqa: A004
                  slice, sub, transpose)  # max, min and slice shadow the builtins here
from .control import (bitcast_convert_type, cond, fori_loop, optimization_barrier, scan, select, stop_gradient, switch,
                      while_loop)
from .conv import conv, conv_general_dilated
from .windows import reduce_window
from .slicing import (dynamic_index_in_dim, dynamic_slice, dynamic_slice_in_dim, dynamic_update_index_in_dim,
                      dynamic_update_slice, dynamic_update_slice_in_dim, index_in_dim, index_take, slice_in_dim)
from .dot import DotDimensionNumbers, Precision, PrecisionLike, batch_matmul, dot, dot_general
from .elementwise import (RoundingMethod, abs, acos, acosh, asin, asinh, atan, atan2, atanh, bitwise_and,  # noqa: A004
                          bitwise_not, bitwise_or, bitwise_xor, cbrt, ceil, clamp, clz, cos, cosh, div, eq, exp, exp2,
                          expm1, floor, ge, gt, integer_pow, is_finite, le, log, log1p, logistic, lt, mulhi, ne, neg,
                          nextafter, population_count, pow, reciprocal, rem, round, rsqrt, select_n, shift_left,
                          shift_right_arithmetic, shift_right_logical, sign, sin, sinh, sqrt, square, tan, tanh)
from .gather import (GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, gather, scatter,
                     scatter_add, scatter_apply, scatter_max, scatter_min, scatter_mul, scatter_sub)
from .shapes import (broadcast, broadcast_like, broadcast_shapes, broadcast_to_rank, broadcasted_iota, collapse,
                     concatenate, dtype, empty, expand_dims, full, full_like, iota, rev, split, squeeze, stack, tile,
                     unstack)
from .reductions import (argmax, argmin, associative_scan, cumlogsumexp, cummax, cummin, cumprod, cumsum, reduce,
                         reduce_and, reduce_max, reduce_min, reduce_or, reduce_prod, reduce_xor)
from .sorting import approx_max_k, approx_min_k, sort, sort_key_val, top_k
from .conv_shapes import (ConvDimensionNumbers, ConvGeneralDilatedDimensionNumbers, conv_dimension_numbers,
                          conv_general_permutations, conv_general_shape_tuple, conv_shape_tuple,
                          conv_transpose_shape_tuple, padtype_to_pads, reduce_window_shape_tuple)
from .conv_variants import (conv_general_dilated_local, conv_general_dilated_patches, conv_transpose,
                            conv_with_general_padding)
from .special import (bessel_i0e, bessel_i1e, betainc, digamma, erf, erf_inv, erfc, igamma, igamma_grad_a, igammac,
                      lgamma, polygamma, random_gamma_grad, zeta)
from .misc import axis_size, custom_linear_solve, custom_root, map, platform_dependent, reduce_precision  # noqa: A004
from .collectives import (all_gather, all_to_all, axis_index, pmax, pmean, pmin, ppermute, psum, psum_scatter,
                          with_sharding_constraint)
from .fft import FftType, fft
from .complex_parts import complex, conj, imag, real  # noqa: A004
from . import linalg  # noqa: E402  (lax.linalg, as jax.lax.linalg)

__all__ = ["add", "sub", "mul", "max", "min", "convert_element_type", "broadcast_in_dim", "reshape", "transpose",
           "slice", "pad", "reduce_sum", "stop_gradient", "optimization_barrier", "cond", "switch", "select", "scan",
           "fori_loop", "while_loop", "bitcast_convert_type", "conv", "conv_general_dilated", "reduce_window", "psum",
           "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "all_to_all", "axis_index",
           "with_sharding_constraint", "linalg"]
_INTERNAL = {"check_precision", "tensorfloat32", "tf32", "operands", "check_kind", "float_unary", "conv_transpose_padding"}
__all__ += [n for m in ("fft", "complex_parts", "slicing", "dot", "elementwise", "gather", "shapes", "reductions", "sorting", "conv_shapes",
                        "conv_variants", "misc", "special") for n in sys.modules[f"{__name__}.{m}"].__all__
            if n not in _INTERNAL]
