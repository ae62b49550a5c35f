//! `tilefit devices`: the device table as a grouped terminal table or JSON, for named devices
//! every value beside the sources that back it (`--live` is `devices_live`).

use anyhow::Context as _;
use tilefit_core::device::{DeviceListing, DeviceTable, Resolved};
use tilefit_core::render::{DevicePage, Exporter, Terminal};

use crate::cli::DevicesArgs;
use crate::exit_codes;
use crate::output;

pub fn run(args: &DevicesArgs) -> anyhow::Result<u8> {
    let table = DeviceTable::builtin().context("loading the embedded device table")?;
    let resolved = args
        .names
        .iter()
        .map(|name| table.resolve(name))
        .collect::<Result<Vec<Resolved<'_>>, _>>()?;
    let listing = if resolved.is_empty() {
        DeviceListing::all(table)
    } else {
        DeviceListing::selected(table, &resolved)
    };
    if args.json {
        output::print_json(&listing)?;
    } else {
        output::print(&Terminal.export(&DevicePage {
            table,
            listing: &listing,
            resolved: &resolved,
        }))?;
    }
    Ok(exit_codes::OK)
}
