//! gfx IP versions: decoding `gfx_target_version`, the PCI device-id table libhsakmt uses for
//! drivers that predate that key, and `HSA_OVERRIDE_GFX_VERSION` parsing.

use core::fmt;

/// A gfx IP version (libhsakmt's `HSA_ENGINE_ID` major/minor/stepping).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GfxVersion {
    /// Major version (9 for gfx9xx, 11 for gfx11xx).
    pub major: u8,
    /// Minor version.
    pub minor: u8,
    /// Stepping.
    pub stepping: u8,
}

/// The largest gfx major version (the `HSA_OVERRIDE_GFX_VERSION` bound; six bits in ROCr's
/// ISA names).
pub const MAX_MAJOR: u8 = 63;

impl GfxVersion {
    /// A version from its parts.
    #[must_use]
    pub const fn new(major: u8, minor: u8, stepping: u8) -> Self {
        Self { major, minor, stepping }
    }

    /// Decodes the kernel's decimal `MMmmss` `gfx_target_version` as libhsakmt does
    /// (`major = v / 10000`, `minor = v / 100 % 100`, `stepping = v % 100`).
    /// `0` (CPU nodes) yields `None`, and so does a value whose major is above
    /// [`MAX_MAJOR`] (libhsakmt's `% 100` would wrap it into a version that does not exist).
    #[must_use]
    pub const fn from_target_version(v: u32) -> Option<Self> {
        // 0 is "unknown"; a major above 63 is no gfx version (and would wrap below).
        if v == 0 || v / 10_000 > MAX_MAJOR as u32 {
            return None;
        }
        // The major is at most 63 (checked above), the others < 100: the casts are exact.
        Some(Self {
            major: (v / 10_000) as u8,
            minor: (v / 100 % 100) as u8,
            stepping: (v % 100) as u8,
        })
    }

    /// The decimal `MMmmss` form the kernel prints.
    #[must_use]
    pub const fn target_version(self) -> u32 {
        // At most 255 × 10,000 + 255 × 100 + 255: far below 2^32.
        (self.major as u32)
            .saturating_mul(10_000)
            .saturating_add((self.minor as u32).saturating_mul(100))
            .saturating_add(self.stepping as u32)
    }

    /// libhsakmt's `HSA_GET_GFX_VERSION_FULL`: `major << 16 | minor << 8 | stepping`.
    #[must_use]
    pub const fn full(self) -> u32 {
        (self.major as u32) << 16 | (self.minor as u32) << 8 | self.stepping as u32
    }
}

/// `gfx` + major in decimal + minor and stepping in hex: `gfx942`, `gfx90a`, `gfx1100`.
/// (A minor or stepping above 15 prints as more than one hex digit.)
impl fmt::Display for GfxVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gfx{}{:x}{:x}", self.major, self.minor, self.stepping)
    }
}

/// Where a node's gfx version came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GfxSource {
    /// The node's `gfx_target_version` key.
    TargetVersion,
    /// libhsakmt's device-id table (drivers before `gfx_target_version`, or a table entry
    /// overriding it, which libhsakmt does for majors up to 10).
    DeviceTable,
}

/// A row of libhsakmt's `gfxip_lookup_table`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DeviceGfx {
    /// The gfx version of the device.
    pub gfx: GfxVersion,
    /// libhsakmt's CAL name for it (`AMDName`), e.g. `"Vega10"`.
    pub name: &'static str,
}

struct Family {
    name: &'static str,
    gfx: GfxVersion,
    ids: &'static [u16],
}

const fn fam(name: &'static str, v: (u8, u8, u8), ids: &'static [u16]) -> Family {
    Family { name, gfx: GfxVersion::new(v.0, v.1, v.2), ids }
}

