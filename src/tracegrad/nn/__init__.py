"""Neural networks: functions as jax.nn, parameter initializers (tracegrad.nn.initializers), and layers as pytrees."""
from . import initializers  # noqa: F401
from .attention import *  # noqa: F401,F403
from .attention import __all__ as _attention
from .functions import *  # noqa: F401,F403
from .functions import __all__ as _functions
from .layers import *  # noqa: F401,F403
from .layers import __all__ as _layers
from .module import *  # noqa: F401,F403
from .module import __all__ as _module

__all__ = [*_functions, *_module, *_layers, *_attention, "initializers"]
