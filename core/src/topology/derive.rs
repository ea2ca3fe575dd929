//! Values libhsakmt derives from the raw tree for its users: shader banks, register file sizes,
//! XCC and CU counts, VRAM size, CPU-mediated GPU links, NUMA weights.

use super::gfx::{self, GfxVersion};
use super::node::{IoLinkType, Link, LinkOrigin, MemBank, Node, NodeKind, SpanKind};

impl Node {
    /// libhsakmt's `NumShaderBanks`: `array_count / simd_arrays_per_engine` on GPU nodes;
    /// `None` on CPU nodes, when a key is absent, or when `simd_arrays_per_engine` is 0.
    #[must_use]
    pub fn shader_banks(&self) -> Option<u32> {
        if !self.has_gpu() {
            return None;
        }
        self.props.array_count()?.checked_div(self.props.simd_arrays_per_engine()?)
    }

    /// Compute units: `simd_count / simd_per_cu`; `None` when a key is absent or
    /// `simd_per_cu` is 0. (0 on CPU nodes, whose `simd_count` is 0.)
    #[must_use]
    pub fn cu_count(&self) -> Option<u32> {
        self.props.simd_count()?.checked_div(self.props.simd_per_cu()?)
    }

    /// libhsakmt's `NumXcc`: on GPU nodes `num_xcc`, or 1 when it is absent (older kernels)
    /// or 0; on CPU nodes `num_xcc` as printed (`None` when absent).
    #[must_use]
    pub fn xcc_count(&self) -> Option<u32> {
        match (self.has_gpu(), self.props.num_xcc()) {
            (true, None | Some(0)) => Some(1),
            (_, v) => v,
        }
    }

    /// libhsakmt's `SGPRSizePerCU` (GPU nodes with a known gfx version).
    #[must_use]
    pub fn sgpr_size_per_cu(&self) -> Option<u32> {
        self.gfx().map(|_| gfx::SGPR_SIZE_PER_CU)
    }

    /// libhsakmt's `VGPRSizePerCU`, from the real (not overridden) gfx version, as libhsakmt
    /// does.
    #[must_use]
    pub fn vgpr_size_per_cu(&self) -> Option<u32> {
        self.gfx().map(gfx::vgpr_size_per_cu)
    }

    /// libhsakmt's `AMDName`: the device table's CAL name, else `GFX` + the 6 hex digits of
    /// the version (`GFX090402`). `None` without a gfx version.
    #[must_use]
    pub fn amd_name(&self) -> Option<AmdName> {
        let g = self.gfx()?;
        if let Some(d) = self.props.device_id().and_then(gfx::lookup_device)
            && d.gfx == g
            && self.gfx_source() == Some(gfx::GfxSource::DeviceTable)
        {
            return Some(AmdName::Table(d.name));
        }
        Some(AmdName::Generic(g))
    }
}

/// libhsakmt's `AMDName` of a GPU node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AmdName {
    /// From the device table, e.g. `Vega10`.
    Table(&'static str),
    /// `GFX%06x` of the version.
    Generic(GfxVersion),
}

impl core::fmt::Display for AmdName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Table(n) => f.write_str(n),
            Self::Generic(g) => write!(f, "GFX{:06x}", g.full()),
        }
    }
}

/// Sum of `size_in_bytes` over frame-buffer banks (heap types 1 and 2); `None` when there is
/// no such bank. Never `local_mem_size` (0 on current kernels).
pub(crate) fn vram_bytes(banks: &[MemBank]) -> Option<u64> {
    let mut total: Option<u64> = None;
    for b in banks {
        if let (Some(h), Some(size)) = (b.heap_type(), b.size_in_bytes())
            && h.is_vram()
        {
            total = Some(total.unwrap_or(0).saturating_add(size));
        }
    }
    total
}

/// A read-only view of nodes and pools for link computations.
pub(crate) struct Graph<'a> {
    pub(crate) nodes: &'a [Node],
    pub(crate) links: &'a [Link],
    pub(crate) banks: &'a [MemBank],
}

impl<'a> Graph<'a> {
    /// Node index of a sysfs id (nodes are sorted by sysfs id).
    pub(crate) fn index_of(&self, sysfs_id: u32) -> Option<usize> {
        self.nodes.binary_search_by_key(&sysfs_id, |n| n.sysfs_id).ok()
    }

