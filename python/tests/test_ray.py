"""`arrowsmith.ray` on a local two-CPU Ray cluster: multi-file, multi-fragment reads give what a
single-process `arrowsmith.read` of the same files gives, a Ray write reads back the same and
each part opens in the reference tool, and a damaged file fails the job with arrowsmith's
message. One cluster for the module: starting Ray costs seconds."""
import copy
import os
import re
import shutil

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

import arrowsmith  # noqa: E402
import arrowsmith.ray  # noqa: E402
from conftest import DATA  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False, namespace="arrowsmith-tests")
    context = ray.data.DataContext.get_current()
    # Blocks come back in the order of the read tasks, so contents compare row by row.
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    yield
    ray.shutdown()


def table(n, start=0):
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({
        "id": ids,
        "x": pc.multiply(pc.cast(ids, pa.float64()), 0.5),
        "s": pa.array(["v%d" % (i % 11) for i in range(start, start + n)], pa.string()),
    })


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Directories of several files per format, each file written in several fragments."""
    root = tmp_path_factory.mktemp("ray-inputs")
    found = {}
    for name, ext, options, width in [
        ("dataseries", "ds", {"extent_size": 8192}, 3000),
        ("jay", "jay", {}, 3000),
    ]:
        directory = root / name
        directory.mkdir()
        for k in range(3):
            arrowsmith.write(table(width, k * width), directory / ("t%d.%s" % (k, ext)), **options)
        # Not inputs: a note, a hidden file and a subdirectory are skipped.
        (directory / "README.txt").write_text("not data")
        (directory / (".hidden.%s" % ext)).write_bytes(b"garbage")
        (directory / "nested").mkdir()
        found[name] = directory
    # bcolz tables are directories: one named by its extension, one recognised by content.
    bcolz = root / "bcolz"
    bcolz.mkdir()
    numbers = table(4000).select(["id", "x"])
    arrowsmith.write(numbers.slice(0, 2500), bcolz / "a.bcolz", bcolz_chunklen=500)
    arrowsmith.write(numbers.slice(2500), bcolz / "b_table", format="bcolz", bcolz_chunklen=500)
    found["bcolz"] = bcolz
    return found


def single_process(directory, names, **options):
    """What a plain `arrowsmith.read` of the files, one after another, gives."""
    return pa.concat_tables([arrowsmith.read(directory / n, **options) for n in names])


def collect(dataset):
    return pa.concat_tables(ray.get(dataset.to_arrow_refs()))


def assert_same_rows(got, want):
    assert got.num_rows == want.num_rows
    assert got.column_names == want.column_names
    for name in want.column_names:
        assert got.column(name).type == want.column(name).type, name
        assert got.column(name).combine_chunks().equals(want.column(name).combine_chunks()), name


@pytest.mark.parametrize("name,files,options", [
    ("dataseries", ["t0.ds", "t1.ds", "t2.ds"], {"utf8": True}),
    ("jay", ["t0.jay", "t1.jay", "t2.jay"], {}),
    ("bcolz", ["a.bcolz", "b_table"], {}),
])
def test_directory_reads_as_one_process_reads_its_files(inputs, name, files, options):
    directory = inputs[name]
    want = single_process(directory, files, **options)
    fragments = sum(len(arrowsmith.fragments(directory / f, target_rows=1000, **options)) for f in files)
    assert fragments >= 2 * len(files)
    dataset = arrowsmith.ray.read(directory, target_rows=1000, **options)
    assert dataset.count() == want.num_rows
    assert dataset.sum("id") == pc.sum(want.column("id")).as_py()
    assert_same_rows(collect(dataset), want)


def test_read_tasks_carry_the_fragments_metadata(inputs):
    source = arrowsmith.ray.ArrowsmithDatasource(inputs["dataseries"], target_rows=1000,
                                                 columns=["id", "s"], utf8=True)
    source.pack_tasks = False  # as read(override_num_blocks=...) asks
    tasks = source.get_read_tasks(parallelism=1000)
    fragments = [f for n in ("t0.ds", "t1.ds", "t2.ds")
                 for f in arrowsmith.fragments(inputs["dataseries"] / n, target_rows=1000, utf8=True)]
    assert len(tasks) == len(fragments)
    assert [t.metadata.num_rows for t in tasks] == [f.rows for f in fragments]
    assert all(t.metadata.size_bytes >= f.bytes for t, f in zip(tasks, fragments))
    assert tasks[0].metadata.input_files == (fragments[0].source,)
    assert tasks[0].schema == pa.schema([("id", pa.int64()), ("s", pa.string())])
    # Fewer tasks asked for: runs of consecutive fragments, every row still read once.
    runs = source.get_read_tasks(parallelism=4)
    assert len(runs) == 4
    assert sum(t.metadata.num_rows for t in runs) == 9000
    # What Ray's projection pushdown calls: the tasks then decode only what is left.
    projected = source.apply_projection({"s": "s"}).get_read_tasks(parallelism=1000)
    assert projected[0].schema == pa.schema([("s", pa.string())])
    assert projected[0].read_fn.args[1] == ["s"]


def test_small_fragments_are_packed_into_a_task_per_cpu_and_large_ones_are_not(inputs):
    from ray.data.context import DataContext

    source = arrowsmith.ray.ArrowsmithDatasource(inputs["dataseries"], target_rows=1000, utf8=True)
    fragments = [f for n in ("t0.ds", "t1.ds", "t2.ds")
                 for f in arrowsmith.fragments(inputs["dataseries"] / n, target_rows=1000, utf8=True)]
    # Ray's target block size holds them all: one task per CPU of the cluster (num_cpus=2),
    # each a run of consecutive fragments, every row read once.
    packed = source.get_read_tasks(parallelism=1000)
    assert len(fragments) > 2 and len(packed) == 2
    assert [f.source for t in packed for f in t.read_fn.args[0]] == [f.source for f in fragments]
    assert sum(t.metadata.num_rows for t in packed) == sum(f.rows for f in fragments)
    # Blocks smaller than a fragment: one task per fragment again.
    context = copy.copy(DataContext.get_current())
    context.target_max_block_size = 1024
    assert len(source.get_read_tasks(parallelism=1000, data_context=context)) == len(fragments)
    # A read packs them so, and Ray runs that many tasks without splitting their blocks.
    dataset = arrowsmith.ray.read(inputs["dataseries"], target_rows=1000, utf8=True).materialize()
    assert re.findall(r"ReadArrowsmith: (\d+) tasks? executed", dataset.stats()) == ["2"]
    assert dataset.count() == sum(f.rows for f in fragments)
    # The number asked for (override_num_blocks) wins.
    dataset = arrowsmith.ray.read(inputs["dataseries"], target_rows=1000, utf8=True,
                                  override_num_blocks=len(fragments)).materialize()
    assert re.findall(r"ReadArrowsmith: (\d+) tasks? executed", dataset.stats()) == [
        str(len(fragments))]


def test_columns_by_the_read_and_by_ray_are_the_only_ones_read(inputs):
    directory = inputs["jay"]
    want = single_process(directory, ["t0.jay", "t1.jay", "t2.jay"])
    narrowed = arrowsmith.ray.read(directory, columns=["s", "x"], target_rows=1000)
    assert narrowed.schema().names == ["s", "x"]
    assert_same_rows(collect(narrowed), want.select(["s", "x"]))
    # Ray pushes select_columns into the datasource.
    selected = arrowsmith.ray.read(directory, target_rows=1000).select_columns(["x"])
    assert_same_rows(collect(selected), want.select(["x"]))


def test_list_of_paths_and_mixed_directory(inputs, tmp_path):
    paths = [inputs["jay"] / "t2.jay", inputs["jay"] / "t0.jay"]
    assert_same_rows(collect(arrowsmith.ray.read(paths)),
                     single_process(inputs["jay"], ["t2.jay", "t0.jay"]))
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(inputs["jay"] / "t0.jay", mixed / "a.jay")
    shutil.copy(inputs["dataseries"] / "t1.ds", mixed / "b.ds")
    with pytest.raises(ValueError, match="holds jay and dataseries inputs"):
        arrowsmith.ray.read(mixed)
    assert arrowsmith.ray.read(mixed, format="dataseries").count() == 3000


def test_write_then_read_gives_the_same_rows_and_datatable_reads_each_part(inputs, tmp_path):
    import datatable as dt

    source = arrowsmith.ray.read(inputs["dataseries"], target_rows=1000, utf8=True)
    want = single_process(inputs["dataseries"], ["t0.ds", "t1.ds", "t2.ds"], utf8=True)
    out = tmp_path / "jay-parts"
    written = arrowsmith.ray.write(source, out, format="jay")
    assert len(written) >= 2
    assert sorted(os.listdir(out)) == [os.path.basename(p) for p in written]
    assert all(re.fullmatch(r"part-\d{5}\.jay", os.path.basename(p)) for p in written), written
    assert_same_rows(collect(arrowsmith.ray.read(out)), want)
    parts = []
    for path in written:
        frame = dt.fread(path)
        assert list(frame.names) == want.column_names
        parts.append(pa.table(dict(zip(frame.names, frame.to_list()))))
    from_datatable = pa.concat_tables(parts)
    for name in want.column_names:
        assert from_datatable.column(name).to_pylist() == want.column(name).to_pylist(), name


def test_write_bcolz_parts_open_in_bcolz(inputs, tmp_path):
    import bcolz

    want = single_process(inputs["bcolz"], ["a.bcolz", "b_table"])
    out = tmp_path / "bcolz-parts"
    written = arrowsmith.ray.write(arrowsmith.ray.read(inputs["bcolz"], target_rows=1000), out,
                                   format="bcolz", bcolz_chunklen=400)
    assert all(p.endswith(".bcolz") and os.path.isdir(p) for p in written)
    ids, xs = [], []
    for path in written:
        ctable = bcolz.open(path, mode="r")
        assert ctable.names == ["id", "x"]
        ids += ctable["id"][:].tolist()
        xs += ctable["x"][:].tolist()
    assert ids == want.column("id").to_pylist() and xs == want.column("x").to_pylist()
    assert arrowsmith.ray.read(out).sum("x") == pc.sum(want.column("x")).as_py()


def test_write_refuses_a_directory_with_data_unless_overwriting(inputs, tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "part-00000.jay").write_bytes(b"old")
    source = arrowsmith.ray.read(inputs["jay"] / "t0.jay")
    with pytest.raises(Exception, match="the directory is not empty"):
        arrowsmith.ray.write(source, out, format="jay")
    written = arrowsmith.ray.write(source, out, format="jay", mode="overwrite")
    assert arrowsmith.ray.read(out).count() == 3000
    assert sorted(os.listdir(out)) == sorted(os.path.basename(p) for p in written)


def damage_second_extent(path):
    """Flips a byte inside the second fragment's extents: listing still works, reading that
    fragment fails its checksum."""
    fragment = arrowsmith.fragments(path, target_rows=1000)[1]
    unit, start, _ = fragment.range
    assert unit == "bytes"
    with open(path, "r+b") as fh:
        fh.seek(start + 64)
        byte = fh.read(1)
        fh.seek(start + 64)
        fh.write(bytes([byte[0] ^ 0xFF]))


def test_damaged_file_fails_the_job_with_arrowsmiths_message(inputs, tmp_path):
    directory = tmp_path / "damaged"
    shutil.copytree(inputs["dataseries"], directory)
    damage_second_extent(directory / "t1.ds")
    with pytest.raises(arrowsmith.DataError) as expected:
        arrowsmith.read(directory / "t1.ds")
    message = str(expected.value)
    assert "t1.ds" in message
    dataset = arrowsmith.ray.read(directory, target_rows=1000)
    # Ray re-raises the task's error as a RayTaskError that is also an arrowsmith.DataError.
    with pytest.raises(arrowsmith.DataError) as failed:
        dataset.sum("id")
    assert message in str(failed.value)
    out = tmp_path / "never-written"
    with pytest.raises(Exception) as failed:
        arrowsmith.ray.write(dataset, out, format="jay")
    assert message in str(failed.value)
    assert not out.exists() or os.listdir(out) == []


def test_fixture_dataseries_file_with_several_extent_types():
    path = DATA / "dataseries" / "generated" / "multitype.ds"
    want = arrowsmith.read(path, type="Test::Basic")
    assert_same_rows(collect(arrowsmith.ray.read(path, type="Test::Basic")), want)
