//! The fixed-capacity snapshot and what it answers: nodes and their entries, lookups by id,
//! link weights, warnings and unknown keys. The walk that fills it is `refresh`.

use core::fmt;

use super::Table;
use super::derive::{Graph, vram_bytes};
use super::diag::{Diagnostics, UnknownKeys, Warning};
use super::keys::SystemProperties;
use super::node::{Cache, Link, LinkOrigin, MemBank, Node, NodeKind, Owner, SpanKind, UnknownKey};

pub use crate::config::{
    DEFAULT_CACHES, DEFAULT_LINKS, DEFAULT_MEM_BANKS, DEFAULT_NODES, DEFAULT_UNKNOWN_KEYS,
    DEFAULT_WARNINGS, LISTING_CAPACITY,
};
/// A snapshot of the KFD sysfs topology: every key of every file, what libhsakmt derives from
/// them, and the inconsistencies found — in fixed-capacity tables, without allocation.
///
/// Capacities are const generics (defaults hold 16 GPUs of 8 partitions each with their CPU
/// nodes, and the caches and links of an 8-GPU MI300X in CPX mode); a tree beyond them is
/// read as far as they allow, the lowest-numbered nodes and entries first, with a
/// [`Truncated`](super::WarningKind::Truncated) warning per full table saying how much was
/// left out. Construct with [`Topology::new`] (a `const fn`, so a `static` works) and fill in
/// place with [`Topology::refresh`].
///
/// # Invariants
/// - `nodes` are sorted by sysfs id, without duplicates.
/// - every node's spans lie inside the pools; a node's records are contiguous and in
///   directory-number order.
/// - after a failed refresh the snapshot is empty.
pub struct Topology<
    const NODES: usize = DEFAULT_NODES,
    const BANKS: usize = DEFAULT_MEM_BANKS,
    const CACHES: usize = DEFAULT_CACHES,
    const LINKS: usize = DEFAULT_LINKS,
    const UNKNOWN: usize = DEFAULT_UNKNOWN_KEYS,
    const WARNINGS: usize = DEFAULT_WARNINGS,
> {
    pub(super) generation_id: Option<u32>,
    pub(super) system_present: bool,
    pub(super) system: SystemProperties,
    pub(super) nodes: heapless::Vec<Node, NODES>,
    pub(super) banks: heapless::Vec<MemBank, BANKS>,
    pub(super) caches: heapless::Vec<Cache, CACHES>,
    pub(super) links: heapless::Vec<Link, LINKS>,
    pub(super) unknown: UnknownKeys<UNKNOWN>,
    pub(super) diag: Diagnostics<WARNINGS>,
    pub(super) listing: [u32; LISTING_CAPACITY],
    pub(super) attempts: u32,
    pub(super) derived: bool,
    /// Entries left out of each full table ([`Table`](super::Table) order).
    pub(super) left_out: [u32; Table::ALL.len()],
    /// The lowest node id left out of a full node table.
    pub(super) first_left_out_node: Option<u32>,
}

/// A node with its entry tables.
#[derive(Debug, Clone, Copy)]
pub struct NodeView<'a> {
    index: usize,
    node: &'a Node,
    banks: &'a [MemBank],
    caches: &'a [Cache],
    io: &'a [Link],
    p2p: &'a [Link],
    derived: &'a [Link],
}

impl core::ops::Deref for NodeView<'_> {
    type Target = Node;
    fn deref(&self) -> &Node {
        self.node
    }
}

impl<'a> NodeView<'a> {
    /// The node's position in the snapshot (`0..node_count`, sysfs-id order).
    #[must_use]
    pub const fn index(&self) -> usize {
        self.index
    }
    /// The node record.
    #[must_use]
    pub const fn node(&self) -> &'a Node {
        self.node
    }
    /// `mem_banks/*`, in directory order.
    #[must_use]
    pub const fn mem_banks(&self) -> &'a [MemBank] {
        self.banks
    }
    /// `caches/*`, in directory order.
    #[must_use]
    pub const fn caches(&self) -> &'a [Cache] {
        self.caches
    }
    /// `io_links/*`, in directory order.
    #[must_use]
    pub const fn io_links(&self) -> &'a [Link] {
        self.io
    }
    /// `p2p_links/*`, in directory order.
    #[must_use]
    pub const fn p2p_links(&self) -> &'a [Link] {
        self.p2p
    }
    /// Links synthesised the way libhsakmt does when no node reports `p2p_links_count`
    /// (ordered by target node).
    #[must_use]
    pub const fn derived_links(&self) -> &'a [Link] {
        self.derived
    }
    /// io_links, p2p_links, then derived links (libhsakmt's `NumIOLinks` array).
    pub fn links(&self) -> impl Iterator<Item = &'a Link> + 'a {
        self.io.iter().chain(self.p2p).chain(self.derived)
    }
    /// VRAM bytes: the sum of `size_in_bytes` over heap type 1/2 banks; `None` without such a
    /// bank (never taken from `local_mem_size`).
    #[must_use]
    pub fn vram_bytes(&self) -> Option<u64> {
        vram_bytes(self.banks)
    }
}

