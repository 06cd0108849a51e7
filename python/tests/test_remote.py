"""URLs through the Python package, against moto's S3 server (conftest.s3_server, a real server
on a loopback port): every held Jay, DataSeries and VS fixture read from S3 equals its local
read (whole, projected, limited, fragment by fragment), a write to S3 is byte-identical to the
local write, Ray and Dask read remote inputs with each task opening its own fragment by URL
and fetching only that fragment's bytes (counted by conftest.counted_s3, moto's server behind a
middleware that records every request), and the secret of storage_options is in no exception,
repr, pickled fragment or report."""
import json
import pickle
import uuid

import pytest

pa = pytest.importorskip("pyarrow")

import arrowsmith  # noqa: E402
from conftest import DATA, S3_SECRET, fixtures, s3_client_for, s3_options_for  # noqa: E402

REMOTE_SUFFIXES = (".jay", ".ds", ".vs")


def remote_fixtures():
    """The held fixtures of the formats read by byte ranges remotely."""
    return [p for p in fixtures() if p.values[0].suffix in REMOTE_SUFFIXES]


@pytest.fixture(scope="session")
def bucket(s3_client):
    """A bucket holding data/jay, data/dataseries and data/vs under their relative paths."""
    name = "arrowsmith-" + uuid.uuid4().hex[:12]
    s3_client.create_bucket(Bucket=name)
    for directory in ("jay", "dataseries", "vs"):
        for path in sorted((DATA / directory).rglob("*")):
            if path.is_file():
                s3_client.upload_file(str(path), name, str(path.relative_to(DATA)))
    return name


def url_of(bucket, path):
    return "s3://%s/%s" % (bucket, path.relative_to(DATA))


def local_or_error(function, *args, **kwargs):
    try:
        return function(*args, **kwargs), None
    except arrowsmith.ArrowsmithError as e:
        return None, e


def assert_no_secret(*texts):
    for text in texts:
        assert S3_SECRET not in str(text)


@pytest.mark.parametrize("path,options", remote_fixtures())
def test_remote_read_equals_local(bucket, s3_options, path, options):
    url = url_of(bucket, path)
    local, error = local_or_error(arrowsmith.read, path, **options)
    if error is not None:
        # Damaged: the remote read fails the same way, naming the URL.
        with pytest.raises(type(error)) as raised:
            arrowsmith.read(url, storage_options=s3_options, **options)
        assert url in str(raised.value)
        assert_no_secret(raised.value)
        return
    remote = arrowsmith.read(url, storage_options=s3_options, **options)
    assert remote.equals(local, check_metadata=True)
    if local.num_columns:
        last = [local.num_columns - 1]
        projected = arrowsmith.read(url, storage_options=s3_options, columns=last, limit=3,
                                    **options)
        assert projected.equals(arrowsmith.read(path, columns=last, limit=3, **options),
                                check_metadata=True)


@pytest.mark.parametrize("path,options", remote_fixtures())
def test_remote_fragments_equal_local(bucket, s3_options, path, options):
    url = url_of(bucket, path)
    local, error = local_or_error(arrowsmith.fragments, path, target_rows=7, **options)
    if error is not None:
        with pytest.raises(type(error)) as raised:
            arrowsmith.fragments(url, target_rows=7, storage_options=s3_options, **options)
        assert url in str(raised.value)
        return
    remote = arrowsmith.fragments(url, target_rows=7, storage_options=s3_options, **options)
    assert [(f.index, f.format, f.range, f.rows, f.rows_exact, f.bytes) for f in remote] == \
        [(f.index, f.format, f.range, f.rows, f.rows_exact, f.bytes) for f in local]
    for here, there in zip(local, remote):
        assert there.source == url
        # A fragment travels as plain data: the object's size and version, no credentials.
        travelled = pickle.loads(pickle.dumps(there))
        assert travelled == there
        assert_no_secret(pickle.dumps(there), there.to_json(), repr(there))
        assert json.loads(there.to_json())["object"]["size"] == path.stat().st_size
        want, error = local_or_error(lambda: pa.table(arrowsmith.open_fragment(here).read_all()))
        remote_reader = arrowsmith.open_fragment(travelled, storage_options=s3_options)
        if error is not None:
            with pytest.raises(type(error)) as raised:
                remote_reader.read_all()
            assert url in str(raised.value)
            continue
        assert pa.table(remote_reader.read_all()).equals(want, check_metadata=True)


