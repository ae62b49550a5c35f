//! A max-autotune selection judged on one device: which Triton choices are over the budget,
//! which torch's retry at one stage rescues, and what runs where none fits. The report draws
//! what is decided here.

use std::collections::BTreeMap;

use crate::model::capture::{CompileReport, LaunchReport, TargetCapture};

/// Whether a compile is over the budget of `device`.
pub fn over_on(compile: &CompileReport, device: &str) -> bool {
    compile.result.as_ref().is_some_and(|r| {
        r.verdicts
            .iter()
            .any(|v| v.device == device && v.over_by.is_some())
    })
}

/// How many of a launch's compiles are over the budget of the target's device.
pub fn over_count(target: &TargetCapture, launch: &LaunchReport) -> usize {
    launch
        .compiles
        .iter()
        .filter_map(|&i| target.compiles.get(i))
        .filter(|c| over_on(c, &target.device.device))
        .count()
}

/// What a selection comes to on the device when a choice does not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectionOutcome {
    /// At least one Triton choice fits (or is rescued): the autotuner picks among them.
    Chooses,
    /// No Triton choice fits: the ATen fallback runs instead.
    Fallback(String),
    /// No choice fits and there is no fallback: the compile fails.
    Fails,
}

/// A selection on one device where at least one choice is over the budget.
#[derive(Debug, Clone)]
pub struct SelectionJudged<'a> {
    /// The choices over the budget and not rescued: the autotuner skips them.
    pub over: Vec<&'a CompileReport>,
    /// The choices over the budget that fit once retried at one stage: (first, retry).
    pub rescued: Vec<(&'a CompileReport, &'a CompileReport)>,
    /// How many Triton choices the selection has.
    pub total: usize,
    /// How many fit as they are.
    pub fit: usize,
    /// What runs.
    pub outcome: SelectionOutcome,
}

/// The launch's max-autotune selection judged on the target's device; `None` when it has no
/// selection or every choice fits.
pub fn judge_selection<'a>(
    target: &'a TargetCapture,
    launch: &LaunchReport,
) -> Option<SelectionJudged<'a>> {
    let choices = launch.inductor.as_ref().and_then(|i| i.choices.as_ref())?;
    let device = &target.device.device;
    // Each choice's compiles: its config, and (torch 2.15) its retry at one stage where the
    // config did not load.
    let mut by_choice: BTreeMap<String, Vec<&CompileReport>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for compile in launch
        .compiles
        .iter()
        .filter_map(|&i| target.compiles.get(i))
    {
        let key = compile.inductor_choice.clone().unwrap_or_default();
        if !by_choice.contains_key(&key) {
            order.push(key.clone());
        }
        by_choice.entry(key).or_default().push(compile);
    }
    let mut over = Vec::new();
    let mut rescued = Vec::new();
    for key in &order {
        let compiles = &by_choice[key];
        let Some(&first) = compiles.first() else {
            continue;
        };
        if !over_on(first, device) {
            continue;
        }
        match compiles.get(1) {
            Some(&retry) if !over_on(retry, device) => rescued.push((first, retry)),
            _ => over.push(first),
        }
    }
    if over.is_empty() && rescued.is_empty() {
        return None;
    }
    let total = order.len();
    let usable = total - over.len();
    let outcome = match (usable, choices.fallback.as_deref()) {
        (0, Some(fallback)) => SelectionOutcome::Fallback(fallback.to_owned()),
        (0, None) => SelectionOutcome::Fails,
        _ => SelectionOutcome::Chooses,
    };
    Some(SelectionJudged {
        over,
        fit: usable - rescued.len(),
        rescued,
        total,
        outcome,
    })
}
