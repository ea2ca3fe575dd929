//! The target a code object is built for (`e_flags`: processor, xnack and sramecc modes, the
//! generic version of code object v6) and the check against an agent.
//!
//! Facts from LLVM's AMDGPUUsage ("ELF Header", `EF_AMDGPU_*` tables, "Generic Processors",
//! "Generic Processor Versioning", "Target Features"):
//! - bits 0–7 `EF_AMDGPU_MACH`: the processor;
//! - bits 8–9 `EF_AMDGPU_FEATURE_XNACK_V4` and bits 10–11 `EF_AMDGPU_FEATURE_SRAMECC_V4`
//!   (code object v4 and later): 0 unsupported, 1 any, 2 off, 3 on;
//! - bits 24–31 `EF_AMDGPU_GENERIC_VERSION` (v6 and later): 0 for a specific processor, 1–255
//!   for a generic one (`gfx9-generic`, …), which runs on each listed processor from the version
//!   that processor was added in.
//!
//! The agent side is its *effective* gfx version: when `HSA_OVERRIDE_GFX_VERSION` (or the
//! per-node `HSA_OVERRIDE_GFX_VERSION_<id>`) is set, the check uses the overridden version
//! (`topology::Node::effective_gfx`), exactly as ROCr picks code objects by the ISA the thunk
//! reports; a mismatch then names the overridden version.

use core::fmt;

use crate::topology::GfxVersion;

/// `EF_AMDGPU_MACH`: the processor bits of `e_flags`.
pub const EF_AMDGPU_MACH: u32 = 0xff;
/// `EF_AMDGPU_FEATURE_XNACK_V4`: the xnack mode bits.
pub const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
/// `EF_AMDGPU_FEATURE_SRAMECC_V4`: the sramecc mode bits.
pub const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;
/// `EF_AMDGPU_GENERIC_VERSION`: the generic-version bits (code object v6).
pub const EF_AMDGPU_GENERIC_VERSION: u32 = 0xff00_0000;

/// A target feature's mode in a code object (`EF_AMDGPU_FEATURE_*_V4` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FeatureMode {
    /// The processor does not support the feature (0).
    Unsupported,
    /// Built to run with the feature on or off (1; the target ID names no setting).
    Any,
    /// Built for the feature off (2; target ID `feature-`).
    Off,
    /// Built for the feature on (3; target ID `feature+`).
    On,
}

impl FeatureMode {
    const fn from_bits(bits: u32) -> Self {
        match bits & 3 {
            0 => Self::Unsupported,
            1 => Self::Any,
            2 => Self::Off,
            _ => Self::On,
        }
    }

    /// Whether code built with this mode runs on an agent whose feature is `agent`.
    #[must_use]
    pub const fn accepts(self, agent: AgentFeature) -> bool {
        !matches!((self, agent), (Self::On, AgentFeature::Off) | (Self::Off, AgentFeature::On))
    }

    /// The target-ID suffix (`+`, `-`) of a mode that names a setting.
    const fn suffix(self) -> Option<char> {
        match self {
            Self::On => Some('+'),
            Self::Off => Some('-'),
            Self::Any | Self::Unsupported => None,
        }
    }
}

/// An agent's setting of a target feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AgentFeature {
    /// Not known (or not applicable): any code object setting is accepted.
    Unknown,
    /// Off on the agent (for xnack: the process runs without XNACK replay).
    Off,
    /// On on the agent.
    On,
}

/// The agent a code object is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AgentTarget {
    /// The effective gfx version: `HSA_OVERRIDE_GFX_VERSION`'s if set, else the real one.
    pub gfx: GfxVersion,
    /// XNACK replay: on when the process runs with it enabled.
    pub xnack: AgentFeature,
    /// SRAM ECC: on when the device has it enabled.
    pub sramecc: AgentFeature,
}

impl AgentTarget {
    /// An agent of version `gfx` whose feature settings are not known (any object setting
    /// is accepted).
    #[must_use]
    pub const fn new(gfx: GfxVersion) -> Self {
        Self { gfx, xnack: AgentFeature::Unknown, sramecc: AgentFeature::Unknown }
    }
}

impl fmt::Display for AgentTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.gfx)?;
        for (name, feature) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            match feature {
                AgentFeature::On => write!(f, ":{name}+")?,
                AgentFeature::Off => write!(f, ":{name}-")?,
                AgentFeature::Unknown => {}
            }
        }
        Ok(())
    }
}

