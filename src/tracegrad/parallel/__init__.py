"""Arrays and programs over several devices: shardings (meshes, specs, per-device blocks: data and index arithmetic
only, which the running layer reads), SPMD execution of a partitioned program (`spmd.py`), and several processes
under mpirun (`distributed.py`). `tracegrad.sharding` and `tracegrad.distributed` are the public names of two of
these modules."""
