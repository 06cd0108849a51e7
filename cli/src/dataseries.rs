//! DataSeries options of the command line: the extent type, Utf8 fields and checks on input;
//! level, extent size and XML on output (`--type` also names a DataSeries output's type).

use super::settings::Settings;
use super::{DsReadArgs, DsWriteArgs};

impl DsReadArgs {
    pub(crate) fn settings(&self, settings: &mut Settings) {
        settings
            .value("type", self.ds_type.as_ref())
            .value("utf8", self.utf8.as_ref().map(|names| names.join(",")))
            .flag("no_checks", self.no_checks);
    }
}

impl DsWriteArgs {
    pub(crate) fn settings(&self, settings: &mut Settings) {
        settings
            .value("compress_level", self.compress_level)
            .value("extent_size", self.extent_size)
            .value("xml", self.xml.as_ref().map(|x| x.display()));
    }
}