/// A processor as `EF_AMDGPU_MACH` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Processor(pub u8);

/// A processor a generic target runs on, and the generic version it was added in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GenericMember {
    /// The processor's gfx version.
    pub gfx: GfxVersion,
    /// The lowest generic code object version that runs on it.
    pub since: u8,
}

/// What a processor value stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ProcessorKind {
    /// One processor.
    Specific(GfxVersion),
    /// A generic target: the processors it runs on.
    Generic(&'static [GenericMember]),
}

struct ProcessorInfo {
    mach: u8,
    name: &'static str,
    kind: ProcessorKind,
}

const fn specific(mach: u8, name: &'static str, v: (u8, u8, u8)) -> ProcessorInfo {
    ProcessorInfo { mach, name, kind: ProcessorKind::Specific(GfxVersion::new(v.0, v.1, v.2)) }
}

const fn member(major: u8, minor: u8, stepping: u8) -> GenericMember {
    GenericMember { gfx: GfxVersion::new(major, minor, stepping), since: 1 }
}

const GFX9_GENERIC: &[GenericMember] = &[
    member(9, 0, 0),
    member(9, 0, 2),
    member(9, 0, 4),
    member(9, 0, 6),
    member(9, 0, 9),
    member(9, 0, 12),
];
const GFX9_4_GENERIC: &[GenericMember] = &[member(9, 4, 2), member(9, 5, 0)];
const GFX10_1_GENERIC: &[GenericMember] =
    &[member(10, 1, 0), member(10, 1, 1), member(10, 1, 2), member(10, 1, 3)];
const GFX10_3_GENERIC: &[GenericMember] = &[
    member(10, 3, 0),
    member(10, 3, 1),
    member(10, 3, 2),
    member(10, 3, 3),
    member(10, 3, 4),
    member(10, 3, 5),
    member(10, 3, 6),
];
const GFX11_GENERIC: &[GenericMember] = &[
    member(11, 0, 0),
    member(11, 0, 1),
    member(11, 0, 2),
    member(11, 0, 3),
    member(11, 5, 0),
    member(11, 5, 1),
    member(11, 5, 2),
    member(11, 5, 3),
];
const GFX12_GENERIC: &[GenericMember] = &[member(12, 0, 0), member(12, 0, 1)];

const fn generic(mach: u8, name: &'static str, members: &'static [GenericMember]) -> ProcessorInfo {
    ProcessorInfo { mach, name, kind: ProcessorKind::Generic(members) }
}

