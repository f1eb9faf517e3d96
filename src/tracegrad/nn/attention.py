"""Multi-head attention as a layer.

>>> mha = tracegrad.nn.MultiHeadAttention(8, 2, key=tracegrad.random.key(0))
>>> mha(tnp.ones((3, 5, 8)), causal=True).shape
(3, 5, 8)
"""
from __future__ import annotations

from .. import numpy as tnp
from .. import random
from ..array import Array
from .functions import dot_product_attention
from .layers import Linear
from .module import Module

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(Module):
  """Queries from x, keys and values from `context` (x itself for self-attention), split into num_heads heads of
  embed_dim // num_heads, attended with dot_product_attention (optionally causal or masked) and projected back."""
  static = ("embed_dim", "num_heads")

  def __init__(self, embed_dim: int, num_heads: int, *, key, use_bias: bool = True, dtype=tnp.float32):
    if embed_dim % num_heads:
      raise ValueError(f"MultiHeadAttention: embed_dim={embed_dim} must divide by num_heads={num_heads}")
    self.embed_dim, self.num_heads = embed_dim, num_heads
    kq, kk, kv, ko = random.split(key, 4)
    self.query, self.key, self.value, self.out = (Linear(embed_dim, embed_dim, key=k, use_bias=use_bias, dtype=dtype)
                                                  for k in (kq, kk, kv, ko))

  def __call__(self, x, context=None, *, mask=None, causal: bool = False, key=None, training: bool = False) -> Array:
    x = tnp.asarray(x)
    context = x if context is None else tnp.asarray(context)
    heads = lambda t: t.reshape(t.shape[:-1] + (self.num_heads, self.embed_dim // self.num_heads))
    q, k, v = heads(self.query(x)), heads(self.key(context)), heads(self.value(context))
    out = dot_product_attention(q, k, v, mask=mask, is_causal=causal)
    return self.out(out.reshape(out.shape[:-2] + (self.embed_dim,)))
