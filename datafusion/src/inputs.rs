//! One opened core [`Input`] per file, shared by what DataFusion asks of that file: its schema,
//! its statistics, its fragments and the scan of each fragment.
//!
//! Schema inference, statistics and planning are separate calls on a `FileFormat`, made at
//! different times, so the format keeps its inputs in an [`InputCache`] keyed by path (or URL)
//! and stamped with the file's size and modification time (a remote object's, and its ETag, as
//! its store listed them): a file replaced or appended to is opened again. A plan carries each file's input in its scan entries (see
//! `source::FragmentOf`), so all of a file's partitions read the one input, whatever the
//! cache holds by then.
//!
//! Two kinds of input are not kept between calls, only within one plan: a directory (a bcolz
//! table, a Filo set), whose own size and time do not change when a file inside it does, and
//! a VS file, whose opened input holds the shared lock that VS writers wait for
//! ([`Input::holds_lock`]).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use arrowsmith::source::is_url;
use arrowsmith::{Format, Input};

use crate::options::{ArrowsmithOptions, Scan};

/// What identifies one version of a file: its size, modification time and, for a remote
/// object, its ETag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub size: u64,
    pub modified: Option<SystemTime>,
    pub version: Option<String>,
}

/// The opened inputs of one table or format, by path.
#[derive(Default)]
pub(crate) struct InputCache {
    inputs: Mutex<HashMap<PathBuf, (Stamp, Input)>>,
}

impl fmt::Debug for InputCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let held = self.inputs.lock().map_or(0, |inputs| inputs.len());
        write!(f, "InputCache({held} inputs)")
    }
}

impl InputCache {
    /// The input of `path` (a local path or a URL) read as `format` with `options`: the one
    /// kept, if the file has not changed since it was opened, else a newly opened one (kept
    /// when it may be). `listed` is a remote object's stamp as its store listed it; a remote
    /// input without one is not kept.
    pub(crate) fn input(
        &self,
        path: &Path,
        listed: Option<&Stamp>,
        format: Format,
        options: &ArrowsmithOptions,
    ) -> arrowsmith::Result<Input> {
        let stamp = if is_url(path) {
            listed.cloned()
        } else {
            stamp(path)
        };
        if let Some(stamp) = &stamp {
            let inputs = self.inputs.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((kept, input)) = inputs.get(path) {
                if kept == stamp {
                    return Ok(input.clone());
                }
            }
        }
        let input = open(path, format, options)?;
        if let Some(stamp) = stamp.filter(|_| !input.holds_lock()) {
            let mut inputs = self.inputs.lock().unwrap_or_else(|e| e.into_inner());
            inputs.insert(path.to_path_buf(), (stamp, input.clone()));
        }
        Ok(input)
    }
}

/// The stamp of a file whose input may be kept; `None` for a directory (see the module
/// documentation) or a path that cannot be looked at.
fn stamp(path: &Path) -> Option<Stamp> {
    let metadata = std::fs::metadata(path).ok()?;
    if !metadata.is_file() {
        return None;
    }
    Some(Stamp {
        size: metadata.len(),
        modified: metadata.modified().ok(),
        version: None,
    })
}

/// Opens `path` (a local path or a URL) as `format` with the table's read settings.
pub(crate) fn open(
    path: &Path,
    format: Format,
    options: &ArrowsmithOptions,
) -> arrowsmith::Result<Input> {
    #[cfg(test)]
    tests::OPENED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(path.to_path_buf());
    Input::open(path, &options.read_options(path, format, &Scan::default()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, AsArray, Int64Array, RecordBatch, RecordBatchIterator};
    use arrow::datatypes::Int64Type;
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;
    use crate::SessionContextArrowsmithExt;

    /// Every path opened, by every thread (openings run on tokio's blocking pool); a test
    /// looks at those under its own directory.
    pub(super) static OPENED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

    fn opened_under(dir: &Path) -> Vec<PathBuf> {
        let opened = OPENED.lock().unwrap_or_else(|e| e.into_inner());
        let mut under: Vec<PathBuf> = opened
            .iter()
            .filter(|p| p.starts_with(dir))
            .cloned()
            .collect();
        under.sort();
        under
    }

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../data")
            .join(name)
    }

    #[test]
    fn a_kept_input_is_reused_until_its_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jay");
        std::fs::copy(fixture("jay/tiny.jay"), &path).unwrap();
        let cache = InputCache::default();
        let options = ArrowsmithOptions::default();
        let first = cache.input(&path, None, Format::Jay, &options).unwrap();
        let again = cache.input(&path, None, Format::Jay, &options).unwrap();
        assert_eq!(opened_under(dir.path()).len(), 1);
        assert_eq!(first.schema(), again.schema());

        // Another version of the file (another size) is opened afresh.
        std::fs::copy(fixture("jay/all_types.jay"), &path).unwrap();
        let changed = cache.input(&path, None, Format::Jay, &options).unwrap();
        assert_eq!(opened_under(dir.path()).len(), 2);
        assert_ne!(changed.schema(), first.schema());

        // A VS input holds the lock writers wait for: it is not kept between calls.
        let vs = dir.path().join("t.vs");
        std::fs::copy(fixture("vs/f64_r1_plain.vs"), &vs).unwrap();
        let input = cache.input(&vs, None, Format::Vs, &options).unwrap();
        assert!(input.holds_lock());
        drop(input);
        cache.input(&vs, None, Format::Vs, &options).unwrap();
        assert_eq!(opened_under(dir.path()).len(), 4);
    }

    /// Writes a DataSeries file of many small extents, so that it splits into many fragments.
    fn many_extents(path: &Path) {
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..20_000));
        let batch = RecordBatch::try_from_iter([("id", ids)]).unwrap();
        let mut options = arrowsmith::WriteOptions::default();
        options.dataseries = options.dataseries.with_extent_size(8 * 1024);
        let reader = RecordBatchIterator::new([Ok(batch.clone())], batch.schema());
        arrowsmith::write_all(reader, path, &options).unwrap();
    }

    #[tokio::test]
    async fn a_scan_of_many_partitions_opens_each_file_once() {
        let dir = tempfile::tempdir().unwrap();
        let paths = [dir.path().join("a.ds"), dir.path().join("b.ds")];
        // One file twice: a file's extent type is named after it, and a table's files share one.
        many_extents(&paths[0]);
        std::fs::copy(&paths[0], &paths[1]).unwrap();
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(8));
        ctx.register_arrowsmith().unwrap();
        let sql = format!(
            "CREATE EXTERNAL TABLE t STORED AS DATASERIES LOCATION '{}/'",
            dir.path().display()
        );
        ctx.sql(&sql).await.unwrap().collect().await.unwrap();
        let plan = ctx
            .sql("SELECT sum(id) AS s FROM t")
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let text = datafusion::physical_plan::displayable(plan.as_ref())
            .indent(false)
            .to_string();
        let batches = datafusion::physical_plan::collect(plan, ctx.task_ctx())
            .await
            .unwrap();
        let sum = batches[0].column(0).as_primitive::<Int64Type>().value(0);
        assert_eq!(sum, 2 * (0..20_000i64).sum::<i64>());
        let groups: usize = text
            .split("file_groups={")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no file groups in the plan:\n{text}"));
        assert_eq!(groups, 8, "{text}");
        // Schema inference, statistics, fragment listing and eight partitions: one opening
        // of each file.
        assert_eq!(opened_under(dir.path()), paths, "{text}");
    }
}
