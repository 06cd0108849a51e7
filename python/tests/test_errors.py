"""Errors: damaged data raises DataError (a ValueError) with the command line's message; a
missing file FileNotFoundError; bad arguments ValueError/TypeError naming what was wrong."""
import pytest

import arrowsmith
from conftest import DATA

DAMAGED = sorted((DATA / "jay" / "bad").glob("*.jay")) + sorted((DATA / "vs").glob("bad_*.vs"))


@pytest.mark.parametrize("path", DAMAGED, ids=lambda p: p.name)
def test_damaged_file_raises_data_error(path):
    with pytest.raises(arrowsmith.DataError) as raised:
        arrowsmith.read(path)
    error = raised.value
    assert isinstance(error, ValueError) and isinstance(error, arrowsmith.ArrowsmithError)
    assert error.file == str(path)
    assert error.kind and ("[%s]" % error.kind) in str(error)
    assert "\n" not in str(error)


def test_damaged_file_while_iterating():
    with pytest.raises(arrowsmith.DataError):
        for _ in arrowsmith.open(DATA / "vs" / "bad_truncated_block.vs", batch_size=1):
            pass


def test_error_attributes():
    with pytest.raises(arrowsmith.DataError) as raised:
        arrowsmith.read(DATA / "jay" / "bad" / "array_offsets_beyond_child.jay")
    assert raised.value.kind == "bad_offsets"
    assert raised.value.column == "ai"


def test_missing_file():
    path = DATA / "jay" / "no_such_file.jay"
    with pytest.raises(FileNotFoundError) as raised:
        arrowsmith.read(path)
    assert isinstance(raised.value, arrowsmith.NotFoundError)
    assert raised.value.errno == 2 and raised.value.file == str(path)
    assert str(path) in str(raised.value)


def test_other_io_error(tmp_path):
    with pytest.raises(OSError) as raised:
        arrowsmith.write(arrowsmith.open(DATA / "jay" / "tiny.jay"), tmp_path / "no_dir" / "t.jay")
    assert isinstance(raised.value, arrowsmith.ArrowsmithError)
    assert not isinstance(raised.value, FileNotFoundError) or raised.value.kind == "io"


def test_bad_arguments():
    tiny = DATA / "jay" / "tiny.jay"
    with pytest.raises(TypeError, match="colour"):
        arrowsmith.open(tiny, colour="red")
    with pytest.raises(ValueError, match="type= applies to dataseries"):
        arrowsmith.open(tiny, type="Test::Basic")
    with pytest.raises(ValueError, match='no column named "zzz"'):
        arrowsmith.open(tiny, columns=["zzz"])
    with pytest.raises(TypeError, match="not a string"):
        arrowsmith.open(tiny, columns="A")
    with pytest.raises(ValueError, match="negative"):
        arrowsmith.open(tiny, limit=-1)
    with pytest.raises(ValueError, match="at least 1"):
        arrowsmith.open(tiny, batch_size=0)
    with pytest.raises(ValueError, match="unknown format"):
        arrowsmith.open(tiny, format="nope")
    with pytest.raises(TypeError, match="filo_type"):
        arrowsmith.open(DATA / "filo" / "vectors" / "int_i8_with_na.bin", format="filo-vector", filo_type=3)
    with pytest.raises(ValueError, match="varint"):
        arrowsmith.open(DATA / "vs" / "f64_r1_plain.vs", varint="big")
    # Options set to their default are accepted for any format.
    assert arrowsmith.read(tiny, type=None, lenient_eof=False).num_rows == 3


def test_error_kinds_map_to_builtins():
    assert issubclass(arrowsmith.DataError, ValueError)
    assert issubclass(arrowsmith.ArgumentError, ValueError)
    assert issubclass(arrowsmith.NotFoundError, FileNotFoundError)
    assert issubclass(arrowsmith.StorageError, OSError)
    assert issubclass(arrowsmith.ExistsError, FileExistsError)
    assert issubclass(arrowsmith.UnsupportedError, NotImplementedError)
    for cls in (arrowsmith.DataError, arrowsmith.NotFoundError, arrowsmith.StorageError):
        assert issubclass(cls, arrowsmith.ArrowsmithError) and cls.__module__ == "arrowsmith"