impl<
    const NODES: usize,
    const BANKS: usize,
    const CACHES: usize,
    const LINKS: usize,
    const UNKNOWN: usize,
    const WARNINGS: usize,
> Default for Topology<NODES, BANKS, CACHES, LINKS, UNKNOWN, WARNINGS>
{
    fn default() -> Self {
        Self::new()
    }
}

/// Two snapshots are equal when they hold the same generation, values, records, derived
/// links, unknown keys and warnings (in the same order); scratch space is not compared.
impl<
    const NODES: usize,
    const BANKS: usize,
    const CACHES: usize,
    const LINKS: usize,
    const UNKNOWN: usize,
    const WARNINGS: usize,
> PartialEq for Topology<NODES, BANKS, CACHES, LINKS, UNKNOWN, WARNINGS>
{
    fn eq(&self, other: &Self) -> bool {
        self.generation_id == other.generation_id
            && self.system_present == other.system_present
            && self.system == other.system
            && self.nodes == other.nodes
            && self.banks == other.banks
            && self.caches == other.caches
            && self.links == other.links
            && self.unknown.list == other.unknown.list
            && self.unknown.dropped == other.unknown.dropped
            && self.diag.list == other.diag.list
            && self.diag.dropped == other.diag.dropped
            && self.attempts == other.attempts
            && self.derived == other.derived
    }
}

impl<
    const NODES: usize,
    const BANKS: usize,
    const CACHES: usize,
    const LINKS: usize,
    const UNKNOWN: usize,
    const WARNINGS: usize,
> fmt::Debug for Topology<NODES, BANKS, CACHES, LINKS, UNKNOWN, WARNINGS>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topology")
            .field("generation_id", &self.generation_id)
            .field("nodes", &self.nodes.len())
            .field("mem_banks", &self.banks.len())
            .field("caches", &self.caches.len())
            .field("links", &self.links.len())
            .field("unknown_keys", &self.unknown.list.len())
            .field("warnings", &self.diag.list.len())
            .finish_non_exhaustive()
    }
}

impl<
    const NODES: usize,
    const BANKS: usize,
    const CACHES: usize,
    const LINKS: usize,
    const UNKNOWN: usize,
    const WARNINGS: usize,
