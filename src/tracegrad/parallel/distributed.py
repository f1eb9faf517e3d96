"""Several processes (launched with mpirun): each holds TRACEGRAD_NUM_CPU_DEVICES devices of one global list, and
shard_map's collectives exchange their operands through MPI (mpi4py). A process started without mpirun is process 0
of 1 and never imports MPI.

>>> tracegrad.distributed.process_count()
1
"""
from __future__ import annotations

import functools
import os

_LAUNCHERS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")   # what mpirun sets (Open MPI, MPICH, PMIx)


@functools.lru_cache(maxsize=None)
def _comm():
  """MPI's world communicator when this process was started by mpirun with more than one process, else None."""
  if not any(k in os.environ for k in _LAUNCHERS): return None
  try:
    from mpi4py import MPI
  except ImportError as e:
    raise RuntimeError("distributed: this process was started by mpirun but mpi4py is not installed; "
                       "pip install 'tracegrad[mpi]'") from e
  return MPI.COMM_WORLD if MPI.COMM_WORLD.Get_size() > 1 else None


def process_index() -> int:
  """This process's rank (0 without mpirun), as jax.process_index."""
  return 0 if _comm() is None else _comm().Get_rank()


def process_count() -> int:
  """How many processes share the devices (1 without mpirun), as jax.process_count."""
  return 1 if _comm() is None else _comm().Get_size()


def allgather(value) -> list:
  """Every process's `value` (any picklable object), in rank order; [value] in a single process."""
  return [value] if _comm() is None else _comm().allgather(value)