def test_remote_dataset_scan_and_inspect(bucket, s3_options):
    path = DATA / "jay" / "all_types.jay"
    url = url_of(bucket, path)
    ds = arrowsmith.dataset(url, storage_options=s3_options)
    assert ds.source == url and ds.format == "jay"
    assert ds.count_rows() == arrowsmith.dataset(path).count_rows()
    assert pa.table(ds).equals(pa.table(ds), check_metadata=True)  # re-openable
    assert pa.table(ds).equals(arrowsmith.read(path), check_metadata=True)
    assert_no_secret(repr(ds), repr(ds.open()), repr(ds.schema))
    report = arrowsmith.inspect(url, storage_options=s3_options)
    local = arrowsmith.inspect(path)
    assert report["file"] == url
    assert {k: v for k, v in report.items() if k != "file"} == \
        {k: v for k, v in local.items() if k != "file"}
    assert_no_secret(json.dumps(report))
    pl = pytest.importorskip("polars")
    frame = arrowsmith.scan(url, storage_options=s3_options).head(2).collect()
    assert frame.equals(pl.DataFrame(arrowsmith.read(path, limit=2)))


@pytest.mark.parametrize("source,suffix,options", [
    (DATA / "jay" / "all_types.jay", ".jay", {}),
    (DATA / "jay" / "strings.jay", ".ds", {}),
    (DATA / "vs" / "f64_r1_plain.vs", ".vs", {}),
])
def test_remote_write_is_byte_identical_to_local(bucket, s3_options, s3_client, tmp_path,
                                                 source, suffix, options):
    table = arrowsmith.read(source)
    local = tmp_path / ("out" + suffix)
    arrowsmith.write(table, local, **options)
    key = "written/%s/out%s" % (uuid.uuid4().hex[:8], suffix)
    url = "s3://%s/%s" % (bucket, key)
    summary = arrowsmith.write(table, url, storage_options=s3_options, **options)
    assert summary.rows == table.num_rows and summary.path == url
    assert_no_secret(repr(summary))
    uploaded = s3_client.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert uploaded == local.read_bytes()
    # The existing-output rule is the local one.
    with pytest.raises(arrowsmith.ArrowsmithError) as raised:
        arrowsmith.write(table, url, storage_options=s3_options, **options)
    assert url in str(raised.value)
    assert_no_secret(raised.value)
    arrowsmith.write(table, url, mode="overwrite", storage_options=s3_options, **options)
    # Appending to an object is refused (objects are not changed in place).
    if suffix == ".vs":
        with pytest.raises(arrowsmith.ArrowsmithError, match="mode"):
            arrowsmith.write(table, url, mode="append", storage_options=s3_options)


def test_remote_missing_object_and_bucket_name_the_url(bucket, s3_options):
    missing = "s3://%s/jay/no-such-file.jay" % bucket
    with pytest.raises(arrowsmith.NotFoundError) as raised:
        arrowsmith.read(missing, storage_options=s3_options)
    assert missing in str(raised.value)
    assert_no_secret(raised.value, repr(raised.value))
    wrong_bucket = "s3://arrowsmith-no-such-bucket-%s/jay/tiny.jay" % uuid.uuid4().hex[:6]
    for call in (arrowsmith.read, arrowsmith.fragments, arrowsmith.inspect, arrowsmith.dataset):
        with pytest.raises(arrowsmith.ArrowsmithError) as raised:
            call(wrong_bucket, storage_options=s3_options)
        assert wrong_bucket in str(raised.value)
        assert "bucket" in str(raised.value)
        assert_no_secret(raised.value, repr(raised.value), raised.value.args)


