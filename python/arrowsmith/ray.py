"""Ray Data over arrowsmith: every legacy format as a ``ray.data.Dataset``, and a dataset
written as a directory of legacy files.

    >>> import arrowsmith.ray
    >>> ds = arrowsmith.ray.read("traces/", type="Trace::NFS::common", columns=["time", "op"])
    >>> ds.write_parquet("traces-parquet/")
    >>> arrowsmith.ray.write(ray.data.read_parquet("trades/"), "trades-jay/", format="jay")

A read task is a run of consecutive fragments of about Ray's target block size (or as many runs
as ``override_num_blocks`` asks for) and opens only its pieces of its files on whichever worker
runs it: the driver reads
structure only, to list the fragments, and gives Ray their row counts, sizes and schema so that
it plans without reading rows. A write task writes one file, ``part-00000.<ext>``, …, whole or
not at all. Needs ``ray[data]`` (``pip install arrowsmith[ray]``); ``import arrowsmith`` does
not import this module. See docs/distributed.md.
"""

from __future__ import annotations

import functools
import os
import shutil
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Literal, Sequence

import pyarrow as pa
import ray.data
from ray.data.block import BlockAccessor, BlockMetadata
from ray.data.datasource import Datasink, Datasource, ReadTask

import arrowsmith
from arrowsmith import _inputs

if TYPE_CHECKING:
    from ray.data._internal.execution.interfaces import TaskContext
    from ray.data.context import DataContext

__all__ = ["ArrowsmithDatasink", "ArrowsmithDatasource", "read", "write"]


def read(
    paths: _inputs.Paths,
    *,
    format: str | None = None,
    columns: Sequence[str] | Sequence[int] | None = None,
    target_rows: int | None = None,
    batch_size: int | None = None,
    override_num_blocks: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
    storage_options: dict[str, Any] | None = None,
    **options: Any,
) -> ray.data.Dataset:
    """A ``ray.data.Dataset`` over the rows of every input, in order.

    ``paths``: a file, a bcolz/Filo directory, a directory of those (the entries whose format is
    recognised, all of one format), or a list of any of these; all must have the same columns.
    ``format``, ``columns`` and ``**options`` are :func:`arrowsmith.open`'s (``type=…``,
    ``utf8=True``, …). ``target_rows`` sizes the fragments (default 1,048,576 rows); a read task
    reads a run of consecutive fragments of up to Ray's target block size decoded
    (``DataContext.target_max_block_size``, 128 MiB), as Ray's Parquet reader packs files, and
    there are at least as many tasks as the cluster has CPUs (while there are fragments);
    ``override_num_blocks=N`` makes N tasks instead (one per fragment when N is larger).
    ``batch_size`` sizes the batches each task decodes at a time. ``override_num_blocks`` and
    ``ray_remote_args`` go to ``ray.data.read_datasource``. Ray may narrow the columns further
    (``ds.select_columns``); only those are decoded.

    A path may be a URL (``s3://bucket/frame.jay``): the driver lists its fragments and each
    read task opens its own by URL, with ``storage_options`` (:func:`arrowsmith.open`'s), which
    travel with the task; a fragment itself carries no credentials.
    """
    source = ArrowsmithDatasource(
        paths,
        format=format,
        columns=columns,
        target_rows=target_rows,
        batch_size=batch_size,
        storage_options=storage_options,
        **options,
    )
    if override_num_blocks is None:
        # Asked for by count: left to choose, Ray would ask for its default of 200 reads and
        # split each task's output into that many blocks' worth of slices.
        override_num_blocks = source.packed_task_count()
    source.pack_tasks = False
    return ray.data.read_datasource(
        source, override_num_blocks=override_num_blocks, ray_remote_args=ray_remote_args
    )


def write(
    dataset: ray.data.Dataset,
    directory: str | os.PathLike[str],
    *,
    format: str,
    mode: Literal["error", "overwrite"] = "error",
    compression: str | None = None,
    min_rows_per_file: int | None = None,
    concurrency: int | None = None,
    **options: Any,
) -> list[str]:
    """Writes a ``ray.data.Dataset`` into ``directory`` as one file (or bcolz/Filo directory)
    of ``format`` per write task: ``part-00000.<ext>``, ``part-00001.<ext>``, …

    Each part is written by :func:`arrowsmith.write`, whole or not at all. ``mode="error"``
    (default) wants the directory missing or empty; ``"overwrite"`` first removes the parts of
    an earlier write (only ``part-*`` entries). If the job fails, the parts it wrote are removed
    again. ``compression`` and ``**options`` are :func:`arrowsmith.write`'s;
    ``min_rows_per_file`` makes Ray hand each task at least that many rows (fewer, larger
    files). Returns the paths written, in order. ``arrowsmith.ray.read(directory)`` reads them
    back as one dataset.
    """
    sink = ArrowsmithDatasink(
        directory,
        format=format,
        mode=mode,
        compression=compression,
        min_rows_per_file=min_rows_per_file,
        **options,
    )
    dataset.write_datasink(sink, concurrency=concurrency)
    return sink.written


