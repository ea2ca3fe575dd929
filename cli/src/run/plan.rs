//! What `hsakmt run`'s arguments ask for, checked before anything starts: block size and
//! iteration count within their limits, `--gpus`, the injected faults, `HSAKMT_DRIVER` (and
//! its agreement with `--sim`); and, once a driver is chosen, the agents to use.

use hsakmt_core::driver::policy::DRIVER_ENV;
use hsakmt_core::driver::{AgentInfo, AgentKind, Driver, DriverKind};

use super::RunArgs;
use crate::inject::{self, FaultSpec};

/// The largest `--block`: 256 MiB.
const MAX_BLOCK: u32 = 256 << 20;

/// The most iterations one run may ask for: hours at the fastest loops. Latencies go into a
/// fixed-size histogram, so memory does not depend on the count; the limit keeps a typo from
/// starting a run that would not end.
const MAX_ITERATIONS: u64 = 1_000_000_000;

/// How many GPU agents `--gpus` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gpus {
    /// `all`: every usable agent.
    All,
    /// This many.
    Count(usize),
}

/// Parses `--gpus`: a number of at least 1, or `all`.
fn parse_gpus(text: &str) -> Result<Gpus, String> {
    if text == "all" {
        return Ok(Gpus::All);
    }
    let shown = crate::text::escape(text);
    match text.parse::<usize>() {
        Ok(0) => Err("--gpus 0: at least one GPU runs the loop".into()),
        Ok(n) => Ok(Gpus::Count(n)),
        Err(_) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
            Err(format!("--gpus {shown}: more GPUs than any machine has"))
        }
        Err(_) => Err(format!("--gpus {shown}: a number of GPUs (1, 2, …) or `all`")),
    }
}

/// What the arguments ask for, checked before anything starts.
pub(super) struct Plan {
    /// How many GPUs.
    gpus: Gpus,
    /// The faults to inject.
    pub(super) faults: Vec<FaultSpec>,
    /// The driver `HSAKMT_DRIVER` names.
    pub(super) env: Option<DriverKind>,
}

impl Plan {
    pub(super) fn new(args: &RunArgs) -> Result<Self, String> {
        if args.block == 0 || !args.block.is_multiple_of(4) {
            return Err(format!("--block {}: must be a non-zero multiple of 4", args.block));
        }
        if args.block > MAX_BLOCK {
            return Err(format!(
                "--block {}: at most {MAX_BLOCK} bytes (256 MiB; four blocks live in memory \
                 per GPU)",
                args.block
            ));
        }
        if args.iterations == 0 {
            return Err("--iterations must be at least 1".into());
        }
        if args.iterations > MAX_ITERATIONS {
            return Err(format!(
                "--iterations {}: at most {MAX_ITERATIONS} per run",
                args.iterations
            ));
        }
        let gpus = parse_gpus(&args.gpus)?;
        let faults = args.inject.iter().map(|s| inject::parse(s)).collect::<Result<_, _>>()?;
        let env = crate::env::driver()?;
        if let (Some(profile), Some(kind)) = (&args.sim, env)
            && kind != args.sim_kind()
        {
            return Err(format!(
                "--sim {} runs the simulator, but {DRIVER_ENV} asks for the `{kind}` driver: \
                 drop --sim or unset {DRIVER_ENV}",
                crate::text::escape(profile)
            ));
        }
        Ok(Self { gpus, faults, env })
    }
}

/// The usable agents of the chosen driver, and how many of them `plan` asks for.
pub(super) fn agents_to_use(
    driver: &dyn Driver,
    kind: DriverKind,
    plan: &Plan,
    iterations: u64,
) -> Result<Vec<AgentInfo>, String> {
    // Agents that execute kernel dispatch packets.
    let mut agents: Vec<_> = (0..driver.agent_count())
        .filter_map(|i| driver.agent(i))
        .filter(|a| match kind {
            DriverKind::Host => a.kind == AgentKind::Cpu,
            _ => a.kind == AgentKind::Gpu,
        })
        .collect();
    if agents.is_empty() {
        return Err(format!(
            "the `{kind}` driver has no agent to run the loop on (the topology has no usable GPU: \
             none, or none with a gpu_id; `--sim help` lists the profiles that have one)"
        ));
    }
    let wanted = match plan.gpus {
        Gpus::All => agents.len(),
        Gpus::Count(n) if n > agents.len() => {
            return Err(format!(
                "--gpus {n}: the `{kind}` driver has only {} agent(s)",
                agents.len()
            ));
        }
        Gpus::Count(n) => n,
    };
    if u64::try_from(wanted).unwrap_or(u64::MAX) > iterations {
        return Err(format!(
            "--gpus {wanted} with --iterations {iterations}: every GPU needs at least one \
             iteration; use at most {iterations} GPU(s) or at least {wanted} iterations"
        ));
    }
    agents.truncate(wanted);
    Ok(agents)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn gpus_parse_with_their_own_words() {
        assert_eq!(parse_gpus("all"), Ok(Gpus::All));
        assert_eq!(parse_gpus("3"), Ok(Gpus::Count(3)));
        assert!(parse_gpus("0").unwrap_err().contains("at least one"));
        assert!(parse_gpus("99999999999999999999999").unwrap_err().contains("more GPUs than"));
        for bad in ["", "-1", "ALL", "2x", " 2", "\u{1b}[2J"] {
            let e = parse_gpus(bad).unwrap_err();
            assert!(e.contains("a number of GPUs") && !e.contains('\u{1b}'), "{bad:?}: {e}");
        }
    }

    proptest! {
        #[test]
        fn any_gpus_text_parses_or_says_why(text in "\\PC*|[0-9]{0,30}|[\u{0}-\u{20}a-z0-9]{0,8}") {
            match parse_gpus(&text) {
                Ok(Gpus::Count(n)) => prop_assert!(
                    n >= 1 && text.trim_start_matches('+').bytes().all(|b| b.is_ascii_digit())
                ),
                Ok(Gpus::All) => prop_assert_eq!(text.as_str(), "all"),
                Err(e) => prop_assert!(!e.chars().any(char::is_control)),
            }
        }
    }
}
