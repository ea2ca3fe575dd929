//! The walk that fills a [`Topology`]: `generation_id` before and after, `system_properties`,
//! then per node its files and entry directories (read in batches into the caller's buffer,
//! parsed by the total parsers of `parse`), the gfx versions and overrides, and libhsakmt's
//! CPU-mediated GPU links — retaken when the tree changed meanwhile.

use crate::config::TOPOLOGY_READ_BATCH;
use crate::error::Errno;
use crate::platform::{EntryKind, Host, Sysfs, SysfsDir, SysfsFile};

use super::derive::Graph;
use super::diag::{Diagnostics, Location, WarningKind, entry_file};
use super::gfx::{self, GfxVersion, OVERRIDE_MAX_LEN, OverrideError};
use super::keys::{CacheKey, KeySet, LinkKey, LinkProperties, NodeKey, SystemKey};
use super::node::{
    Cache, IoLinkType, Link, LinkOrigin, MemBank, NAME_CAPACITY, Node, Owner, SiblingMap, Span,
    SpanKind,
};
use super::parse::{self, Line, SIBLING_MAP_CAPACITY};
use super::records::{no_special, parse_props, problem};
use super::snapshot::{LISTING_CAPACITY, Topology};
use super::validate::check_gfx_target_version;
use super::{Error, Table};

pub use crate::config::{GENERATION_RETRIES, MIN_READ_BUFFER, READ_BUFFER};

/// How the entry directories of a node (`mem_banks/`, `caches/`, `io_links/`, `p2p_links/`)
/// are enumerated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EntryEnumeration {
    /// List every directory. Finds entries the counts do not mention and
    /// reports [`CountMismatch`](super::WarningKind::CountMismatch) and numbering gaps: the
    /// right choice for captures and simulated trees.
    List,
    /// For a kind whose `*_count` key the node's `properties` holds, read entries
    /// `0..count` without listing — a live kernel creates exactly these (one directory per
    /// element of the list the count is taken from) — and list only when the key is absent or
    /// one of those entries is missing, in which case the kind is read as with
    /// [`List`](Self::List). Saves one directory listing per node and kind (136 on the 34-node
    /// MI308X tree). Directories beyond the count, which no kernel creates, are not seen.
    /// The default.
    TrustCounts,
}

/// Knobs of [`Topology::refresh_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Options {
    /// How entry directories are enumerated.
    pub entries: EntryEnumeration,
    /// How many times the walk is retaken when `generation_id` changed during it.
    pub generation_retries: u32,
}

impl Options {
    /// [`EntryEnumeration::TrustCounts`], [`GENERATION_RETRIES`].
    pub const DEFAULT: Self =
        Self { entries: EntryEnumeration::TrustCounts, generation_retries: GENERATION_RETRIES };
}

impl Default for Options {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What became of one entry's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Read,
    Denied,
    Missing,
    /// The entry's table is full: it was not stored.
    Full,
}

/// Outcome of reading one file.
enum Fetched<'b> {
    Data(&'b [u8]),
    Denied,
    Unavailable,
}

/// One entry file read in a batch (into a one-page window): where its bytes start in the
/// buffer and what the read returned.
#[derive(Clone, Copy)]
struct EntryRead {
    index: u32,
    start: usize,
    result: Result<usize, Errno>,
}

impl EntryRead {
    const EMPTY: Self = Self { index: 0, start: 0, result: Ok(0) };
}

fn fetch<'b, S: Sysfs + ?Sized, const W: usize>(
    sysfs: &S,
    diag: &mut Diagnostics<W>,
    file: SysfsFile,
    buf: &'b mut [u8],
) -> Fetched<'b> {
    let buf = page_of(buf);
    let cap = buf.len();
    let result = sysfs.read_file(file, buf);
    classify(diag, file, result, cap, buf)
}

/// The first page of `buf`: every file is read into a window of exactly [`MIN_READ_BUFFER`]
/// bytes, so the size of the caller's buffer never changes what is read.
fn page_of(buf: &mut [u8]) -> &mut [u8] {
    let len = buf.len().min(MIN_READ_BUFFER);
    buf.get_mut(..len).unwrap_or_default()
}

