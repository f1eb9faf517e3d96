"""The C compiler is started from background threads (tiered builds, two units at once) while the program's own
thread may be inside a BLAS call: starting it must not deadlock against OpenBLAS's fork handlers."""
import shutil
import subprocess
import sys

import pytest

RACE = """
import threading
import numpy as np
from tracegrad.devices import cpu

def builds():
  for _ in range(100): cpu._run_compiler(["true"], "", 10, "true", nice=True)

t = threading.Thread(target=builds)
t.start()
a = np.ones((256, 256), np.float32)
while t.is_alive(): a @ a
print("done")
"""


@pytest.mark.skipif(shutil.which("true") is None, reason="needs the true command")
def test_compiler_started_beside_blas_call_does_not_deadlock():
  r = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip() == "done"
