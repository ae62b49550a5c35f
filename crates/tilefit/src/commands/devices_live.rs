//! `tilefit devices --live`: the local driver's numbers beside the table's, exit 1 on a
//! disagreement (the table is wrong or the device is new).

use anyhow::Context as _;
use tilefit_core::device::DeviceTable;
use tilefit_core::render::{Exporter, LiveDevices, Terminal};

use crate::cli::DevicesArgs;
use crate::exit_codes;
use crate::output;

pub fn run(args: &DevicesArgs) -> anyhow::Result<u8> {
    let table = DeviceTable::builtin().context("loading the embedded device table")?;
    let json = args.json;
    let comparisons: Vec<_> = tilefit_core::cuda::live_devices()?
        .iter()
        .map(|d| tilefit_core::cuda::compare(d, table))
        .collect();
    let disagreements: usize = comparisons.iter().map(|c| c.disagreements().len()).sum();
    if json {
        output::print_json(&serde_json::json!({
            "schema_version": 1,
            "devices": comparisons,
            "disagreements": disagreements,
        }))?;
    } else {
        output::print(&Terminal.export(&LiveDevices(&comparisons)))?;
    }
    if disagreements > 0 {
        output::note(&format!(
            "tilefit: {disagreements} driver values disagree with the device table"
        ));
        return Ok(exit_codes::GATE_FAILED);
    }
    Ok(exit_codes::OK)
}