    fn node(&self, i: usize) -> Option<&'a Node> {
        self.nodes.get(i)
    }

    fn span_links(&self, i: usize, kind: SpanKind) -> &'a [Link] {
        self.node(i).and_then(|n| self.links.get(n.span(kind).range())).unwrap_or_default()
    }

    /// Kernel-reported links of node `i`: io_links then p2p_links.
    pub(crate) fn kernel_links(&self, i: usize) -> impl Iterator<Item = &'a Link> + 'a {
        let io = self.span_links(i, SpanKind::IoLinks);
        let p2p = self.span_links(i, SpanKind::P2pLinks);
        io.iter().chain(p2p)
    }

    /// Every link of node `i`: io_links, p2p_links, then derived links.
    pub(crate) fn all_links(&self, i: usize) -> impl Iterator<Item = &'a Link> + 'a {
        let derived = self.span_links(i, SpanKind::Derived);
        self.kernel_links(i).chain(derived)
    }

    fn accessible(&self, i: usize) -> bool {
        self.node(i).is_some_and(|n| n.accessible)
    }

    /// libhsakmt's "has a KFD gpu_id": the node has a GPU.
    fn is_gpu(&self, i: usize) -> bool {
        self.node(i).is_some_and(Node::has_gpu)
    }

    fn target(&self, l: &Link) -> Option<usize> {
        self.index_of(l.node_to()?)
    }

    /// libhsakmt's `gpu_get_direct_link_cpu`: the first PCIe or XGMI link of GPU `gpu` with
    /// weight ≤ 20 whose target is an accessible CPU node.
    pub(crate) fn direct_link_cpu(&self, gpu: usize) -> Option<usize> {
        if !self.is_gpu(gpu) || !self.accessible(gpu) {
            return None;
        }
        self.kernel_links(gpu).find_map(|l| {
            let ty = l.link_type()?;
            let ok_type = matches!(ty, IoLinkType::PciExpress | IoLinkType::Xgmi);
            let to = self.target(l)?;
            (ok_type && l.weight()? <= 20 && !self.is_gpu(to) && self.accessible(to)).then_some(to)
        })
    }

    /// libhsakmt's `get_direct_iolink_info`: the first kernel link `from → to` with a weight;
    /// its raw type and weight.
    fn direct(&self, from: usize, to: usize) -> Option<(Option<u32>, u32)> {
        let to_id = self.node(to)?.sysfs_id;
        self.kernel_links(from)
            .find(|l| l.node_to() == Some(to_id))
            .and_then(|l| Some((l.props.link_type(), l.weight()?)))
    }

    fn has_fb_public(&self, i: usize) -> bool {
        let banks = self
            .node(i)
            .and_then(|n| self.banks.get(n.span(SpanKind::Banks).range()))
            .unwrap_or_default();
        banks.iter().any(|b| b.props.heap_type() == Some(1))
    }

    /// libhsakmt's `get_indirect_iolink_info` for `a → b`: the summed weight over
    /// GPU→CPU→GPU, GPU→CPU→CPU→GPU (not across a QPI link heavier than 20), GPU→CPU→CPU or
    /// CPU→CPU→GPU, and the type of the middle hop. `None` when no such path exists, for
    /// CPU→CPU, for GPUs of one XGMI hive, for a GPU target without a public frame buffer, and
    /// when either node is inaccessible.
    pub(crate) fn indirect(&self, a: usize, b: usize) -> Option<(Option<u32>, u32)> {
        if a == b || !self.accessible(a) || !self.accessible(b) {
            return None;
        }
        let (gpu_a, gpu_b) = (self.is_gpu(a), self.is_gpu(b));
        if !gpu_a && !gpu_b {
            return None;
        }
        let hive = |i: usize| self.node(i).and_then(|n| n.props.hive_id()).filter(|h| *h != 0);
        if let (Some(ha), Some(hb)) = (hive(a), hive(b))
            && ha == hb
        {
            return None;
        }
        let cpu_a = if gpu_a { self.direct_link_cpu(a) } else { None };
        let cpu_b = if gpu_b { self.direct_link_cpu(b) } else { None };
        if gpu_b && !self.has_fb_public(b) {
            return None;
        }
        let (w1, (ty, w2), w3) = match (cpu_a, cpu_b) {
            (None, None) => return None,
            (Some(ca), Some(cb)) if ca == cb => (self.direct(a, ca)?.1, self.direct(ca, b)?, 0),
            (Some(ca), Some(cb)) => {
                let w1 = self.direct(a, ca)?.1;
                let mid = self.direct(ca, cb)?;
                // On QPI, GPUs under different sockets (CPU↔CPU weight > 20) cannot reach
                // each other.
                if mid.0 == Some(5) && mid.1 > 20 {
                    return None;
                }
                (w1, mid, self.direct(cb, b)?.1)
            }
            (Some(ca), None) => (self.direct(a, ca)?.1, self.direct(ca, b)?, 0),
            (None, Some(cb)) => (0, self.direct(a, cb)?, self.direct(cb, b)?.1),
        };
        let weight = w1.saturating_add(w2).saturating_add(w3);
        (weight != 0).then_some((ty, weight))
    }

    /// The weight of the first link `from → to` (io, p2p, then derived), with its origin.
    pub(crate) fn link_weight(&self, from: usize, to: usize) -> Option<(u32, LinkOrigin)> {
        let to_id = self.node(to)?.sysfs_id;
        self.all_links(from)
            .filter(|l| l.node_to() == Some(to_id))
            .find_map(|l| Some((l.weight()?, l.origin)))
    }

    /// The accessible CPU node with the lowest link weight from `node`, ties to the lowest
    /// index.
    pub(crate) fn nearest_cpu(&self, node: usize) -> Option<(usize, u32)> {
        let mut best: Option<(usize, u32)> = None;
        for (i, n) in self.nodes.iter().enumerate() {
            if i == node || n.kind() != NodeKind::Cpu || !n.accessible {
                continue;
            }
            if let Some((w, _)) = self.link_weight(node, i)
                && best.is_none_or(|(_, bw)| w < bw)
            {
                best = Some((i, w));
            }
        }
        best
    }
}
