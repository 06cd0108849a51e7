//! The opened shape of each format behind [`Input`](super::Input): its handle, opened once,
//! and the settings it was opened with. A reader is built from the handle with the format's
//! `ReaderBuilder::build_from_file`; fragments are listed from it. A single-file format opens
//! from a local path with its path entry point (a memory map, a VS lock) and from a remote
//! object with its `open_source`.

use std::any::Any;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use arrow_array::RecordBatchReader;

use super::remote::Origin;
use super::OpenedFormat;
use crate::error::{Error, Result};
use crate::format::Format;
use crate::options::FormatOptions;
use crate::scan::{group_units, FragmentRange, FragmentSpan, ScanOptions, Unit};
use crate::scan::{whole, whole_of};
use crate::source::ByteSource;
use crate::{bcolz, dataseries, ecosystem, filo, jay, vs};

type BoxedReader = Box<dyn RecordBatchReader + Send>;

/// Opens what `origin` names as `format` with `options`; `salvage` opens the formats whose
/// open checks parts a salvaging read may skip (Jay's columns, DataSeries' index) leniently.
/// `columns`, when every read of the opened input projects to these column names, lets a
/// bcolz ctable open read the metadata of those columns only (and of its first).
pub(super) fn open(
    origin: &Origin,
    format: Format,
    options: &FormatOptions,
    salvage: bool,
    columns: Option<&[String]>,
) -> Result<Box<dyn OpenedFormat>> {
    if origin.is_remote() && format.is_directory() != matches!(origin, Origin::Prefix(_)) {
        return Err(origin.wrong_shape(format));
    }
    Ok(match (format, origin) {
        (Format::Jay, _) => Box::new(JayInput::open(origin, options, salvage)?),
        (Format::DataSeries, _) => Box::new(DsInput::open(origin, options, salvage)?),
        (Format::Vs, _) => Box::new(VsInput {
            file: Arc::new(open_vs(origin, options.vs)?),
            options: options.vs,
            rows: OnceLock::new(),
        }),
        (Format::Bcolz, Origin::Local(path)) => Box::new(BcolzInput {
            info: Arc::new(bcolz::open_columns(
                path,
                options.bcolz.carray_name.as_deref(),
                columns,
            )?),
            options: options.bcolz.clone(),
        }),
        (Format::Bcolz, Origin::Prefix(objects)) => Box::new(BcolzInput {
            info: Arc::new(bcolz::open_columns_from(
                Arc::clone(objects),
                options.bcolz.carray_name.as_deref(),
                columns,
            )?),
            options: options.bcolz.clone(),
        }),
        (Format::Filo, Origin::Local(path)) => Box::new(FiloSetInput {
            info: Arc::new(filo::SetInfo::open(path)?),
            options: options.filo,
        }),
        (Format::Filo, Origin::Prefix(objects)) => Box::new(FiloSetInput {
            info: Arc::new(filo::SetInfo::open_source(Arc::clone(objects))?),
            options: options.filo,
        }),
        (Format::FiloVector, _) => Box::new(FiloVectorInput::open(origin, options)?),
        (other, _) => Box::new(EcosystemInput::open(origin, other)?),
    })
}

