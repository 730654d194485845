"""SpMV's matrices for `measure kernels --spmv`: a Matrix Market file read with SciPy, or a generated
CSR matrix (random columns or a band around the diagonal), written in the binary CSR layout the
probe's spmv mode reads (native/probe/kernels_memory.cpp), and the x the product is taken with."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

from ..errors import BadFile, BadValue
from ..files import exists

CSR_MAGIC = b"XFCSR1\0\0"
#: Bytes held while a Matrix Market file is read and written for the probe, per entry (SciPy's COO
#: arrays and the CSR made from them, 8-byte indices and values, and the probe's file's copies), per
#: row (two row-pointer arrays) and per column (x).
BYTES_PER_ENTRY, BYTES_PER_ROW, BYTES_PER_COLUMN = 48, 16, 8
#: The shortest line an entry can take in a Matrix Market file: ``i j\n`` (pattern), ``i j v\n``,
#: ``i j re im\n`` (complex); in the array layout, one value a line (``v\n``).
SHORTEST_LINE = {"pattern": 4, "complex": 8}


def names_a_file(spec: str) -> bool:
    """Whether --spmv's value names a Matrix Market file (a .mtx name or an existing path), not a row count."""
    return Path(spec).suffix.lower() == ".mtx" or exists(spec) or len(spec) > 255  # (too long for a name: refused as a file)


def load_matrix(spec: str, structure: str, per_row: int):
    """A CSR matrix: read from a Matrix Market file, or generated with ``spec`` rows (``per_row``
    entries per row, random columns or a band around the diagonal), values in [0.5, 1.5)."""
    import scipy.io
    import scipy.sparse

    path = Path(spec)
    if names_a_file(spec):
        if not os.path.isfile(path):  # (False for a name too long to look at)
            raise BadFile(f"--spmv '{spec}' is not a readable file")
        try:
            _check_header(path, spec, scipy.io.mminfo(str(path)))
            matrix = scipy.io.mmread(str(path))
        except (ValueError, OSError, IndexError, TypeError) as error:
            raise BadFile(f"--spmv '{spec}' is not a Matrix Market file: {str(error).splitlines()[0][:120]}") from None
        if not scipy.sparse.issparse(matrix):
            matrix = scipy.sparse.csr_matrix(matrix)
        matrix = matrix.tocsr()
        if np.iscomplexobj(matrix.data):
            raise BadFile(f"--spmv '{spec}': complex matrices are not supported (real, integer or pattern)")
        if not np.all(np.isfinite(matrix.data)):
            raise BadFile(f"--spmv '{spec}' holds entries that are not finite numbers (nan, inf); SciPy's product "
                          "could not check the device's")
        if matrix.nnz == 0:
            raise BadFile(f"--spmv '{spec}' has no entries")
        return matrix
    try:
        number = float(spec)
    except ValueError:
        raise BadValue(f"--spmv '{spec}' is neither a .mtx file nor a row count") from None
    if not (1 <= number <= 2**26 and number.is_integer()):  # nan and inf too; .1 is not 0 rows
        raise BadValue(f"--spmv '{spec}': rows are a whole number in 1..2^26")
    rows = int(number)
    if not 1 <= per_row <= min(rows, 1024):
        raise BadValue(f"--per-row {per_row}: entries per row in 1..{min(rows, 1024)}")
    rng = np.random.default_rng(7)
    if structure == "banded":
        offsets = np.arange(per_row) - per_row // 2
        cols = (np.arange(rows)[:, None] + offsets[None, :]) % rows
    else:
        cols = rng.integers(0, rows, size=(rows, per_row))
    data = rng.random(rows * per_row) + 0.5
    matrix = scipy.sparse.csr_matrix((data, cols.ravel(), np.arange(0, rows * per_row + 1, per_row)), shape=(rows, rows))
    matrix.sum_duplicates()
    return matrix


def _check_header(path: Path, spec: str, header: tuple) -> None:
    """Refuse, before anything is allocated, a header whose matrix this machine cannot hold (memory
    available, from the OS) or that the file cannot hold (the entries it declares, a line each)."""
    from ..system.inventory import memory_available
    from ..units import format_size
    from .sizing import MEMORY_FRACTION

    rows, cols, entries, layout, field, symmetry = header
    if cols >= 2**32:
        raise BadFile(f"--spmv '{spec}' declares {cols:,} columns; at most 2^32 - 1 (the probe's column indices)")
    if layout == "array":  # every value is written, a triangle of a symmetric matrix
        stored = {"symmetric": rows * (rows + 1) // 2, "hermitian": rows * (rows + 1) // 2,
                  "skew-symmetric": rows * (rows - 1) // 2}.get(symmetry, rows * cols)
        shortest = 2
    else:
        stored, shortest = entries, SHORTEST_LINE.get(field, 6)
    if path.suffix.lower() not in (".gz", ".bz2"):  # a compressed file's size says nothing of its lines
        size = path.stat().st_size
        if stored > size // shortest:
            raise BadFile(f"--spmv '{spec}' declares {stored:,} {'values' if layout == 'array' else 'entries'}, but its "
                          f"{size:,} bytes hold at most {size // shortest:,} (a line of at least {shortest} bytes "
                          "each); the header does not match the file")
    held = entries * (2 if symmetry != "general" else 1)  # a symmetric matrix is read as both triangles
    need = held * BYTES_PER_ENTRY + rows * BYTES_PER_ROW + cols * BYTES_PER_COLUMN
    available = memory_available()
    if available and need > MEMORY_FRACTION * available:
        raise BadFile(f"--spmv '{spec}' declares a {rows:,} x {cols:,} matrix with {entries:,} entries, about "
                      f"{format_size(need)} to read and convert, above {MEMORY_FRACTION:.0%} of the "
                      f"{format_size(available)} of memory available; allowed: a smaller matrix")


def write_matrix(matrix, x: np.ndarray, path: Path, dtype: str) -> None:
    """The CSR file the probe reads: magic, rows, cols, nnz, value bytes, then row pointers (u64),
    column indices (u32), values and x (float32 or float64)."""
    kind = np.float64 if dtype == "double" else np.float32
    with open(path, "wb") as out:
        out.write(CSR_MAGIC)
        out.write(struct.pack("<4Q", matrix.shape[0], matrix.shape[1], matrix.nnz, np.dtype(kind).itemsize))
        out.write(np.asarray(matrix.indptr, dtype="<u8").tobytes())
        out.write(np.asarray(matrix.indices, dtype="<u4").tobytes())
        out.write(np.asarray(matrix.data, dtype=kind).tobytes())
        out.write(np.asarray(x, dtype=kind).tobytes())


def spmv_vector(cols: int) -> np.ndarray:
    return 1.0 + (np.arange(cols) % 7) * 0.125  # exact in float32 too
