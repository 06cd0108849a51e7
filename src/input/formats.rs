//! The opened shape of each format behind [`Input`](super::Input): its handle, opened once,
//! and the settings it was opened with. A reader is built from the handle with the format's
//! `ReaderBuilder::build_from_file`; fragments are listed from it.

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arrow_array::RecordBatchReader;

use super::OpenedFormat;
use crate::error::{Error, Result};
use crate::format::Format;
use crate::options::FormatOptions;
use crate::scan::whole;
use crate::scan::{group_units, FragmentRange, FragmentSpan, ScanOptions, Unit};
use crate::{bcolz, dataseries, ecosystem, filo, jay, vs};

type BoxedReader = Box<dyn RecordBatchReader + Send>;

/// Opens `path` as `format` with `options`; `salvage` opens the formats whose open checks
/// parts a salvaging read may skip (Jay's columns, DataSeries' index) leniently.
pub(super) fn open(
    path: &Path,
    format: Format,
    options: &FormatOptions,
    salvage: bool,
) -> Result<Box<dyn OpenedFormat>> {
    Ok(match format {
        Format::Jay => Box::new(JayInput::open(path, options, salvage)?),
        Format::DataSeries => Box::new(DsInput::open(path, options, salvage)?),
        Format::Vs => Box::new(VsInput {
            file: Arc::new(vs::VsFile::open(path, options.vs)?),
            options: options.vs,
            rows: OnceLock::new(),
        }),
        Format::Bcolz => Box::new(BcolzInput {
            info: Arc::new(bcolz::open_info_with(
                path,
                options.bcolz.carray_name.as_deref(),
            )?),
            options: options.bcolz.clone(),
        }),
        Format::Filo => Box::new(FiloSetInput {
            info: Arc::new(filo::SetInfo::open(path)?),
            options: options.filo,
        }),
        Format::FiloVector => Box::new(FiloVectorInput::open(path, options)?),
        other => Box::new(EcosystemInput::open(path, other)?),
    })
}

struct JayInput {
    path: PathBuf,
    file: Arc<jay::JayFile>,
    /// Whether `file` was opened for salvage (its damaged columns left out).
    salvaging: bool,
    options: jay::ReaderOptions,
}

impl JayInput {
    fn open(path: &Path, options: &FormatOptions, salvage: bool) -> Result<JayInput> {
        let file = if salvage {
            jay::JayFile::open_salvaging(path)?
        } else {
            jay::JayFile::open(path)?
        };
        Ok(JayInput {
            path: path.to_path_buf(),
            file: Arc::new(file),
            salvaging: salvage,
            options: options.jay,
        })
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
        let reopen = scan.salvage != self.salvaging;
        let builder = jay::ReaderBuilder::new()
            .with_scan(scan)
            .with_options(&self.options);
        Ok(Box::new(if reopen {
            builder.build(&self.path)?
        } else {
            builder.build_from_file(Arc::clone(&self.file))?
        }))
    }
}

struct DsInput {
    path: PathBuf,
    file: Arc<dataseries::DsFile>,
    options: dataseries::ReaderOptions,
    /// Whether `file` was opened leniently (a damaged index scanned past), as salvage does.
    salvaging: bool,
}

impl DsInput {
    fn open(path: &Path, options: &FormatOptions, salvage: bool) -> Result<DsInput> {
        let ds = &options.dataseries;
        Ok(DsInput {
            path: path.to_path_buf(),
            file: Arc::new(dataseries::DsFile::open(path, ds.open_options(salvage))?),
            options: ds.clone(),
            salvaging: salvage,
        })
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
        let reopen = scan.salvage != self.salvaging;
        let builder = dataseries::ReaderBuilder::new()
            .with_scan(scan)
            .with_options(&self.options);
        Ok(Box::new(if reopen {
            builder.build(&self.path)?
        } else {
            builder.build_from_file(Arc::clone(&self.file))?
        }))
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
        *self
            .rows
            .get_or_init(|| self.file.describe(0).ok().map(|d| d.live_points))
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
/// it is decoded whole by each read.
struct FiloVectorInput {
    path: PathBuf,
    filo_type: filo::FiloType,
}

impl FiloVectorInput {
    fn open(path: &Path, options: &FormatOptions) -> Result<FiloVectorInput> {
        let filo_type = options.filo.vector_type.ok_or_else(|| {
            Error::invalid_argument(
                "a bare Filo vector does not say its element type; give it (the filo_type option)",
            )
            .with_setting("filo_type")
            .with_setting_kind(crate::error::SettingKind::Read)
        })?;
        // What the read will say of a missing file, said now.
        std::fs::metadata(path)?;
        Ok(FiloVectorInput {
            path: path.to_path_buf(),
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
        Ok(vec![whole(&self.path, None)?])
    }

    fn reader(&self, scan: ScanOptions) -> Result<BoxedReader> {
        Ok(Box::new(
            filo::VectorReaderBuilder::new()
                .with_filo_type(self.filo_type)
                .with_scan(scan)
                .build(&self.path)?,
        ))
    }
}

/// Parquet, Arrow IPC and the text formats: each reader opens the file through the arrow-rs
/// reader; the footer's layout (row groups, record batches) is read on the first listing or
/// row count, and kept.
struct EcosystemInput {
    path: PathBuf,
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
    fn read(path: &Path, format: Format) -> Result<Layout> {
        Ok(match format {
            Format::Parquet => {
                let info = ecosystem::parquet::describe(path)?;
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
                let info = ecosystem::ipc::describe_file(path)?;
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
            Format::ArrowStream => Layout {
                units: Vec::new(),
                rows: Some(ecosystem::ipc::describe_stream(path)?.num_rows),
            },
            _ => Layout {
                units: Vec::new(),
                rows: None,
            },
        })
    }
}

impl EcosystemInput {
    fn open(path: &Path, format: Format) -> Result<EcosystemInput> {
        // What a read would say of a missing file, said now.
        std::fs::metadata(path)?;
        Ok(EcosystemInput {
            path: path.to_path_buf(),
            format,
            layout: OnceLock::new(),
        })
    }

    /// The layout, read once; a failure is not kept, so the next asking reads again.
    fn layout(&self) -> Result<&Layout> {
        if let Some(layout) = self.layout.get() {
            return Ok(layout);
        }
        let layout = Layout::read(&self.path, self.format)?;
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
            _ => vec![whole(&self.path, layout.rows)?],
        })
    }

    fn reader(&self, scan: ScanOptions) -> Result<BoxedReader> {
        ecosystem::open(&self.path, self.format, &scan)
    }
}
