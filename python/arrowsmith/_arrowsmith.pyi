"""Type stubs of the native module ``arrowsmith._arrowsmith`` (python/src/*.rs).

The public API is ``arrowsmith`` itself (python/arrowsmith/__init__.py), which re-exports the
classes and exceptions below and wraps the functions.
"""

import os
from typing import Any, Callable, Iterator, Literal, Sequence, TypedDict, Union

__version__: str
_debug_build: bool

_Source = Union[str, os.PathLike[str]]
_Columns = Union[Sequence[str], Sequence[int], None]
# Object storage settings (object_store's keys) for a URL source or target; docs/object-storage.md.
_StorageOptions = Union[dict[str, Union[str, bool, int]], None]

class Schema:
    """The column names, Arrow types and metadata of a Reader, Dataset or RecordBatch.

    ``pyarrow.schema(s)`` converts it, through ``__arrow_c_schema__``.
    """

    @property
    def names(self) -> list[str]:
        """The column names, in order."""
    @property
    def types(self) -> list[str]:
        """The Arrow type of each column as Arrow spells it ("Int64", "Utf8", …)."""
    @property
    def metadata(self) -> dict[str, str]:
        """The schema-level metadata (e.g. "jay.nkeys")."""
    def __len__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __arrow_c_schema__(self) -> object:
        """An Arrow C schema in a PyCapsule."""

class RecordBatch:
    """A batch of rows as decoded; ``pyarrow.record_batch(b)`` and ``polars.DataFrame(b)``
    take it without a copy."""

    @property
    def num_rows(self) -> int: ...
    @property
    def num_columns(self) -> int: ...
    @property
    def schema(self) -> Schema: ...
    def __len__(self) -> int: ...
    def __arrow_c_schema__(self) -> object: ...
    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        """The batch as an Arrow C struct array (schema and array PyCapsules)."""
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The batch as an Arrow C stream of one batch."""

class Reader:
    """One pass over the batches of a source.

    Iterate it for :class:`RecordBatch` objects (each decoded with the GIL released), or hand
    it to an Arrow consumer: ``pyarrow.table(r)``, ``polars.DataFrame(r)``,
    ``duckdb.sql("SELECT * FROM r")``. Either way it is consumed once; a second export raises
    :class:`ArgumentError`. A context manager: leaving the block closes the file.
    """

    @property
    def schema(self) -> Schema:
        """The schema of the batches."""
    @property
    def closed(self) -> bool:
        """Whether the batches were consumed or the reader closed."""
    def __arrow_c_schema__(self) -> object: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The remaining batches as an Arrow C stream (``requested_schema`` is ignored)."""
    def __iter__(self) -> Iterator[RecordBatch]: ...
    def __next__(self) -> RecordBatch: ...
    def read_all(self, *, progress: Callable[[int], Any] | None = None) -> Reader:
        """Reads the remaining batches into memory, raising any error in the data here.

        Args:
            progress: called with the rows of each batch as it is read.

        Returns:
            A Reader over the batches in memory.
        """
    def close(self) -> None:
        """Drops the underlying reader and the file it holds."""
    def __enter__(self) -> Reader: ...
    def __exit__(self, *args: object) -> None: ...

class Dataset:
    """A re-openable source: every ``__arrow_c_stream__`` opens a fresh reader, so DuckDB can
    scan it twice (a self-join) and pyarrow, Polars and DuckDB can each read it."""

    def __init__(
        self,
        source: _Source,
        *,
        format: str | None = None,
        columns: _Columns = None,
        limit: int | None = None,
        batch_size: int | None = None,
        storage_options: _StorageOptions = None,
        **options: Any,
    ) -> None:
        """Checks the source and the options (as :func:`arrowsmith.open` takes them)."""
    @property
    def schema(self) -> Schema:
        """The schema of the batches, after ``columns``."""
    @property
    def source(self) -> str:
        """The source's path or URL (without a URL's userinfo and query string)."""
    @property
    def format(self) -> str:
        """The source's format name."""
    def open(
        self,
        *,
        columns: _Columns = None,
        limit: int | None = None,
        batch_size: int | None = None,
    ) -> Reader:
        """A new one-pass Reader; the arguments narrow the dataset's own.

        Args:
            columns: names or positions in the source, replacing the dataset's.
            limit: at most this many rows (never more than the dataset's limit).
            batch_size: rows per batch.
        """
    def head(self, n: int = 5) -> Any:
        """The first ``n`` rows as a ``pyarrow.Table`` (needs pyarrow)."""
    def count_rows(self) -> int:
        """The rows, from the metadata where the format records it, else by reading."""
    def fragments(self, *, target_rows: int | None = None) -> list[Fragment]:
        """The dataset's source in pieces (see :func:`arrowsmith.fragments`)."""
    def _known_rows(self) -> int | None: ...
    def __arrow_c_schema__(self) -> object: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """A fresh reader over the dataset as an Arrow C stream."""

class Fragment:
    """One independently readable piece of a source (see :func:`arrowsmith.fragments`).

    It pickles (as its JSON) for Ray, Dask and Spark, and compares equal to a copy of itself.
    """

    def __init__(self, json: str) -> None:
        """A fragment from the JSON of :meth:`to_json` or of ``arrowsmith fragments``."""
    @property
    def index(self) -> int:
        """Its position in the listing: 0, 1, …"""
    @property
    def source(self) -> str:
        """The source it belongs to."""
    @property
    def format(self) -> str:
        """The source's format name."""
    @property
    def range(self) -> tuple[str, int | None, int | None]:
        """``(unit, start, end)`` in the format's unit: "rows", "bytes", "chunks",
        "row_groups", "batches", or ("whole", None, None)."""
    @property
    def rows(self) -> int:
        """Rows in the fragment (an estimate when ``rows_exact`` is False)."""
    @property
    def rows_exact(self) -> bool: ...
    @property
    def bytes(self) -> int:
        """Bytes of the source it covers, as stored."""
    def to_json(self) -> str:
        """The fragment as one line of JSON."""
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