/// Turns the result of reading `file` into a window of `cap` bytes at the start of `bytes`
/// into what the parser sees, warning about empty, possibly truncated and failed reads.
fn classify<'b, const W: usize>(
    diag: &mut Diagnostics<W>,
    file: SysfsFile,
    result: Result<usize, Errno>,
    cap: usize,
    bytes: &'b [u8],
) -> Fetched<'b> {
    match result {
        Ok(n) => {
            if n == 0 {
                diag.file(file, WarningKind::EmptyFile);
            } else if n >= cap {
                diag.file(file, WarningKind::MaybeTruncated);
            }
            Fetched::Data(bytes.get(..n.min(cap)).unwrap_or_default())
        }
        Err(Errno::EPERM) => Fetched::Denied,
        Err(Errno::ENOENT) => {
            diag.file(file, WarningKind::MissingFile);
            Fetched::Unavailable
        }
        Err(e) => {
            diag.file(file, WarningKind::ReadFailed(e));
            Fetched::Unavailable
        }
    }
}

/// Sorts and dedups a listing, warning about duplicates and numbering gaps; returns the count
/// of distinct numbers (now at the front of `ids`).
fn sort_listing<const W: usize>(
    ids: &mut [u32],
    diag: &mut Diagnostics<W>,
    dir: SysfsDir,
) -> usize {
    ids.sort_unstable();
    let mut n = 0usize;
    let mut prev: Option<u32> = None;
    for k in 0..ids.len() {
        let Some(v) = ids.get(k).copied() else { break };
        if prev == Some(v) {
            diag.warn(Location::Dir(dir), WarningKind::DuplicateEntry { number: v });
            continue;
        }
        if let Some(slot) = ids.get_mut(n) {
            *slot = v;
        }
        n = n.saturating_add(1);
        prev = Some(v);
    }
    let mut expected = 0u32;
    for &v in ids.get(..n).unwrap_or_default() {
        if v != expected {
            diag.warn(Location::Dir(dir), WarningKind::NumberingGap { expected, found: v });
        }
        expected = v.saturating_add(1);
    }
    n
}

