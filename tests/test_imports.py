"""The package's imports keep to the layer table of docs/layers.md, and no modules import each other in a circle,
counting imports inside functions."""
import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).parents[1]
PACKAGE = ROOT / "src" / "tracegrad"


def modules() -> dict[str, pathlib.Path]:
  """Dotted module name -> file, for every module of the package (a package's name for its __init__.py)."""
  out = {}
  for path in sorted(PACKAGE.rglob("*.py")):
    parts = ("tracegrad",) + path.relative_to(PACKAGE).with_suffix("").parts
    out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
  return out


MODULES = modules()


def _owner(name: str) -> str:
  """The module an imported name lives in: the longest prefix that is a module of the package."""
  while name not in MODULES: name = name.rsplit(".", 1)[0]
  return name


def imports(name: str) -> dict[str, int]:
  """The package's modules that module `name` imports (anywhere in it, functions included), each with a line."""
  path = MODULES[name]
  here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
  out = {}
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.Import):
      targets = [a.name for a in node.names if a.name.split(".")[0] == "tracegrad"]
    elif isinstance(node, ast.ImportFrom):
      base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else [])) if node.level \
        else node.module or ""
      if base.split(".")[0] != "tracegrad": continue
      targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    else:
      continue
    for t in targets:
      if _owner(t) != name: out.setdefault(_owner(t), node.lineno)
  return out


GRAPH = {m: imports(m) for m in MODULES}


def layer_table() -> list[tuple[str, list[str], set[str]]]:
  """(layer, where, the layers it may import) for each row of docs/layers.md, top to bottom."""
  rows = []
  for line in (ROOT / "docs" / "layers.md").read_text().splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) != 3 or cells[0] in ("layer", "") or set(cells[0]) <= set("-"): continue
    where = re.findall(r"`([^`]+)`", cells[1])
    rows.append((cells[0], where, {c.strip() for c in cells[2].split(",")}))
  below = [r[0] for r in rows]
  return [(layer, where, set(below[i + 1:]) if may == {"everything below"} else set() if may == {"nothing"} else may)
          for i, (layer, where, may) in enumerate(rows)]


TABLE = layer_table()


def layer_of(name: str) -> str:
  rel = MODULES[name].relative_to(PACKAGE).as_posix()
  for layer, where, _ in TABLE:
    for w in where:
      if (rel.startswith(w) if w.endswith("/") else rel == w): return layer
  raise AssertionError(f"{rel} belongs to no layer of docs/layers.md; add it to a row's `where`")


def test_table_is_well_formed():
  names = [layer for layer, _, _ in TABLE]
  assert len(names) >= 8 and len(set(names)) == len(names)
  for i, (layer, _, may) in enumerate(TABLE):
    assert may <= set(names[i + 1:]), f"layer {layer} may import {sorted(may - set(names[i + 1:]))}, not below it"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_keep_to_the_layers(name):
  mine = layer_of(name)
  may = next(m for layer, _, m in TABLE if layer == mine) | {mine}
  bad = {t: line for t, line in GRAPH[name].items() if layer_of(t) not in may}
  assert not bad, "\n".join(f"{MODULES[name].relative_to(ROOT)}:{line}: the {mine} layer imports {t} "
                            f"(layer {layer_of(t)}); it may import only {sorted(may)}" for t, line in bad.items())


def circles() -> list[list[str]]:
  """The import graph's strongly connected components of more than one module (Tarjan's, without recursion)."""
  index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
  for start in sorted(GRAPH):
    if start in index: continue
    work = [(start, iter(sorted(GRAPH[start])))]
    index[start] = low[start] = counter[0]; counter[0] += 1; stack.append(start); on.add(start)
    while work:
      v, it = work[-1]
      w = next(it, None)
      if w is not None:
        if w not in index:
          index[w] = low[w] = counter[0]; counter[0] += 1; stack.append(w); on.add(w)
          work.append((w, iter(sorted(GRAPH[w]))))
        elif w in on: low[v] = min(low[v], index[w])
        continue
      work.pop()
      if work: low[work[-1][0]] = min(low[work[-1][0]], low[v])
      if low[v] == index[v]:
        comp = []
        while True:
          w = stack.pop(); on.discard(w); comp.append(w)
          if w == v: break
        if len(comp) > 1: out.append(sorted(comp))
  return out


def test_no_import_circles():
  found = circles()
  lines = []
  for comp in found:
    lines.append(f"circle of {len(comp)} modules:")
    lines += [f"  {a} -> {b} (line {GRAPH[a][b]})" for a in comp for b in sorted(GRAPH[a]) if b in comp]
  assert not found, "\n".join(lines)


def test_the_checks_find_a_circle_and_an_upward_import():
  saved = {k: dict(v) for k, v in GRAPH.items()}
  try:
    GRAPH["tracegrad.ir.uop"]["tracegrad.numpy"] = 1
    assert any("tracegrad.ir.uop" in c and "tracegrad.numpy" in c for c in circles())
    with pytest.raises(AssertionError, match="the ir layer imports tracegrad.numpy"):
      test_imports_keep_to_the_layers("tracegrad.ir.uop")
  finally:
    GRAPH.clear(); GRAPH.update(saved)
