"""The IR: hash-consed UOps, the primitive set, dtypes and the pattern rewriter. Imports nothing of tracegrad."""
from . import dtypes
from .graph import Graph, composite
from .ops import Ops
from .pattern import PatternMatcher, UPat, graph_rewrite, graph_rewrite_many
from .shapes import broadcast_shapes
from .uop import Buffer, UOp, substitute, toposort

__all__ = ["dtypes", "Graph", "composite", "Ops", "PatternMatcher", "UPat", "graph_rewrite", "graph_rewrite_many", "broadcast_shapes",
           "Buffer", "UOp", "substitute", "toposort"]
