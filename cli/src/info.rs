//! `hsakmt info`: the topology as a human report, JSON, or a Graphviz graph.

use std::fmt::Write as _;

use clap::Args;
use hsakmt_core::platform::EntryKind;
use hsakmt_core::topology::{
    CacheKey, EntryEnumeration, HeapType, IoLinkType, Link, LinkKey, LinkOrigin, NodeKey, NodeKind,
    NodeView, Options, Owner, READ_BUFFER, SystemKey, Topology,
};
use serde_json::{Map, Value, json};

use crate::info_derived::{self, DeviceHeaps};
use crate::output::Failure;
use crate::source::{Source, SourceArgs};

/// Arguments of `hsakmt info`.
#[derive(Debug, Args)]
pub(crate) struct InfoArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Print one JSON object (every sysfs key under its own name).
    #[arg(long, conflicts_with = "dot")]
    json: bool,
    /// Print a Graphviz graph of nodes and links.
    #[arg(long)]
    dot: bool,
}

/// Takes a snapshot from `source` into a boxed topology, as libhsakmt's users see it (see
/// [`info_derived::refresh_as_seen`]). A tree on disk or a simulator profile is a capture,
/// perhaps edited: its directories are listed, so entries its `*_count` keys do not mention
/// are read and the disagreement is a warning. The live kernel's tree is read as the library
/// reads it, trusting the counts it prints.
pub(crate) fn snapshot(source: &Source) -> Result<Box<Topology>, String> {
    // Debug builds build the snapshot in several stack temporaries before boxing it; copying a
    // compile-time constant costs one. Release builds allocate first and build it there, where
    // a constant would only add its size to the binary.
    #[cfg(debug_assertions)]
    let mut topo = Box::new(const { Topology::new() });
    #[cfg(not(debug_assertions))]
    let mut topo = Box::write(Box::new_uninit(), Topology::new());
    let mut buf = vec![0u8; READ_BUFFER];
    let entries =
        if source.is_live() { EntryEnumeration::TrustCounts } else { EntryEnumeration::List };
    let options = Options { entries, ..Options::DEFAULT };
    info_derived::refresh_as_seen(&mut topo, source, &mut buf, &options)
        .map_err(|e| format!("cannot read the topology of {}: {e}", source.describe()))?;
    Ok(topo)
}

pub(crate) fn run(args: &InfoArgs) -> Result<(), Failure> {
    if args.source.sim.as_deref() == Some(crate::profiles::HELP) {
        return crate::profiles::print();
    }
    let source = Source::resolve(&args.source)?;
    let topo = snapshot(&source)?;
    let out = if args.json {
        let heaps = info_derived::device_heaps(&source);
        let mut text =
            serde_json::to_string_pretty(&to_json(&topo, &heaps)).map_err(|e| e.to_string())?;
        text.push('\n');
        text
    } else if args.dot {
        to_dot(&topo)
    } else {
        let heaps = info_derived::device_heaps(&source);
        report(&topo, source.describe(), &heaps)
    };
    crate::output::emit(&out)
}

/// The node's name as text: bytes that are not UTF-8 shown as U+FFFD (the snapshot warns
/// about such a name); `None` when the node has no `name` file.
fn name_of<'a>(n: &NodeView<'a>) -> Option<std::borrow::Cow<'a, str>> {
    n.node().name_bytes().map(String::from_utf8_lossy)
}

fn num(v: u64) -> Value {
    Value::from(v)
}

fn unknown_into(map: &mut Map<String, Value>, topo: &Topology, owner: Owner) {
    for k in topo.unknown_keys_of(owner) {
        map.insert(k.name().to_string(), num(k.value()));
    }
}

fn entry_owner(node: u32, kind: EntryKind, index: u32) -> Owner {
    Owner::Entry { node, kind, index }
}

fn link_json(topo: &Topology, node: u32, kind: EntryKind, link: &Link) -> Value {
    let mut m = Map::new();
    for (k, v) in link.properties().iter() {
        m.insert(k.name().to_string(), num(v));
    }
    unknown_into(&mut m, topo, entry_owner(node, kind, link.index()));
    Value::Object(m)
}