/// Device ids → gfx versions, as in libhsakmt's `gfxip_lookup_table` (topology.c), grouped by
/// family (Kaveri … Yellow Carp). Newer parts are identified by `gfx_target_version` only.
const FAMILIES: &[Family] = &[
    fam(
        "Spectre",
        (7, 0, 0),
        &[
            0x1304, 0x1305, 0x1306, 0x1307, 0x1309, 0x130A, 0x130B, 0x130C, 0x130D, 0x130E, 0x130F,
            0x1310, 0x1311, 0x1313, 0x1315, 0x1318, 0x131B, 0x131C, 0x131D,
        ],
    ),
    fam("Spooky", (7, 0, 0), &[0x1312, 0x1316, 0x1317]),
    fam(
        "Hawaii",
        (7, 0, 1),
        &[
            0x67A0, 0x67A1, 0x67A2, 0x67A8, 0x67A9, 0x67AA, 0x67B0, 0x67B1, 0x67B8, 0x67B9, 0x67BA,
            0x67BE,
        ],
    ),
    fam("Carrizo", (8, 0, 1), &[0x9870, 0x9874, 0x9875, 0x9876, 0x9877]),
    fam(
        "Tonga",
        (8, 0, 2),
        &[0x6920, 0x6921, 0x6928, 0x6929, 0x692B, 0x692F, 0x6930, 0x6938, 0x6939],
    ),
    fam("Fiji", (8, 0, 3), &[0x7300, 0x730F]),
    fam(
        "Polaris10",
        (8, 0, 3),
        &[
            0x67C0, 0x67C1, 0x67C2, 0x67C4, 0x67C7, 0x67C8, 0x67C9, 0x67CA, 0x67CC, 0x67CF, 0x67D0,
            0x67DF, 0x6FDF,
        ],
    ),
    fam(
        "Polaris11",
        (8, 0, 3),
        &[0x67E0, 0x67E1, 0x67E3, 0x67E7, 0x67E8, 0x67E9, 0x67EB, 0x67EF, 0x67FF],
    ),
    fam("Polaris12", (8, 0, 3), &[0x6980, 0x6981, 0x6985, 0x6986, 0x6987, 0x6995, 0x6997, 0x699F]),
    fam("VegaM", (8, 0, 3), &[0x694C, 0x694E, 0x694F]),
    fam(
        "Vega10",
        (9, 0, 0),
        &[
            0x6860, 0x6861, 0x6862, 0x6863, 0x6864, 0x6867, 0x6868, 0x6869, 0x686A, 0x686B, 0x686C,
            0x686D, 0x686E, 0x687F,
        ],
    ),
    fam("Vega12", (9, 0, 4), &[0x69A0, 0x69A1, 0x69A2, 0x69A3, 0x69AF]),
    fam("Raven", (9, 0, 2), &[0x15DD, 0x15D8]),
    fam("Vega20", (9, 0, 6), &[0x66A0, 0x66A1, 0x66A2, 0x66A3, 0x66A4, 0x66A7, 0x66AF]),
    fam("Arcturus", (9, 0, 8), &[0x7388, 0x738C, 0x738E, 0x7390]),
    fam("Aldebaran", (9, 0, 10), &[0x7408, 0x740C, 0x740F, 0x7410]),
    fam("Renoir", (9, 0, 12), &[0x15E7, 0x1636, 0x1638, 0x164C]),
    fam("Navi10", (10, 1, 0), &[0x7310, 0x7312, 0x7318, 0x731A, 0x731E, 0x731F]),
    fam("cyan_skillfish", (10, 1, 3), &[0x13F9, 0x13FA, 0x13FB, 0x13FC, 0x13FE, 0x143F]),
    fam("Navi14", (10, 1, 2), &[0x7340, 0x7341, 0x7347]),
    fam("Navi12", (10, 1, 1), &[0x7360, 0x7362]),
    fam(
        "SIENNA_CICHLID",
        (10, 3, 0),
        &[
            0x73A0, 0x73A1, 0x73A2, 0x73A3, 0x73A5, 0x73A8, 0x73A9, 0x73AC, 0x73AD, 0x73AB, 0x73AE,
            0x73BF,
        ],
    ),
    fam(
        "NAVY_FLOUNDER",
        (10, 3, 1),
        &[0x73C0, 0x73C1, 0x73C3, 0x73DA, 0x73DB, 0x73DC, 0x73DD, 0x73DE, 0x73DF],
    ),
    fam(
        "DIMGREY_CAVEFISH",
        (10, 3, 2),
        &[0x73E0, 0x73E1, 0x73E2, 0x73E8, 0x73E9, 0x73EA, 0x73EB, 0x73EC, 0x73ED, 0x73EF, 0x73FF],
    ),
    fam("VanGogh", (10, 3, 3), &[0x163F]),
    fam("BEIGE_GOBY", (10, 3, 4), &[0x7420, 0x7421, 0x7422, 0x7423, 0x743F]),
    fam("YELLOW_CARP", (10, 3, 5), &[0x164D, 0x1681]),
];

