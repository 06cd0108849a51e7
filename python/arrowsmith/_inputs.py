"""The inputs of a distributed read, shared by ``arrowsmith.ray`` and ``arrowsmith.dask``: the
paths given (files, bcolz/Filo directories, directories of those, URLs of objects) expanded
into datasets, each dataset split into fragments, all under one schema.

Only structure is read here (headers, footers, extent indexes), on the driver; the rows are
read by the workers, one fragment each. A fragment of a URL names its object (with its size
and ETag); the workers open it by URL with the storage options the read was given, so no
worker needs a shared disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence, Union

import arrowsmith

if TYPE_CHECKING:
    import pyarrow

Paths = Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]


@dataclass(frozen=True)
class Plan:
    """What a distributed read will do: the fragments of every input, in input order."""

    schema: "pyarrow.Schema"
    """The schema of every fragment's batches, after the column selection."""
    fragments: list[arrowsmith.Fragment]
    columns: list[str] | None
    """The selected columns by name (positions resolved), or None for all."""


def plan(
    paths: Paths,
    *,
    format: str | None,
    columns: Sequence[str] | Sequence[int] | None,
    target_rows: int | None,
    options: dict[str, Any],
    storage_options: dict[str, Any] | None = None,
) -> Plan:
    """Lists the fragments of every input; a ValueError names the first input whose columns
    differ from the others'."""
    import pyarrow as pa

    schema = None
    first = None
    fragments: list[arrowsmith.Fragment] = []
    names: list[str] | None = None
    for path, path_format in datasets(paths, format):
        dataset = arrowsmith.dataset(
            path,
            format=path_format,
            columns=columns,
            storage_options=storage_options,
            **options,
        )
        this = pa.schema(dataset.schema)
        if schema is None:
            schema, first = this, path
            names = None if columns is None else list(this.names)
        elif not this.equals(schema, check_metadata=False):
            raise ValueError(
                f"{path}: its columns differ from those of {first}, so the two cannot be read as "
                f"one dataset:\n  {_describe(this)}\n  {_describe(schema)}"
            )
        fragments.extend(dataset.fragments(target_rows=target_rows))
    assert schema is not None  # datasets() never returns an empty list
    return Plan(schema=schema, fragments=fragments, columns=names)


def datasets(paths: Paths, format: str | None) -> list[tuple[str, str | None]]:
    """The datasets (a file, or a bcolz/Filo directory) the paths name, with their format
    where it is known (None: the core detects it when opening).

    A directory that is not itself a dataset stands for the entries directly inside it whose
    format is recognised, by extension or, failing that, by content, as ``arrowsmith sql``
    reads a directory LOCATION: hidden entries (``.``, ``_``) and unrecognised ones are skipped,
    subdirectories are not entered, and the entries must all be of one format unless
    ``format`` picks one. Entries are sorted by name, so ``part-00000``, ``part-00001``, … are
    read in order. A URL names one object or dataset prefix, read as it is.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found: list[tuple[str, str | None]] = []
    for path in map(os.fspath, paths):
        if not is_url(path) and os.path.isdir(path) and _format_of(path) is None:
            found.extend(_entries(path, format))
        else:
            # A file, or something missing that the core's open then reports by name.
            found.append((path, format))
    if not found:
        raise ValueError("no input: give a path, a list of paths or a directory")
    return found


def is_url(path: str) -> bool:
    """Whether a path is a URL (``s3://…``, ``file:///…``), as the core tells them apart."""
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.replace("+", "").replace("-", "").replace(".", "").isalnum()


def _entries(directory: str, format: str | None) -> list[tuple[str, str | None]]:
    members = []
    for name in sorted(os.listdir(directory)):
        if name.startswith((".", "_")):
            continue
        path = os.path.join(directory, name)
        found = _format_of(path)
        if found is not None and (format is None or found == format):
            members.append((path, found))
    if not members:
        wanted = format or "arrowsmith"
        raise ValueError(
            f"{directory}: the directory holds no {wanted} inputs (files or bcolz/Filo "
            "directories whose format is recognised by extension or content)"
        )
    first_path, first_format = members[0]
    for path, other in members:
        if other != first_format:
            raise ValueError(
                f"{directory}: the directory holds {first_format} and {other} inputs "
                f"({first_path}, {path}); name the format to read (format=...)"
            )
    return members


def _format_of(path: str) -> str | None:
    """The format of a file or dataset directory: by extension, else by content (the core's
    detection); None when it is neither."""
    extension = os.path.splitext(path)[1].lower()
    found = _formats_by_extension().get(extension)
    # A plain directory named like a file (data.jay/) is not a Jay file, nor the reverse.
    if found is not None and os.path.isdir(path) == _is_directory_format(found):
        return found
    try:
        return arrowsmith.dataset(path).format
    except arrowsmith.ArgumentError as e:
        if "cannot tell the format" in str(e):
            return None
        raise


_EXTENSIONS: dict[str, str] = {}
_DIRECTORY_FORMATS: set[str] = set()


def _formats_by_extension() -> dict[str, str]:
    if not _EXTENSIONS:
        for entry in arrowsmith.formats():
            for extension in entry["extensions"]:
                _EXTENSIONS.setdefault(extension, entry["name"])
            if entry["directory"]:
                _DIRECTORY_FORMATS.add(entry["name"])
    return _EXTENSIONS


def _is_directory_format(format: str) -> bool:
    _formats_by_extension()
    return format in _DIRECTORY_FORMATS


def extension_of(format: str) -> str:
    """The file name extension of a format's output (".jay", ".ds", …)."""
    for entry in arrowsmith.formats():
        if entry["name"] == format:
            if not entry["extensions"]:
                raise ValueError(f"the {format} format has no file extension to name parts by")
            return entry["extensions"][0]
    names = ", ".join(e["name"] for e in arrowsmith.formats())
    raise ValueError(f"unknown format {format!r}; one of: {names}")


def estimated_bytes(fragment: arrowsmith.Fragment, row_width: int) -> int:
    """A fragment's size once decoded: its rows times the fixed width of a row, or its stored
    size when that is larger (strings, or a format that stores more than it holds)."""
    return max(fragment.bytes, fragment.rows * row_width)


def row_width(schema: "pyarrow.Schema") -> int:
    """Bytes per row of the fixed-width columns, plus an offset per variable-width one: a lower
    bound of a decoded row's size, which the stored size of strings tops up."""
    width = 0
    for field in schema:
        try:
            width += max(1, field.type.bit_width // 8)
        except ValueError:
            width += 8
    return width


def _describe(schema: "pyarrow.Schema") -> str:
    return ", ".join(f"{f.name}: {f.type}" for f in schema)