> Topology<NODES, BANKS, CACHES, LINKS, UNKNOWN, WARNINGS>
{
    /// An empty snapshot.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            generation_id: None,
            system_present: false,
            system: SystemProperties::EMPTY,
            nodes: heapless::Vec::new(),
            banks: heapless::Vec::new(),
            caches: heapless::Vec::new(),
            links: heapless::Vec::new(),
            unknown: UnknownKeys::new(),
            diag: Diagnostics::new(),
            listing: [0; LISTING_CAPACITY],
            attempts: 0,
            derived: false,
            left_out: [0; Table::ALL.len()],
            first_left_out_node: None,
        }
    }

    /// Empties the snapshot.
    pub fn clear(&mut self) {
        self.generation_id = None;
        self.system_present = false;
        self.system = SystemProperties::EMPTY;
        self.nodes.clear();
        self.banks.clear();
        self.caches.clear();
        self.links.clear();
        self.unknown.clear();
        self.diag.clear();
        self.attempts = 0;
        self.derived = false;
        self.left_out = [0; Table::ALL.len()];
        self.first_left_out_node = None;
    }

    // ------------------------------------------------------------------ read API

    fn graph(&self) -> Graph<'_> {
        Graph { nodes: &self.nodes, links: &self.links, banks: &self.banks }
    }

    fn view(&self, index: usize) -> Option<NodeView<'_>> {
        let node = self.nodes.get(index)?;
        let links = |k| self.links.get(node.span(k).range()).unwrap_or_default();
        Some(NodeView {
            index,
            node,
            banks: self.banks.get(node.span(SpanKind::Banks).range()).unwrap_or_default(),
            caches: self.caches.get(node.span(SpanKind::Caches).range()).unwrap_or_default(),
            io: links(SpanKind::IoLinks),
            p2p: links(SpanKind::P2pLinks),
            derived: links(SpanKind::Derived),
        })
    }

    /// `generation_id` (equal before and after the walk), `None` when the file is absent.
    #[must_use]
    pub const fn generation_id(&self) -> Option<u32> {
        self.generation_id
    }

    /// Whether `system_properties` was read.
    #[must_use]
    pub const fn has_system_properties(&self) -> bool {
        self.system_present
    }

    /// The values of `system_properties` (all absent when the file was).
    #[must_use]
    pub const fn system_properties(&self) -> &SystemProperties {
        &self.system
    }

    /// Number of nodes (directories under `nodes/`, accessible or not).
    #[must_use]
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the snapshot holds no node (never refreshed, or the last refresh failed).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node at `index` (`0..node_count`, ordered by sysfs id).
    #[must_use]
    pub fn node(&self, index: usize) -> Option<NodeView<'_>> {
        self.view(index)
    }

    /// All nodes in sysfs-id order.
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = NodeView<'_>> + '_ {
        (0..self.nodes.len()).map(|i| self.view(i).unwrap_or_else(|| self.empty_view(i)))
    }

    fn empty_view(&self, index: usize) -> NodeView<'_> {
        const EMPTY: Node = Node::new(0);
        NodeView { index, node: &EMPTY, banks: &[], caches: &[], io: &[], p2p: &[], derived: &[] }
    }

    /// The node whose `gpu_id` file holds `gpu_id` (0 never matches).
    #[must_use]
    pub fn node_by_gpu_id(&self, gpu_id: u32) -> Option<NodeView<'_>> {
        if gpu_id == 0 {
            return None;
        }
        let i = self.nodes.iter().position(|n| n.gpu_id == Some(gpu_id))?;
        self.view(i)
    }

    /// The node whose directory is `nodes/<sysfs_id>`.
    #[must_use]
    pub fn node_by_sysfs_id(&self, sysfs_id: u32) -> Option<NodeView<'_>> {
        self.view(self.graph().index_of(sysfs_id)?)
    }

    /// The node with libhsakmt user id `user_id` (dense over accessible nodes).
    #[must_use]
    pub fn node_by_user_id(&self, user_id: u32) -> Option<NodeView<'_>> {
        let i = self.nodes.iter().position(|n| n.user_id == Some(user_id))?;
        self.view(i)
    }

    /// Accessible nodes with a GPU (GPU or APU).
    #[must_use]
    pub fn gpu_count(&self) -> usize {
        self.nodes.iter().filter(|n| n.accessible && n.has_gpu()).count()
    }

    /// libhsakmt's `hsakmt_is_dgpu`: some node has SIMDs and no CPU cores.
    #[must_use]
    pub fn is_dgpu_system(&self) -> bool {
        self.nodes.iter().any(|n| n.kind() == NodeKind::Gpu && n.accessible)
    }

    /// Whether CPU-mediated links were synthesised (no node reported `p2p_links_count`).
    #[must_use]
    pub const fn has_derived_links(&self) -> bool {
        self.derived
    }

    /// The weight of the link `from → to` (node indices): the first of io_links, p2p_links,
    /// derived links that targets `to`, with its origin.
    #[must_use]
    pub fn link_weight(&self, from: usize, to: usize) -> Option<(u32, LinkOrigin)> {
        self.graph().link_weight(from, to)
    }

    /// NUMA weights of node `index` to every accessible CPU node it has a link to:
    /// `(cpu node index, weight)`.
    pub fn cpu_weights(&self, index: usize) -> impl Iterator<Item = (usize, u32)> + '_ {
        let graph = self.graph();
        self.nodes.iter().enumerate().filter_map(move |(i, n)| {
            if i == index || n.kind() != NodeKind::Cpu || !n.accessible {
                return None;
            }
            graph.link_weight(index, i).map(|(w, _)| (i, w))
        })
    }

    /// The accessible CPU node nearest to node `index` by link weight: `(index, weight)`.
    #[must_use]
    pub fn nearest_cpu(&self, index: usize) -> Option<(usize, u32)> {
        self.graph().nearest_cpu(index)
    }

    /// libhsakmt's `gpu_get_direct_link_cpu`: the CPU node a GPU hangs off (first PCIe/XGMI
    /// link of weight ≤ 20 to a CPU node).
    #[must_use]
    pub fn direct_link_cpu(&self, gpu_index: usize) -> Option<usize> {
        self.graph().direct_link_cpu(gpu_index)
    }

    /// Inconsistencies found, in the order met.
    #[must_use]
    pub fn warnings(&self) -> &[Warning] {
        &self.diag.list
    }

    /// Warnings that did not fit the list.
    #[must_use]
    pub const fn warnings_dropped(&self) -> u32 {
        self.diag.dropped
    }

    /// Keys the kernel contract does not list, with their owners, in the order met.
    #[must_use]
    pub fn unknown_keys(&self) -> &[UnknownKey] {
        &self.unknown.list
    }

    /// The unknown keys of one record.
    pub fn unknown_keys_of(&self, owner: Owner) -> impl Iterator<Item = &UnknownKey> + '_ {
        self.unknown.list.iter().filter(move |k| k.owner == owner)
    }

    /// Unknown keys not kept (store full, or name longer than
    /// [`UNKNOWN_KEY_NAME_CAPACITY`](super::UNKNOWN_KEY_NAME_CAPACITY)).
    #[must_use]
    pub const fn unknown_keys_dropped(&self) -> u32 {
        self.unknown.dropped
    }

    /// How many walks the last refresh took (1 unless `generation_id` changed).
    #[must_use]
    pub const fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Records held: `(nodes, mem banks, caches, links)`.
    #[must_use]
    pub fn usage(&self) -> (usize, usize, usize, usize) {
        (self.nodes.len(), self.banks.len(), self.caches.len(), self.links.len())
    }
}
