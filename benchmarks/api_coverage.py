"""The public names of JAX's modules that tracegrad's counterparts lack, outside the documented exclusions
(docs/api-exclusions.md: a `## jax.module` heading, then `- `name`: reason` lines; a name may be a glob such as
`*_p`). Needs JAX installed. Not a test: it lists and counts; an exclusion that names something tracegrad has is
flagged as stale.

  python3 benchmarks/api_coverage.py [--all]      (--all: also list the excluded names)
"""
from __future__ import annotations

import argparse
import fnmatch
import importlib
import pathlib
import re
import sys
import types

MODULES = {   # JAX's module -> tracegrad's
  "jax": "tracegrad",
  "jax.numpy": "tracegrad.numpy",
  "jax.numpy.linalg": "tracegrad.numpy.linalg",
  "jax.numpy.fft": "tracegrad.numpy.fft",
  "jax.lax": "tracegrad.lax",
  "jax.lax.linalg": "tracegrad.lax.linalg",
  "jax.nn": "tracegrad.nn",
  "jax.nn.initializers": "tracegrad.nn.initializers",
  "jax.random": "tracegrad.random",
  "jax.tree": "tracegrad.tree",
  "jax.tree_util": "tracegrad.tree_util",
  "jax.scipy.special": "tracegrad.scipy.special",
  "jax.scipy.stats": "tracegrad.scipy.stats",
  "jax.scipy.linalg": "tracegrad.scipy.linalg",
  "jax.example_libraries.stax": "tracegrad.example_libraries.stax",
  "jax.example_libraries.optimizers": "tracegrad.example_libraries.optimizers",
}
EXCLUSIONS = pathlib.Path(__file__).resolve().parents[1] / "docs" / "api-exclusions.md"


def exclusions(text: str) -> dict[str, dict[str, str]]:
  """{jax module: {name or glob: reason}} from the exclusions document."""
  out: dict[str, dict[str, str]] = {}
  section = None
  for item in re.sub(r"\n[ \t]+", " ", text).splitlines():   # a bullet's continuation lines join it
    if m := re.match(r"#+\s+`?(jax[\w.]*)`?\s*$", item):
      section = out.setdefault(m.group(1), {})
    elif section is not None and (m := re.match(r"\s*[-*]\s+((?:`[^`]+`[,\s]*)+)(?::\s*(.*))?$", item)):
      for name in re.findall(r"`([^`]+)`", m.group(1)): section[name] = m.group(2) or ""
  return out


def public(mod) -> set[str]:
  """A module's public names, less the modules (other than its own submodules) and the builtins or functools helpers
  it merely imported."""
  names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]

  def imported(obj) -> bool:
    if isinstance(obj, types.ModuleType): return not obj.__name__.startswith(mod.__name__ + ".")
    return getattr(obj, "__module__", None) in ("builtins", "functools")
  return {n for n in names if not n.startswith("_") and not imported(getattr(mod, n, None))}


def coverage(show_excluded: bool = False) -> int:
  excl = exclusions(EXCLUSIONS.read_text()) if EXCLUSIONS.exists() else {}
  total_missing = 0
  for jname, tname in MODULES.items():
    try:
      jmod = importlib.import_module(jname)
    except ImportError:
      print(f"{jname}: not importable here")
      continue
    try:
      tmod = importlib.import_module(tname)
    except ImportError:
      tmod = None
    names, rules = public(jmod), excl.get(jname, {})
    have = {n for n in names if tmod is not None and hasattr(tmod, n)}
    excluded = {n for n in names - have if any(fnmatch.fnmatchcase(n, r) for r in rules)}
    missing = sorted(names - have - excluded)
    stale = sorted(r for r in rules if "*" not in r and tmod is not None and hasattr(tmod, r))
    total_missing += len(missing)
    print(f"{jname:34s} {len(names):4d} names: {len(have):4d} present, {len(excluded):4d} excluded, "
          f"{len(missing):4d} missing" + ("" if tmod is not None else f" ({tname} does not exist)"))
    if missing: print("  missing: " + ", ".join(missing))
    if stale: print("  excluded but present (stale exclusions): " + ", ".join(stale))
    if show_excluded and excluded: print("  excluded: " + ", ".join(sorted(excluded)))
  print(f"total missing outside the exclusions: {total_missing}")
  return total_missing


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--all", action="store_true", help="also list the excluded names")
  sys.exit(1 if coverage(ap.parse_args().all) else 0)


if __name__ == "__main__":
  main()