/// The `--json` document (DESIGN.md §4).
pub(crate) fn to_json(topo: &Topology, heaps: &DeviceHeaps) -> Value {
    let mut system = Map::new();
    for (k, v) in topo.system_properties().iter() {
        system.insert(k.name().to_string(), num(v));
    }
    unknown_into(&mut system, topo, Owner::System);
    system.insert("num_nodes".into(), num(topo.node_count() as u64));
    system.insert(
        "generation_id".into(),
        topo.generation_id().map_or(Value::Null, |g| num(u64::from(g))),
    );

    let nodes: Vec<Value> = topo.nodes().map(|n| node_json(topo, &n, heaps)).collect();
    let warnings: Vec<Value> =
        topo.warnings().iter().map(|w| Value::String(w.to_string())).collect();
    let mut doc = Map::new();
    doc.insert("system".into(), Value::Object(system));
    doc.insert("nodes".into(), Value::Array(nodes));
    doc.insert("warnings".into(), Value::Array(warnings));
    if topo.warnings_dropped() > 0 {
        doc.insert("warnings_dropped".into(), num(u64::from(topo.warnings_dropped())));
    }
    info_derived::device_into(&mut doc, heaps);
    Value::Object(doc)
}

fn node_json(topo: &Topology, n: &NodeView<'_>, heaps: &DeviceHeaps) -> Value {
    let id = n.sysfs_id();
    let mut m = Map::new();
    info_derived::numbering_into(&mut m, n);
    m.insert("gpu_id".into(), n.gpu_id().map_or(Value::Null, |g| num(u64::from(g))));
    m.insert("name".into(), name_of(n).map_or(Value::Null, |s| Value::String(s.into_owned())));
    m.insert("kind".into(), Value::String(n.kind().name().to_string()));
    if n.kind().has_gpu() {
        m.insert("gfx".into(), n.gfx().map_or(Value::Null, |g| Value::String(g.to_string())));
        if let Some(o) = n.gfx_override() {
            m.insert("gfx_override".into(), Value::String(o.to_string()));
        }
    }
    if !n.is_accessible() {
        m.insert("accessible".into(), Value::Bool(false));
    }
    info_derived::derived_into(&mut m, n);
    for (k, v) in n.properties().iter() {
        m.insert(k.name().to_string(), num(v));
    }
    unknown_into(&mut m, topo, Owner::Node { node: id });

    let banks: Vec<Value> = n
        .mem_banks()
        .iter()
        .map(|b| {
            let mut o = Map::new();
            for (k, v) in b.properties().iter() {
                o.insert(k.name().to_string(), num(v));
            }
            unknown_into(&mut o, topo, entry_owner(id, EntryKind::MemBank, b.index()));
            Value::Object(o)
        })
        .collect();
    let caches: Vec<Value> = n
        .caches()
        .iter()
        .map(|c| {
            let mut o = Map::new();
            for (k, v) in c.properties().iter() {
                o.insert(k.name().to_string(), num(v));
            }
            if let Some(map) = c.sibling_map() {
                let bits: Vec<Value> = map.iter().map(|b| num(u64::from(b))).collect();
                o.insert(CacheKey::SiblingMap.name().to_string(), Value::Array(bits));
            }
            unknown_into(&mut o, topo, entry_owner(id, EntryKind::Cache, c.index()));
            Value::Object(o)
        })
        .collect();
    let io: Vec<Value> =
        n.io_links().iter().map(|l| link_json(topo, id, EntryKind::IoLink, l)).collect();
    let p2p: Vec<Value> =
        n.p2p_links().iter().map(|l| link_json(topo, id, EntryKind::P2pLink, l)).collect();
    m.insert("mem_banks".into(), Value::Array(banks));
    m.insert("caches".into(), Value::Array(caches));
    m.insert("io_links".into(), Value::Array(io));
    m.insert("p2p_links".into(), Value::Array(p2p));
    info_derived::dropped_links_into(&mut m, topo, n);
    info_derived::heaps_into(&mut m, n, heaps);
    if !n.derived_links().is_empty() {
        let derived: Vec<Value> = n
            .derived_links()
            .iter()
            .map(|l| {
                json!({
                    "node_to": l.node_to(),
                    "weight": l.weight(),
                    "type": l.get(LinkKey::Type),
                })
            })
            .collect();
        m.insert("derived_links".into(), Value::Array(derived));
    }
    Value::Object(m)
}

fn link_type_name(t: Option<IoLinkType>) -> String {
    t.map_or_else(|| "unknown".into(), |t| format!("{t:?}"))
}

