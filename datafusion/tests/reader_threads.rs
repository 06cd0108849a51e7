//! With a rayon pool of one thread (`RAYON_NUM_THREADS=1`), each partition's reader decodes on
//! a thread of its own instead of queueing behind the process's one pool thread, so a scan
//! goes faster with more partitions. A binary of its own: the process's pool is built here
//! with one thread, before anything else uses it.

use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Array, Float64Array, Int64Array, RecordBatch, RecordBatchIterator};
use arrowsmith::WriteOptions;
use arrowsmith_datafusion::SessionContextArrowsmithExt;
use datafusion::prelude::{SessionConfig, SessionContext};

const ROWS: i64 = 300_000;

/// Writes `ROWS` rows of `id` and `value` as the format of `path`'s extension, in many of its
/// units (DataSeries extents, bcolz chunks), so that two partitions get a share each.
fn write(path: &Path) {
    let ids = Int64Array::from_iter_values(0..ROWS);
    let values = Float64Array::from_iter_values((0..ROWS).map(|i| i as f64 * 0.5));
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(ids) as Arc<dyn Array>),
        ("value", Arc::new(values) as Arc<dyn Array>),
    ])
    .unwrap();
    let mut options = WriteOptions {
        compression: Some("lz4".into()),
        ..Default::default()
    };
    if path.extension().is_some_and(|e| e != "ds") {
        options.compression = None;
    }
    options.dataseries = options.dataseries.with_extent_size(64 * 1024);
    options.bcolz = options.bcolz.with_chunklen(16_384);
    let reader = RecordBatchIterator::new([Ok(batch.clone())], batch.schema());
    arrowsmith::write_all(reader, path, &options).unwrap();
}

async fn sum_of_ids(path: &Path) -> i64 {
    let config = SessionConfig::new().with_target_partitions(2);
    let ctx = SessionContext::new_with_config(config);
    ctx.register_arrowsmith().unwrap();
    let plan = ctx
        .sql(&format!("EXPLAIN SELECT sum(id) FROM '{}'", path.display()))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let plan = arrow::util::pretty::pretty_format_batches(&plan)
        .unwrap()
        .to_string();
    assert!(plan.contains("file_groups={2 groups"), "{plan}");
    let sql = format!("SELECT sum(id) AS s FROM '{}'", path.display());
    let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    let column = batches[0].column(0);
    column
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("sum(id) is an Int64")
        .value(0)
}

#[test]
fn with_a_one_thread_pool_each_partition_decodes_on_a_thread_of_its_own() {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global()
        .expect("this binary builds the process's rayon pool first");
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<_> = ["t.ds", "t.jay", "t.bcolz"]
        .iter()
        .map(|name| dir.path().join(name))
        .collect();
    for path in &paths {
        write(path);
    }

    // The process's one pool thread stays busy until the scans are done: a reader whose
    // decoding queued behind it would never finish.
    let (release, held) = mpsc::channel::<()>();
    rayon::spawn(move || {
        let _ = held.recv();
    });
    let (done, answers) = mpsc::channel();
    let scanned = paths.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        for path in &scanned {
            let sum = runtime.block_on(sum_of_ids(path));
            done.send((path.clone(), sum)).unwrap();
        }
    });
    for path in &paths {
        let (scanned, sum) = answers
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| {
                panic!(
                    "the scan of {} did not finish: its readers queued behind the busy pool thread",
                    path.display()
                )
            });
        assert_eq!(&scanned, path);
        assert_eq!(sum, ROWS * (ROWS - 1) / 2, "{}", path.display());
    }
    release.send(()).unwrap();
}
