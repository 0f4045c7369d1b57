"""Stream rows into one Parquet split file, atomically.

Rows arrive one at a time and are flushed in row groups small enough for the Hub's dataset
viewer (which rejects row groups above ~286 MiB uncompressed); content-defined chunking keeps
re-uploads of a changed build deduplicable. The file appears under its final name only when
complete, so an interrupted build never leaves a truncated split behind. A build whose
workers write files lets the parent process publish them (`publish=False`): a worker stopped
at any point then leaves only a temporary file, which the parent removes.

A write that fails (a full disk, a folder made read-only) is one `RulerError` naming the file,
and its temporary file is removed: pyarrow itself aborts the whole process when its sink fails
in the middle of a page, so it writes to a sink that keeps the first error and lets pyarrow
finish, and the writer raises that error.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ruler.builder.manifest import canonical_row_bytes
from ruler.builder.row_table import rows_table
from ruler.builder.schema import ROW_SCHEMA
from ruler.kernel.atomic import FILE_MODE, temp_file_beside
from ruler.kernel.errors import RulerError

ROW_GROUP_TARGET_BYTES = 64 << 20
# Level 3 writes a 128K row in ~4 ms against ~10 ms at level 9, for files ~8% larger (32K x 13
# tasks x 500 rows: ~115 MB); the writing process is on the build's critical path.
ZSTD_LEVEL = 3


def rows_per_group(max_seq_length: int) -> int:
    # ~4-5 characters per token of stored text; cap to keep groups well under the viewer limit.
    approx_row_bytes = max(1, max_seq_length * 5)
    return max(1, min(1000, ROW_GROUP_TARGET_BYTES // approx_row_bytes))


class _Sink:
    """A binary file for pyarrow that never fails a write: the first OSError is kept (and
    later writes dropped) for the writer to raise once pyarrow has returned."""

    def __init__(self, fd: int):
        self._file = open(fd, "wb")
        self._position = 0
        self.error: OSError | None = None
        self.closed = False

    def write(self, data) -> int:
        if self.error is None:
            try:
                self._file.write(data)
            except OSError as e:
                self.error = e
        self._position += len(data)
        return len(data)

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self._file.close()
            except OSError as e:  # a buffered write that fails only now
                self.error = self.error or e


class SplitWriter:
    """Write one `data/<config>/<task>/<L>.parquet` file; use as a context manager."""

    def __init__(self, path: Path, max_seq_length: int, publish: bool = True,
                 temp_tag: str = ""):
        self.path = Path(path)
        self.publish = publish
        self.group_size = rows_per_group(max_seq_length)
        self._buffer: list[dict[str, Any]] = []
        self._content = hashlib.sha256()
        self.rows = 0
        try:
            fd, self._tmp = temp_file_beside(self.path, temp_tag)
        except OSError as e:
            raise self._failed(e) from None
        self._sink = _Sink(fd)
        self._writer = pq.ParquetWriter(
            self._sink, ROW_SCHEMA, compression="zstd", compression_level=ZSTD_LEVEL,
            use_content_defined_chunking=True, write_page_index=True,
        )

    def write(self, row: dict[str, Any], canonical: bytes | None = None) -> None:
        """Add a row; `canonical` is its `canonical_row` UTF-8 bytes when already encoded
        (workers encode them, so the writing process only hashes)."""
        self._buffer.append(row)
        self._content.update(canonical if canonical is not None
                             else canonical_row_bytes(row))
        self._content.update(b"\n")
        self.rows += 1
        if len(self._buffer) >= self.group_size:
            self._flush()

    def _flush(self) -> None:
        if self._buffer:
            self._writer.write_table(rows_table(self._buffer, ROW_SCHEMA))
            self._buffer = []
            self._check()

    def _check(self) -> None:
        if self._sink.error is not None:
            raise self._failed(self._sink.error)

    def _failed(self, error: OSError) -> RulerError:
        return RulerError(f"cannot write {self.path}: {error.strerror or error}; nothing of it "
                          f"was published (free space or make the folder writable, then run "
                          f"the same command again to resume)")

    @property
    def temp_path(self) -> Path:
        """Where the file is written (and stays, complete, when `publish=False`)."""
        return Path(self._tmp)

    @property
    def content_sha256(self) -> str:
        return self._content.hexdigest()

    def __enter__(self) -> "SplitWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            try:
                self._flush()
                self._writer.close()
                self._sink.close()
                self._check()
                try:
                    os.chmod(self._tmp, FILE_MODE)
                    if self.publish:
                        os.replace(self._tmp, self.path)
                except OSError as e:
                    raise self._failed(e) from None
            except BaseException:
                self._discard()
                raise
        else:
            self._discard()

    def _discard(self) -> None:
        """Close and remove the temporary file, as far as the folder allows: the error that
        stopped the writing is the one to report (a folder made read-only keeps the file; the
        next build removes it)."""
        for close in (self._writer.close, self._sink.close):
            with contextlib.suppress(Exception):
                close()
        with contextlib.suppress(OSError):
            Path(self._tmp).unlink(missing_ok=True)