/// The `--dot` graph: one vertex per node, one edge per reported link (dashed: p2p; dotted:
/// CPU-mediated links libhsakmt derives when the kernel reports no p2p links).
pub(crate) fn to_dot(topo: &Topology) -> String {
    let mut s =
        String::from("digraph kfd_topology {\n  rankdir=LR;\n  node [fontname=\"monospace\"];\n");
    for n in topo.nodes() {
        let id = n.sysfs_id();
        let (shape, label) = match n.kind() {
            NodeKind::Cpu => {
                ("box", format!("node {id}\\ncpu, {} cores", n.cpu_cores_count().unwrap_or(0)))
            }
            kind => (
                "ellipse",
                format!(
                    "node {id}\\n{} {}\\ngpu_id {}\\n{} CUs",
                    kind.name(),
                    n.gfx().map_or_else(|| "gfx?".into(), |g| g.to_string()),
                    n.gpu_id().unwrap_or(0),
                    n.cu_count().unwrap_or(0)
                ),
            ),
        };
        let _ = writeln!(s, "  n{id} [shape={shape}, label=\"{label}\"];");
    }
    for n in topo.nodes() {
        for (links, style) in
            [(n.io_links(), "solid"), (n.p2p_links(), "dashed"), (n.derived_links(), "dotted")]
        {
            for l in links {
                let (Some(from), Some(to)) = (l.node_from().or(Some(n.sysfs_id())), l.node_to())
                else {
                    continue;
                };
                let _ = writeln!(
                    s,
                    "  n{from} -> n{to} [style={style}, label=\"{} w{}\"];",
                    link_type_name(l.link_type()),
                    l.weight().map_or_else(|| "?".into(), |w| w.to_string())
                );
            }
        }
    }
    s.push_str("}\n");
    s
}