/// The AMDGCN processors (`EF_AMDGPU_MACH_AMDGCN_*`), from LLVM's `ELF.h`/AMDGPUUsage.
const PROCESSORS: &[ProcessorInfo] = &[
    specific(0x20, "gfx600", (6, 0, 0)),
    specific(0x21, "gfx601", (6, 0, 1)),
    specific(0x3a, "gfx602", (6, 0, 2)),
    specific(0x22, "gfx700", (7, 0, 0)),
    specific(0x23, "gfx701", (7, 0, 1)),
    specific(0x24, "gfx702", (7, 0, 2)),
    specific(0x25, "gfx703", (7, 0, 3)),
    specific(0x26, "gfx704", (7, 0, 4)),
    specific(0x3b, "gfx705", (7, 0, 5)),
    specific(0x28, "gfx801", (8, 0, 1)),
    specific(0x29, "gfx802", (8, 0, 2)),
    specific(0x2a, "gfx803", (8, 0, 3)),
    specific(0x3c, "gfx805", (8, 0, 5)),
    specific(0x2b, "gfx810", (8, 1, 0)),
    specific(0x2c, "gfx900", (9, 0, 0)),
    specific(0x2d, "gfx902", (9, 0, 2)),
    specific(0x2e, "gfx904", (9, 0, 4)),
    specific(0x2f, "gfx906", (9, 0, 6)),
    specific(0x30, "gfx908", (9, 0, 8)),
    specific(0x31, "gfx909", (9, 0, 9)),
    specific(0x32, "gfx90c", (9, 0, 12)),
    specific(0x3f, "gfx90a", (9, 0, 10)),
    specific(0x40, "gfx940", (9, 4, 0)),
    specific(0x4b, "gfx941", (9, 4, 1)),
    specific(0x4c, "gfx942", (9, 4, 2)),
    specific(0x4f, "gfx950", (9, 5, 0)),
    specific(0x33, "gfx1010", (10, 1, 0)),
    specific(0x34, "gfx1011", (10, 1, 1)),
    specific(0x35, "gfx1012", (10, 1, 2)),
    specific(0x42, "gfx1013", (10, 1, 3)),
    specific(0x36, "gfx1030", (10, 3, 0)),
    specific(0x37, "gfx1031", (10, 3, 1)),
    specific(0x38, "gfx1032", (10, 3, 2)),
    specific(0x39, "gfx1033", (10, 3, 3)),
    specific(0x3e, "gfx1034", (10, 3, 4)),
    specific(0x3d, "gfx1035", (10, 3, 5)),
    specific(0x45, "gfx1036", (10, 3, 6)),
    specific(0x41, "gfx1100", (11, 0, 0)),
    specific(0x46, "gfx1101", (11, 0, 1)),
    specific(0x47, "gfx1102", (11, 0, 2)),
    specific(0x44, "gfx1103", (11, 0, 3)),
    specific(0x43, "gfx1150", (11, 5, 0)),
    specific(0x4a, "gfx1151", (11, 5, 1)),
    specific(0x55, "gfx1152", (11, 5, 2)),
    specific(0x58, "gfx1153", (11, 5, 3)),
    specific(0x48, "gfx1200", (12, 0, 0)),
    specific(0x4e, "gfx1201", (12, 0, 1)),
    generic(0x51, "gfx9-generic", GFX9_GENERIC),
    generic(0x5f, "gfx9-4-generic", GFX9_4_GENERIC),
    generic(0x52, "gfx10-1-generic", GFX10_1_GENERIC),
    generic(0x53, "gfx10-3-generic", GFX10_3_GENERIC),
    generic(0x54, "gfx11-generic", GFX11_GENERIC),
    generic(0x59, "gfx12-generic", GFX12_GENERIC),
];

impl Processor {
    fn info(self) -> Option<&'static ProcessorInfo> {
        PROCESSORS.iter().find(|p| p.mach == self.0)
    }

    /// The processor name (`gfx942`, `gfx9-generic`), or `None` for a value this crate does not
    /// know.
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        self.info().map(|p| p.name)
    }

    /// What the value stands for, or `None` for a value this crate does not know.
    #[must_use]
    pub fn kind(self) -> Option<ProcessorKind> {
        self.info().map(|p| p.kind)
    }

    /// The gfx version of a specific processor (`None` for a generic or unknown one).
    #[must_use]
    pub fn gfx(self) -> Option<GfxVersion> {
        match self.kind() {
            Some(ProcessorKind::Specific(g)) => Some(g),
            _ => None,
        }
    }

    /// The processor value of a specific gfx version, if this crate knows it.
    #[must_use]
    pub fn from_gfx(gfx: GfxVersion) -> Option<Self> {
        PROCESSORS.iter().find(|p| p.kind == ProcessorKind::Specific(gfx)).map(|p| Self(p.mach))
    }

    /// Whether the value names a generic target.
    #[must_use]
    pub fn is_generic(self) -> bool {
        matches!(self.kind(), Some(ProcessorKind::Generic(_)))
    }

    /// The ISA family whose kernel-descriptor layout applies (the meaning of
    /// `COMPUTE_PGM_RSRC3` and of some `COMPUTE_PGM_RSRC1` bits).
    #[must_use]
    pub fn family(self) -> Option<IsaFamily> {
        let gfx = match self.kind()? {
            ProcessorKind::Specific(g) => g,
            ProcessorKind::Generic(members) => members.first()?.gfx,
        };
        Some(match (gfx.major, gfx.minor, gfx.stepping) {
            (0..=8, _, _) => IsaFamily::Gfx6To8,
            (9, 0, 10) | (9, 4..=255, _) => IsaFamily::Gfx90a,
            (9, _, _) => IsaFamily::Gfx9,
            (10, _, _) => IsaFamily::Gfx10,
            (11, _, _) => IsaFamily::Gfx11,
            _ => IsaFamily::Gfx12,
        })
    }
}

impl fmt::Display for Processor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "unknown processor {:#04x}", self.0),
        }
    }
}

