"""Dask over arrowsmith: every legacy format as a ``dask.dataframe.DataFrame``, one partition
per fragment.

    >>> import arrowsmith.dask
    >>> df = arrowsmith.dask.read("traces/", type="Trace::NFS::common")
    >>> df.groupby("op")["bytes"].sum().compute()

The driver reads structure only (to list the fragments); each partition opens only its fragment,
in whichever worker computes it, and decodes only the columns the graph needs: a selection made
after the read (``df[["a", "b"]]``) is pushed into the fragments' reads by Dask's optimizer.
Partitions are pandas DataFrames with Arrow-backed dtypes (``pd.ArrowDtype``), so nulls and
types come through as they are in the file. Needs ``dask[dataframe]`` and pyarrow
(``pip install arrowsmith[dask]``); ``import arrowsmith`` does not import this module. See
docs/distributed.md.
"""

from __future__ import annotations

from typing import Any, Sequence

import dask.dataframe as dd
import pandas as pd
import pyarrow as pa

import arrowsmith
from arrowsmith import _inputs

__all__ = ["read"]


def read(
    paths: _inputs.Paths,
    *,
    format: str | None = None,
    columns: Sequence[str] | Sequence[int] | None = None,
    target_rows: int | None = None,
    batch_size: int | None = None,
    storage_options: dict[str, Any] | None = None,
    **options: Any,
) -> dd.DataFrame:
    """A ``dask.dataframe.DataFrame`` over the rows of every input, in order.

    ``paths``: a file, a bcolz/Filo directory, a directory of those (the entries whose format is
    recognised, all of one format), or a list of any of these; all must have the same columns.
    ``format``, ``columns`` and ``**options`` are :func:`arrowsmith.open`'s. ``target_rows``
    sizes the fragments, which are the partitions (default 1,048,576 rows). When every fragment
    knows its row count, the index is the row number over all inputs, with known divisions, so
    ``df.loc[n]`` touches one partition.

    A path may be a URL (``s3://bucket/trace.ds``): the driver lists its fragments and each
    partition opens its own by URL, with ``storage_options`` (:func:`arrowsmith.open`'s), which
    go into the graph with every partition; a fragment itself carries no credentials.
    """
    plan = _inputs.plan(
        paths,
        format=format,
        columns=columns,
        target_rows=target_rows,
        options=options,
        storage_options=storage_options,
    )
    meta = _to_pandas(plan.schema.empty_table())
    fragments = plan.fragments
    exact = all(f.rows_exact and f.rows > 0 for f in fragments)
    offsets: list[int | None] = []
    seen = 0
    for fragment in fragments:
        offsets.append(seen if exact else None)
        seen += fragment.rows
    divisions = (*offsets, seen - 1) if exact else None
    if exact:
        meta.index = pd.RangeIndex(0, 0)
    return dd.from_map(
        _read_fragment,
        fragments,
        offsets,
        meta=meta,
        divisions=divisions,
        label="arrowsmith",
        enforce_metadata=False,
        columns=plan.columns,
        batch_size=batch_size,
        storage_options=storage_options,
    )


def _read_fragment(
    fragment: arrowsmith.Fragment,
    offset: int | None,
    columns: list[str] | None = None,
    batch_size: int | None = None,
    storage_options: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """One partition: the fragment's rows of the columns Dask asks for. The ``columns`` keyword
    is what tells ``dd.from_map`` that this function takes a projection."""
    reader = arrowsmith.open_fragment(
        fragment, columns=columns, batch_size=batch_size, storage_options=storage_options
    )
    # read_all raises arrowsmith's own error for damaged data, not pyarrow's wrapping of it.
    table = pa.table(reader.read_all())
    frame = _to_pandas(table)
    if offset is not None:
        frame.index = pd.RangeIndex(offset, offset + len(frame))
    return frame


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas(types_mapper=pd.ArrowDtype)
