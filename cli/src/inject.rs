//! `hsakmt run --inject NAME=ERRNO@N`: faults for the simulator's ioctls, and the account of
//! what became of each.
//!
//! Semantics: the fault fails the `N`th call of that ioctl the simulator receives, counted from
//! the start of the run (driver detection included). With `--inject`, the simulated GPU runs
//! only while the process waits in `AMDKFD_IOC_WAIT_EVENTS` ([`CpMode::OnWait`]), so every wait
//! of the loop is exactly one `WAIT_EVENTS` and a run issues the same ioctls in the same order
//! every time: `WAIT_EVENTS=EIO@2` always fails the second wait. (With several GPUs the loop
//! threads' calls interleave, so which agent meets the `N`th call may vary; how many calls
//! there are does not.) A fault that never fired, and a fault that made the driver policy fall
//! back from the simulator to another driver, fail the run.
//!
//! [`CpMode::OnWait`]: hsakmt_sim::CpMode::OnWait

use std::fmt::Write as _;

use hsakmt_core::error::Errno;
use hsakmt_core::uapi::IOCTLS;
use hsakmt_sim::{FaultId, IoctlFault, SimPlatform, Trigger};

/// One `--inject` argument, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FaultSpec {
    /// The argument as given (for messages).
    pub(crate) text: String,
    /// The ioctl's name without `AMDKFD_IOC_`.
    pub(crate) ioctl: &'static str,
    /// The fault.
    pub(crate) fault: IoctlFault,
}

/// The expected form, for messages.
const FORM: &str = "expected NAME=ERRNO@N, e.g. WAIT_EVENTS=EIO@3";

/// Parses `NAME=ERRNO@N` (names case-insensitive, with or without `AMDKFD_IOC_`).
///
/// # Errors
/// A message saying which part is wrong and what would be right.
pub(crate) fn parse(spec: &str) -> Result<FaultSpec, String> {
    let shown = spec.escape_debug().to_string();
    let (name, rest) =
        spec.split_once('=').ok_or_else(|| format!("--inject {shown}: no `=`; {FORM}"))?;
    let (errno, nth) = rest
        .split_once('@')
        .ok_or_else(|| format!("--inject {shown}: no `@N` after the errno; {FORM}"))?;
    let wanted = name.strip_prefix("AMDKFD_IOC_").unwrap_or(name);
    let info = IOCTLS
        .iter()
        .find(|i| i.name.trim_start_matches("AMDKFD_IOC_").eq_ignore_ascii_case(wanted))
        .ok_or_else(|| {
            format!(
                "--inject {shown}: no ioctl named `{}` (names are those of kfd_ioctl.h without \
                 AMDKFD_IOC_, e.g. WAIT_EVENTS, CREATE_QUEUE, ALLOC_MEMORY_OF_GPU)",
                name.escape_debug()
            )
        })?;
    let errno = Errno::ALL
        .iter()
        .copied()
        .find(|e| e.name().is_some_and(|n| n.eq_ignore_ascii_case(errno)))
        .ok_or_else(|| {
            format!(
                "--inject {shown}: no errno named `{}` (a Linux errno name such as EIO, ENOMEM, \
                 EINVAL)",
                errno.escape_debug()
            )
        })?;
    let nth = match nth.parse::<u64>() {
        Ok(0) => return Err(format!("--inject {shown}: N counts calls from 1, not 0")),
        Ok(n) => n,
        Err(_) if !nth.is_empty() && nth.bytes().all(|b| b.is_ascii_digit()) => {
            return Err(format!("--inject {shown}: N is beyond {}", u64::MAX));
        }
        Err(_) => {
            return Err(format!(
                "--inject {shown}: `{}` after `@` is not a call number (1, 2, …)",
                nth.escape_debug()
            ));
        }
    };
    Ok(FaultSpec {
        text: spec.to_string(),
        ioctl: info.name.trim_start_matches("AMDKFD_IOC_"),
        fault: IoctlFault { nr: Some(info.nr), errno, trigger: Trigger::Nth(nth) },
    })
}

/// The faults armed in one simulator.
#[derive(Debug, Default)]
pub(crate) struct Armed {
    faults: Vec<(FaultSpec, FaultId)>,
}

impl Armed {
    /// Arms every fault of `specs` in `sim`.
    pub(crate) fn arm(sim: &SimPlatform, specs: &[FaultSpec]) -> Self {
        Self { faults: specs.iter().map(|s| (s.clone(), sim.inject(s.fault))).collect() }
    }

    /// Whether any fault is armed.
    pub(crate) fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }

    /// The faults that fired so far, as `NAME=ERRNO@N` texts.
    pub(crate) fn fired(&self, sim: &SimPlatform) -> Vec<&str> {
        self.faults
            .iter()
            .filter(|(_, id)| sim.fault_record(*id).is_some_and(|r| r.fired > 0))
            .map(|(s, _)| s.text.as_str())
            .collect()
    }

    /// A line per fault that never fired, saying how many calls it saw; empty when all fired.
    pub(crate) fn never_fired(&self, sim: &SimPlatform) -> String {
        let mut out = String::new();
        for (spec, id) in &self.faults {
            let Some(record) = sim.fault_record(*id) else { continue };
            if record.fired == 0 {
                let Trigger::Nth(n) = spec.fault.trigger else { continue };
                let _ = write!(
                    out,
                    "\n  --inject {}: never fired: the run issued {} {} call(s), not {n}",
                    spec.text.escape_debug(),
                    record.calls,
                    spec.ioctl
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_mistake_has_its_own_words() {
        let ok = parse("wait_events=eio@3").unwrap();
        assert_eq!(
            (ok.ioctl, ok.fault.errno, ok.fault.trigger),
            ("WAIT_EVENTS", Errno::EIO, Trigger::Nth(3))
        );
        assert_eq!(parse("AMDKFD_IOC_CREATE_QUEUE=ENOMEM@1").unwrap().ioctl, "CREATE_QUEUE");
        let cases = [
            ("WAIT_EVENTS", "no `=`"),
            ("WAIT_EVENTS=EIO", "no `@N`"),
            ("WAIT=EIO@1", "no ioctl named `WAIT`"),
            ("WAIT_EVENTS=EFOO@1", "no errno named `EFOO`"),
            ("WAIT_EVENTS=EIO@0", "from 1, not 0"),
            ("WAIT_EVENTS=EIO@18446744073709551616", "beyond"),
            ("WAIT_EVENTS=EIO@-1", "not a call number"),
            ("WAIT_EVENTS=EIO@", "not a call number"),
            ("WAIT_EVENTS=ELOOP@x\u{1b}[2J", "\\u{1b}"),
        ];
        for (spec, want) in cases {
            let e = parse(spec).unwrap_err();
            assert!(e.contains(want), "{spec}: {e}");
            assert!(!e.contains('\u{1b}'), "control characters are escaped: {e:?}");
        }
    }

    proptest! {
        /// Any text: a fault or a message, never a panic; a message never carries a control
        /// character of the input.
        #[test]
        fn any_text_parses_or_says_why(spec in "\\PC*|[A-Za-z_=@0-9\u{0}-\u{1f}]{0,40}") {
            match parse(&spec) {
                Ok(f) => prop_assert!(matches!(f.fault.trigger, Trigger::Nth(n) if n >= 1)),
                Err(e) => prop_assert!(!e.chars().any(|c| c.is_control() && c != '\n')),
            }
        }
    }
}
