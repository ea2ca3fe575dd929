//! What `hsakmt info` shows beyond the raw tree, as libhsakmt's users see the machine:
//! - numbering: `node` is libhsakmt's node id (`null` for a hidden node), `sysfs_node` the
//!   directory number under `nodes/`; `hidden` says why a node is hidden (its render node could
//!   not be opened, or the device cgroup refused its files). The real machine and the simulator
//!   are probed the way libhsakmt does (every GPU's render node is opened); a captured tree
//!   (`--sysfs DIR`) has no render nodes to open and is shown as read.
//! - derived values of GPU nodes: `amd_name`, `marketing_name`, `shader_banks`,
//!   `vgpr_size_per_cu`, `sgpr_size_per_cu`, `xcc_count`;
//! - with a device (the real machine or the simulator, not a captured tree): the heaps
//!   libhsakmt adds to each GPU's memory banks (LDS, scratch, SVM, and the MMIO-remap page,
//!   which this command maps as libhsakmt does at open) and the resulting `num_memory_banks`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hsakmt_core::device::{DEFAULT_MEMORY_OBJECTS, NodeHeaps};
use hsakmt_core::topology::{self, Hidden, NodeKind, NodeView, Options, Topology};
use hsakmt_linux::{LinuxPlatform, boxed_kfd};
use serde_json::{Map, Value, json};

use crate::platform::AnyPlatform;
use crate::source::Source;

/// The heaps of each GPU, by gpu_id, or why there are none.
pub(crate) struct DeviceHeaps {
    per_gpu: BTreeMap<u32, NodeHeaps>,
    /// `None`: no device for this source (a captured tree); `Some(Err)`: the open failed.
    device: Option<Result<(), String>>,
}

impl DeviceHeaps {
    /// No device (a captured tree).
    pub(crate) fn none() -> Self {
        Self { per_gpu: BTreeMap::new(), device: None }
    }

    fn of(&self, n: &NodeView<'_>) -> Option<&NodeHeaps> {
        self.per_gpu.get(&n.gpu_id()?)
    }
}

/// Refreshes `topo` as libhsakmt's users see the machine: on the real machine and the simulator
/// every GPU's render node is opened and the GPUs that cannot be opened are hidden; a tree on
/// disk is read as is.
///
/// # Errors
/// The snapshot's.
pub(crate) fn refresh_as_seen(
    topo: &mut Topology,
    source: &Source,
    buf: &mut [u8],
    options: &Options,
) -> Result<(), topology::Error> {
    let platform = &source.platform;
    if source.is_live() || platform.sim().is_some() {
        topo.refresh_visible_with(platform, platform, platform, buf, options)
    } else {
        topo.refresh_with(platform, platform, buf, options)
    }
}

/// Opens a device facade over the source's platform and collects every GPU's heaps (mapping
/// each MMIO-remap page first, as libhsakmt's open does). A tree on disk has no device.
pub(crate) fn device_heaps(source: &Source) -> DeviceHeaps {
    match &source.platform {
        AnyPlatform::Sim(sim) => collect(AnyPlatform::Sim(sim.clone())),
        AnyPlatform::Linux(_) if source.is_live() => {
            collect(AnyPlatform::from(LinuxPlatform::new()))
        }
        _ => DeviceHeaps::none(),
    }
}

fn collect(platform: AnyPlatform) -> DeviceHeaps {
    let kfd = boxed_kfd(platform, DEFAULT_MEMORY_OBJECTS);
    if let Err(e) = kfd.open() {
        return DeviceHeaps { per_gpu: BTreeMap::new(), device: Some(Err(e.to_string())) };
    }
    let gpus: Vec<(u32, u32)> = kfd
        .with_topology(|t| {
            t.nodes()
                .filter_map(|n| Some((n.user_id()?, n.gpu_id().filter(|g| *g != 0)?)))
                .collect()
        })
        .unwrap_or_default();
    let mut per_gpu = BTreeMap::new();
    let mut pages = Vec::new();
    for (node, gpu_id) in gpus {
        // A GPU whose page cannot be mapped simply reports no MMIO heap, as upstream.
        if let Ok(page) = kfd.alloc_mmio_remap(node) {
            pages.push(page);
        }
        if let Ok(h) = kfd.node_heaps(node) {
            per_gpu.insert(gpu_id, h);
        }
    }
    for page in pages {
        let _ = kfd.free(page);
    }
    let _ = kfd.close();
    DeviceHeaps { per_gpu, device: Some(Ok(())) }
}

