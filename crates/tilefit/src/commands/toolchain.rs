//! `tilefit toolchain`: list and install the Python + Triton environments probes compile with, and
//! write the compile worker this binary runs.

use tilefit_core::compile::toolchain;
use tilefit_core::render::{Exporter, Terminal, ToolchainListing};

use crate::cli::{ToolchainAction, ToolchainArgs};
use crate::exit_codes;
use crate::output;

pub fn run(args: &ToolchainArgs) -> anyhow::Result<u8> {
    let cache_dir = toolchain::default_cache_dir();
    match &args.action {
        ToolchainAction::List => {
            let env_python = std::env::var_os("TILEFIT_PYTHON").map(std::path::PathBuf::from);
            let listing = ToolchainListing {
                dir: &toolchain::toolchains_dir(&cache_dir),
                managed: &toolchain::list_managed(&cache_dir),
                env_python: env_python
                    .as_deref()
                    .map(|python| (python, toolchain::from_python(python))),
            };
            output::print(&Terminal.export(&listing))?;
        }
        ToolchainAction::Install { triton_version } => {
            let t = toolchain::ensure_managed(&cache_dir, triton_version, &mut |line| {
                output::note(&format!("  {line}"));
            })?;
            output::print(&format!(
                "triton {} with python {} at {}\n",
                t.triton_version,
                t.python_version,
                t.python.display()
            ))?;
        }
        ToolchainAction::Worker { dir } => {
            tilefit_core::compile::write_worker_package(dir).map_err(|e| {
                anyhow::anyhow!(
                    "cannot write the worker package into {}: {e}",
                    dir.display()
                )
            })?;
            output::print(&format!("{}\n", dir.join("tilefit_worker").display()))?;
        }
    }
    Ok(exit_codes::OK)
}
