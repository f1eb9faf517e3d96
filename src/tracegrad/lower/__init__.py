"""Lowering: graphs to kernels (schedule), the kernel IR, index simplification (symbolic) and rendering to source."""
from . import render_c  # noqa: F401  (gives Kernel its C `source`)
