//! GPU marketing names (`HsaNodeProperties.MarketingName`).
//!
//! Upstream's `topology_get_node_props_from_drm` (libhsakmt `topology.c`) opens the node's render
//! node and asks libdrm (`amdgpu_get_marketing_name`), which looks the PCI device id *and* PCI
//! revision up in its `amdgpu.ids` table, exact match on both; no match leaves the name empty.
//! This module carries the entries of that table for the discrete GPUs ROCm runs compute on
//! (Instinct, Radeon Pro and the Radeon parts of the same chips), not the full table.
//!
//! The KFD topology does not publish the PCI revision, so [`Node::marketing_name`] answers by
//! device id alone when every listed revision of the id has the same name (`0x740F` is always
//! "AMD Instinct MI210"), and `None` when the revision decides (`0x6860` is MI25, MI25x2, Pro
//! V320 or Pro V340). Callers that know the revision use [`marketing_name`].

use super::node::Node;

/// `(device id, PCI revision, name)`, sorted by device id then revision.
const TABLE: &[(u16, u8, &str)] = &[
    (0x66A1, 0x02, "AMD Instinct MI60 / MI50"),
    (0x66A1, 0x06, "AMD Radeon Pro VII"),
    (0x66AF, 0xC1, "AMD Radeon VII"),
    (0x6860, 0x00, "AMD Radeon Instinct MI25"),
    (0x6860, 0x01, "AMD Radeon Instinct MI25"),
    (0x6860, 0x02, "AMD Radeon Instinct MI25"),
    (0x6860, 0x03, "AMD Radeon Pro V340"),
    (0x6860, 0x04, "AMD Radeon Instinct MI25x2"),
    (0x6860, 0x07, "AMD Radeon Pro V320"),
    (0x6861, 0x00, "AMD Radeon Pro WX 9100"),
    (0x6862, 0x00, "AMD Radeon Pro SSG"),
    (0x6863, 0x00, "AMD Radeon Vega Frontier Edition"),
    (0x6864, 0x03, "AMD Radeon Pro V340"),
    (0x6864, 0x04, "AMD Radeon Instinct MI25x2"),
    (0x6864, 0x05, "AMD Radeon Pro V340"),
    (0x6868, 0x00, "AMD Radeon Pro WX 8200"),
    (0x687F, 0x01, "AMD Radeon RX Vega"),
    (0x687F, 0xC0, "AMD Radeon RX Vega"),
    (0x687F, 0xC1, "AMD Radeon RX Vega"),
    (0x687F, 0xC3, "AMD Radeon RX Vega"),
    (0x687F, 0xC7, "AMD Radeon RX Vega"),
    (0x738C, 0x01, "AMD Instinct MI100"),
    (0x73A1, 0x00, "AMD Radeon Pro V620"),
    (0x73A3, 0x00, "AMD Radeon Pro W6800"),
    (0x73AF, 0xC0, "AMD Radeon RX 6900 XT"),
    (0x73BF, 0xC0, "AMD Radeon RX 6900 XT"),
    (0x73BF, 0xC1, "AMD Radeon RX 6800 XT"),
    (0x73BF, 0xC3, "AMD Radeon RX 6800"),
    (0x7408, 0x00, "AMD Instinct MI250X"),
    (0x740C, 0x01, "AMD Instinct MI250X / MI250"),
    (0x740F, 0x02, "AMD Instinct MI210"),
    (0x7448, 0x00, "AMD Radeon Pro W7900"),
    (0x744C, 0xC8, "AMD Radeon RX 7900 XTX"),
    (0x744C, 0xCC, "AMD Radeon RX 7900 XT"),
    (0x744C, 0xCE, "AMD Radeon RX 7900 GRE"),
    (0x744C, 0xCF, "AMD Radeon RX 7900M"),
    (0x745E, 0xCC, "AMD Radeon Pro W7800"),
    (0x7460, 0x00, "AMD Radeon Pro V710"),
    (0x7470, 0x00, "AMD Radeon Pro W7700"),
    (0x74A0, 0x00, "AMD Instinct MI300A"),
    (0x74A1, 0x00, "AMD Instinct MI300X"),
    (0x74A2, 0x00, "AMD Instinct MI308X"),
    (0x74A5, 0x00, "AMD Instinct MI325X"),
    (0x74A9, 0x00, "AMD Instinct MI300X HF"),
    (0x74B5, 0x00, "AMD Instinct MI300X VF"),
    (0x74B6, 0x00, "AMD Instinct MI308X"),
    (0x74BD, 0x00, "AMD Instinct MI300X HF"),
    (0x7550, 0xC0, "AMD Radeon RX 9070 XT"),
    (0x7550, 0xC3, "AMD Radeon RX 9070"),
];

/// The entries of one device id.
fn entries(device_id: u32) -> &'static [(u16, u8, &'static str)] {
    let Ok(id) = u16::try_from(device_id) else {
        return &[];
    };
    let start = TABLE.partition_point(|e| e.0 < id);
    let end = TABLE.partition_point(|e| e.0 <= id);
    TABLE.get(start..end).unwrap_or_default()
}

/// The marketing name of PCI device `device_id`: with `revision`, libdrm's exact match on both;
/// without, the name every listed revision of the id shares (`None` when they differ or the id
/// is not in the table).
#[must_use]
pub fn marketing_name(device_id: u32, revision: Option<u8>) -> Option<&'static str> {
    let list = entries(device_id);
    match revision {
        Some(rev) => list.iter().find(|e| e.1 == rev).map(|e| e.2),
        None => {
            let first = list.first()?.2;
            list.iter().all(|e| e.2 == first).then_some(first)
        }
    }
}

impl Node {
    /// The GPU's marketing name when its device id alone determines it (see the module
    /// documentation); `None` on CPU nodes, for unknown ids and for ids whose name depends on
    /// the PCI revision.
    #[must_use]
    pub fn marketing_name(&self) -> Option<&'static str> {
        if !self.has_gpu() {
            return None;
        }
        marketing_name(self.props.device_id()?, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_has_no_duplicate_key() {
        assert!(TABLE.windows(2).all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)));
    }

    #[test]
    fn exact_match_with_a_revision_and_unique_names_without() {
        assert_eq!(marketing_name(0x6860, Some(0x03)), Some("AMD Radeon Pro V340"));
        assert_eq!(marketing_name(0x6860, Some(0x05)), None);
        assert_eq!(marketing_name(0x6860, None), None);
        assert_eq!(marketing_name(0x740F, None), Some("AMD Instinct MI210"));
        assert_eq!(marketing_name(0x740F, Some(0x01)), None);
        assert_eq!(marketing_name(0x687F, None), Some("AMD Radeon RX Vega"));
        assert_eq!(marketing_name(0x1234, None), None);
        assert_eq!(marketing_name(0x1_740F, None), None);
    }
}