def test_remote_unreachable_endpoint_shows_no_secret(bucket, s3_options):
    url = "s3://%s/jay/tiny.jay" % bucket
    # moto accepts any key; an endpoint nobody answers gives the connection error instead,
    # which must not show the secret either.
    dead = dict(s3_options, aws_endpoint_url="http://127.0.0.1:9", max_retries="0")
    with pytest.raises(arrowsmith.ArrowsmithError) as raised:
        arrowsmith.read(url, storage_options=dead)
    assert url in str(raised.value)
    assert_no_secret(raised.value, repr(raised.value))


def test_remote_fragment_of_a_changed_object_is_refused(bucket, s3_options, s3_client):
    key = "changing/%s.jay" % uuid.uuid4().hex[:8]
    s3_client.upload_file(str(DATA / "jay" / "all_types.jay"), bucket, key)
    url = "s3://%s/%s" % (bucket, key)
    fragment = arrowsmith.fragments(url, storage_options=s3_options)[0]
    s3_client.upload_file(str(DATA / "jay" / "strings.jay"), bucket, key)
    with pytest.raises(arrowsmith.ArrowsmithError, match="changed") as raised:
        arrowsmith.open_fragment(fragment, storage_options=s3_options).read_all()
    assert url in str(raised.value)


def test_storage_options_are_checked_without_showing_values(bucket, s3_options):
    url = "s3://%s/jay/tiny.jay" % bucket
    with pytest.raises(arrowsmith.ArgumentError, match="limit"):
        arrowsmith.read(url, storage_options=dict(s3_options, limit="3"))
    with pytest.raises(TypeError, match="aws_secret_access_key") as raised:
        arrowsmith.read(url, storage_options=dict(s3_options, aws_secret_access_key=[S3_SECRET]))
    assert_no_secret(raised.value)
    with pytest.raises(TypeError, match="storage_options"):
        arrowsmith.open(url, storage_options=[("aws_region", "x")])
    # The settings of remote storage are given in storage_options, not as keywords.
    with pytest.raises(TypeError, match="storage_options") as raised:
        arrowsmith.read(url, aws_secret_access_key=S3_SECRET)
    assert_no_secret(raised.value)
    # A key no store knows is named, its value not.
    with pytest.raises(arrowsmith.ArrowsmithError, match="aws_secret_acess_key") as raised:
        arrowsmith.read(url, storage_options=dict(s3_options, aws_secret_acess_key=S3_SECRET))
    assert_no_secret(raised.value)


def test_remote_ray_read_equals_local(bucket, s3_options):
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    import arrowsmith.ray

    path = DATA / "dataseries" / "generated" / "basic-all.ds"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False, namespace="arrowsmith-remote-tests")
    try:
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        url = url_of(bucket, path)
        ds = arrowsmith.ray.read(url, target_rows=7, storage_options=s3_options)
        got = pa.concat_tables(ray.get(ds.to_arrow_refs()))
        want = arrowsmith.read(path)
        assert got.to_pylist() == want.to_pylist()
        # Writing is into a directory; a URL is refused rather than taken for "s3:/bucket/…".
        with pytest.raises(arrowsmith.UnsupportedError, match="URL"):
            arrowsmith.ray.write(ds, "s3://%s/ray-out" % bucket, format="jay")
    finally:
        ray.shutdown()


