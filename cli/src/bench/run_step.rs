//! `run.*`: the control loop of `hsakmt run`.
//!
//! - `run.step.library_time`: `hsakmt run --step` on the default simulator profile — the
//!   simulated command processor and DMA engines stepped on the loop thread — and each
//!   iteration's time less the engines' work: the library's (and the tool's) own time per
//!   iteration. Goals: p99.9 ≤ 4 × p50, a realtime loop's bound, and no heap allocation per
//!   iteration in the steady state (`allocations`: the library's and the simulated kernel's).
//!   The whole iteration's p50 is reported beside it (`iteration_p50`), and how many
//!   iterations were left out because another task held the loop's CPU meanwhile
//!   (`preempted_iterations`).

use super::Row;
use crate::output::Failure;

/// Iterations at scale 1 (a few tenths of a second on the simulator).
const ITERATIONS: f64 = 20_000.0;
/// The fewest iterations at any scale: the loop's warm-up plus enough for a p99.9.
const MIN_ITERATIONS: f64 = 1_000.0;

pub(crate) fn run(scale: f64) -> Result<Vec<Row>, Failure> {
    let iterations = (ITERATIONS * scale).clamp(MIN_ITERATIONS, 1e8) as u64;
    let (library, iteration, allocations, preempted) = crate::run::step_library_time(iterations)?;
    let mut row = Row::blank("run.step.library_time", "ns");
    row.p50 = library.p50;
    row.p99 = library.p99;
    row.p999 = library.p99_9;
    row.max = library.max;
    row.extra.insert("iterations".into(), iterations.into());
    row.extra.insert("iteration_p50".into(), iteration.p50.into());
    row.extra.insert("allocations".into(), allocations.into());
    row.extra.insert("preempted_iterations".into(), preempted.into());
    Ok(vec![row.goal("p99.9/p50 <= 4, allocations <= 0")])
}
