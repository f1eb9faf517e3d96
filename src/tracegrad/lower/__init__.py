"""Lowering: graphs to kernels (schedule), the kernel IR, index simplification (symbolic) and rendering to source."""
