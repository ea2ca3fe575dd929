//! `--sim help`: the embedded simulator profiles, what each holds, and whether `hsakmt run`
//! can use it (and if not, why).

use std::fmt::Write as _;

use hsakmt_core::topology::{NodeKind, Topology};
use hsakmt_sim::{profile_description, profile_names};

use crate::output::Failure;
use crate::source::Source;

/// The word that asks for the list instead of a profile.
pub(crate) const HELP: &str = "help";

/// Whether a run can use a profile's GPUs: the count, or why none.
fn runnable(topo: &Topology) -> Result<usize, String> {
    let gpus: Vec<_> = topo.nodes().filter(|n| n.kind() != NodeKind::Cpu).collect();
    let usable =
        gpus.iter().filter(|n| n.is_accessible() && n.gpu_id().is_some_and(|g| g != 0)).count();
    match (gpus.len(), usable) {
        (0, _) => Err("no GPU node (a CPU-only capture)".into()),
        (n, 0) => Err(format!(
            "the capture has no gpu_id for its {n} GPU node(s), and a GPU is reached by its \
             gpu_id (values a capture lacks are never invented)"
        )),
        (_, u) => Ok(u),
    }
}

/// The list, one profile per paragraph.
///
/// # Errors
/// A profile that cannot be read (an embedded profile always can).
pub(crate) fn list() -> Result<String, String> {
    let mut s = String::from("Simulator profiles (--sim PROFILE):\n");
    for name in profile_names() {
        let topo = crate::info::snapshot(&Source::sim(name)?)?;
        let gpus = topo.nodes().filter(|n| n.kind() != NodeKind::Cpu).count();
        let mark = if name == hsakmt_sim::DEFAULT_PROFILE { " (default)" } else { "" };
        let _ = writeln!(s, "\n  {name}{mark}");
        if let Some(d) = profile_description(name) {
            let _ = writeln!(s, "    {d}");
        }
        let _ = write!(s, "    {} nodes, {gpus} GPU; ", topo.node_count());
        let _ = match runnable(&topo) {
            Ok(n) => writeln!(s, "`hsakmt run` can use {n} GPU(s)"),
            Err(why) => writeln!(s, "`hsakmt run` cannot run on it: {why}"),
        };
    }
    Ok(s)
}

/// Prints the list on stdout.
///
/// # Errors
/// As [`list`], or a failed write.
pub(crate) fn print() -> Result<(), Failure> {
    crate::output::emit(&list()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_says_which_profiles_cannot_run() {
        let text = list().unwrap();
        for name in profile_names() {
            assert!(text.contains(name), "{name}: {text}");
        }
        let para = |name: &str| {
            let at = text.find(&format!("\n  {name}")).unwrap();
            text[at + 1..].split("\n\n").next().unwrap().to_string()
        };
        assert!(para("mi210-8gpu-2hive").contains("cannot run on it: the capture has no gpu_id"));
        assert!(para("cpu-only-virtual-crat-2021").contains("cannot run on it: no GPU node"));
        assert!(
            para("mi308x-8gpu-cpx").contains("can use 32 GPU(s)"),
            "{}",
            para("mi308x-8gpu-cpx")
        );
    }
}
