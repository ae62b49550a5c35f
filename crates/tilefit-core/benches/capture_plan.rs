//! Planning a capture: 20,000 distinct launches grouped into compiles and rows, against a
//! baseline of 2,000 in the same run. Linear planning takes about ten times the baseline; the
//! quadratic search it replaced took about a hundred (and some 290 s at 20,000).
//!
//!     cargo bench -p tilefit-core --bench capture_plan
//!
//! It fails loudly when the baseline plans the wrong number of compiles, when the ratio is not
//! linear (over 20), or when 20,000 launches take 5 s or more.

use std::time::{Duration, Instant};

use serde_json::json;
use tilefit_core::input::capture::Records;
use tilefit_core::plan::capture::plan;

/// Records of `n` launches of one kernel, each with its own tile (a distinct compile), and as
/// many again whose int arguments differ only in value (the same compile, as the JIT has it).
fn records(n: usize) -> Records {
    let launches: Vec<_> = (0..n)
        .flat_map(|i| {
            (0..2).map(move |again| {
                json!({
                    "kernel": {"file": "/k.py", "function": "kernel", "line": 1, "digest": "d", "scope": "s"},
                    "caller": {"file": "/script.py", "line": 10 + (i % 50)},
                    "args": {
                        "x_ptr": {"type": "*bf16", "aligned": true},
                        "n": {"type": "i32", "value": 4096 + 16 * again},
                        "stride": {"type": "i32", "value": 1000 + again * 17},
                    },
                    "constexprs": {"BLOCK": i},
                    "options": {"num_warps": 4, "num_stages": 2},
                    "grid": [i % 7 + 1],
                })
            })
        })
        .collect();
    serde_json::from_value(json!({
        "launches": launches,
        "scopes": {"s": "kernel = None\n"},
        "complete": true,
    }))
    .expect("records")
}

fn time(n: usize) -> Duration {
    let records = records(n);
    let started = Instant::now();
    let planned = plan(&records);
    let took = started.elapsed();
    assert_eq!(
        planned.compiles.len(),
        n,
        "{n} tiles must plan {n} compiles (ints that differ only in value are one compile)"
    );
    took
}

fn main() {
    let baseline = time(2_000);
    let big = time(20_000);
    let ratio = big.as_secs_f64() / baseline.as_secs_f64().max(1e-9);
    println!(
        "capture planning: 2,000 launches {:.3} s (baseline), 20,000 launches {:.3} s, ratio {ratio:.1} (linear: about 10)",
        baseline.as_secs_f64(),
        big.as_secs_f64()
    );
    assert!(ratio < 20.0, "planning is not linear: ratio {ratio:.1}");
    assert!(big < Duration::from_secs(5), "20,000 launches took {big:?}");
}