fn opt_num<T: Into<u64>>(v: Option<T>) -> Value {
    v.map_or(Value::Null, |v| Value::from(v.into()))
}

fn hidden_json(h: Hidden) -> Value {
    match h {
        Hidden::Cgroup => json!({ "reason": "cgroup" }),
        Hidden::RenderNode { minor, errno } => json!({
            "reason": "render_node",
            "render_minor": minor,
            "errno": errno.name().map_or_else(|| errno.0.to_string(), str::to_string),
        }),
    }
}

/// `node` (libhsakmt's id, `null` when hidden), `sysfs_node` and `hidden`.
pub(crate) fn numbering_into(m: &mut Map<String, Value>, n: &NodeView<'_>) {
    m.insert("node".into(), opt_num(n.user_id()));
    m.insert("sysfs_node".into(), Value::from(n.sysfs_id()));
    if let Some(h) = n.hidden() {
        m.insert("hidden".into(), hidden_json(h));
    }
}

/// `dropped_links`: the sysfs ids of hidden nodes this node's links point to (libhsakmt's users
/// do not see those links; `io_links` and `p2p_links` list every link as the kernel reports it).
pub(crate) fn dropped_links_into(m: &mut Map<String, Value>, topo: &Topology, n: &NodeView<'_>) {
    let visible = n.visible_links(topo).count();
    if visible == n.links().count() {
        return;
    }
    let mut targets: Vec<u32> = n
        .links()
        .filter_map(|l| l.node_to())
        .filter(|to| topo.node_by_sysfs_id(*to).is_some_and(|v| v.hidden().is_some()))
        .collect();
    targets.dedup();
    m.insert("dropped_links".into(), Value::from(targets));
}

/// The values libhsakmt derives for a GPU node (nothing on CPU nodes).
pub(crate) fn derived_into(m: &mut Map<String, Value>, n: &NodeView<'_>) {
    if n.kind() == NodeKind::Cpu {
        return;
    }
    let text = |s: Option<String>| s.map_or(Value::Null, Value::String);
    m.insert("amd_name".into(), text(n.amd_name().map(|a| a.to_string())));
    m.insert("marketing_name".into(), text(n.marketing_name().map(str::to_string)));
    m.insert("shader_banks".into(), opt_num(n.shader_banks()));
    m.insert("vgpr_size_per_cu".into(), opt_num(n.vgpr_size_per_cu()));
    m.insert("sgpr_size_per_cu".into(), opt_num(n.sgpr_size_per_cu()));
    m.insert("xcc_count".into(), opt_num(n.xcc_count()));
}

/// `heaps` and `num_memory_banks` of a GPU node when a device was opened.
pub(crate) fn heaps_into(m: &mut Map<String, Value>, n: &NodeView<'_>, heaps: &DeviceHeaps) {
    let Some(h) = heaps.of(n) else { return };
    let list: Vec<Value> = h
        .iter()
        .map(|(kind, heap)| {
            json!({
                "type": kind.name(),
                "heap_type": kind.raw(),
                "base": heap.base,
                "size_in_bytes": heap.size,
            })
        })
        .collect();
    m.insert("heaps".into(), Value::Array(list));
    let banks = n.mem_banks().len() as u64 + u64::from(h.extra_bank_count());
    m.insert("num_memory_banks".into(), Value::from(banks));
}

/// The document's `device`: whether a device was opened for the heaps (absent for a captured
/// tree).
pub(crate) fn device_into(doc: &mut Map<String, Value>, heaps: &DeviceHeaps) {
    match &heaps.device {
        None => {}
        Some(Ok(())) => {
            doc.insert("device".into(), json!({ "opened": true }));
        }
        Some(Err(e)) => {
            doc.insert("device".into(), json!({ "opened": false, "error": e }));
        }
    }
}