fn count_key(kind: EntryKind) -> NodeKey {
    match kind {
        EntryKind::MemBank => NodeKey::MemBanksCount,
        EntryKind::Cache => NodeKey::CachesCount,
        EntryKind::IoLink => NodeKey::IoLinksCount,
        EntryKind::P2pLink => NodeKey::P2pLinksCount,
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Builds `HSA_OVERRIDE_GFX_VERSION_<id>` in `buf`.
fn override_var_name(id: u32, buf: &mut [u8; 40]) -> &str {
    const PREFIX: &[u8] = b"HSA_OVERRIDE_GFX_VERSION_";
    let mut digits = [0u8; 10];
    let mut n = 0;
    let mut v = id;
    loop {
        if let Some(d) = digits.get_mut(n) {
            *d = b'0'.saturating_add((v % 10) as u8);
        }
        n = n.saturating_add(1);
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let mut len = 0;
    for &b in PREFIX.iter().chain(digits.get(..n).unwrap_or_default().iter().rev()) {
        if let Some(slot) = buf.get_mut(len) {
            *slot = b;
            len = len.saturating_add(1);
        }
    }
    core::str::from_utf8(buf.get(..len).unwrap_or_default()).unwrap_or_default()
}

/// Reads and parses one override variable; `Ok(None)` when unset.
fn read_override<H: Host + ?Sized>(
    host: &H,
    name: &str,
) -> Result<Option<GfxVersion>, OverrideError> {
    let mut value = [0u8; OVERRIDE_MAX_LEN];
    let Some(len) = host.env_var(name, &mut value) else { return Ok(None) };
    let text = value.get(..len).ok_or(OverrideError::Syntax)?;
    gfx::parse_override(text).map(Some)
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
    /// Takes a snapshot of the tree `sysfs` exposes, in place, reading each file once into
    /// a one-page window of `buf` (at least [`MIN_READ_BUFFER`] bytes). With a larger buffer
    /// ([`READ_BUFFER`] is enough) the entry files of a directory are read back to back, up
    /// to 32 at a time, and then parsed: same result, fewer cache misses. `host` supplies the
    /// `HSA_OVERRIDE_GFX_VERSION[_<user node id>]` variables.
    ///
    /// `generation_id` is read before and after; if it changed, the snapshot is retaken, up
    /// to [`GENERATION_RETRIES`] times. Missing files, malformed lines and disagreeing counts
    /// become [`warnings`](Self::warnings); a node whose files fail with `EPERM` is kept as
    /// inaccessible. A tree beyond a table's capacity is read as far as the table holds (the
    /// lowest-numbered nodes and entries), with a [`WarningKind::Truncated`] per full table. After the tree is read, the node gfx versions, the overrides and (when no
    /// node reports `p2p_links_count`) libhsakmt's CPU-mediated GPU links are computed.
    ///
    /// # Errors
    /// - [`Error::BufferTooSmall`]: `buf` is shorter than [`MIN_READ_BUFFER`].
    /// - [`Error::NoNodes`]: `nodes/` is missing or empty.
    /// - [`Error::ListFailed`]: listing `nodes/` failed.
    /// - [`Error::Inconsistent`]: `generation_id` kept changing.
    /// - [`Error::GfxOverride`]: an override variable is malformed.
    ///
    /// On error the snapshot is left empty.
    pub fn refresh<S: Sysfs + ?Sized, H: Host + ?Sized>(
        &mut self,
        sysfs: &S,
        host: &H,
        buf: &mut [u8],
    ) -> Result<(), Error> {
        self.refresh_with(sysfs, host, buf, &Options::DEFAULT)
    }

    /// [`refresh`](Self::refresh) with explicit [`Options`].
    ///
    /// # Errors
    /// As [`refresh`](Self::refresh).
    pub fn refresh_with<S: Sysfs + ?Sized, H: Host + ?Sized>(
        &mut self,
        sysfs: &S,
        host: &H,
        buf: &mut [u8],
        options: &Options,
    ) -> Result<(), Error> {
        if buf.len() < MIN_READ_BUFFER {
            self.clear();
            return Err(Error::BufferTooSmall {
                len: to_u32(buf.len()),
                min: MIN_READ_BUFFER as u32,
            });
        }
        let result = self.take(sysfs, host, buf, options, None);
        self.settle(result)
    }

    /// Logs how a walk ended (its warnings, or its failure, which leaves the snapshot empty).
    pub(super) fn settle(&mut self, result: Result<(), Error>) -> Result<(), Error> {
        match &result {
            Ok(()) => {
                for w in self.warnings() {
                    log_warn!("topology: {}", w);
                }
            }
            Err(e) => {
                log_warn!("topology snapshot failed: {:?}", e);
                self.clear();
            }
        }
        result
    }

    /// The walk; `render` (see `visibility`) hides the GPUs whose render node cannot be
    /// opened before user ids and overrides are assigned.
    pub(super) fn take<S: Sysfs + ?Sized, H: Host + ?Sized>(
        &mut self,
        sysfs: &S,
        host: &H,
        buf: &mut [u8],
        options: &Options,
        render: Option<&dyn Fn(u32) -> Result<(), Errno>>,
    ) -> Result<(), Error> {
        let walked = self.walk(sysfs, buf, options);
        sysfs.walk_done();
        self.attempts = walked?;
        if let Some(probe) = render {
            self.hide_unopenable(probe)?;
        }
        self.finish(host)
    }

    /// Reads the tree until `generation_id` reads the same before and after; returns the
    /// number of attempts.
    fn walk<S: Sysfs + ?Sized>(
        &mut self,
        sysfs: &S,
        buf: &mut [u8],
        options: &Options,
    ) -> Result<u32, Error> {
        let trust = options.entries == EntryEnumeration::TrustCounts;
        let mut attempts = 0u32;
        loop {
            attempts = attempts.saturating_add(1);
            self.clear();
            let start = self.read_generation(sysfs, buf, true);
            self.read_system(sysfs, buf);
            self.read_nodes(sysfs, buf, trust)?;
            let end = self.read_generation(sysfs, buf, false);
            if start == end {
                self.generation_id = start;
                break;
            }
            if attempts > options.generation_retries {
                return Err(Error::Inconsistent { attempts });
            }
            log_debug!(
                "topology changed while read (generation {:?} then {:?}), reading again",
                start,
                end
            );
        }
        Ok(attempts)
    }

    fn read_generation<S: Sysfs + ?Sized>(
        &mut self,
        sysfs: &S,
        buf: &mut [u8],
        report: bool,
    ) -> Option<u32> {
        let file = SysfsFile::GenerationId;
        let mut scratch = Diagnostics::<1>::new();
        let bytes = if report {
            match fetch(sysfs, &mut self.diag, file, buf) {
                Fetched::Data(b) => b,
                Fetched::Denied => {
                    self.diag.file(file, WarningKind::ReadFailed(Errno::EPERM));
                    return None;
                }
                Fetched::Unavailable => return None,
            }
        } else {
            match fetch(sysfs, &mut scratch, file, buf) {
                Fetched::Data(b) => b,
                Fetched::Denied | Fetched::Unavailable => return None,
            }
        };
        match parse::parse_single_u32(bytes) {
            Ok(v) => Some(v),
            Err(e) => {
                if report && !bytes.is_empty() {
                    self.diag.file(file, WarningKind::MalformedNumber { problem: problem(e) });
                }
                None
            }
        }
    }

    fn read_system<S: Sysfs + ?Sized>(&mut self, sysfs: &S, buf: &mut [u8]) {
        let file = SysfsFile::SystemProperties;
        match fetch(sysfs, &mut self.diag, file, buf) {
            Fetched::Data(b) => {
                self.system_present = true;
                parse_props::<SystemKey, WARNINGS, UNKNOWN>(
                    b,
                    &mut self.system,
                    file,
                    Owner::System,
                    &mut self.diag,
                    &mut self.unknown,
                    no_special,
                );
            }
            Fetched::Denied => self.diag.file(file, WarningKind::ReadFailed(Errno::EPERM)),
            Fetched::Unavailable => {}
        }
    }

    fn read_nodes<S: Sysfs + ?Sized>(
        &mut self,
        sysfs: &S,
        buf: &mut [u8],
        trust: bool,
    ) -> Result<(), Error> {
        let dir = SysfsDir::Nodes;
        let total = sysfs
            .list_dir(dir, &mut self.listing)
            .map_err(|errno| Error::ListFailed { dir, errno })?;
        if total == 0 {
            return Err(Error::NoNodes);
        }
        // Beyond the listing's capacity the platform kept the lowest numbers.
        let listed = total.min(LISTING_CAPACITY);
        self.leave_out(Table::Listing, total.saturating_sub(listed));
        let ids = self.listing.get_mut(..listed).unwrap_or_default();
        let n = sort_listing(ids, &mut self.diag, dir);
        for &id in self.listing.get(..n).unwrap_or_default() {
            if self.nodes.push(Node::new(id)).is_err() {
                self.first_left_out_node = Some(id);
                self.leave_out(Table::Nodes, n.saturating_sub(NODES));
                break;
            }
        }
        for i in 0..self.nodes.len() {
            self.read_node(i, sysfs, buf, trust)?;
        }
        Ok(())
    }

    fn read_node<S: Sysfs + ?Sized>(
        &mut self,
        i: usize,
        sysfs: &S,
        buf: &mut [u8],
        trust: bool,
    ) -> Result<(), Error> {
        let Some(node) = self.nodes.get_mut(i) else { return Ok(()) };
        let id = node.sysfs_id;

        // gpu_id
        let file = SysfsFile::GpuId(id);
        match fetch(sysfs, &mut self.diag, file, buf) {
            Fetched::Data(b) => match parse::parse_single_u32(b) {
                Ok(v) => node.gpu_id = Some(v),
                Err(_) if b.is_empty() => {}
                Err(e) => {
                    self.diag.file(file, WarningKind::MalformedNumber { problem: problem(e) })
                }
            },
            Fetched::Denied => {
                node.accessible = false;
                return Ok(());
            }
            Fetched::Unavailable => {}
        }

        // name
        let file = SysfsFile::Name(id);
        match fetch(sysfs, &mut self.diag, file, buf) {
            Fetched::Data(b) => {
                let name = parse::name_of(b);
                let text = core::str::from_utf8(name);
                if text.is_err() {
                    self.diag.file(file, WarningKind::NameNotUtf8);
                }
                // A UTF-8 name is cut at a character boundary, so what is kept stays UTF-8.
                let mut len = name.len().min(NAME_CAPACITY);
                if let Ok(t) = text {
                    while len > 0 && !t.is_char_boundary(len) {
                        len = len.saturating_sub(1);
                    }
                }
                if name.len() > NAME_CAPACITY {
                    self.diag.file(file, WarningKind::NameTooLong { len: to_u32(name.len()) });
                }
                if let (Some(dst), Some(src)) = (node.name.get_mut(..len), name.get(..len)) {
                    dst.copy_from_slice(src);
                }
                node.name_len = len as u8;
                node.name_present = true;
            }
            Fetched::Denied => {
                node.accessible = false;
                return Ok(());
            }
            Fetched::Unavailable => {}
        }

        // properties
        let file = SysfsFile::NodeProperties(id);
        match fetch(sysfs, &mut self.diag, file, buf) {
            Fetched::Data(b) => {
                node.properties_present = true;
                parse_props::<NodeKey, WARNINGS, UNKNOWN>(
                    b,
                    &mut node.props,
                    file,
                    Owner::Node { node: id },
                    &mut self.diag,
                    &mut self.unknown,
                    no_special,
                );
            }
            Fetched::Denied => {
                node.accessible = false;
                return Ok(());
            }
            Fetched::Unavailable => {}
        }
        let props = node.props;

        for kind in EntryKind::ALL {
            let key = count_key(kind);
            let trusted = if trust { props.get(key) } else { None };
            let (span, found, denied) = self.read_entries(id, kind, sysfs, buf, trusted)?;
            if let Some(node) = self.nodes.get_mut(i) {
                node.set_span(SpanKind::of(kind), span);
                if denied {
                    node.accessible = false;
                    return Ok(());
                }
            }
            if let (Some(reported), Some(found)) = (props.get(key), found)
                && reported != u64::from(found)
            {
                self.diag.warn(
                    Location::Dir(SysfsDir::Entries { node: id, kind }),
                    WarningKind::CountMismatch { key, reported: reported as u32, found },
                );
            }
        }
        Ok(())
    }

    /// Reads every entry of one kind of one node into its pool. Returns the span, the number
    /// of directories listed (`None` when listing failed) and whether access was denied.
    fn read_entries<S: Sysfs + ?Sized>(
        &mut self,
        node: u32,
        kind: EntryKind,
        sysfs: &S,
        buf: &mut [u8],
        trusted: Option<u64>,
    ) -> Result<(Span, Option<u32>, bool), Error> {
        let dir = SysfsDir::Entries { node, kind };
        let start = match kind {
            EntryKind::MemBank => self.banks.len(),
            EntryKind::Cache => self.caches.len(),
            EntryKind::IoLink | EntryKind::P2pLink => self.links.len(),
        };
        let span =
            |end: usize| Span { start: to_u32(start), len: to_u32(end.saturating_sub(start)) };
        let marks = (
            self.diag.list.len(),
            self.diag.dropped,
            self.unknown.list.len(),
            self.unknown.dropped,
        );
        let listed = match trusted {
            // Entries 0..count, without listing.
            Some(count) => {
                let count = usize::try_from(count).unwrap_or(usize::MAX);
                if count > LISTING_CAPACITY {
                    // No kernel makes that many entries of one kind: see what is really there.
                    return self.read_entries(node, kind, sysfs, buf, None);
                }
                for (i, slot) in self.listing.iter_mut().take(count).enumerate() {
                    *slot = to_u32(i);
                }
                Ok(count)
            }
            None => sysfs.list_dir(dir, &mut self.listing),
        };
        let total = match listed {
            Ok(n) => n,
            Err(Errno::EPERM) => return Ok((span(start), None, true)),
            Err(e) => {
                self.diag.warn(Location::Dir(dir), WarningKind::ListFailed(e));
                return Ok((span(start), None, false));
            }
        };
        // Beyond the listing's capacity the platform kept the lowest numbers.
        let listed = total.min(LISTING_CAPACITY);
        let beyond = total.saturating_sub(listed);
        self.leave_out(Table::Listing, beyond);
        let n = if trusted.is_some() {
            listed
        } else {
            sort_listing(self.listing.get_mut(..listed).unwrap_or_default(), &mut self.diag, dir)
        };
        let found = if trusted.is_some() { None } else { Some(to_u32(n.saturating_add(beyond))) };

        let mut k = 0usize;
        while k < n {
            // Read a batch of files back to back into consecutive windows of `buf`, then parse
            // them: the kernel's open/read/close path and the parser each stay warm in the
            // caches instead of evicting each other file by file.
            let mut reads = [EntryRead::EMPTY; TOPOLOGY_READ_BATCH];
            let mut count = 0usize;
            let mut used = 0usize;
            for slot in &mut reads {
                let at = k.saturating_add(count);
                let Some(index) = self.listing.get(at).copied().filter(|_| at < n) else {
                    break;
                };
                let Some(window) = buf.get_mut(used..used.saturating_add(MIN_READ_BUFFER)) else {
                    break;
                };
                let result = sysfs.read_file(entry_file(node, kind, index), window);
                *slot = EntryRead { index, start: used, result };
                count = count.saturating_add(1);
                match result {
                    Ok(len) => used = used.saturating_add(len.min(MIN_READ_BUFFER)),
                    // A failed read can end this kind's reading (EPERM, or a missing entry
                    // under trusted counts): handle it before reading further.
                    Err(_) => break,
                }
            }
            let first = k;
            k = k.saturating_add(count);
            for (j, read) in reads.get(..count).unwrap_or_default().iter().enumerate() {
                let file = entry_file(node, kind, read.index);
                let window = buf.get(read.start..).unwrap_or_default();
                let fetched = classify(&mut self.diag, file, read.result, MIN_READ_BUFFER, window);
                let outcome = self.store_entry(node, kind, read.index, fetched);
                if outcome == Outcome::Full {
                    // Read as far as the table holds: this entry and the rest are left out.
                    let table = match kind {
                        EntryKind::MemBank => Table::MemBanks,
                        EntryKind::Cache => Table::Caches,
                        EntryKind::IoLink | EntryKind::P2pLink => Table::Links,
                    };
                    self.leave_out(table, n.saturating_sub(first.saturating_add(j)));
                    let end = match kind {
                        EntryKind::MemBank => self.banks.len(),
                        EntryKind::Cache => self.caches.len(),
                        EntryKind::IoLink | EntryKind::P2pLink => self.links.len(),
                    };
                    return Ok((span(end), found, false));
                }
                let denied = outcome == Outcome::Denied;
                if outcome == Outcome::Missing && trusted.is_some() {
                    // The count named a directory that is not there: the tree is not what a live
                    // kernel makes. Forget this kind's records and warnings and list instead.
                    match kind {
                        EntryKind::MemBank => self.banks.truncate(start),
                        EntryKind::Cache => self.caches.truncate(start),
                        EntryKind::IoLink | EntryKind::P2pLink => self.links.truncate(start),
                    }
                    self.diag.list.truncate(marks.0);
                    self.diag.dropped = marks.1;
                    self.unknown.list.truncate(marks.2);
                    self.unknown.dropped = marks.3;
                    return self.read_entries(node, kind, sysfs, buf, None);
                }
                if denied {
                    // The record has no readable content; drop it.
                    match kind {
                        EntryKind::MemBank => drop(self.banks.pop()),
                        EntryKind::Cache => drop(self.caches.pop()),
                        EntryKind::IoLink | EntryKind::P2pLink => drop(self.links.pop()),
                    }
                    let end = match kind {
                        EntryKind::MemBank => self.banks.len(),
                        EntryKind::Cache => self.caches.len(),
                        EntryKind::IoLink | EntryKind::P2pLink => self.links.len(),
                    };
                    return Ok((span(end), found, true));
                }
            }
        }
        let end = match kind {
            EntryKind::MemBank => self.banks.len(),
            EntryKind::Cache => self.caches.len(),
            EntryKind::IoLink | EntryKind::P2pLink => self.links.len(),
        };
        Ok((span(end), found, false))
    }

    /// Stores one entry's record from what reading its file gave.
    fn store_entry(
        &mut self,
        node: u32,
        kind: EntryKind,
        index: u32,
        fetched: Fetched<'_>,
    ) -> Outcome {
        let file = entry_file(node, kind, index);
        let owner = Owner::Entry { node, kind, index };
        match kind {
            EntryKind::MemBank => {
                let Ok(rec) = self.banks.push_mut(MemBank { index, props: Default::default() })
                else {
                    return Outcome::Full;
                };
                match fetched {
                    Fetched::Data(b) => {
                        parse_props::<super::MemBankKey, WARNINGS, UNKNOWN>(
                            b,
                            &mut rec.props,
                            file,
                            owner,
                            &mut self.diag,
                            &mut self.unknown,
                            no_special,
                        );
                        Outcome::Read
                    }
                    Fetched::Denied => Outcome::Denied,
                    Fetched::Unavailable => Outcome::Missing,
                }
            }
            EntryKind::Cache => {
                let Ok(rec) = self.caches.push_mut(Cache {
                    index,
                    props: Default::default(),
                    siblings: SiblingMap { bits: [0; SIBLING_MAP_CAPACITY / 32], entries: 0 },
                }) else {
                    return Outcome::Full;
                };
                match fetched {
                    Fetched::Data(b) => {
                        let siblings = &mut rec.siblings;
                        parse_props::<CacheKey, WARNINGS, UNKNOWN>(
                            b,
                            &mut rec.props,
                            file,
                            owner,
                            &mut self.diag,
                            &mut self.unknown,
                            |key: CacheKey,
                             line: &Line<'_>,
                             map: Option<&parse::SiblingBits>,
                             props: &mut super::CacheProperties,
                             diag: &mut Diagnostics<WARNINGS>| {
                                if key != CacheKey::SiblingMap {
                                    return false;
                                }
                                let m = match map {
                                    Some(m) => *m,
                                    None => parse::parse_sibling_map(line.raw),
                                };
                                *siblings = SiblingMap { bits: m.bits, entries: m.entries };
                                if props.mark(key) {
                                    diag.file(
                                        file,
                                        WarningKind::DuplicateKey {
                                            line: line.number,
                                            key: key.id(),
                                        },
                                    );
                                }
                                if m.malformed {
                                    diag.file(
                                        file,
                                        WarningKind::MalformedSiblingMap {
                                            line: line.number,
                                            entries: m.entries,
                                        },
                                    );
                                } else if m.entries as usize > SIBLING_MAP_CAPACITY {
                                    diag.file(
                                        file,
                                        WarningKind::SiblingMapTruncated { entries: m.entries },
                                    );
                                }
                                true
                            },
                        );
                        Outcome::Read
                    }
                    Fetched::Denied => Outcome::Denied,
                    Fetched::Unavailable => Outcome::Missing,
                }
            }
            EntryKind::IoLink | EntryKind::P2pLink => {
                let origin = if kind == EntryKind::IoLink {
                    LinkOrigin::IoLink
                } else {
                    LinkOrigin::P2pLink
                };
                let Ok(rec) =
                    self.links.push_mut(Link { index, origin, props: LinkProperties::EMPTY })
                else {
                    return Outcome::Full;
                };
                match fetched {
                    Fetched::Data(b) => {
                        parse_props::<LinkKey, WARNINGS, UNKNOWN>(
                            b,
                            &mut rec.props,
                            file,
                            owner,
                            &mut self.diag,
                            &mut self.unknown,
                            no_special,
                        );
                        if let Some(from) = rec.props.node_from()
                            && from != node
                        {
                            self.diag.file(file, WarningKind::LinkFromMismatch { node_from: from });
                        }
                        if let Some(to) = rec.props.node_to() {
                            if to == node {
                                self.diag.file(file, WarningKind::SelfLink);
                            } else if self
                                .nodes
                                .binary_search_by_key(&to, |n| n.sysfs_id)
                                .is_err()
                                // A node left out of a full table is there, just not read.
                                && self.first_left_out_node.is_none_or(|first| to < first)
                            {
                                self.diag
                                    .file(file, WarningKind::LinkTargetMissing { node_to: to });
                            }
                        }
                        if let Some(IoLinkType::Unknown(value)) = rec.link_type() {
                            self.diag.file(file, WarningKind::UnknownLinkType { value });
                        }
                        Outcome::Read
                    }
                    Fetched::Denied => Outcome::Denied,
                    Fetched::Unavailable => Outcome::Missing,
                }
            }
        }
    }

    /// User ids, gfx versions, overrides, derived links.
    fn finish<H: Host + ?Sized>(&mut self, host: &H) -> Result<(), Error> {
        let mut user = 0u32;
        let mut any_gpu = false;
        let mut any_p2p_key = false;
        self.check_gpu_ids();
        for node in &mut self.nodes {
            if !node.accessible {
                continue;
            }
            node.user_id = Some(user);
            user = user.saturating_add(1);
            any_p2p_key |= node.props.contains(NodeKey::P2pLinksCount);
            if !node.has_gpu() {
                continue;
            }
            any_gpu = true;
            check_gfx_target_version(node, &mut self.diag);
            node.gfx = gfx::resolve(node.props.gfx_target_version(), node.props.device_id());
            if node.gfx.is_none() {
                self.diag.file(
                    SysfsFile::NodeProperties(node.sysfs_id),
                    WarningKind::UnknownGfx { device_id: node.props.device_id() },
                );
            }
        }

        if any_gpu {
            // Per-node variable first, else the global one (parsed once, only if needed).
            let mut global: Option<Result<Option<GfxVersion>, OverrideError>> = None;
            for node in &mut self.nodes {
                let (Some(uid), true) = (node.user_id, node.has_gpu()) else { continue };
                let mut name = [0u8; 40];
                let per_node = read_override(host, override_var_name(uid, &mut name))
                    .map_err(|reason| Error::GfxOverride { node: Some(uid), reason })?;
                node.gfx_override = match per_node {
                    Some(g) => Some(g),
                    None => *global
                        .get_or_insert_with(|| read_override(host, "HSA_OVERRIDE_GFX_VERSION"))
                        .as_ref()
                        .map_err(|&reason| Error::GfxOverride { node: None, reason })?,
                };
            }
        }

        if !any_p2p_key {
            self.derive_links();
        }
        self.warn_truncated();
        Ok(())
    }

    /// libhsakmt's CPU-mediated GPU links, as far as the link table holds.
    fn derive_links(&mut self) {
        self.derived = true;
        let mut left_out = 0usize;
        for a in 0..self.nodes.len() {
            let start = self.links.len();
            for b in 0..self.nodes.len() {
                let graph = Graph { nodes: &self.nodes, links: &self.links, banks: &self.banks };
                let Some((ty, weight)) = graph.indirect(a, b) else { continue };
                let (Some(na), Some(nb)) = (self.nodes.get(a), self.nodes.get(b)) else { continue };
                if self.links.is_full() {
                    left_out = left_out.saturating_add(1);
                    continue;
                }
                let mut props = LinkProperties::EMPTY;
                // The values fit: type is a u32, ids are u32, the weight a u32 sum.
                if let Some(t) = ty {
                    let _ = props.set(LinkKey::Type, u64::from(t));
                }
                let _ = props.set(LinkKey::NodeFrom, u64::from(na.sysfs_id));
                let _ = props.set(LinkKey::NodeTo, u64::from(nb.sysfs_id));
                let _ = props.set(LinkKey::Weight, u64::from(weight));
                let index = to_u32(self.links.len().saturating_sub(start));
                let _ = self.links.push(Link { index, origin: LinkOrigin::Derived, props });
            }
            let len = to_u32(self.links.len().saturating_sub(start));
            let span = Span { start: to_u32(start), len };
            if let Some(n) = self.nodes.get_mut(a) {
                n.set_span(SpanKind::Derived, span);
            }
        }
        self.leave_out(Table::Links, left_out);
    }
}