/// Looks a PCI device id up in libhsakmt's device table.
#[must_use]
pub fn lookup_device(device_id: u32) -> Option<DeviceGfx> {
    let id = u16::try_from(device_id).ok()?;
    FAMILIES.iter().find(|f| f.ids.contains(&id)).map(|f| DeviceGfx { gfx: f.gfx, name: f.name })
}

/// The gfx version libhsakmt assigns to a GPU node: the device table wins when the
/// `gfx_target_version` major is at most 10 (or the key is absent); otherwise the key decides.
#[must_use]
pub fn resolve(
    gfx_target_version: Option<u32>,
    device_id: Option<u32>,
) -> Option<(GfxVersion, GfxSource)> {
    let from_key = gfx_target_version.and_then(GfxVersion::from_target_version);
    let major = from_key.map_or(0, |g| g.major);
    if major <= 10
        && let Some(d) = device_id.and_then(lookup_device)
    {
        return Some((d.gfx, GfxSource::DeviceTable));
    }
    from_key.map(|g| (g, GfxSource::TargetVersion))
}

/// Why an `HSA_OVERRIDE_GFX_VERSION` value was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OverrideError {
    /// Not three dot-separated decimal numbers (`"M.m.s"`), or longer than
    /// [`OVERRIDE_MAX_LEN`] bytes.
    Syntax,
    /// Major above 63, or minor or stepping above 255.
    OutOfRange,
}

impl fmt::Display for OverrideError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Syntax => "expected \"major.minor.stepping\" in decimal",
            Self::OutOfRange => "major must be <= 63, minor and stepping <= 255",
        })
    }
}

pub use crate::config::OVERRIDE_MAX_LEN;

/// Parses an `HSA_OVERRIDE_GFX_VERSION` value, `"major.minor.stepping"` with decimal parts
/// (libhsakmt's `sscanf("%u.%u.%u%c") == 3`: nothing may follow the stepping), major ≤ 63,
/// minor and stepping ≤ 255. So `"9.0.10"` is gfx90a and `"11.0.0"` is gfx1100.
///
/// Stricter than `sscanf`: signs and blanks are rejected.
///
/// # Errors
/// [`OverrideError`] when the text is malformed or a part is out of range.
pub fn parse_override(text: &[u8]) -> Result<GfxVersion, OverrideError> {
    if text.len() > OVERRIDE_MAX_LEN {
        return Err(OverrideError::Syntax);
    }
    let mut parts = [0u64; 3];
    let mut n = 0;
    for part in text.split(|&b| b == b'.') {
        let slot = parts.get_mut(n).ok_or(OverrideError::Syntax)?;
        *slot = super::parse::parse_decimal(part).map_err(|e| match e {
            super::parse::ValueError::Overflow => OverrideError::OutOfRange,
            _ => OverrideError::Syntax,
        })?;
        n = n.saturating_add(1);
    }
    if n != 3 {
        return Err(OverrideError::Syntax);
    }
    let [major, minor, stepping] = parts;
    match (u8::try_from(major), u8::try_from(minor), u8::try_from(stepping)) {
        (Ok(major @ 0..=MAX_MAJOR), Ok(minor), Ok(stepping)) => {
            Ok(GfxVersion { major, minor, stepping })
        }
        _ => Err(OverrideError::OutOfRange),
    }
}

/// Size in bytes of the scalar register file per CU (libhsakmt's `SGPR_SIZE_PER_CU`).
pub const SGPR_SIZE_PER_CU: u32 = 0x4000;

