"""Decoding runs with the GIL released: Python threads go on while a file is read, and readers
in several threads do not get in each other's way."""
import threading
import time

import pyarrow as pa
import pytest

import arrowsmith

ROWS = 1_500_000


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("threads") / "big.ds"
    ids = pa.array(range(ROWS), pa.int64())
    table = pa.table({"id": ids, "x": pa.compute.multiply(ids, 0.5)})
    arrowsmith.write(table, path, compression="zlib")
    return path


def test_read_in_thread_while_python_runs(big_file):
    reader = arrowsmith.open(big_file)
    result = {}
    started = threading.Event()

    def work():
        started.set()
        # One native call for the whole file: with the GIL held, the loop below would stop.
        result["table"] = pa.table(reader.read_all())

    thread = threading.Thread(target=work)
    thread.start()
    started.wait()
    spins = 0
    begin = time.perf_counter()
    while thread.is_alive():
        spins += 1
    elapsed = time.perf_counter() - begin
    thread.join()
    assert result["table"].num_rows == ROWS
    # The main thread kept running Python for most of the read.
    assert elapsed > 0.05, "the read was too quick to tell (%.3f s)" % elapsed
    assert spins > 10_000, "the main thread ran %d loops in %.2f s" % (spins, elapsed)


def test_threads_share_one_reader(big_file):
    reader = arrowsmith.open(big_file, batch_size=50_000)
    counts = []

    def drain():
        rows = 0
        for batch in reader:
            rows += batch.num_rows
        counts.append(rows)

    threads = [threading.Thread(target=drain) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(counts) == ROWS


def test_many_threads_many_readers(big_file):
    ds = arrowsmith.dataset(big_file, limit=200_000)
    totals = []

    def read():
        totals.append(pa.table(ds).num_rows)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert totals == [200_000] * 4
