"""Read and write legacy binary data formats (Jay, DataSeries, Filo, VS, bcolz) as Apache Arrow.

arrowsmith speaks the Arrow PyCapsule interface: what it reads goes into pyarrow, Polars,
DuckDB, pandas or DataFusion without a copy, and anything those produce can be written. It
needs no Python package itself; pyarrow and Polars are imported only by the functions that
return their objects (``read``, ``scan``).

    >>> import arrowsmith, polars as pl
    >>> df = pl.DataFrame(arrowsmith.open("frame.jay"))
    >>> table = arrowsmith.read("trace.ds", type="Trace::NFS::common", columns=["time", "op"])
    >>> arrowsmith.write(df, "frame.bcolz", mode="overwrite")
    >>> arrowsmith.read("s3://bucket/frame.jay", storage_options={"aws_region": "eu-west-1"})

See docs/python.md for every function and option.
"""

from __future__ import annotations

import json as _json
import os
from typing import TYPE_CHECKING, Any, Callable, Literal, Sequence, Union

from arrowsmith import _arrowsmith as _native
from arrowsmith._arrowsmith import (
    ArgumentError,
    ArrowsmithError,
    DataError,
    Dataset,
    ExistsError,
    Fragment,
    NotFoundError,
    Reader,
    RecordBatch,
    Schema,
    StorageError,
    UnsupportedError,
    WriteSummary,
    __version__,
    formats,
)

if TYPE_CHECKING:
    import polars
    import pyarrow

    from arrowsmith._arrowsmith import InspectReport

    Source = Union[str, "os.PathLike[str]"]

__all__ = [
    "ArgumentError",
    "ArrowsmithError",
    "DataError",
    "Dataset",
    "ExistsError",
    "Fragment",
    "NotFoundError",
    "Reader",
    "RecordBatch",
    "Schema",
    "StorageError",
    "UnsupportedError",
    "WriteSummary",
    "__version__",
    "dataset",
    "formats",
    "fragments",
    "inspect",
    "open",
    "open_fragment",
    "read",
    "scan",
    "write",
]

Columns = Union[Sequence[str], Sequence[int], None]
StorageOptions = Union[dict[str, Union[str, bool, int]], None]


def open(
    source: Source,
    *,
    format: str | None = None,
    columns: Columns = None,
    limit: int | None = None,
    batch_size: int | None = None,
    storage_options: StorageOptions = None,
    **options: Any,
) -> Reader:
    """Opens a file (or bcolz/Filo directory) for one pass over its record batches.

    The returned :class:`Reader` is an Arrow stream: ``pyarrow.table(r)``,
    ``polars.DataFrame(r)`` and ``duckdb.sql("SELECT * FROM r")`` read it, and iterating it
    yields :class:`RecordBatch` objects. ``format`` is a name from :func:`formats`
    (detected from the content and the name when omitted); ``columns`` are names or
    positions, in the order wanted; ``**options`` are the read settings of docs/settings.md
    by key (``type="Trace::NFS::common"``, ``utf8=True``, ``filo_type="Long"``,
    ``lenient_eof=True``, ``nat_as_null=False``, …).

    ``source`` may be a URL (``s3://bucket/key``, ``gs://…``, ``az://…``, ``https://…``):
    ``storage_options`` are then the settings of its store, object_store's keys
    (``aws_region``, ``aws_endpoint_url``, ``azure_storage_sas_key``, …) over the environment's
    (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``); see docs/object-storage.md. No message, repr or
    fragment shows their values.
    """
    args = _read_args(format, columns, limit, batch_size, storage_options, options)
    return _native.open(source, **args)