@pytest.mark.parametrize("scheduler,context", [
    ("threads", None),
    ("processes", "spawn"),
    # Forked after this process's store runtime ran the listing: the child builds its own.
    ("processes", "fork"),
])
def test_remote_dask_read_equals_local(bucket, s3_options, scheduler, context):
    dask = pytest.importorskip("dask")
    pytest.importorskip("dask.dataframe")
    import arrowsmith.dask

    path = DATA / "jay" / "all_types.jay"
    url = url_of(bucket, path)
    frame = arrowsmith.dask.read(url, target_rows=2, storage_options=s3_options)
    local = arrowsmith.dask.read(path, target_rows=2)
    assert frame.npartitions == local.npartitions > 1
    settings = {"scheduler": scheduler, "num_workers": 2}
    if context is not None:
        settings["multiprocessing.context"] = context
    with dask.config.set(settings):
        got = frame.compute()
    with dask.config.set(scheduler="synchronous"):
        want = local.compute()
    assert got.equals(want)


# --- What each task of a distributed read fetches ---------------------------------------------

# Rows, and rows per fragment, of the counted inputs: 8 fragments of a few hundred KiB each
# (about 4 MiB of Jay, 2 MiB of DataSeries or bcolz).
COUNTED_ROWS = 80_000
COUNTED_TARGET_ROWS = 10_000
# What a task may fetch beyond its fragment's bytes: the header, footer or index it reads to
# find the fragment, and the gaps under 4 KiB that the reader merges into one request.
SLACK_PER_TASK = 64 * 1024


def counted_table():
    """Integers, floats and strings, deterministic, that do not compress much."""
    mixed = [(i ^ 0x5DEECE66D) * 2654435761 % (1 << 61) for i in range(COUNTED_ROWS)]
    return pa.table({
        "id": pa.array(range(COUNTED_ROWS), pa.int64()),
        "mixed": pa.array(mixed, pa.int64()),
        "ratio": pa.array([m / 7.0 for m in mixed], pa.float64()),
        "label": pa.array(["row-%d-%x" % (i, m) for i, m in enumerate(mixed)]),
    })


@pytest.fixture(scope="module")
def counted_inputs(counted_s3, tmp_path_factory):
    """A Jay file, a DataSeries file and a bcolz ctable of counted_table, written locally and
    uploaded to the counting server: ``(local path, URL)`` by extension."""
    bucket = "arrowsmith-counted-" + uuid.uuid4().hex[:8]
    client = s3_client_for(counted_s3.endpoint)
    client.create_bucket(Bucket=bucket)
    directory = tmp_path_factory.mktemp("counted")
    table = counted_table()
    inputs = {}
    for name, write_options in (("table.jay", {}),
                                ("table.ds", {"extent_size": 64 * 1024}),
                                ("table.bcolz", {"bcolz_chunklen": 5_000})):
        path = directory / name
        arrowsmith.write(table, path, **write_options)
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            client.upload_file(str(file), bucket, str(file.relative_to(directory)))
        inputs[path.suffix] = (path, "s3://%s/%s" % (bucket, name))
    return inputs


def stored_bytes(path):
    """The bytes of a file, or of every file of a dataset directory."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def assert_fetched_only_fragments(counted_s3, url, path, fragments):
    """The requests since counted_s3.mark() fetched (response bodies) at most 1.25 x the input
    + 64 KiB per fragment and for the listing, well under the fragments x the input that a whole-input read
    per task fetches, and no GET was longer than a fragment (plus the slack): a file's object
    is read by byte ranges, a dataset's chunk objects (each smaller than a fragment) whole."""
    size = stored_bytes(path)
    key = "/" + url.split("/", 2)[2]  # the path of s3://bucket/key on the server
    requests = counted_s3.requests()
    gets = [r for r in requests
            if r["method"] == "GET" and (r["path"] == key or r["path"].startswith(key + "/"))]
    assert gets, "no GET of %s reached the server" % url
    bound = 1.25 * size + (len(fragments) + 1) * SLACK_PER_TASK
    # The bound must be one that a whole-input read per fragment breaks.
    assert len(fragments) >= 4 and bound < 0.5 * len(fragments) * size
    fetched = sum(r["bytes"] for r in requests)
    assert fetched <= bound, (
        "%d bytes fetched in %d requests for %d fragments of %d bytes (bound %d)"
        % (fetched, len(requests), len(fragments), size, bound))
    longest = max(f.bytes for f in fragments) + SLACK_PER_TASK
    assert longest < size
    for get in gets:
        if get["range"]:
            first, last = get["range"].removeprefix("bytes=").split("-")
            assert get["status"] == 206 and get["bytes"] == int(last) - int(first) + 1, get
        else:
            # A dataset's reader probes for the markers of each kind of dataset (404s).
            assert path.is_dir() and get["status"] in (200, 404), get
        assert get["bytes"] <= longest, get
    return fetched