/// ISA families whose kernel descriptors differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum IsaFamily {
    /// GFX6–GFX8.
    Gfx6To8,
    /// GFX9 before gfx90a (gfx900 … gfx90c, gfx908): no `COMPUTE_PGM_RSRC3`.
    Gfx9,
    /// gfx90a, gfx94x, gfx950: `COMPUTE_PGM_RSRC3` holds the accumulation-register offset.
    Gfx90a,
    /// GFX10 (RDNA1/2).
    Gfx10,
    /// GFX11 (RDNA3).
    Gfx11,
    /// GFX12 (RDNA4) and later.
    Gfx12,
}

/// A code object's target, decoded from `e_flags`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Target {
    /// The processor (or generic target).
    pub processor: Processor,
    /// XNACK mode.
    pub xnack: FeatureMode,
    /// SRAM ECC mode.
    pub sramecc: FeatureMode,
    /// The generic version (code object v6): 0 for a specific processor, 1–255 for a generic
    /// target.
    pub generic_version: u8,
}

/// Why `e_flags` does not describe a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EFlagsProblem {
    /// Bits that must be zero for this code object version are set.
    ReservedBits,
    /// The processor value is not an AMDGCN processor this crate knows.
    UnknownProcessor,
    /// A generic target without a generic version (or a specific processor with one).
    GenericVersion,
}

impl Target {
    /// Decodes `e_flags` of a code object whose version has the v6 generic-version field
    /// (`has_generic_version`) or not (v4, v5: those bits are reserved, zero).
    ///
    /// # Errors
    /// Reserved bits set, an unknown processor, or a generic version inconsistent with the
    /// processor.
    pub fn from_e_flags(e_flags: u32, has_generic_version: bool) -> Result<Self, EFlagsProblem> {
        let mut known = EF_AMDGPU_MACH | EF_AMDGPU_FEATURE_XNACK_V4 | EF_AMDGPU_FEATURE_SRAMECC_V4;
        if has_generic_version {
            known |= EF_AMDGPU_GENERIC_VERSION;
        }
        if e_flags & !known != 0 {
            return Err(EFlagsProblem::ReservedBits);
        }
        let processor = Processor((e_flags & EF_AMDGPU_MACH) as u8);
        let generic = match processor.kind() {
            Some(ProcessorKind::Generic(_)) => true,
            Some(ProcessorKind::Specific(_)) => false,
            None => return Err(EFlagsProblem::UnknownProcessor),
        };
        let generic_version = e_flags.to_le_bytes()[3];
        // A generic target exists from code object v6 on and carries a version >= 1.
        if generic != (generic_version != 0) {
            return Err(EFlagsProblem::GenericVersion);
        }
        Ok(Self {
            processor,
            xnack: FeatureMode::from_bits(e_flags.wrapping_shr(8)),
            sramecc: FeatureMode::from_bits(e_flags.wrapping_shr(10)),
            generic_version,
        })
    }

    /// Whether code for this target runs on `agent`: the processor is the agent's effective
    /// gfx (or, for a generic target, lists it from a version at or below the object's), and
    /// the xnack and sramecc modes accept the agent's settings.
    #[must_use]
    pub fn runs_on(&self, agent: &AgentTarget) -> bool {
        let processor = match self.processor.kind() {
            Some(ProcessorKind::Specific(g)) => g == agent.gfx,
            Some(ProcessorKind::Generic(members)) => {
                members.iter().any(|m| m.gfx == agent.gfx && m.since <= self.generic_version)
            }
            None => false,
        };
        processor && self.xnack.accepts(agent.xnack) && self.sramecc.accepts(agent.sramecc)
    }
}