def read(
    source: Source,
    *,
    format: str | None = None,
    columns: Columns = None,
    limit: int | None = None,
    batch_size: int | None = None,
    progress: bool = False,
    storage_options: StorageOptions = None,
    **options: Any,
) -> pyarrow.Table:
    """Reads a whole source into a ``pyarrow.Table`` (needs pyarrow).

    Takes the arguments of :func:`open`; ``progress=True`` shows a tqdm bar when tqdm is
    installed. A damaged file raises :class:`DataError` here, with the command line's message.
    """
    pa = _import("pyarrow", "read() returns a pyarrow.Table")
    args = _read_args(format, columns, limit, batch_size, storage_options, options)
    if progress:
        ds = Dataset(source, **args)
        bar = _progress_bar(ds._known_rows(), "reading " + ds.source)
        reader = ds.open()
    else:
        bar = None
        reader = _native.open(source, **args)
    try:
        loaded = reader.read_all(progress=bar.update if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    return pa.table(loaded)


def scan(
    source: Source,
    *,
    format: str | None = None,
    columns: Columns = None,
    limit: int | None = None,
    batch_size: int | None = None,
    storage_options: StorageOptions = None,
    **options: Any,
) -> polars.LazyFrame:
    """A Polars ``LazyFrame`` over a source (needs polars, not pyarrow).

    The selected columns, the row limit of a ``head`` and the batch size go into the reader;
    a filter is applied to every batch as it is read. Takes the arguments of :func:`open`.
    """
    from arrowsmith._polars import scan_dataset

    args = _read_args(format, columns, limit, batch_size, storage_options, options)
    return scan_dataset(Dataset(source, **args), batch_size)


def dataset(
    source: Source,
    *,
    format: str | None = None,
    columns: Columns = None,
    limit: int | None = None,
    batch_size: int | None = None,
    storage_options: StorageOptions = None,
    **options: Any,
) -> Dataset:
    """A re-openable source: every Arrow consumer that reads it gets a fresh reader.

    Use it where a consumer may read its input twice (a DuckDB self-join, a query planned
    then run). It has ``schema``, ``head(n)``, ``count_rows()`` and ``open()``. Takes the
    arguments of :func:`open`; the source and the options are checked here.
    """
    args = _read_args(format, columns, limit, batch_size, storage_options, options)
    return Dataset(source, **args)


def write(
    data: Any,
    target: Source,
    *,
    format: str | None = None,
    mode: Literal["error", "overwrite", "append"] = "error",
    compression: str | None = None,
    durable: bool = True,
    progress: bool = False,
    storage_options: StorageOptions = None,
    **options: Any,
) -> WriteSummary:
    """Writes any Arrow data to ``target`` in any format arrowsmith writes.

    ``data`` is anything with ``__arrow_c_stream__`` or ``__arrow_c_array__``: a pyarrow
    Table, RecordBatch or RecordBatchReader, a Polars DataFrame, a DuckDB relation, a
    DataFusion DataFrame, an arrowsmith Reader or Dataset; a pandas DataFrame goes through
    pyarrow. Batches stream through the writer in bounded memory; the target appears only
    when everything was written.

    ``format`` defaults to the target's extension. ``mode`` is ``"error"`` (the target must
    not exist), ``"overwrite"`` or ``"append"`` (VS and bcolz; a missing target is created).
    ``compression`` is the command line's ``--compression`` (``"zstd:9"``, ``"lz4"``, …);
    ``**options`` the write settings of docs/settings.md by key
    (``sentinel_collisions_as_na=True``, ``bcolz_nulls_as_nan=True``, ``type=…``,
    ``extent_size=…``, ``filo_chunk_size=…``).
    ``durable=False`` skips the flush to disk (fsync) before the output is renamed into place,
    as ``--no-sync`` does: faster, and what most tools do, but a power loss soon after may lose
    the output (an append always flushes). Returns the rows written and the writer's warnings.

    ``target`` may be a URL (``s3://bucket/out.jay``), written with ``storage_options`` (see
    :func:`open`) through a multipart upload that completes only when everything was written;
    ``mode="append"`` refuses a URL, and ``durable`` means nothing there.
    """
    data = _arrow_producer(data)
    rows = _row_count_hint(data)
    bar = _progress_bar(rows, "writing " + _shown(target)) if progress else None
    try:
        return _native.write(
            data,
            target,
            format=format,
            mode=mode,
            compression=compression,
            durable=durable,
            progress=bar.update if bar is not None else None,
            expected_rows=rows,
            storage_options=storage_options,
            **options,
        )
    finally:
        if bar is not None:
            bar.close()


def inspect(
    source: Source,
    *,
    format: str | None = None,
    verify: bool = False,
    storage_options: StorageOptions = None,
    **options: Any,
) -> InspectReport:
    """What a source holds, as a dict: what ``arrowsmith inspect --json`` prints.

    Keys: ``file``, ``format``, ``description``, ``rows`` (None when unknown), ``columns``,
    ``schema`` (``fields``: name, type, nullable, and metadata when there is some;
    ``metadata``), ``structure`` (the format's own: a Jay file's columns and buffers,
    DataSeries types and extents, Filo column chunks, VS blocks, bcolz chunks, Parquet row
    groups, IPC batches; None when damage hides it), and ``notes`` when there are some. With
    ``verify=True`` every batch is decoded and ``verify`` says how it went (``ok``, ``rows``,
    ``batches``, ``error``, and ``damaged``: every damaged part) instead of raising.
    """
    return _json.loads(
        _native.inspect_json(
            source, format=format, verify=verify, storage_options=storage_options, **options
        )
    )


def fragments(
    source: Source,
    *,
    format: str | None = None,
    target_rows: int | None = None,
    storage_options: StorageOptions = None,
    **options: Any,
) -> list[Fragment]:
    """Splits a source into pieces of about ``target_rows`` rows (default 1,048,576) along its
    format's seams (Jay rows, bcolz chunks, DataSeries extents, VS blocks, Filo chunks, Parquet
    row groups, Arrow IPC batches), from its structure alone.

    Each :class:`Fragment` is read independently with :func:`open_fragment`, in any thread or
    process: it pickles. The rows of all fragments, in order, are the rows of the source.
    ``**options`` and ``storage_options`` are :func:`open`'s. A fragment of a URL names the
    object with its size and version (ETag), never the storage options: pass them again to
    :func:`open_fragment`, which fails when the object changed since the listing.
    """
    return _native.fragments(
        source,
        format=format,
        target_rows=target_rows,
        storage_options=storage_options,
        **options,
    )


def open_fragment(
    fragment: Fragment,
    *,
    columns: Columns = None,
    limit: int | None = None,
    batch_size: int | None = None,
    storage_options: StorageOptions = None,
) -> Reader:
    """Opens one fragment for one pass; ``limit`` counts the fragment's rows. A fragment of a
    URL is read with ``storage_options`` (see :func:`open`): it carries none of its own."""
    return _native.open_fragment(
        fragment,
        columns=columns,
        limit=limit,
        batch_size=batch_size,
        storage_options=storage_options,
    )


def _read_args(
    format: str | None,
    columns: Columns,
    limit: int | None,
    batch_size: int | None,
    storage_options: StorageOptions,
    options: dict[str, Any],
) -> dict[str, Any]:
    """The keyword arguments of a read (:func:`open`'s), as the native ``open`` and
    :class:`Dataset` take them."""
    return {
        "format": format,
        "columns": columns,
        "limit": limit,
        "batch_size": batch_size,
        "storage_options": storage_options,
        **options,
    }


def _import(module: str, purpose: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"{purpose} and needs {module}: pip install {module} (or use arrowsmith.open(), "
            "whose Reader any Arrow library reads)"
        ) from e


def _arrow_producer(data: Any) -> Any:
    """The data itself when it speaks the PyCapsule interface; a pandas DataFrame through
    pyarrow; anything else is refused."""
    if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
        return data
    if type(data).__module__.startswith("pandas"):
        pa = _import("pyarrow", "writing a pandas DataFrame goes through pyarrow")
        return pa.Table.from_pandas(data, preserve_index=False)
    raise TypeError(
        "write() takes Arrow data: an object with __arrow_c_stream__ or __arrow_c_array__ "
        f"(pyarrow, Polars, DuckDB, DataFusion, pandas), not {type(data).__name__}"
    )


def _row_count_hint(data: Any) -> int | None:
    """The rows of in-memory data, when it says so without running anything (bcolz sizes its
    chunks by it; progress bars show it)."""
    for attribute in ("num_rows", "height"):
        rows = getattr(data, attribute, None)
        if isinstance(rows, int):
            return rows
    return None


def _progress_bar(total: int | None, description: str) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=description, unit=" rows", unit_scale=True)


def _shown(target: Any) -> str:
    """A target as a progress bar names it: a URL without its query string and userinfo,
    where signed URLs and SAS tokens keep credentials."""
    text = os.fspath(target)
    scheme, sep, rest = text.partition("://")
    if not sep:
        return text
    rest = rest.split("?", 1)[0].split("#", 1)[0]
    authority, slash, key = rest.partition("/")
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{key}"
