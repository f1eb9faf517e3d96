"""tree.static, tree_util.flatten_one_level(_with_keys), is_tree_node and default_registry against jax.tree and
jax.tree_util."""
import collections
import dataclasses

import pytest

import tracegrad
from tracegrad import tree_util as tu

jax = pytest.importorskip("jax")
jtu = jax.tree_util

NT = collections.namedtuple("NT", "a b")
TREES = [{"b": [1, 2], "a": {"c": 3}}, [1, (2, 3)], (1, 2), None, [None, 4], collections.OrderedDict(b=1, a=2),
         collections.defaultdict(int, {"b": 1, "a": 2}), {}]


def keys(pairs, lib):
  return [lib.keystr((k,)) for k, _ in pairs], [c for _, c in pairs]


@pytest.mark.parametrize("i", range(len(TREES)))
def test_flatten_one_level_matches_jax(i):
  t = TREES[i]
  (kids, aux), (jkids, jaux) = tu.flatten_one_level(t), jtu.flatten_one_level(t)
  assert list(kids) == list(jkids) and aux == jaux
  hash(aux)
  got, jgot = tu.flatten_one_level_with_keys(t), jtu.flatten_one_level_with_keys(t)
  assert keys(got[0], tu) == keys(jgot[0], jtu) and got[1] == jgot[1]
  assert tu.default_registry.flatten_one_level(t) == (kids, aux)
  assert tu.default_registry.flatten_one_level_with_keys(t) == got


def test_flatten_one_level_of_namedtuples_and_registered_nodes():
  (kids, aux), (jkids, jaux) = tu.flatten_one_level(NT(1, 2)), jtu.flatten_one_level(NT(1, 2))
  assert list(kids) == list(jkids) and aux is jaux is NT
  # each field's own name (jax 0.10.2 repeats the first field's name for every child)
  assert tu.flatten_one_level_with_keys(NT(1, 2))[0] == [(tu.GetAttrKey("a"), 1), (tu.GetAttrKey("b"), 2)]

  class Two:
    def __init__(self, a, b): self.a, self.b = a, b

  for lib in (tu, jtu):
    lib.register_pytree_with_keys(Two, lambda t, lib=lib: (((lib.GetAttrKey("a"), t.a), (lib.DictKey(0), t.b)), "aux"),
                                  lambda aux, ch: Two(*ch))
  got, jgot = tu.flatten_one_level_with_keys(Two(1, [2])), jtu.flatten_one_level_with_keys(Two(1, [2]))
  assert keys(got[0], tu) == keys(jgot[0], jtu) and got[1] == jgot[1] == "aux"
  p, jp = tu.Partial(max, 1), jtu.Partial(max, 1)
  assert keys(tu.flatten_one_level_with_keys(p)[0], tu) == keys(jtu.flatten_one_level_with_keys(jp)[0], jtu)


@pytest.mark.parametrize("leaf", [1, "s", 2.5, object()])
def test_flatten_one_level_of_a_leaf_raises_as_jax(leaf):
  for fn in ("flatten_one_level", "flatten_one_level_with_keys"):
    with pytest.raises(ValueError):
      getattr(jtu, fn)(leaf)
    with pytest.raises(ValueError, match=f"{fn}: tree of"):
      getattr(tu, fn)(leaf)
    assert getattr(tu.default_registry, fn)(leaf) is None is getattr(jtu.default_registry, fn)(leaf)


def test_is_tree_node_and_is_node_take_types_as_jax():
  for typ in (list, tuple, dict, type(None), NT, collections.OrderedDict, collections.defaultdict, int, str, object):
    assert tu.is_tree_node(typ) == jtu.is_tree_node(typ)
    assert tu.default_registry.is_node(typ) == jtu.default_registry.is_node(typ)
  assert tu.is_tree_node([1]) == jtu.is_tree_node([1])


def test_default_registry_flattens_as_jax():
  t = {"a": 1, "b": [2, (3, None)], "c": NT(4, [5])}
  r, jr = tu.default_registry, jtu.default_registry
  (lv, td), (jlv, jtd) = r.flatten(t), jr.flatten(t)
  assert lv == jlv and td.num_leaves == jtd.num_leaves and td.num_nodes == jtd.num_nodes
  assert r.flatten(t, lambda x: isinstance(x, list))[0] == jr.flatten(t, lambda x: isinstance(x, list))[0]
  for pred in (None, lambda p, x: isinstance(x, list), lambda p, x: len(p) == 2, lambda p, x: x is None):
    (got, td), (want, jtd) = r.flatten_with_path(t, pred), jr.flatten_with_path(t, pred)
    assert [(tu.keystr(p), v) for p, v in got] == [(jtu.keystr(p), v) for p, v in want]
    assert td.num_leaves == jtd.num_leaves and tracegrad.tree.unflatten(td, [v for _, v in got]) == t


def test_default_registry_registers_as_jax():
  class Box:
    def __init__(self, v, tag): self.v, self.tag = v, tag
    def __eq__(self, o): return isinstance(o, Box) and (self.v, self.tag) == (o.v, o.tag)

  @dataclasses.dataclass
  class Pair:
    x: object
    name: str

  for r in (tu.default_registry, jtu.default_registry):
    assert r.register_node(Box, lambda b: ((b.v,), b.tag), lambda tag, ch: Box(ch[0], tag)) is None
    assert r.register_dataclass_node(Pair, ["x"], ["name"]) is None
    with pytest.raises(ValueError):  # a type registers once
      r.register_node(Box, lambda b: ((b.v,), b.tag), lambda tag, ch: Box(ch[0], tag))
  t = [Box([1, 2], "t"), Pair({"k": 3}, "p")]
  assert tracegrad.tree.leaves(t) == jax.tree.leaves(t) == [1, 2, 3]
  assert tracegrad.tree.map(lambda v: v * 10, t)[0] == Box([10, 20], "t")
  (kids, aux), (jkids, jaux) = tu.flatten_one_level(t[1]), jtu.flatten_one_level(t[1])
  assert list(kids) == list(jkids) == [{"k": 3}] and aux == jaux == ("p",)
  assert keys(tu.flatten_one_level_with_keys(t[0])[0], tu) == keys(jtu.flatten_one_level_with_keys(t[0])[0], jtu)


def test_tree_static_marks_a_dataclass_field_static_as_jax():
  made = []
  for lib in (tracegrad, jax):
    @lib.tree_util.register_dataclass
    @dataclasses.dataclass
    class Op:
      x: object
      y: object
      op: str = lib.tree.static(default="add", metadata={"doc": "the op"})
    made.append(Op)
  (T, J) = made
  m, jm = T(1.0, [2.0]), J(1.0, [2.0])
  assert tracegrad.tree.leaves(m) == jax.tree.leaves(jm) == [1.0, 2.0]
  assert tracegrad.tree.unflatten(tracegrad.tree.structure(m), [3.0, 4.0]) == T(3.0, [4.0])
  assert tracegrad.tree.structure(T(1.0, 2.0, "mul")) != tracegrad.tree.structure(m)
  for cls in made:
    f = {f.name: f for f in dataclasses.fields(cls)}["op"]
    assert dict(f.metadata) == {"static": True, "doc": "the op"} and f.default == "add"
  with pytest.raises(TypeError):  # dataclasses.field's own check of its arguments
    tracegrad.tree.static(bad=1)