fn bytes(v: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut f = v as f64;
    let mut u = 0;
    while f >= 1024.0 && u + 1 < UNITS.len() {
        f /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{v} B") } else { format!("{f:.1} {}", UNITS[u]) }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

/// The human report: a system header, then one block per node.
pub(crate) fn report(topo: &Topology, source: &str, heaps: &DeviceHeaps) -> String {
    let mut s = String::new();
    let gpus = topo.gpu_count();
    let _ = writeln!(s, "KFD topology of {}", crate::text::escape(source));
    let _ = writeln!(
        s,
        "  {} nodes ({} CPU, {gpus} GPU), generation {}",
        topo.node_count(),
        topo.nodes().filter(|n| n.kind() == NodeKind::Cpu).count(),
        opt(topo.generation_id())
    );
    let sys = topo.system_properties();
    if topo.has_system_properties() {
        let oem = sys.get(SystemKey::PlatformId).map(|v| ascii_id(v, 6));
        let _ = writeln!(
            s,
            "  platform {} / {} rev {}",
            opt(oem),
            opt(sys.get(SystemKey::PlatformOem).map(|v| ascii_id(v, 8))),
            opt(sys.get(SystemKey::PlatformRev))
        );
    }
    for n in topo.nodes() {
        let _ = writeln!(s);
        let id = n.sysfs_id();
        let name = name_of(&n).unwrap_or_default();
        match n.kind() {
            NodeKind::Cpu => {
                let _ = writeln!(
                    s,
                    "node {id}: cpu  {} cores  max {} MHz",
                    opt(n.cpu_cores_count()),
                    opt(n.get(NodeKey::MaxEngineClkCcompute))
                );
            }
            kind => {
                let gfx = n.gfx().map_or_else(|| "gfx?".into(), |g| g.to_string());
                let over = n.gfx_override().map(|o| format!(" (override {o})")).unwrap_or_default();
                let _ = writeln!(
                    s,
                    "node {id}: {}  {gfx}{over}  gpu_id {}  {}",
                    kind.name(),
                    opt(n.gpu_id()),
                    if name.is_empty() {
                        "-".to_string()
                    } else {
                        crate::text::escape(&name).into_owned()
                    }
                );
                let _ = writeln!(
                    s,
                    "  compute   {} CUs ({} SIMDs, wave{}), {} XCC, {} MHz, LDS {} KiB",
                    opt(n.cu_count()),
                    opt(n.simd_count()),
                    opt(n.wave_front_size()),
                    opt(n.xcc_count()),
                    opt(n.max_engine_clk_fcompute()),
                    opt(n.lds_size_in_kb())
                );
                let _ = writeln!(
                    s,
                    "  queues    {} CP, {} SDMA + {} XGMI SDMA engines x {} queues",
                    opt(n.num_cp_queues()),
                    opt(n.num_sdma_engines()),
                    opt(n.num_sdma_xgmi_engines()),
                    opt(n.num_sdma_queues_per_engine())
                );
                let _ = writeln!(
                    s,
                    "  pci       {:04x}:{:02x}:{:02x}.{} device {:#06x}  render D{}  fw {} sdma fw {}",
                    n.get(NodeKey::Domain).unwrap_or(0),
                    n.get(NodeKey::LocationId).unwrap_or(0) >> 8,
                    (n.get(NodeKey::LocationId).unwrap_or(0) >> 3) & 0x1f,
                    n.get(NodeKey::LocationId).unwrap_or(0) & 7,
                    n.device_id().unwrap_or(0),
                    opt(n.drm_render_minor()),
                    opt(n.ucode_version()),
                    opt(n.sdma_ucode_version())
                );
            }
        }
        info_derived::report_node(&mut s, &n, heaps);
        for b in n.mem_banks() {
            let heap = b.heap_type().map_or_else(|| "?".into(), |h: HeapType| format!("{h:?}"));
            let _ = writeln!(
                s,
                "  memory    {heap:<16} {}",
                b.size_in_bytes().map_or_else(|| "size unknown".into(), bytes)
            );
        }
        if !n.caches().is_empty() {
            let mut levels: std::collections::BTreeMap<u64, (usize, u64)> = Default::default();
            for c in n.caches() {
                let e = levels.entry(c.get(CacheKey::Level).unwrap_or(0)).or_default();
                e.0 += 1;
                e.1 += c.get(CacheKey::Size).unwrap_or(0);
            }
            let parts: Vec<String> = levels
                .iter()
                .map(|(l, (count, kib))| format!("L{l} {count}x ({} total)", bytes(kib * 1024)))
                .collect();
            let _ = writeln!(s, "  caches    {}", parts.join(", "));
        }
        let mut links: std::collections::BTreeMap<String, usize> = Default::default();
        for l in n.io_links() {
            *links.entry(format!("{} io", link_type_name(l.link_type()))).or_default() += 1;
        }
        for l in n.p2p_links() {
            *links.entry(format!("{} p2p", link_type_name(l.link_type()))).or_default() += 1;
        }
        for l in n.derived_links() {
            if l.origin() != LinkOrigin::IoLink {
                *links.entry("derived".into()).or_default() += 1;
            }
        }
        if !links.is_empty() {
            let parts: Vec<String> = links.iter().map(|(k, c)| format!("{c} {k}")).collect();
            let _ = writeln!(s, "  links     {}", parts.join(", "));
        }
    }
    if !topo.warnings().is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "{} warning(s):", topo.warnings().len());
        for w in topo.warnings() {
            let _ = writeln!(s, "  {w}");
        }
        if topo.warnings_dropped() > 0 {
            let _ = writeln!(s, "  ... and {} more", topo.warnings_dropped());
        }
    }
    s
}