fn size(v: u64) -> String {
    if v >= 1 << 30 && v.is_multiple_of(1 << 30) {
        format!("{} GiB", v >> 30)
    } else if v >= 1 << 20 && v.is_multiple_of(1 << 20) {
        format!("{} MiB", v >> 20)
    } else if v >= 1 << 10 && v.is_multiple_of(1 << 10) {
        format!("{} KiB", v >> 10)
    } else {
        format!("{v} B")
    }
}

/// The report's lines for a node beyond the raw keys: why it is hidden, its user id, derived
/// values and heaps.
pub(crate) fn report_node(s: &mut String, n: &NodeView<'_>, heaps: &DeviceHeaps) {
    match n.hidden() {
        Some(Hidden::Cgroup) => {
            let _ = writeln!(s, "  hidden    the device cgroup refuses its files");
        }
        Some(Hidden::RenderNode { minor, errno }) => {
            let _ = writeln!(s, "  hidden    /dev/dri/renderD{minor} cannot be opened ({errno})");
        }
        None => {
            if let Some(id) = n.user_id().filter(|id| *id != n.sysfs_id()) {
                let _ = writeln!(s, "  node id   {id} for libhsakmt's users");
            }
        }
    }
    if n.kind() != NodeKind::Cpu {
        let name = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        let _ = writeln!(
            s,
            "  product   {}  {}  {} shader banks, VGPR {} / SGPR {} bytes per CU",
            name(n.amd_name().map(|a| a.to_string())),
            name(n.marketing_name().map(str::to_string)),
            name(n.shader_banks().map(|v| v.to_string())),
            name(n.vgpr_size_per_cu().map(|v| v.to_string())),
            name(n.sgpr_size_per_cu().map(|v| v.to_string())),
        );
    }
    if let Some(h) = heaps.of(n) {
        let parts: Vec<String> = h
            .iter()
            .map(|(kind, heap)| format!("{} {} @ {:#x}", kind.name(), size(heap.size), heap.base))
            .collect();
        let _ = writeln!(s, "  heaps     {}", parts.join(", "));
    }
}

#[cfg(test)]
mod tests {
    use hsakmt_core::error::Errno;
    use hsakmt_sim::SimPlatform;

    use super::*;
    use crate::info::to_json;

    #[test]
    fn hidden_gpus_keep_their_sysfs_number_and_the_rest_are_renumbered() {
        // renderD129 is sysfs node 3's in the default profile.
        let sim = SimPlatform::builder().render_node_unavailable(129, Errno::ENOENT).build();
        let source = Source::simulator(sim, "test".into());
        let mut topo = Box::new(Topology::new());
        let mut buf = vec![0u8; hsakmt_core::topology::READ_BUFFER];
        refresh_as_seen(&mut topo, &source, &mut buf, &Options::DEFAULT).unwrap();
        let heaps = device_heaps(&source);
        let doc = to_json(&topo, &heaps);
        let nodes = doc["nodes"].as_array().unwrap();
        let by_sysfs = |n: u64| nodes.iter().find(|v| v["sysfs_node"] == n).unwrap();
        assert_eq!(by_sysfs(3)["node"], Value::Null);
        assert_eq!(
            by_sysfs(3)["hidden"],
            json!({ "reason": "render_node", "render_minor": 129, "errno": "ENOENT" })
        );
        assert_eq!(by_sysfs(3).get("heaps"), None);
        assert_eq!(by_sysfs(4)["node"], 3);
        assert_eq!(by_sysfs(2)["node"], 2);
        assert_eq!(by_sysfs(2)["dropped_links"], json!([3]));
        // Every visible GPU has its four heaps; the MMIO page adds the fourth bank.
        let heaps_of_4 = by_sysfs(4)["heaps"].as_array().unwrap();
        let kinds: Vec<&str> = heaps_of_4.iter().map(|h| h["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["lds", "scratch", "svm", "mmio_remap"]);
        let banks = by_sysfs(4)["mem_banks"].as_array().unwrap().len() as u64;
        assert_eq!(by_sysfs(4)["num_memory_banks"], banks + 4);
        assert_eq!(doc["device"], json!({ "opened": true }));
    }
}