def assert_fragments_equal_local(got, fragments):
    """``got`` (an Arrow table of the read, in order) holds each local fragment's rows at its
    place."""
    assert got.num_rows == COUNTED_ROWS
    offset = 0
    for fragment in fragments:
        want = pa.table(arrowsmith.open_fragment(fragment).read_all())
        assert got.slice(offset, want.num_rows).to_pylist() == want.to_pylist(), fragment.index
        offset += want.num_rows
    assert offset == COUNTED_ROWS


@pytest.mark.parametrize("suffix", [".jay", ".ds", ".bcolz"])
@pytest.mark.parametrize("scheduler", ["threads", "processes"])
def test_dask_tasks_fetch_only_their_fragments(counted_s3, counted_inputs, suffix, scheduler):
    dask = pytest.importorskip("dask")
    pytest.importorskip("dask.dataframe")
    import arrowsmith.dask

    path, url = counted_inputs[suffix]
    options = s3_options_for(counted_s3.endpoint)
    fragments = arrowsmith.fragments(path, target_rows=COUNTED_TARGET_ROWS)
    counted_s3.mark()
    frame = arrowsmith.dask.read(url, target_rows=COUNTED_TARGET_ROWS, storage_options=options)
    assert frame.npartitions == len(fragments)
    with dask.config.set({"scheduler": scheduler, "num_workers": 2}):
        got = frame.compute()
    assert_fetched_only_fragments(counted_s3, url, path, fragments)
    assert_fragments_equal_local(pa.Table.from_pandas(got, preserve_index=False), fragments)


def test_ray_tasks_fetch_only_their_fragments(counted_s3, counted_inputs):
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    import arrowsmith.ray

    options = s3_options_for(counted_s3.endpoint)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False, namespace="arrowsmith-remote-counted-tests")
    try:
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        for suffix in (".jay", ".ds", ".bcolz"):
            path, url = counted_inputs[suffix]
            fragments = arrowsmith.fragments(path, target_rows=COUNTED_TARGET_ROWS)
            counted_s3.mark()
            ds = arrowsmith.ray.read(url, target_rows=COUNTED_TARGET_ROWS,
                                     storage_options=options)
            got = pa.concat_tables(ray.get(ds.to_arrow_refs()))
            assert_fetched_only_fragments(counted_s3, url, path, fragments)
            assert_fragments_equal_local(got, fragments)
    finally:
        ray.shutdown()


def test_a_url_is_shown_without_its_credentials():
    """A signed URL's query string and an http(s) URL's userinfo are credentials: reprs and
    ``source`` leave them out (no server needed: a fragment is plain data)."""
    local = arrowsmith.fragments(DATA / "jay" / "tiny.jay")[0]
    fields = json.loads(local.to_json())
    fields["path"] = "https://user:%s@example.com/data/tiny.jay?X-Amz-Signature=%s" % (
        S3_SECRET, S3_SECRET)
    fragment = arrowsmith.Fragment(json.dumps(fields))
    assert fragment.source == "https://example.com/data/tiny.jay"
    assert_no_secret(repr(fragment), fragment.source)
    fields["path"] = "s3://bucket/data/tiny.jay#%s" % S3_SECRET
    assert arrowsmith.Fragment(json.dumps(fields)).source == "s3://bucket/data/tiny.jay"