/// Decodes an ACPI OEM id printed as a little-endian integer ("ALASKA"), when it is ASCII.
fn ascii_id(v: u64, len: usize) -> String {
    let bytes: Vec<u8> = v.to_le_bytes().into_iter().take(len).take_while(|b| *b != 0).collect();
    if !bytes.is_empty() && bytes.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        String::from_utf8_lossy(&bytes).trim().to_string()
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use hsakmt_core::error::Errno;
    use hsakmt_core::platform::{Host, Sysfs, SysfsDir, SysfsFile};
    use proptest::prelude::*;

    use super::*;

    /// A tree of arbitrary files: whatever a capture (or an attacker) put there.
    #[derive(Debug, Clone)]
    struct Hostile {
        nodes: u32,
        files: HashMap<SysfsFile, Vec<u8>>,
    }

    impl Sysfs for Hostile {
        fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
            let bytes = self.files.get(&file).ok_or(Errno::ENOENT)?;
            let n = bytes.len().min(buf.len());
            buf[..n].copy_from_slice(&bytes[..n]);
            Ok(n)
        }

        fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
            let ids: Vec<u32> = match dir {
                SysfsDir::Nodes => (0..self.nodes).collect(),
                SysfsDir::Entries { node, kind } => (0..8)
                    .filter(|i| {
                        self.files.contains_key(&SysfsFile::EntryProperties {
                            node,
                            kind,
                            index: *i,
                        })
                    })
                    .collect(),
            };
            for (slot, id) in out.iter_mut().zip(&ids) {
                *slot = *id;
            }
            Ok(ids.len())
        }
    }

    impl Host for Hostile {
        fn now_ns(&self) -> u64 {
            0
        }
        fn process_id(&self) -> u32 {
            1
        }
        fn env_var(&self, _: &str, _: &mut [u8]) -> Option<usize> {
            None
        }
    }

    /// A value: a number of any size, or bytes that are not one.
    fn value() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            any::<u64>().prop_map(|v| v.to_string().into_bytes()),
            (0u64..200_000).prop_map(|v| v.to_string().into_bytes()),
            proptest::collection::vec(any::<u8>(), 0..12),
        ]
    }

    /// A properties file from known and made-up keys.
    fn properties() -> impl Strategy<Value = Vec<u8>> {
        let key = prop_oneof![
            Just("simd_count".to_string()),
            Just("cpu_cores_count".to_string()),
            Just("gfx_target_version".to_string()),
            Just("device_id".to_string()),
            Just("location_id".to_string()),
            Just("drm_render_minor".to_string()),
            Just("mem_banks_count".to_string()),
            Just("io_links_count".to_string()),
            Just("node_to".to_string()),
            Just("node_from".to_string()),
            Just("type".to_string()),
            Just("weight".to_string()),
            Just("heap_type".to_string()),
            Just("size_in_bytes".to_string()),
            "[a-z_\"\\\\]{1,12}",
        ];
        proptest::collection::vec((key, value()), 0..10).prop_map(|lines| {
            let mut text = Vec::new();
            for (k, v) in lines {
                text.extend_from_slice(k.as_bytes());
                text.push(b' ');
                text.extend_from_slice(&v);
                text.push(b'\n');
            }
            text
        })
    }

    fn tree() -> impl Strategy<Value = Hostile> {
        let node = (
            proptest::collection::vec(any::<u8>(), 0..40),
            value(),
            properties(),
            proptest::collection::vec(properties(), 0..3),
            proptest::collection::vec(properties(), 0..2),
        );
        proptest::collection::vec(node, 1..4).prop_map(|nodes| {
            let mut files = HashMap::new();
            files.insert(SysfsFile::GenerationId, b"1\n".to_vec());
            for (i, (name, gpu_id, props, links, banks)) in nodes.iter().enumerate() {
                let n = u32::try_from(i).unwrap();
                files.insert(SysfsFile::Name(n), name.clone());
                files.insert(SysfsFile::GpuId(n), gpu_id.clone());
                files.insert(SysfsFile::NodeProperties(n), props.clone());
                for (kind, entries) in [(EntryKind::IoLink, links), (EntryKind::MemBank, banks)] {
                    for (index, p) in (0u32..).zip(entries) {
                        files
                            .insert(SysfsFile::EntryProperties { node: n, kind, index }, p.clone());
                    }
                }
            }
            Hostile { nodes: u32::try_from(nodes.len()).unwrap(), files }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Hostile names and values: the text, JSON and DOT renderers never panic, JSON stays
        /// valid, a name is never `null` when the node has a name file, and no control
        /// character of the tree reaches a terminal.
        #[test]
        fn renderers_take_any_tree(tree in tree()) {
            let mut topo = Box::new(const { Topology::new() });
            let mut buf = vec![0u8; READ_BUFFER];
            if topo.refresh(&tree, &tree, &mut buf).is_err() {
                return Ok(());
            }
            let doc = to_json(&topo, &DeviceHeaps::none());
            let text = serde_json::to_string(&doc).unwrap();
            prop_assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), doc.clone());
            for n in doc["nodes"].as_array().unwrap() {
                prop_assert!(n["name"].is_string(), "{}", n);
            }
            let report = report(&topo, "a hostile tree", &DeviceHeaps::none());
            let dot = to_dot(&topo);
            for out in [&report, &dot] {
                prop_assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{:?}", out);
            }
            prop_assert!(dot.starts_with("digraph") && dot.ends_with("}\n"), "{}", dot);
            prop_assert_eq!(dot.matches('"').count() % 2, 0, "{}", dot);
        }
    }
}
