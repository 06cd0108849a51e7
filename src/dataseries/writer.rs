//! Arrow → DataSeries (spec §17, §20.4): ExtentType from the schema (or given XML), records packed
//! as the reference packs them, extents compressed in parallel and written in order, then the
//! index and trailer; the file appears at its path only when complete.

mod extent;
mod options;
mod pack;
mod schema;
mod variable;

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow::compute::cast;
use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, BinaryArray, DictionaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use self::extent::{compress, encode, header_bytes, seal, Compressed, Extent, HASH_LANES};
pub use self::options::{Compression, WriterOptions};
use self::schema::{canonical, check_writable, resolve_type};
use self::variable::VarSlice;
use super::buffers::SpareBuffers;
use super::checksum;
use super::codec::Mode;
use super::file::HEADER_LEN;
use super::types::{ExtentType, Kind, INDEX_NAME};
use crate::atomic::{StreamOutput, SINK_NAME};
use crate::error::{Error, ErrorClass, Result};
use crate::pipeline::Pipeline;
use crate::write::{BatchWriter, WriteSummary};

/// Writes record batches into a new DataSeries file.
pub struct Writer {
    file: Option<StreamOutput>,
    t: Arc<ExtentType>,
    canon_schema: SchemaRef,
    options: WriterOptions,
    /// Rows of the extent being filled.
    current: Vec<RecordBatch>,
    current_rows: usize,
    current_var: usize,
    /// Filled extents not yet handed to the pool: they go [`EXTENTS_PER_JOB`] to a job.
    filled: Vec<Vec<RecordBatch>>,
    /// Jobs packing and compressing extents, oldest first.
    pipeline: Pipeline<Result<Vec<Compressed>>>,
    /// Compressed extents, in file order, waiting to be hashed [`HASH_LANES`] at a time.
    unsealed: Vec<Compressed>,
    /// How many jobs may be under way before the caller waits for the oldest.
    max_in_flight: usize,
    /// Buffers of written extents, which the jobs pack and compress into.
    spare: SpareBuffers,
    modes: Arc<[Mode]>,
    offset: u64,
    /// Where the file's writeback was last started up to (see `emit`).
    written_back: u64,
    index: Vec<(u64, String)>,
    chain: u32,
    rows: u64,
    warnings: Vec<String>,
}

impl Writer {
    /// Starts writing a DataSeries file at `path` for batches of `schema`. Nothing appears at
    /// `path` until [`Writer::finish`].
    pub fn try_new(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Writer> {
        let path = path.as_ref();
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "data".into());
        let durable = options.durable;
        let open = || {
            let mut file = StreamOutput::file(path)?;
            file.set_durable(durable);
            Ok(file)
        };
        Writer::start(path, &stem, open, schema, options)
    }

    /// Like [`Writer::try_new`], but the file goes into `sink` (a pipe, a socket, a buffer) as
    /// it is written, the index and trailer last. A failed write may leave part of the file in
    /// the sink. Without a type name in the options or the schema, the type is named `data`.
    pub fn try_new_to_sink(
        sink: impl Write + Send + 'static,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Writer> {
        let sink = StreamOutput::sink(sink);
        Writer::start(Path::new(SINK_NAME), "data", || Ok(sink), schema, options)
    }