class ArrowsmithDatasource(Datasource):
    """The ``ray.data.Datasource`` of :func:`read`: read tasks of runs of consecutive fragments.

    ``pack_tasks`` (default True): each task reads up to Ray's target block size of fragments,
    with at least as many tasks as the cluster has CPUs and no more than Ray's parallelism; a
    task costs a scheduling round, its own blocks and an open of its files, which small
    fragments do not repay. False: ``get_read_tasks(parallelism)`` makes ``parallelism`` runs,
    one per fragment when there are no more fragments than that.
    """

    pack_tasks = True

    def __init__(
        self,
        paths: _inputs.Paths,
        *,
        format: str | None = None,
        columns: Sequence[str] | Sequence[int] | None = None,
        target_rows: int | None = None,
        batch_size: int | None = None,
        storage_options: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        self._plan = _inputs.plan(
            paths,
            format=format,
            columns=columns,
            target_rows=target_rows,
            options=options,
            storage_options=storage_options,
        )
        self._batch_size = batch_size
        self._storage_options = storage_options
        self._projection_map = None

    def get_name(self) -> str:
        return "Arrowsmith"

    def supports_projection_pushdown(self) -> bool:
        return True

    def _columns(self) -> list[str] | None:
        """The columns to decode: the read's own selection, narrowed by Ray's."""
        pushed = self._get_data_columns()
        if pushed is None:
            return self._plan.columns
        return [name for name in self._plan.schema.names if name in pushed]

    def _schema(self) -> pa.Schema:
        columns = self._columns()
        if columns is None:
            return self._plan.schema
        return pa.schema([self._plan.schema.field(name) for name in columns],
                         metadata=self._plan.schema.metadata)

    def estimate_inmemory_data_size(self) -> int | None:
        width = _inputs.row_width(self._schema())
        return sum(_inputs.estimated_bytes(f, width) for f in self._plan.fragments)

    def packed_task_count(self, data_context: DataContext | None = None) -> int:
        """How many read tasks ``pack_tasks`` makes: runs of up to Ray's target block size,
        at least one per CPU of the cluster, at most one per fragment."""
        width = _inputs.row_width(self._schema())
        fragments = self._plan.fragments
        return min(_packed_task_count(fragments, width, -1, data_context), max(1, len(fragments)))

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: int | None = None,
        data_context: DataContext | None = None,
    ) -> list[ReadTask]:
        schema = self._schema()
        columns = self._columns()
        width = _inputs.row_width(schema)
        fragments = self._plan.fragments
        if self.pack_tasks:
            parallelism = _packed_task_count(fragments, width, parallelism, data_context)
        tasks = []
        for group in _runs(fragments, parallelism):
            # Exact when every fragment counts its rows (all formats but CSV, NDJSON and a
            # bare Filo vector, which Ray then counts as it reads).
            rows = sum(f.rows for f in group) if all(f.rows_exact for f in group) else None
            metadata = BlockMetadata(
                num_rows=rows,
                size_bytes=sum(_inputs.estimated_bytes(f, width) for f in group),
                input_files=sorted({f.source for f in group}),
                exec_stats=None,
            )
            read_fn = functools.partial(
                _read_fragments, group, columns, self._batch_size, self._storage_options
            )
            tasks.append(
                ReadTask(read_fn, metadata, schema=schema, per_task_row_limit=per_task_row_limit)
            )
        return tasks


