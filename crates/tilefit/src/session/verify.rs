//! `tilefit verify`'s whole flag set as a [`VerifySession`], in one pass: what to verify on
//! which local device, the settings (a full compile with binaries kept, no result cache), the
//! reporter that notes each launch, and where the JSON goes.

use std::sync::Arc;

use tilefit_core::compile::{Reporting, Settings};
use tilefit_core::run::verify_local::VerifyRequest;

use crate::cli::VerifyArgs;
use crate::progress::{Launching, Progress};

/// `tilefit verify`'s flags, resolved once.
pub struct VerifySession {
    /// The input, the device, whether to launch, the toolchain wanted.
    pub request: VerifyRequest,
    /// The library's settings; their reporter is [`VerifySession::progress`].
    pub settings: Settings,
    /// Progress on stderr, each launch noted.
    pub progress: Arc<Launching>,
    /// `--json FILE` (`-`: stdout, instead of the table).
    pub json: Option<String>,
}

impl VerifySession {
    /// The session of `tilefit verify ARGS`.
    pub fn of(args: &VerifyArgs) -> anyhow::Result<VerifySession> {
        let mut settings = crate::settings::for_verify(args)?;
        let progress = Arc::new(Launching(Progress::new()));
        settings.reporter = Reporting::to(progress.clone());
        Ok(VerifySession {
            request: VerifyRequest {
                input: args.input.clone(),
                device: args.device,
                launch: args.launch,
                wanted: crate::settings::wanted(&args.python),
            },
            settings,
            progress,
            json: args.json.clone(),
        })
    }
}
