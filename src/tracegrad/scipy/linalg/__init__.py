"""Linear algebra as jax.scipy.linalg, on the decompositions of tracegrad.lax.linalg: factorizations and the solves on
their factors (factor.py), solve, inv and det (solve.py), the matrix exponential (expm.py) and special matrices
(matrices.py).

>>> tracegrad.scipy.linalg.solve(tnp.array([[2.0, 0.0], [0.0, 4.0]]), tnp.array([2.0, 2.0]))
Array([1. , 0.5], dtype=float32)
"""
from .expm import expm, expm_frechet
from .factor import (cho_factor, cho_solve, cholesky, eigh, eigh_tridiagonal, hessenberg, lu, lu_factor, lu_solve,
                     polar, qr, qr_multiply, solve_triangular, svd)
from .matrices import (block_diag, circulant, companion, convolution_matrix, dft, fiedler, fiedler_companion, hadamard,
                       hankel, helmert, hilbert, invhilbert, invpascal, leslie, pascal, toeplitz)
from .solve import det, inv, solve

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion", "convolution_matrix", "det", "dft",
           "eigh", "eigh_tridiagonal", "expm", "expm_frechet", "fiedler", "fiedler_companion", "hadamard", "hankel",
           "helmert", "hessenberg", "hilbert", "inv", "invhilbert", "invpascal", "leslie", "lu", "lu_factor",
           "lu_solve", "pascal", "polar", "qr", "qr_multiply", "solve", "solve_triangular", "svd", "toeplitz"]
