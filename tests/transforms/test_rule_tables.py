"""Every primitive has a row in every transform's rule table."""
import pytest

from tracegrad.ir import Ops
from tracegrad.ir.ops import LEAF
from tracegrad.transforms.grad import VJP_RULES
from tracegrad.transforms.jvp import JVP_RULES
from tracegrad.transforms.shard import SHARD_RULES
from tracegrad.transforms.vmap import BATCH_RULES


def _ops_with_rows(pm) -> set:
  return {op for pat, _ in pm.rules if pat.ops is not None for op in pat.ops}


# leaves have no sources, so no transform ever rewrites one: a PARAM's tangent, cotangent or batched twin is the seed
@pytest.mark.parametrize("table", [JVP_RULES, VJP_RULES, BATCH_RULES, SHARD_RULES], ids=["jvp", "vjp", "vmap", "shard"])
@pytest.mark.parametrize("op", [op for op in Ops if op not in LEAF], ids=lambda op: op.name)
def test_every_primitive_has_a_row(table, op):
  assert op in _ops_with_rows(table), f"{op.name} has no row"


@pytest.mark.parametrize("table", [JVP_RULES, VJP_RULES, BATCH_RULES, SHARD_RULES], ids=["jvp", "vjp", "vmap", "shard"])
def test_no_catch_all_rows(table):
  assert all(pat.ops is not None for pat, _ in table.rules)