def _packed_task_count(
    fragments: list[arrowsmith.Fragment],
    row_width: int,
    parallelism: int,
    data_context: DataContext | None,
) -> int:
    """Tasks of about Ray's target block size decoded, as Ray's Parquet reader packs its files
    (into tasks of up to 128 MiB); at least one per CPU of the cluster, so every worker reads;
    at most what Ray asked for."""
    from ray.data.context import DataContext

    context = data_context or DataContext.get_current()
    block = context.target_max_block_size or 128 * 1024 * 1024
    total = sum(_inputs.estimated_bytes(f, row_width) for f in fragments)
    by_size = -(-total // block)
    cpus = int(ray.cluster_resources().get("CPU", 1)) if ray.is_initialized() else os.cpu_count()
    count = max(by_size, cpus or 1, 1)
    return min(count, parallelism) if parallelism > 0 else count


def _runs(fragments: list[arrowsmith.Fragment], parallelism: int) -> list[list[arrowsmith.Fragment]]:
    """The fragments as read tasks: one each, or, when Ray asks for fewer tasks, that many runs
    of consecutive fragments, as even in rows as the fragments allow."""
    if parallelism <= 0 or len(fragments) <= parallelism:
        return [[f] for f in fragments]
    total = sum(max(f.rows, 1) for f in fragments)
    runs: list[list[arrowsmith.Fragment]] = [[] for _ in range(parallelism)]
    seen = 0
    for fragment in fragments:
        runs[min(parallelism - 1, seen * parallelism // total)].append(fragment)
        seen += max(fragment.rows, 1)
    return [run for run in runs if run]


def _read_fragments(
    fragments: list[arrowsmith.Fragment],
    columns: list[str] | None,
    batch_size: int | None,
    storage_options: dict[str, Any] | None = None,
) -> Iterator[pa.Table]:
    """A read task's body, run on a worker: each fragment's batches as they are decoded, so a
    worker holds a batch or so at a time, not the fragment (Ray merges them into blocks)."""
    for fragment in fragments:
        with arrowsmith.open_fragment(
            fragment, columns=columns, batch_size=batch_size, storage_options=storage_options
        ) as reader:
            for batch in reader:
                yield pa.Table.from_batches([pa.record_batch(batch)])


class ArrowsmithDatasink(Datasink):
    """The ``ray.data.Datasink`` of :func:`write`: one ``part-NNNNN.<ext>`` per write task."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        format: str,
        mode: Literal["error", "overwrite"] = "error",
        compression: str | None = None,
        min_rows_per_file: int | None = None,
        **options: Any,
    ) -> None:
        if mode not in ("error", "overwrite"):
            raise ValueError(f"mode must be 'error' or 'overwrite', not {mode!r}")
        if _inputs.is_url(os.fspath(directory)):
            # os.path would take "s3://b/x" for the local directory "s3:/b/x".
            raise arrowsmith.UnsupportedError(
                f"{os.fspath(directory).split('?')[0]}: arrowsmith.ray.write writes into a local "
                "or shared directory, not to a URL; write there and upload the parts"
            )
        self.directory = os.path.abspath(os.fspath(directory))
        self.format = format
        self.extension = _inputs.extension_of(format)
        self.mode = mode
        self.compression = compression
        self.options = options
        self._min_rows = min_rows_per_file
        self.written: list[str] = []

    def get_name(self) -> str:
        return "Arrowsmith"

    @property
    def min_rows_per_write(self) -> int | None:
        return self._min_rows

    def on_write_start(self, schema: pa.Schema | None = None) -> None:
        os.makedirs(self.directory, exist_ok=True)
        existing = sorted(n for n in os.listdir(self.directory) if not n.startswith("."))
        if self.mode == "overwrite":
            for name in existing:
                if name.startswith("part-"):
                    _remove(os.path.join(self.directory, name))
        elif existing:
            raise arrowsmith.ExistsError(
                f"{self.directory}: the directory is not empty (it holds {existing[0]}); "
                "write into a new directory, or pass mode='overwrite' to replace its parts"
            )

    def write(self, blocks: Iterable[Any], ctx: TaskContext) -> str | None:
        target = os.path.join(self.directory, f"part-{ctx.task_idx:05d}{self.extension}")
        tables = (BlockAccessor.for_block(b).to_arrow() for b in blocks)
        first = next((t for t in tables if t.num_rows > 0), None)
        if first is None:
            return None  # an empty task writes no file
        schema = first.schema

        def batches() -> Iterator[pa.RecordBatch]:
            yield from first.to_batches()
            for table in tables:
                if table.num_rows:
                    yield from _conform(table, schema, target).to_batches()

        reader = pa.RecordBatchReader.from_batches(schema, batches())
        # "overwrite": a task Ray retries after it wrote its part replaces that part.
        arrowsmith.write(
            reader,
            target,
            format=self.format,
            mode="overwrite",
            compression=self.compression,
            **self.options,
        )
        return target

    def on_write_complete(self, write_result: Any) -> None:
        self.written = sorted(p for p in write_result.write_returns if p is not None)

    def on_write_failed(self, error: Exception) -> None:
        # The directory held no parts when the job started, so every part in it is this job's.
        if os.path.isdir(self.directory):
            for name in os.listdir(self.directory):
                if name.startswith("part-"):
                    _remove(os.path.join(self.directory, name))


def _conform(table: pa.Table, schema: pa.Schema, target: str) -> pa.Table:
    """A block under the schema of the task's first block (Ray's blocks may differ in small
    ways, e.g. a column all null in one block); a real difference is an error naming the part."""
    if table.schema.equals(schema, check_metadata=False):
        return table
    try:
        return table.select(schema.names).cast(schema)
    except (KeyError, ValueError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise ValueError(
            f"{target}: a block's columns ({table.schema}) do not match the part's ({schema}): {e}"
        ) from e


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.remove(path)