class WriteSummary:
    """What :func:`arrowsmith.write` did."""

    @property
    def rows(self) -> int:
        """The rows written."""
    @property
    def warnings(self) -> list[str]:
        """What the writer wants the caller to know; the data was written in spite of it."""
    @property
    def path(self) -> str:
        """The target."""
    @property
    def format(self) -> str:
        """The format written."""

class ArrowsmithError(Exception):
    """Base of every arrowsmith error; ``str(e)`` is the command line's ``error:`` line."""

    kind: str | None
    """The stable error class ("bad_meta", "bad_offsets", "io", "invalid_argument", …)."""
    file: str | None
    column: str | int | None
    """The column's name, or its position when it has none."""
    field: str | None
    row: int | None
    offset: int | None
    """The byte offset in the file."""

class DataError(ArrowsmithError, ValueError):
    """The data is damaged or cannot be represented in the target format."""

class ArgumentError(ArrowsmithError, ValueError):
    """An argument or option that cannot be used (unknown column, bad value, inapplicable
    option)."""

class UnsupportedError(ArrowsmithError, NotImplementedError):
    """A format or feature this build does not implement."""

class NotFoundError(ArrowsmithError, FileNotFoundError):
    """The source does not exist."""

class ExistsError(ArrowsmithError, FileExistsError):
    """The target exists and ``mode="error"`` forbids replacing it."""

class StorageError(ArrowsmithError, OSError):
    """Reading or writing the file system failed."""

def open(
    source: _Source,
    *,
    format: str | None = None,
    columns: _Columns = None,
    limit: int | None = None,
    batch_size: int | None = None,
    storage_options: _StorageOptions = None,
    **options: Any,
) -> Reader:
    """Opens a source for one pass (see ``arrowsmith.open``)."""

def write(
    data: Any,
    target: _Source,
    *,
    format: str | None = None,
    mode: Literal["error", "overwrite", "append"] = "error",
    compression: str | None = None,
    durable: bool = True,
    progress: Callable[[int], Any] | None = None,
    expected_rows: int | None = None,
    storage_options: _StorageOptions = None,
    **options: Any,
) -> WriteSummary:
    """Writes an Arrow producer (see ``arrowsmith.write``).

    Args:
        progress: called with the rows of each batch after it was written.
        expected_rows: the input's row count if known (bcolz sizes its chunks by it).
    """

def fragments(
    source: _Source,
    *,
    format: str | None = None,
    target_rows: int | None = None,
    storage_options: _StorageOptions = None,
    **options: Any,
) -> list[Fragment]:
    """See ``arrowsmith.fragments``."""

def open_fragment(
    fragment: Fragment,
    *,
    columns: _Columns = None,
    limit: int | None = None,
    batch_size: int | None = None,
    storage_options: _StorageOptions = None,
) -> Reader:
    """See ``arrowsmith.open_fragment``."""

class _InspectFieldKeys(TypedDict):
    name: str
    type: str
    """Arrow's name of the type (``Int64``, ``Utf8``, ``Dictionary(Int32, Utf8)``, …)."""
    nullable: bool

class InspectField(_InspectFieldKeys, total=False):
    """A field of ``InspectReport["schema"]``; ``metadata`` only when it has some."""

    metadata: dict[str, str]

class InspectSchema(TypedDict):
    fields: list[InspectField]
    metadata: dict[str, str]

# One damaged part a salvaging read skipped: "part" is "extent", "chunk", "column", … or
# "file" when the damage stopped even that read; "offset" is its byte offset, "class" the stable
# error class (a keyword, hence the functional form).
DamagedPart = TypedDict(
    "DamagedPart",
    {
        "part": str,
        "index": int | None,
        "column": str | None,
        "offset": int | None,
        "rows": int | None,
        "class": str,
        "reason": str,
    },
)

class InspectVerification(TypedDict):
    ok: bool
    rows: int
    """Rows read before the end or the first error."""
    batches: int
    error: str | None
    """The error line that stopped the read (or a row count that disagrees with the file's)."""
    damaged: list[DamagedPart]

class _InspectReportKeys(TypedDict):
    file: str
    format: str
    description: str
    rows: int | None
    columns: int
    schema: InspectSchema
    structure: dict[str, Any] | None
    """The format's own structure (Jay buffers, DataSeries extents, Filo vectors, VS blocks,
    bcolz chunks, Parquet row groups, IPC batches); None when damage hides it."""

class InspectReport(_InspectReportKeys, total=False):
    """What ``arrowsmith.inspect`` returns: ``arrowsmith inspect --json``, parsed. ``notes``
    is there only when there are some, ``verify`` only with ``verify=True``."""

    notes: list[str]
    verify: InspectVerification

def inspect_json(
    source: _Source,
    *,
    format: str | None = None,
    verify: bool = False,
    storage_options: _StorageOptions = None,
    **options: Any,
) -> str:
    """The report of ``arrowsmith.inspect`` as JSON text (an ``InspectReport``)."""

def formats() -> list[dict[str, Any]]:
    """The formats: name, extensions, directory, description."""
