//! `tilefit explain`: read a pasted resource error (from the arguments or stdin) and print the
//! library's explanation for a person, or as JSON.

use std::io::Read as _;
use tilefit_core::render::{Exporter, Terminal};

use anyhow::Context as _;
use tilefit_core::device::DeviceTable;
use tilefit_core::explain::explain;

use crate::cli::ExplainArgs;
use crate::exit_codes;
use crate::output;

pub fn run(args: &ExplainArgs) -> anyhow::Result<u8> {
    let message = read_message(&args.message)?;
    let table = DeviceTable::builtin().context("loading the embedded device table")?;
    let explanation = explain(&message, table)?;
    if args.json {
        output::print_json(&explanation)?;
    } else {
        output::print(&Terminal.export(&explanation))?;
    }
    Ok(exit_codes::OK)
}

/// The message: the arguments joined, or standard input when there are none (or `-`).
fn read_message(words: &[String]) -> anyhow::Result<String> {
    if words.is_empty() || (words.len() == 1 && words[0] == "-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the message from standard input")?;
        return Ok(text);
    }
    Ok(words.join(" "))
}
