"""tracegrad.numpy: the jax.numpy surface, written in terms of tracegrad's primitives.

>>> import tracegrad.numpy as tnp
>>> tnp.sum(tnp.arange(4.0) ** 2)
Array(14., dtype=float32)
"""
import sys

from ..array import Array as ndarray
from ..ir.dtypes import (bfloat16, bool_, complex64, complex128, float16, float32, float64, int8, int16, int32, int64,
                         uint8, uint16, uint32, uint64, promote_types)
from .dtype_api import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .contract import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .comparison import *  # noqa: F401,F403
from .selection import *  # noqa: F401,F403
from .index_tricks import *  # noqa: F401,F403
from .sets import *  # noqa: F401,F403
from .info import *  # noqa: F401,F403
from .statistics import *  # noqa: F401,F403
from .misc import *  # noqa: F401,F403
from .window_functions import *  # noqa: F401,F403
from .polynomial import *  # noqa: F401,F403
from . import linalg  # noqa: F401
from . import fft  # noqa: F401
from . import array_methods as _array_methods

_array_methods.install(sys.modules[__name__])
del _array_methods, sys

from numpy.exceptions import ComplexWarning  # noqa: E402  (numpy's warning for a complex value cast to a real type)

pi = 3.141592653589793
e = 2.718281828459045
inf = float("inf")
nan = float("nan")
newaxis = None
