//! `cargo xtask size`: static footprints of core's fixed-capacity state.

use hsakmt_core::topology::Topology;

/// Budget for the default topology snapshot.
pub(crate) const SNAPSHOT_BUDGET: usize = 512 * 1024;

pub(crate) fn size(args: &[String]) -> Result<(), String> {
    let json = args.iter().any(|a| a == "--json");
    let snapshot = core::mem::size_of::<Topology>();
    if json {
        println!("{{\"snapshot_bytes\": {snapshot}}}");
    } else {
        println!(
            "topology snapshot (default capacity): {snapshot} bytes ({:.1} KiB, budget {} KiB)",
            snapshot as f64 / 1024.0,
            SNAPSHOT_BUDGET / 1024
        );
    }
    if snapshot > SNAPSHOT_BUDGET {
        return Err(format!("the snapshot exceeds its budget of {SNAPSHOT_BUDGET} bytes"));
    }
    Ok(())
}
