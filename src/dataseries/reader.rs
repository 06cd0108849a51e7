//! DataSeries → Arrow: `ReaderBuilder` → `Reader`, one extent type at a time, extents decoded in
//! parallel and yielded in file order.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::{mpsc, Arc};

use arrow_array::{RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_buffer::Buffer;
use arrow_schema::{ArrowError, SchemaRef};
use rayon::prelude::*;

use super::buffers::SpareBuffers;
use super::checksum;
use super::extent::{decode_raw_group, Checks, ExtentHeader, RawExtent};
use super::file::{DsFile, ExtentEntry, OpenOptions, FETCH_BYTES};
use super::mapping::{Decoder, Utf8Fields};
use super::read_options::ReaderOptions;
use super::types::ExtentType;
use crate::error::{Error, ErrorClass, Result};
use crate::salvage::{Salvage, SalvageReport, Skipped};
use crate::scan::{group_units, FragmentRange, FragmentSpan, ScanOptions, Unit};

/// Builds a [`Reader`] of one extent type of a DataSeries file.
#[derive(Debug, Clone)]
pub struct ReaderBuilder {
    scan: ScanOptions,
    type_name: Option<String>,
    utf8: Utf8Fields,
    checks: Checks,
}

impl Default for ReaderBuilder {
    fn default() -> Self {
        ReaderBuilder {
            scan: ScanOptions::default(),
            type_name: None,
            utf8: Utf8Fields::Hinted,
            checks: Checks::ALL,
        }
    }
}

impl ReaderBuilder {
    /// A builder with every option at its default: at most 65,536 rows per batch
    /// ([`DEFAULT_BATCH_SIZE`](crate::DEFAULT_BATCH_SIZE); a batch never spans two extents, so
    /// smaller extents give smaller batches), every column, the file's one data-holding extent
    /// type, checks on.
    pub fn new() -> Self {
        Self::default()
    }

    crate::scan::scan_setters!();

    /// The extent type to read (needed when the file declares several; default: the file's one
    /// data-holding type).
    pub fn with_type(mut self, name: impl Into<String>) -> Self {
        self.type_name = Some(name.into());
        self
    }
    /// Reads every variable32 field as Utf8 (validated). Default: only the fields whose XML says
    /// `arrow_type="utf8"`; the others are Binary.
    pub fn with_utf8_all(mut self) -> Self {
        self.utf8 = Utf8Fields::All;
        self
    }
    /// Reads these variable32 fields as Utf8 (validated), besides those the XML marks (default:
    /// only those).
    pub fn with_utf8<S: Into<String>>(mut self, fields: impl IntoIterator<Item = S>) -> Self {
        self.utf8 = Utf8Fields::Named(fields.into_iter().map(Into::into).collect());
        self
    }
    /// Turns the adler32, hash and variable32 checks on (default) or off.
    pub fn with_checks(mut self, on: bool) -> Self {
        self.checks = if on { Checks::ALL } else { Checks::NONE };
        self
    }
    /// The extent type, Utf8 fields and checks at once (default: [`ReaderOptions::default`]).
    pub fn with_options(mut self, options: &ReaderOptions) -> Self {
        self.type_name = options.type_name.clone();
        self.utf8 = options.utf8.clone();
        self.with_checks(!options.no_checks)
    }
    fn salvaging(&self) -> bool {
        self.scan.salvage
    }

    /// Opens and memory-maps the file at `path` and returns a reader of one extent type.
    pub fn build(self, path: impl AsRef<Path>) -> Result<Reader> {
        let path = path.as_ref();
        let file = DsFile::open(
            path,
            OpenOptions {
                checks: self.checks,
                lenient: self.salvaging(),
            },
        )?;
        self.build_from_file(Arc::new(file))
    }

    /// Returns a reader of a file held in memory. A `Vec<u8>` is taken over without a copy.
    pub fn build_from_bytes(self, bytes: impl Into<arrow_buffer::Buffer>) -> Result<Reader> {
        let file = DsFile::from_bytes(
            crate::scan::owned_bytes(bytes),
            OpenOptions {
                checks: self.checks,
                lenient: self.salvaging(),
            },
        )?;
        self.build_from_file(Arc::new(file))
    }

    /// Returns a reader of a file already opened, without reading its header and index again.
    pub fn build_from_file(self, file: Arc<DsFile>) -> Result<Reader> {
        let t = choose_type(&file, self.type_name.as_deref()).map_err(|e| file.err(e))?;
        let names: Vec<&str> = t
            .visible
            .iter()
            .map(|&i| t.fields[i].name.as_str())
            .collect();
        let columns = match &self.scan.projection {
            Some(p) => p.resolve(names.iter().copied()).map_err(|e| file.err(e))?,
            None => (0..names.len()).collect(),
        };
        let decoder = Decoder::new(
            t.clone(),
            file.order,
            &self.utf8,
            columns,
            self.checks.variable32,
        );
        let (from, to) = match self.scan.range {
            None | Some(FragmentRange::Whole) => (0, u64::MAX),
            Some(FragmentRange::Bytes { start, end }) => (start, end),
            Some(other) => return Err(file.err(other.wrong_unit("DataSeries", "extent offsets"))),
        };
        let salvage = Salvage {
            on: self.salvaging(),
            ..Salvage::from_scan(&self.scan)
        };
        let wanted = wanted_extents(&file, &t.name, from..to, self.scan.limit, salvage.on)?;
        if salvage.on {
            // What the open already found damaged: the index, and extents of this type (or of
            // no type one can tell) that the scan could not read, within the fragment.
            for (type_name, skipped) in &file.damaged {
                let ours = type_name.as_ref().is_none_or(|n| *n == t.name);
                let inside = skipped.offset.is_none_or(|o| (from..to).contains(&o));
                if ours && inside {
                    let mut skipped = skipped.clone();
                    skipped.reason = file.err(skipped.reason);
                    salvage.push(skipped);
                }
            }
        }
        Ok(Reader {
            job: Arc::new(ExtentJob {
                file,
                decoder: Arc::new(decoder),
                batch_size: Some(self.scan.batch_size_or(crate::DEFAULT_BATCH_SIZE)),
                checks: self.checks,
                // Two parts an extent, for the groups in flight.
                spare: SpareBuffers::new(2 * MAX_GROUP * Reader::window()),
            }),
            to_fetch: wanted.into(),
            extents: VecDeque::new(),
            in_flight: VecDeque::new(),
            pending: VecDeque::new(),
            remaining: self.scan.limit.unwrap_or(usize::MAX),
            salvage,
            failed: false,
        })
    }
}

/// An extent a reader is to read: where the index puts it, and its header when the file has
/// read it (else it is read with the extent's bytes).
#[derive(Debug, Clone)]
struct Wanted {
    index: usize,
    entry: ExtentEntry,
    header: Option<ExtentHeader>,
}

/// The extents of type `name` starting in `offsets`, in file order. With a `limit` (and not
/// salvaging, where a skipped extent needs the next in its place), the headers are read for
/// their row counts and the list stops at the extent that reaches the limit.
fn wanted_extents(
    file: &DsFile,
    name: &str,
    offsets: std::ops::Range<u64>,
    limit: Option<usize>,
    salvaging: bool,
) -> Result<Vec<Wanted>> {
    let limit = limit.filter(|_| !salvaging);
    let headers = match limit {
        Some(_) => Some(file.extents()?),
        None => file.extents_read(),
    };
    let mut wanted: Vec<Wanted> = file
        .entries()
        .iter()
        .enumerate()
        .filter(|(_, e)| e.type_name == name && offsets.contains(&e.offset))
        .map(|(index, entry)| Wanted {
            index,
            entry: entry.clone(),
            header: headers.map(|h| h[index].clone()),
        })
        .filter(|w| w.header.as_ref().is_none_or(|h| h.rows > 0))
        .collect();
    if let Some(limit) = limit {
        let mut rows = 0usize;
        let needed = wanted
            .iter()
            .position(|w| {
                rows = rows.saturating_add(w.header.as_ref().map_or(0, |h| h.rows));
                rows >= limit
            })
            .map_or(wanted.len(), |i| i + 1);
        wanted.truncate(if limit == 0 { 0 } else { needed });
    }
    Ok(wanted)
}

/// Picks the type to read (§20.1).
pub fn choose_type(file: &DsFile, wanted: Option<&str>) -> Result<Arc<ExtentType>> {
    let list = |file: &DsFile| {
        file.types
            .iter()
            .map(|t| format!("{:?}", t.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match wanted {
        Some(name) => file.find_type(name).cloned().ok_or_else(|| {
            Error::invalid_argument(format!(
                "no extent type named {name:?}; the file declares {}",
                list(file)
            ))
        }),
        None => {
            let c = file.candidate_types();
            match c.len() {
                1 => Ok(c[0].clone()),
                0 if file.types.len() == 1 => Ok(file.types[0].clone()),
                _ => Err(Error::invalid_argument(format!(
                    "the file declares several extent types; choose one with the type option: {}",
                    list(file)
                ))
                .with_setting("type")
                .with_setting_kind(crate::error::SettingKind::Read)),
            }
        }
    }
}

/// An opened DataSeries file with the extent type its rows are read from: a file holds
/// extents of several types, and its rows, fragments and reads are those of one.
#[derive(Clone)]
pub struct TypedFile {
    file: Arc<DsFile>,
    extent_type: Arc<ExtentType>,
}

impl TypedFile {
    /// `file` read as the extent type `type_name`, or as its one type that holds data when
    /// `None` (see [`choose_type`]).
    ///
    /// Reads the file's extent headers, for the row counts (one batched read, when the open
    /// did not read them).
    pub fn new(file: Arc<DsFile>, type_name: Option<&str>) -> Result<TypedFile> {
        let extent_type = choose_type(&file, type_name).map_err(|e| file.err(e))?;
        file.extents()?;
        Ok(TypedFile { file, extent_type })
    }

    /// The opened file.
    pub fn file(&self) -> &Arc<DsFile> {
        &self.file
    }

    /// The extent type read.
    pub fn extent_type(&self) -> &ExtentType {
        &self.extent_type
    }

    /// The rows of the extent type, from the extent headers.
    pub fn rows(&self) -> u64 {
        self.headers().map(|e| e.rows as u64).sum()
    }

    /// The headers of the extents of the type, read when the `TypedFile` was made.
    fn headers(&self) -> impl Iterator<Item = &ExtentHeader> {
        let name = &self.extent_type.name;
        self.file
            .extents_read()
            .unwrap_or_default()
            .iter()
            .filter(move |e| e.type_name == *name)
    }
}

/// The fragments of one extent type: runs of its extents (by byte offset) of about
/// `target_rows` rows each, read from the extent headers alone.
pub fn fragments(typed: &TypedFile, target_rows: usize) -> Result<Vec<FragmentSpan>> {
    let units = typed.headers().filter(|e| e.rows > 0).map(|e| Unit {
        start: e.offset,
        end: e.offset + 1,
        rows: e.rows as u64,
        bytes: e.len as u64,
    });
    let spans = group_units(
        units,
        target_rows,
        |start, end| FragmentRange::Bytes { start, end },
        FragmentRange::Bytes { start: 0, end: 0 },
    );
    Ok(spans)
}

/// What decoding one extent needs, shared with the threads that decode.
struct ExtentJob {
    file: Arc<DsFile>,
    decoder: Arc<Decoder>,
    batch_size: Option<usize>,
    checks: Checks,
    /// Buffers of decoded extents' parts, for later extents to decompress into.
    spare: SpareBuffers,
}

type Decoded = Result<RecordBatch>;

impl ExtentJob {
    /// Decodes a group of extents, their fixed parts hashed together, and hands each
    /// extent's result to `done` as soon as it has it (a consumer frees a result it is through
    /// with while the rest of the group decodes: the allocator had returned the memory of
    /// whole groups to the kernel, and the next group page-faulted it in again).
    fn decode(&self, extents: &[(ExtentHeader, Buffer)], mut done: impl FnMut(Decoded)) {
        let raws = decode_raw_group(
            extents,
            self.file.order,
            &self.decoder.t,
            self.checks,
            &self.spare,
        );
        for ((h, _), raw) in extents.iter().zip(raws) {
            done(raw.and_then(|raw| {
                let batch = self.batch(h, &raw);
                for part in [raw.fixed, raw.var] {
                    if let Cow::Owned(buffer) = part {
                        self.spare.give(buffer);
                    }
                }
                batch
            }));
        }
    }

    /// The extent's rows as one batch; `Reader::next` cuts it to the batch size as it is taken
    /// (an extent of a type without fields holds any number of rows in no bytes: cut up front,
    /// 2^31 rows made hundreds of millions of batches for `head -n 10`).
    fn batch(&self, h: &ExtentHeader, raw: &RawExtent) -> Decoded {
        let cols = self
            .decoder
            .decode(raw)
            .map_err(|e| e.at_offset(h.offset))?;
        let options = RecordBatchOptions::new().with_row_count(Some(raw.rows));
        Ok(RecordBatch::try_new_with_options(
            self.decoder.schema.clone(),
            cols,
            &options,
        )?)
    }
}

/// The most extents a job decodes: the lanes of one vectorised lookup2 of their fixed parts.
const MAX_GROUP: usize = checksum::LOOKUP2_LANES;

/// The most bytes (fixed and variable parts unpacked) a group of more than one extent holds:
/// eight of the usual 1 MiB extents, fewer of larger ones, so that memory stays bounded.
const GROUP_BYTES: usize = 8 << 20;

/// Record batches of one extent type, in file order.
///
/// Extents decode on the rayon pool while earlier ones are consumed, in groups of up to
/// eight whose fixed parts are hashed together (the hash of one extent alone, a chain of
/// dependent steps, had been a third of a read): one group per thread and one more are in
/// flight (decoded or decoding), so memory stays bounded by a few groups of extents. Groups
/// shrink towards the end of the extents, so that the threads finish together.
pub struct Reader {
    job: Arc<ExtentJob>,
    /// Extents still to be read from the source, in file order.
    to_fetch: VecDeque<Wanted>,
    /// Extents read and not yet handed to the pool, with their bytes.
    extents: VecDeque<(ExtentHeader, Buffer)>,
    /// Groups of extents handed to the pool, in file order, each with the extents whose
    /// results are still to come and where they arrive, in order.
    in_flight: VecDeque<(VecDeque<ExtentHeader>, mpsc::Receiver<Decoded>)>,
    pending: VecDeque<RecordBatch>,
    remaining: usize,
    salvage: Salvage,
    failed: bool,
}

impl Reader {
    /// The opened file.
    pub fn file(&self) -> &Arc<DsFile> {
        &self.job.file
    }
    /// The extent type being read.
    pub fn extent_type(&self) -> &Arc<ExtentType> {
        &self.job.decoder.t
    }
    /// What a salvaging (lenient) reader skipped so far.
    pub fn skipped(&self) -> Vec<Skipped> {
        self.salvage.report.skipped()
    }

    /// Where this reader records what it skips when salvaging.
    pub fn salvage_report(&self) -> &SalvageReport {
        &self.salvage.report
    }

    /// Groups in flight at once: one a thread, and one queued for the first thread done.
    fn window() -> usize {
        rayon::current_num_threads().max(1) + 1
    }

    /// The next group of extents: as many as leave every thread two groups' worth of the
    /// rest, at most [`MAX_GROUP`] and [`GROUP_BYTES`] unpacked (at least one).
    fn next_group(&mut self) -> Vec<(ExtentHeader, Buffer)> {
        let most =
            (self.extents.len() / (2 * rayon::current_num_threads().max(1))).clamp(1, MAX_GROUP);
        let record_size = self.job.decoder.t.record_size;
        let mut bytes = 0usize;
        let size = self
            .extents
            .iter()
            .take(most)
            .take_while(|(h, _)| {
                bytes = bytes.saturating_add(h.rows.saturating_mul(record_size) + h.vs);
                bytes <= GROUP_BYTES
            })
            .count()
            .max(1)
            .min(self.extents.len());
        self.extents.drain(..size).collect()
    }

    /// Reads the next extents from the source when none are left read: in one batched call,
    /// all the rest of a local file or of a fragment, or up to [`FETCH_BYTES`] of them.
    fn fetch(&mut self) -> Result<()> {
        if !self.extents.is_empty() || self.to_fetch.is_empty() {
            return Ok(());
        }
        let file = Arc::clone(&self.job.file);
        let most = if file.source().is_local() {
            usize::MAX
        } else {
            FETCH_BYTES
        };
        let mut bytes = 0usize;
        let count = self
            .to_fetch
            .iter()
            .take_while(|w| {
                let first = bytes == 0;
                bytes = bytes.saturating_add(w.entry.len);
                first || bytes <= most
            })
            .count();
        let window: Vec<Wanted> = self.to_fetch.drain(..count).collect();
        let ranges: Vec<std::ops::Range<u64>> = window
            .iter()
            .map(|w| w.entry.offset..w.entry.offset + w.entry.len as u64)
            .collect();
        // A failed request is said of the first extent it asked for.
        let first = ranges.first().map_or(0, |r| r.start);
        let buffers = file.read_ranges(&ranges).map_err(|e| e.at_offset(first))?;
        for (w, bytes) in window.into_iter().zip(buffers) {
            let header = match w.header {
                Some(h) => h,
                None => match file.header_of(w.index, &w.entry, &bytes) {
                    Ok(h) => h,
                    Err(e) => {
                        self.take(w.entry.offset, None, Err(e))?;
                        continue;
                    }
                },
            };
            if header.rows > 0 {
                self.extents.push_back((header, bytes));
            }
        }
        Ok(())
    }

    /// Keeps the window of groups decoding in the background full.
    fn launch(&mut self) -> Result<()> {
        while self.in_flight.len() < Self::window() {
            self.fetch()?;
            if self.extents.is_empty() {
                break;
            }
            let group = self.next_group();
            let (tx, rx) = mpsc::sync_channel(group.len());
            let headers = group.iter().map(|(h, _)| h.clone()).collect();
            let job = self.job.clone();
            rayon::spawn(move || {
                // A receiver gone means the reader was dropped: nobody wants the results.
                job.decode(&group, |r| {
                    let _ = tx.send(r);
                });
            });
            self.in_flight.push_back((headers, rx));
        }
        Ok(())
    }

    /// Takes the result of the extent at `offset` (of `rows` rows, when its header was read).
    fn take(&mut self, offset: u64, rows: Option<usize>, r: Decoded) -> Result<()> {
        match r {
            Ok(batch) => self.pending.push_back(batch),
            Err(e) if self.salvage.on => {
                let file = &self.job.file;
                let name = &self.job.decoder.t.name;
                let index = file
                    .entries()
                    .iter()
                    .filter(|x| x.type_name == *name)
                    .position(|x| x.offset == offset);
                let mut skipped = Skipped::new("extent", file.err(e)).at_offset(offset);
                if let Some(rows) = rows {
                    skipped = skipped.with_rows(rows as u64);
                }
                if let Some(i) = index {
                    skipped = skipped.with_index(i as u64);
                }
                self.salvage.push(skipped);
            }
            Err(e) => return Err(self.job.file.err(e)),
        }
        Ok(())
    }

    fn refill(&mut self) -> Result<()> {
        if rayon::current_thread_index().is_some() && self.in_flight.is_empty() {
            // Called from a pool thread: waiting there for tasks queued on the same pool could
            // deadlock, so decode a window in place (rayon's join lets this thread help).
            self.fetch()?;
            let groups: Vec<Vec<(ExtentHeader, Buffer)>> = (0..Self::window())
                .map(|_| self.next_group())
                .filter(|g| !g.is_empty())
                .collect();
            let job = self.job.clone();
            let results: Vec<Vec<Decoded>> = groups
                .par_iter()
                .map(|g| {
                    let mut results = Vec::with_capacity(g.len());
                    job.decode(g, |r| results.push(r));
                    results
                })
                .collect();
            for (group, results) in groups.iter().zip(results) {
                for ((h, _), r) in group.iter().zip(results) {
                    self.take(h.offset, Some(h.rows), r)?;
                }
            }
            return Ok(());
        }
        self.launch()?;
        if let Some((group, rx)) = self.in_flight.front_mut() {
            let Some(h) = group.pop_front() else {
                self.in_flight.pop_front();
                return Ok(());
            };
            let r = wait(rx).unwrap_or_else(|| {
                Err(Error::new(
                    ErrorClass::BadValue,
                    format!("decoding the extent at offset {} stopped", h.offset),
                ))
            });
            if group.is_empty() {
                self.in_flight.pop_front();
            }
            self.take(h.offset, Some(h.rows), r)?;
            self.launch()?;
        }
        Ok(())
    }
}

/// The result of a decoding task. A pool thread (a reader moved into the pool after it started)
/// must not block: it runs other pool work while it waits, so the task cannot starve behind it.
fn wait(rx: &mpsc::Receiver<Decoded>) -> Option<Decoded> {
    if rayon::current_thread_index().is_none() {
        return rx.recv().ok();
    }
    loop {
        match rx.try_recv() {
            Ok(r) => return Some(r),
            Err(mpsc::TryRecvError::Disconnected) => return None,
            Err(mpsc::TryRecvError::Empty) => {
                if rayon::yield_now() != Some(rayon::Yield::Executed) {
                    std::thread::yield_now();
                }
            }
        }
    }
}

impl Iterator for Reader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.remaining == 0 {
            return None;
        }
        while self.pending.is_empty() {
            if self.extents.is_empty() && self.in_flight.is_empty() && self.to_fetch.is_empty() {
                return None;
            }
            if let Err(e) = self.refill() {
                self.failed = true;
                return Some(Err(e.into()));
            }
        }
        let mut b = self.pending.pop_front()?;
        let size = self
            .job
            .batch_size
            .unwrap_or(usize::MAX)
            .min(self.remaining);
        if b.num_rows() > size {
            self.pending.push_front(b.slice(size, b.num_rows() - size));
            b = b.slice(0, size);
        }
        self.remaining -= b.num_rows();
        Some(Ok(b))
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        self.job.decoder.schema.clone()
    }
}
