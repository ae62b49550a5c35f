//! The devices a run judges: `--targets`, else the spec's `[targets]`, else (without config files,
//! which name their own devices) the default fleet. A name that does not resolve is an error
//! naming the field it came from.

use crate::device::{DeviceTable, LookupError, TableError, TargetDevice};
use crate::input::spec::Sweep;

/// Why the fleet could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The embedded device table does not load (a build defect).
    #[error("loading the embedded device table")]
    Table(#[source] TableError),
    /// A device name is not in the table (its words are this error's own, so no cause repeats
    /// them).
    #[error("{field}: {error}")]
    Lookup {
        /// `--targets` or `[targets].devices`.
        field: &'static str,
        /// Why.
        error: LookupError,
    },
}

impl crate::hint::Hint for FleetError {
    fn hint(&self) -> Option<String> {
        match self {
            FleetError::Table(e) => crate::hint::Hint::hint(e),
            FleetError::Lookup { error, .. } => Some(error.hint()),
        }
    }
}

/// The fleet of a probe: `given` (`--targets`), else the spec's `[targets]`, else nothing when
/// config files name their own devices, else the default fleet.
pub fn of_spec(spec: &Sweep, given: &[String]) -> Result<Vec<TargetDevice>, FleetError> {
    let table = DeviceTable::builtin().map_err(FleetError::Table)?;
    let (names, field) = if given.is_empty() {
        (spec.targets.as_slice(), "[targets].devices")
    } else {
        (given, "--targets")
    };
    if names.is_empty() && spec.config_files.is_some() {
        // Config files name their own devices; without [targets] each is judged on its own.
        return Ok(Vec::new());
    }
    resolve(table, names, field)
}

/// `--targets`, or the default fleet (replay).
pub fn of_names(names: &[String]) -> Result<Vec<TargetDevice>, FleetError> {
    let table = DeviceTable::builtin().map_err(FleetError::Table)?;
    resolve(table, names, "--targets")
}

fn resolve(
    table: &DeviceTable,
    names: &[String],
    field: &'static str,
) -> Result<Vec<TargetDevice>, FleetError> {
    if names.is_empty() {
        return Ok(TargetDevice::default_fleet(table));
    }
    TargetDevice::resolve(table, names).map_err(|error| FleetError::Lookup { field, error })
}