    fn start(
        path: &Path,
        stem: &str,
        output: impl FnOnce() -> Result<StreamOutput>,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Writer> {
        let e = |e: Error| e.with_file(path);
        if schema.fields().is_empty() {
            // Rows of no fields take no bytes: nothing would bound an extent's row count.
            return Err(e(Error::invalid_argument(
                "a DataSeries extent type needs at least one field; the input has no columns",
            )));
        }
        if !(1024..=256 << 20).contains(&options.extent_size) {
            return Err(e(Error::invalid_argument(format!(
                "extent size {} is outside 1 KiB ..= 256 MiB",
                options.extent_size
            ))));
        }
        if !(1..=9).contains(&options.level) {
            return Err(e(Error::invalid_argument(format!(
                "compression level {} is outside 1..=9",
                options.level
            ))));
        }
        let t = resolve_type(&schema, &options, stem).map_err(e)?;
        check_writable(&t).map_err(e)?;
        let mut warnings = Vec::new();
        for (i, f) in schema.fields().iter().enumerate() {
            if let DataType::Timestamp(_, Some(tz)) = f.data_type() {
                if tz.as_ref() != "UTC" && tz.as_ref() != "+00:00" {
                    warnings.push(format!(
                        "column {i} {:?}: time zone {tz:?} is not kept (the instants are)",
                        f.name()
                    ));
                }
            }
        }
        let canon_schema = Arc::new(Schema::new(
            t.visible
                .iter()
                .zip(schema.fields())
                .map(|(&i, input)| {
                    let f = &t.fields[i];
                    let packed_as = canonical(f.kind, f.pack_unique, input.data_type());
                    Field::new(&f.name, packed_as, true)
                })
                .collect::<Vec<_>>(),
        ));
        let mut file = output().map_err(e)?;
        let order = options.order;
        let modes: Arc<[Mode]> = options.modes.clone().into();
        let max_in_flight = rayon::current_num_threads().max(1) + 1;
        let mut w = Writer {
            file: None,
            t: Arc::new(t),
            canon_schema,
            options,
            current: Vec::new(),
            current_rows: 0,
            current_var: 4,
            filled: Vec::new(),
            pipeline: Pipeline::new(),
            unsealed: Vec::with_capacity(HASH_LANES),
            // One job per thread and one more keep every thread busy while the caller writes;
            // more would only hold more extents in memory.
            max_in_flight,
            // Up to four buffers (packed and compressed parts) for each extent under way or
            // waiting to be sealed.
            spare: SpareBuffers::new(4 * (EXTENTS_PER_JOB * (max_in_flight + 1) + HASH_LANES)),
            modes,
            offset: 0,
            written_back: 0,
            index: Vec::new(),
            chain: 0,
            rows: 0,
            warnings,
        };
        let out = file.unbuffered().map_err(|x| e(x.into()))?;
        out.write_all(&header_bytes(order))
            .map_err(|x| e(x.into()))?;
        w.offset = HEADER_LEN as u64;
        w.file = Some(file);
        // The XmlType extent: one record holding our type's XML.
        let xml_batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                "xmltype",
                DataType::Binary,
                false,
            )])),
            vec![Arc::new(BinaryArray::from(vec![w.t.xml.as_bytes()]))],
        )?;
        let xt = ExtentType::xmltype();
        let xml_extents = encode(
            &xt,
            &[vec![xml_batch]],
            order,
            &w.modes,
            w.options.level,
            &w.spare,
        )
        .map_err(e)?;
        for extent in xml_extents {
            w.emit(&xt.name, extent).map_err(e)?;
        }
        Ok(w)
    }

    fn path(&self) -> &Path {
        self.file.as_ref().expect("open").name()
    }

    fn emit(&mut self, name: &str, extent: Extent) -> Result<()> {
        let file = self.file.as_mut().expect("open");
        extent.write_to(file.unbuffered()?)?;
        self.index.push((self.offset, name.to_string()));
        let (mut a, mut b, mut c) = (extent.check, self.chain, 1972u32);
        checksum::mix(&mut a, &mut b, &mut c);
        self.chain = c;
        self.offset += extent.len();
        extent.recycle(&self.spare);
        // The disk writes what is done while later extents are packed; the flush at the end
        // then waits for the last few only.
        if self.offset - self.written_back >= WRITEBACK_STEP {
            file.start_writeback(self.written_back, self.offset - self.written_back);
            self.written_back = self.offset;
        }
        Ok(())
    }

    /// Takes a job's extents; each full group of [`HASH_LANES`] is sealed and written.
    fn emit_data(&mut self, extents: Vec<Compressed>) -> Result<()> {
        for extent in extents {
            self.unsealed.push(extent);
            if self.unsealed.len() == HASH_LANES {
                self.seal_and_emit()?;
            }
        }
        Ok(())
    }

    fn seal_and_emit(&mut self) -> Result<()> {
        let t = self.t.clone();
        let group = std::mem::take(&mut self.unsealed);
        for extent in seal(&t, group, self.options.order, &self.spare)? {
            self.emit(&t.name, extent)?;
        }
        Ok(())
    }

    /// Converts a batch to the canonical column types of the type's fields.
    fn canonicalize(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let cols = batch
            .columns()
            .iter()
            .zip(self.canon_schema.fields())
            .enumerate()
            .map(|(i, (c, f))| {
                let mut c = c.clone();
                if let DataType::Dictionary(_, v) = c.data_type() {
                    if !matches!(f.data_type(), DataType::Dictionary(_, _)) {
                        c = cast(&c, v)?;
                    }
                }
                if c.data_type() != f.data_type() {
                    c = cast(&c, f.data_type())?;
                }
                if let Some(d) = c.as_dictionary_opt::<Int32Type>() {
                    check_keys(d, self.rows).map_err(|e| e.with_column(i, Some(f.name())))?;
                }
                Ok(c)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(self.canon_schema.clone(), cols)?)
    }

    /// Encodes the batch's rows; full extents are compressed in parallel and written.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let path = self.path().to_path_buf();
        self.write_inner(batch).map_err(|e| e.with_file(&path))
    }

    fn write_inner(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_columns() != self.canon_schema.fields().len() {
            return Err(Error::invalid_argument(format!(
                "the batch has {} columns, the writer's schema {}",
                batch.num_columns(),
                self.canon_schema.fields().len()
            )));
        }
        let batch = self.canonicalize(batch)?;
        let t = self.t.clone();
        let rs = t.record_size;
        let target = self.options.extent_size;
        let vcols: Vec<VarSlice> = t
            .visible
            .iter()
            .zip(batch.columns())
            .filter(|(&i, _)| t.fields[i].kind == Kind::Variable32)
            .map(|(_, c)| VarSlice::of(c.as_ref()))
            .collect();
        let n = batch.num_rows();
        let mut start = 0;
        let mut var_bytes = vec![0usize; n.min(SIZING_ROWS)];
        for from in (0..n).step_by(SIZING_ROWS) {
            let var_bytes = &mut var_bytes[..SIZING_ROWS.min(n - from)];
            var_bytes.fill(0);
            for c in &vcols {
                c.add_entry_bytes(from, var_bytes);
            }
            for (r, &bytes) in (from..).zip(var_bytes.iter()) {
                // The reference's rule (§14): before a record is added, the extent is closed if
                // its fixed bytes + variable bytes as appended (no deduplication, 4 leading
                // zeros) + one more record exceed the target. The new record's own strings are
                // not counted.
                if self.current_rows > 0 && self.current_rows * rs + self.current_var + rs > target
                {
                    if r > start {
                        self.current.push(batch.slice(start, r - start));
                    }
                    start = r;
                    self.close_extent()?;
                }
                self.current_var += bytes;
                self.current_rows += 1;
            }
        }
        if n > start {
            self.current.push(batch.slice(start, n - start));
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Ends the extent being filled; a job's worth of filled extents goes to the pool.
    fn close_extent(&mut self) -> Result<()> {
        if self.current_rows > 0 {
            self.filled.push(std::mem::take(&mut self.current));
            self.current_rows = 0;
            self.current_var = 4;
        }
        if self.filled.len() < EXTENTS_PER_JOB {
            return Ok(());
        }
        self.submit_filled();
        while let Some(done) = self.pipeline.try_next() {
            self.emit_data(done?)?;
        }
        while self.pipeline.len() > self.max_in_flight {
            let done = self.pipeline.next().expect("jobs under way");
            self.emit_data(done?)?;
        }
        Ok(())
    }

    fn submit_filled(&mut self) {
        let extents = std::mem::take(&mut self.filled);
        let (t, modes) = (self.t.clone(), self.modes.clone());
        let (order, level, spare) = (self.options.order, self.options.level, self.spare.clone());
        self.pipeline
            .submit(move || compress(&t, &extents, order, &modes, level, &spare));
    }

    /// Writes the last extent, the index and the trailer, then moves the file into place.
    pub fn finish(mut self) -> Result<WriteSummary> {
        let path = self.path().to_path_buf();
        self.finish_inner().map_err(|e| e.with_file(&path))
    }

    fn finish_inner(&mut self) -> Result<WriteSummary> {
        self.close_extent()?;
        if !self.filled.is_empty() {
            self.submit_filled();
        }
        while let Some(done) = self.pipeline.next() {
            self.emit_data(done?)?;
        }
        if !self.unsealed.is_empty() {
            self.seal_and_emit()?;
        }
        let order = self.options.order;
        // The index lists every extent, itself last.
        let index_offset = self.offset;
        let mut offs: Vec<i64> = self.index.iter().map(|(o, _)| *o as i64).collect();
        let mut names: Vec<Vec<u8>> = self
            .index
            .iter()
            .map(|(_, n)| n.as_bytes().to_vec())
            .collect();
        offs.push(index_offset as i64);
        names.push(INDEX_NAME.as_bytes().to_vec());
        let it = ExtentType::index();
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("offset", DataType::Int64, false),
                Field::new("extenttype", DataType::Binary, false),
            ])),
            vec![
                Arc::new(Int64Array::from(offs)),
                Arc::new(BinaryArray::from(
                    names.iter().map(|v| v.as_slice()).collect::<Vec<_>>(),
                )),
            ],
        )?;
        let mut index = encode(
            &it,
            &[vec![batch]],
            order,
            &self.modes,
            self.options.level,
            &self.spare,
        )?;
        let index = index.pop().expect("one extent");
        let plen = index.len();
        self.emit(INDEX_NAME, index)?;
        let mut tr = Vec::with_capacity(28);
        tr.extend_from_slice(&[0xff; 4]);
        tr.extend_from_slice(&order.put_u32(plen as u32));
        tr.extend_from_slice(&order.put_u32(!(plen as u32)));
        tr.extend_from_slice(&order.put_u32(self.chain));
        tr.extend_from_slice(&order.put_u64(index_offset));
        let h = checksum::lookup2(&tr, 1776);
        tr.extend_from_slice(&order.put_u32(h));
        let mut file = self.file.take().expect("open");
        file.unbuffered()?.write_all(&tr)?;
        file.commit()?;
        Ok(WriteSummary {
            rows: self.rows,
            warnings: std::mem::take(&mut self.warnings),
        })
    }
}

