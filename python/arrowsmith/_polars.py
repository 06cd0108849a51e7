"""``arrowsmith.scan``: a Polars IO source (``polars.io.plugins.register_io_source``).

Polars hands the source the columns a query needs, the rows a ``head`` wants, a batch size and
the query's filter. The first three go into arrowsmith's reader, so unneeded columns are never
decoded and reading stops early; the filter runs on every batch as it arrives. Batches cross
into Polars through the PyCapsule interface: pyarrow is not needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    import polars as pl

    from arrowsmith._arrowsmith import Dataset


def scan_dataset(ds: Dataset, batch_size: int | None) -> pl.LazyFrame:
    """A ``LazyFrame`` over ``ds``: every collect() opens a fresh reader of it. ``batch_size``
    is the one ``scan`` was given; without it, Polars' hint is taken."""
    import polars as pl
    from polars.io.plugins import register_io_source

    schema = pl.DataFrame(ds.open(limit=0)).schema
    names = list(schema)

    def batches(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size_hint: int | None,
    ) -> Iterator[pl.DataFrame]:
        wanted = with_columns
        if wanted is not None and not wanted and names:
            # A query that needs no column (a row count) still needs the rows: read the
            # cheapest way we know, one column, and drop it.
            wanted = names[:1]
        # With a filter, the rows of a head are counted after it, so the reader cannot stop
        # at n_rows; without one it can.
        reader = ds.open(
            columns=wanted,
            limit=n_rows if predicate is None else None,
            batch_size=batch_size if batch_size is not None else batch_size_hint,
        )
        remaining = n_rows
        with reader:
            for batch in reader:
                frame = pl.DataFrame(batch)
                if with_columns is not None and len(wanted or ()) != len(with_columns):
                    frame = frame.select(with_columns)
                if predicate is not None:
                    frame = frame.filter(predicate)
                if remaining is not None:
                    if frame.height >= remaining:
                        yield frame.head(remaining)
                        return
                    remaining -= frame.height
                yield frame

    try:
        return register_io_source(
            batches,
            schema=schema,
            is_pure=True,
            explain_name="arrowsmith",
            explain_detail=f"{ds.format} {ds.source}",
        )
    except TypeError:
        # Polars before 1.35 names no scan node in explain().
        return register_io_source(batches, schema=schema)