/// The canonical target ID: `gfx942:sramecc+:xnack-` (features named only when on or off, in
/// alphabetical order, as LLVM writes them).
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.processor)?;
        for (name, mode) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            if let Some(s) = mode.suffix() {
                write!(f, ":{name}{s}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn decodes_e_flags_of_real_objects() {
        // llvm-readelf -h: 0x12C gfx900 xnack(any); 0x54C gfx942; 0xE4C gfx942 xnack- sramecc+;
        // 0x1000151 gfx9-generic generic_v1.
        let t = Target::from_e_flags(0x12c, false).unwrap();
        assert_eq!(t.processor.name(), Some("gfx900"));
        assert_eq!((t.xnack, t.sramecc), (FeatureMode::Any, FeatureMode::Unsupported));
        assert_eq!(t.to_string(), "gfx900");
        let t = Target::from_e_flags(0xe4c, true).unwrap();
        assert_eq!((t.xnack, t.sramecc), (FeatureMode::Off, FeatureMode::On));
        assert_eq!(t.to_string(), "gfx942:sramecc+:xnack-");
        let t = Target::from_e_flags(0x0100_0151, true).unwrap();
        assert_eq!(t.processor.name(), Some("gfx9-generic"));
        assert_eq!(t.generic_version, 1);
        assert_eq!(t.processor.family(), Some(IsaFamily::Gfx9));
    }

    #[test]
    fn rejects_bad_e_flags() {
        assert_eq!(Target::from_e_flags(0x1000, false), Err(EFlagsProblem::ReservedBits));
        assert_eq!(Target::from_e_flags(0x0100_012c, false), Err(EFlagsProblem::ReservedBits));
        assert_eq!(Target::from_e_flags(0x0100_012c, true), Err(EFlagsProblem::GenericVersion));
        assert_eq!(Target::from_e_flags(0x151, true), Err(EFlagsProblem::GenericVersion));
        assert_eq!(Target::from_e_flags(0x27, false), Err(EFlagsProblem::UnknownProcessor));
        assert_eq!(Target::from_e_flags(0x01, false), Err(EFlagsProblem::UnknownProcessor));
    }

    #[test]
    fn processor_table() {
        for p in PROCESSORS {
            let proc = Processor(p.mach);
            assert_eq!(PROCESSORS.iter().filter(|q| q.mach == p.mach).count(), 1, "{}", p.name);
            if let ProcessorKind::Specific(g) = p.kind {
                // The name is the gfx version's canonical spelling.
                assert_eq!(g.to_string(), p.name);
                assert_eq!(Processor::from_gfx(g), Some(proc));
            }
            assert!(proc.family().is_some());
        }
        let family = |n: u8| Processor(n).family();
        assert_eq!(family(0x2c), Some(IsaFamily::Gfx9));
        assert_eq!(family(0x30), Some(IsaFamily::Gfx9));
        assert_eq!(family(0x3f), Some(IsaFamily::Gfx90a));
        assert_eq!(family(0x4c), Some(IsaFamily::Gfx90a));
        assert_eq!(family(0x5f), Some(IsaFamily::Gfx90a));
        assert_eq!(family(0x36), Some(IsaFamily::Gfx10));
        assert_eq!(family(0x41), Some(IsaFamily::Gfx11));
        assert_eq!(family(0x4e), Some(IsaFamily::Gfx12));
        assert_eq!(Processor(0x27).to_string(), "unknown processor 0x27");
    }

    #[test]
    fn target_check() {
        let gfx942 = GfxVersion::new(9, 4, 2);
        let any = Target::from_e_flags(0x54c, false).unwrap();
        let strict = Target::from_e_flags(0xe4c, true).unwrap();
        let agent = |xnack, sramecc| AgentTarget { gfx: gfx942, xnack, sramecc };
        use AgentFeature::{Off, On, Unknown};
        assert!(any.runs_on(&agent(On, On)));
        assert!(any.runs_on(&agent(Off, Off)));
        assert!(strict.runs_on(&agent(Off, On)));
        assert!(strict.runs_on(&AgentTarget::new(gfx942)));
        assert!(!strict.runs_on(&agent(On, On)));
        assert!(!strict.runs_on(&agent(Off, Off)));
        assert!(strict.runs_on(&agent(Unknown, On)));
        assert!(!any.runs_on(&AgentTarget::new(GfxVersion::new(9, 0, 10))));
        // Generic: gfx9-generic v1 runs on gfx900 and gfx90c, not on gfx90a or gfx908.
        let generic = Target::from_e_flags(0x0100_0151, true).unwrap();
        assert!(generic.runs_on(&AgentTarget::new(GfxVersion::new(9, 0, 0))));
        assert!(generic.runs_on(&AgentTarget::new(GfxVersion::new(9, 0, 12))));
        assert!(!generic.runs_on(&AgentTarget::new(GfxVersion::new(9, 0, 10))));
        assert!(!generic.runs_on(&AgentTarget::new(GfxVersion::new(9, 0, 8))));
        assert_eq!(agent(Off, On).to_string(), "gfx942:sramecc+:xnack-");
    }
}