/// Size in bytes of the vector register file per CU, as libhsakmt's
/// `hsakmt_get_vgpr_size_per_cu`: 512 KiB for gfx908, gfx90a, gfx94x and gfx950; 384 KiB for
/// gfx1100, gfx1101, gfx1200 and gfx1201; 256 KiB otherwise.
#[must_use]
pub const fn vgpr_size_per_cu(gfx: GfxVersion) -> u32 {
    match (gfx.major, gfx.minor, gfx.stepping) {
        (9, 0, 8) | (9, 0, 10) | (9, 4, _) | (9, 5, 0) => 0x8_0000,
        (11, 0, 0) | (11, 0, 1) | (12, 0, 0) | (12, 0, 1) => 0x6_0000,
        _ => 0x4_0000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn names_from_target_versions() {
        for (v, name) in [
            (90402, "gfx942"),
            (90010, "gfx90a"),
            (110000, "gfx1100"),
            (120001, "gfx1201"),
            (100300, "gfx1030"),
            (90000, "gfx900"),
            (90012, "gfx90c"),
            (90500, "gfx950"),
        ] {
            let g = GfxVersion::from_target_version(v).unwrap();
            assert_eq!(g.to_string(), name);
            assert_eq!(g.target_version(), v);
        }
        assert_eq!(GfxVersion::from_target_version(0), None);
        // A major above 63 is no version; libhsakmt's `% 100` would have made 12345678 gfx3456.
        assert_eq!(GfxVersion::from_target_version(12_345_678), None);
        assert_eq!(GfxVersion::from_target_version(640_000), None);
        assert_eq!(GfxVersion::from_target_version(639_999), Some(GfxVersion::new(63, 99, 99)));
        assert_eq!(GfxVersion::new(9, 4, 2).full(), 0x090402);
    }

    #[test]
    fn device_table() {
        // The MI25 capture: device_id 26720 = 0x6860, no gfx_target_version.
        let d = lookup_device(26720).unwrap();
        assert_eq!((d.gfx.to_string().as_str(), d.name), ("gfx900", "Vega10"));
        assert_eq!(
            resolve(None, Some(26720)),
            Some((GfxVersion::new(9, 0, 0), GfxSource::DeviceTable))
        );
        // MI210: table and key agree.
        assert_eq!(resolve(Some(90010), Some(0x740F)).unwrap().0.to_string(), "gfx90a");
        // Majors above 10 never consult the table.
        assert_eq!(
            resolve(Some(110000), Some(0x6860)),
            Some((GfxVersion::new(11, 0, 0), GfxSource::TargetVersion))
        );
        // MI308X: not in the table.
        assert_eq!(
            resolve(Some(90402), Some(29858)),
            Some((GfxVersion::new(9, 4, 2), GfxSource::TargetVersion))
        );
        assert_eq!(resolve(None, Some(0x74A1)), None);
        assert_eq!(resolve(None, None), None);
        assert_eq!(lookup_device(0x1_6860), None);
        assert_eq!(lookup_device(0x69AF).unwrap().gfx, GfxVersion::new(9, 0, 4));
    }

    #[test]
    fn device_table_has_no_duplicates() {
        let mut all: std::vec::Vec<u16> =
            FAMILIES.iter().flat_map(|f| f.ids.iter().copied()).collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
        assert_eq!(n, 180);
    }

    #[test]
    fn overrides() {
        assert_eq!(parse_override(b"9.0.10"), Ok(GfxVersion::new(9, 0, 10)));
        assert_eq!(parse_override(b"11.0.0"), Ok(GfxVersion::new(11, 0, 0)));
        assert_eq!(parse_override(b"63.255.255"), Ok(GfxVersion::new(63, 255, 255)));
        assert_eq!(parse_override(b"010.3.0"), Ok(GfxVersion::new(10, 3, 0)));
        for bad in [
            &b""[..],
            b"9",
            b"9.0",
            b"9.0.",
            b".0.0",
            b"9.0.0.0",
            b"9.0.0x",
            b"9.0.0\n",
            b" 9.0.0",
            b"+9.0.0",
            b"-9.0.0",
            b"9.a.0",
            b"0x9.0.0",
            b"9..0",
            b"00000000000000000000000000009.0.0",
        ] {
            assert_eq!(parse_override(bad), Err(OverrideError::Syntax), "{bad:?}");
        }
        for bad in [&b"64.0.0"[..], b"9.256.0", b"9.0.256", b"99999999999999999999999.0.0"] {
            assert_eq!(parse_override(bad), Err(OverrideError::OutOfRange), "{bad:?}");
        }
    }

    #[test]
    fn vgpr_sizes() {
        let v = |s: u32| vgpr_size_per_cu(GfxVersion::from_target_version(s).unwrap());
        for s in [90008, 90010, 90400, 90401, 90402, 90500] {
            assert_eq!(v(s), 0x80000, "{s}");
        }
        for s in [110000, 110001, 120000, 120001] {
            assert_eq!(v(s), 0x60000, "{s}");
        }
        for s in [90000, 90006, 90012, 100300, 110002, 110500, 70000] {
            assert_eq!(v(s), 0x40000, "{s}");
        }
    }
}