/// The file a single-file format reads at `origin`: a local path, or a remote object.
enum FileAt<'a> {
    Path(&'a Path),
    Source(&'a Arc<dyn ByteSource>),
}

impl<'a> FileAt<'a> {
    fn of(origin: &'a Origin) -> Result<FileAt<'a>> {
        match origin {
            Origin::Local(path) => Ok(FileAt::Path(path)),
            Origin::Object(source) => Ok(FileAt::Source(source)),
            Origin::Prefix(_) => Err(Error::invalid_argument(
                "the URL names a prefix, not one object",
            )),
        }
    }
}

/// A VS file, opened under its shared lock when local; a remote object takes no lock.
fn open_vs(origin: &Origin, options: vs::ReaderOptions) -> Result<vs::VsFile> {
    match FileAt::of(origin)? {
        FileAt::Path(path) => vs::VsFile::open(path, options),
        FileAt::Source(source) => vs::VsFile::open_source(Arc::clone(source), options),
    }
}

struct JayInput {
    origin: Origin,
    file: Arc<jay::JayFile>,
    /// Whether `file` was opened for salvage (its damaged columns left out).
    salvaging: bool,
    options: jay::ReaderOptions,
}

impl JayInput {
    fn open(origin: &Origin, options: &FormatOptions, salvage: bool) -> Result<JayInput> {
        Ok(JayInput {
            origin: origin.clone(),
            file: Arc::new(Self::open_file(origin, salvage)?),
            salvaging: salvage,
            options: options.jay,
        })
    }

    fn open_file(origin: &Origin, salvage: bool) -> Result<jay::JayFile> {
        match FileAt::of(origin)? {
            FileAt::Path(path) if salvage => jay::JayFile::open_salvaging(path),
            FileAt::Path(path) => jay::JayFile::open(path),
            FileAt::Source(source) => jay::JayFile::open_source(Arc::clone(source), salvage),
        }
    }
}

impl OpenedFormat for JayInput {
    fn handle(&self) -> &dyn Any {
        self.file.as_ref()
    }

    fn rows(&self) -> Option<u64> {
        Some(self.file.info().nrows)
    }

    fn fragments(&self, target_rows: usize) -> Result<Vec<FragmentSpan>> {
        self.file
            .check_dataless_rows(self.options.max_dataless_rows)?;
        jay::fragments(&self.file, target_rows)
    }

    fn reader(&self, scan: ScanOptions) -> Result<BoxedReader> {
        // A salvaging read needs the file opened for salvage, and a plain read one opened
        // whole: the other kind is opened afresh.
        let scan_salvage = scan.salvage;
        let reopen = scan_salvage != self.salvaging;
        let builder = jay::ReaderBuilder::new()
            .with_scan(scan)
            .with_options(&self.options);
        let file = match reopen {
            true => Arc::new(Self::open_file(&self.origin, scan_salvage)?),
            false => Arc::clone(&self.file),
        };
        Ok(Box::new(builder.build_from_file(file)?))
    }
}

struct DsInput {
    origin: Origin,
    open: dataseries::OpenOptions,
    file: Arc<dataseries::DsFile>,
    options: dataseries::ReaderOptions,
    /// Whether `file` was opened leniently (a damaged index scanned past), as salvage does.
    salvaging: bool,
}

impl DsInput {
    fn open(origin: &Origin, options: &FormatOptions, salvage: bool) -> Result<DsInput> {
        let ds = &options.dataseries;
        let open = ds.open_options(salvage);
        Ok(DsInput {
            origin: origin.clone(),
            open,
            file: Arc::new(Self::open_file(origin, open)?),
            options: ds.clone(),
            salvaging: salvage,
        })
    }

    fn open_file(origin: &Origin, open: dataseries::OpenOptions) -> Result<dataseries::DsFile> {
        match FileAt::of(origin)? {
            FileAt::Path(path) => dataseries::DsFile::open(path, open),
            FileAt::Source(source) => dataseries::DsFile::open_source(Arc::clone(source), open),
        }
    }
}

impl OpenedFormat for DsInput {
    fn handle(&self) -> &dyn Any {
        self.file.as_ref()
    }

    fn rows(&self) -> Option<u64> {
        let typed =
            dataseries::TypedFile::new(Arc::clone(&self.file), self.options.type_name.as_deref());
        Some(typed.ok()?.rows())
    }

    fn fragments(&self, target_rows: usize) -> Result<Vec<FragmentSpan>> {
        let typed =
            dataseries::TypedFile::new(Arc::clone(&self.file), self.options.type_name.as_deref())?;
        dataseries::fragments(&typed, target_rows)
    }

    fn reader(&self, scan: ScanOptions) -> Result<BoxedReader> {
        let file = match scan.salvage != self.salvaging {
            true => {
                let open = dataseries::OpenOptions {
                    lenient: scan.salvage,
                    ..self.open
                };
                Arc::new(Self::open_file(&self.origin, open)?)
            }
            false => Arc::clone(&self.file),
        };
        let builder = dataseries::ReaderBuilder::new()
            .with_scan(scan)
            .with_options(&self.options);
        Ok(Box::new(builder.build_from_file(file)?))
    }
}

struct VsInput {
    file: Arc<vs::VsFile>,
    options: vs::ReaderOptions,
    /// Live points, counted from the block headers on first asking.
    rows: OnceLock<Option<u64>>,
}

impl OpenedFormat for VsInput {
    fn handle(&self) -> &dyn Any {
        self.file.as_ref()
    }

    fn rows(&self) -> Option<u64> {
        *self.rows.get_or_init(|| self.file.live_points().ok())
    }

    fn fragments(&self, target_rows: usize) -> Result<Vec<FragmentSpan>> {
        vs::fragments(&self.file, target_rows)
    }

    fn reader(&self, scan: ScanOptions) -> Result<BoxedReader> {
        Ok(Box::new(
            vs::ReaderBuilder::new()
                .with_scan(scan)
                .with_options(&self.options)
                .build_from_file(Arc::clone(&self.file))?,
        ))
    }
}

struct BcolzInput {
    info: Arc<bcolz::DatasetInfo>,
    options: bcolz::ReaderOptions,
}

impl OpenedFormat for BcolzInput {
    fn handle(&self) -> &dyn Any {
        self.info.as_ref()
    }

    fn rows(&self) -> Option<u64> {
        Some(self.info.nrows)
    }

    fn fragments(&self, target_rows: usize) -> Result<Vec<FragmentSpan>> {
        bcolz::fragments(&self.info, target_rows)
    }

    fn reader(&self, scan: ScanOptions) -> Result<BoxedReader> {
        Ok(Box::new(
            bcolz::ReaderBuilder::new()
                .with_scan(scan)
                .with_options(&self.options)
                .build_from_file(Arc::clone(&self.info))?,
        ))
    }
}

struct FiloSetInput {
    info: Arc<filo::SetInfo>,
    options: filo::ReaderOptions,
}

impl OpenedFormat for FiloSetInput {
    fn handle(&self) -> &dyn Any {
        self.info.as_ref()
    }

    fn rows(&self) -> Option<u64> {
        Some(self.info.rows())
    }

    fn fragments(&self, target_rows: usize) -> Result<Vec<FragmentSpan>> {
        filo::fragments(&self.info, target_rows)
    }

    fn reader(&self, scan: ScanOptions) -> Result<BoxedReader> {
        Ok(Box::new(
            filo::ReaderBuilder::new()
                .with_scan(scan)
                .with_options(&self.options)
                .build_from_file(Arc::clone(&self.info))?,
        ))
    }
}

/// A bare Filo vector: its bytes do not say its element type, so the caller's setting does;
/// it is decoded whole by each read (a remote one from its bytes, read whole).
struct FiloVectorInput {
    origin: Origin,
    filo_type: filo::FiloType,
}

impl FiloVectorInput {
    fn open(origin: &Origin, options: &FormatOptions) -> Result<FiloVectorInput> {
        let filo_type = options.filo.vector_type.ok_or_else(|| {
            Error::invalid_argument(
                "a bare Filo vector does not say its element type; give it (the filo_type option)",
            )
            .with_setting("filo_type")
            .with_setting_kind(crate::error::SettingKind::Read)
        })?;
        if let FileAt::Path(path) = FileAt::of(origin)? {
            // What the read will say of a missing file, said now.
            std::fs::metadata(path)?;
        }
        Ok(FiloVectorInput {
            origin: origin.clone(),
            filo_type,
        })
    }
}

impl OpenedFormat for FiloVectorInput {
    fn handle(&self) -> &dyn Any {
        &()
    }

    fn rows(&self) -> Option<u64> {
        None
    }

    fn fragments(&self, _target_rows: usize) -> Result<Vec<FragmentSpan>> {
        Ok(vec![match FileAt::of(&self.origin)? {
            FileAt::Path(path) => whole(path, None)?,
            FileAt::Source(source) => whole_of(source.size(), None),
        }])
    }

    fn reader(&self, scan: ScanOptions) -> Result<BoxedReader> {
        let builder = filo::VectorReaderBuilder::new()
            .with_filo_type(self.filo_type)
            .with_scan(scan);
        Ok(Box::new(match FileAt::of(&self.origin)? {
            FileAt::Path(path) => builder.build(path)?,
            FileAt::Source(source) => builder.build_from_bytes(source.read_all()?)?,
        }))
    }
}

/// Parquet, Arrow IPC and the text formats: each reader opens the file (or remote object)
/// through the arrow-rs reader; the footer's layout (row groups, record batches) is read on the
/// first listing or row count, and kept.
struct EcosystemInput {
    origin: Origin,
    format: Format,
    layout: OnceLock<Layout>,
}

/// What a Parquet or IPC file's footer (or an IPC stream's message headers) says of its units.
struct Layout {
    /// Parquet's row groups or an IPC file's batches, as units of a fragment.
    units: Vec<Unit>,
    rows: Option<u64>,
}

impl Layout {
    fn read(file: &FileAt<'_>, format: Format) -> Result<Layout> {
        Ok(match format {
            Format::Parquet => {
                let info = match file {
                    FileAt::Path(path) => ecosystem::parquet::describe(path)?,
                    FileAt::Source(source) => {
                        ecosystem::parquet::describe_source(Arc::clone(source))?
                    }
                };
                let units = info.row_groups.iter().enumerate().map(|(i, g)| Unit {
                    start: i as u64,
                    end: i as u64 + 1,
                    rows: g.num_rows.max(0) as u64,
                    bytes: g.compressed_size.max(0) as u64,
                });
                Layout {
                    units: units.collect(),
                    rows: u64::try_from(info.num_rows).ok(),
                }
            }
            Format::Arrow => {
                let info = match file {
                    FileAt::Path(path) => ecosystem::ipc::describe_file(path)?,
                    FileAt::Source(source) => {
                        ecosystem::ipc::describe_file_source(Arc::clone(source))?
                    }
                };
                let units = info.batches.iter().enumerate().map(|(i, b)| Unit {
                    start: i as u64,
                    end: i as u64 + 1,
                    rows: b.rows,
                    bytes: b.metadata_length + b.body_length,
                });
                Layout {
                    units: units.collect(),
                    rows: Some(info.num_rows),
                }
            }
            Format::ArrowStream => {
                let info = match file {
                    FileAt::Path(path) => ecosystem::ipc::describe_stream(path)?,
                    FileAt::Source(source) => {
                        ecosystem::ipc::describe_stream_source(Arc::clone(source))?
                    }
                };
                Layout {
                    units: Vec::new(),
                    rows: Some(info.num_rows),
                }
            }
            _ => Layout {
                units: Vec::new(),
                rows: None,
            },
        })
    }
}

impl EcosystemInput {
    fn open(origin: &Origin, format: Format) -> Result<EcosystemInput> {
        if let FileAt::Path(path) = FileAt::of(origin)? {
            // What a read would say of a missing file, said now.
            std::fs::metadata(path)?;
        }
        Ok(EcosystemInput {
            origin: origin.clone(),
            format,
            layout: OnceLock::new(),
        })
    }

    /// The layout, read once; a failure is not kept, so the next asking reads again.
    fn layout(&self) -> Result<&Layout> {
        if let Some(layout) = self.layout.get() {
            return Ok(layout);
        }
        let layout = Layout::read(&FileAt::of(&self.origin)?, self.format)?;
        Ok(self.layout.get_or_init(|| layout))
    }
}

impl OpenedFormat for EcosystemInput {
    fn handle(&self) -> &dyn Any {
        &()
    }

    fn rows(&self) -> Option<u64> {
        self.layout().ok()?.rows
    }

    fn fragments(&self, target_rows: usize) -> Result<Vec<FragmentSpan>> {
        let layout = self.layout()?;
        let grouped = |range: fn(u64, u64) -> FragmentRange| {
            group_units(
                layout.units.iter().copied(),
                target_rows,
                range,
                range(0, 0),
            )
        };
        Ok(match self.format {
            Format::Parquet => grouped(|start, end| FragmentRange::RowGroups { start, end }),
            Format::Arrow => grouped(|start, end| FragmentRange::Batches { start, end }),
            _ => vec![match FileAt::of(&self.origin)? {
                FileAt::Path(path) => whole(path, layout.rows)?,
                FileAt::Source(source) => whole_of(source.size(), layout.rows),
            }],
        })
    }

    fn reader(&self, scan: ScanOptions) -> Result<BoxedReader> {
        match FileAt::of(&self.origin)? {
            FileAt::Path(path) => ecosystem::open(path, self.format, &scan),
            FileAt::Source(source) => {
                ecosystem::open_source(Arc::clone(source), self.format, &scan)
            }
        }
    }
}