/// The keys of a dictionary column are checked before packing indexes its values with them:
/// arrays imported without validation (the C data interface) may hold any key.
fn check_keys(d: &DictionaryArray<Int32Type>, first_row: u64) -> Result<()> {
    let len = d.values().len();
    let keys = d.keys().values();
    // Null rows' keys are never used, but checking every key at once is the fast common case.
    if keys.iter().all(|&k| (k as u32 as usize) < len) {
        return Ok(());
    }
    let valid = |r: usize| d.nulls().is_none_or(|n| n.is_valid(r));
    match (0..keys.len()).find(|&r| valid(r) && (keys[r] as u32 as usize) >= len) {
        None => Ok(()),
        Some(r) => Err(Error::new(
            ErrorClass::BadValue,
            format!(
                "dictionary key {} is outside the dictionary's {len} values",
                keys[r]
            ),
        )
        .at_row(first_row + r as u64)),
    }
}

/// Extents packed and compressed by one job. Small jobs keep the pool's threads busy to the
/// end of the file, which the hashing no longer asks to be large (it is done after, in groups
/// of [`HASH_LANES`]); one extent a job measured no faster than two.
const EXTENTS_PER_JOB: usize = 2;

/// Bytes written between two requests to start the file's writeback.
const WRITEBACK_STEP: u64 = 8 << 20;

/// Rows whose variable bytes are sized at a time: enough for tight loops, few enough to stay
/// in cache.
const SIZING_ROWS: usize = 4096;

impl BatchWriter for Writer {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Writer::write(self, batch)
    }
    fn finish(self: Box<Self>) -> Result<WriteSummary> {
        Writer::finish(*self)
    }
}
