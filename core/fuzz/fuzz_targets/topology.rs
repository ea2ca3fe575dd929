//! Fuzzes the topology snapshot: the input is used once as a node `properties` file, then
//! split at NUL bytes into the files of a small tree (with a shape, EPERM and an override
//! variable chosen by the first byte). A snapshot must never panic; any error must be one
//! the contract allows; reading with a one-page buffer and with a batching buffer must give
//! the same result.
#![no_main]

use hsakmt_core::error::Errno;
use hsakmt_core::platform::{EntryKind, Host, Sysfs, SysfsDir, SysfsFile};
use hsakmt_core::topology::{Error, READ_BUFFER, Topology};
use libfuzzer_sys::fuzz_target;

/// A tree whose files all come from the fuzz input.
struct Tree<'a> {
    flags: u8,
    chunks: [&'a [u8]; 9],
}

impl Tree<'_> {
    fn nodes(&self) -> &'static [u32] {
        match self.flags & 3 {
            0 => &[0],
            1 => &[0, 1],
            2 => &[0, 1, 3],
            _ => &[2, 0, 1, 1],
        }
    }
    fn entries(&self, kind: EntryKind) -> usize {
        let shift = 2 + 2 * kind as u32 % 6;
        usize::from(self.flags >> shift & 3)
    }
    fn denied(&self, node: u32) -> bool {
        self.flags & 0x80 != 0 && node == 1
    }
}

impl Sysfs for Tree<'_> {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        let chunk = match file {
            SysfsFile::GenerationId => 0,
            SysfsFile::SystemProperties => 1,
            SysfsFile::GpuId(n) | SysfsFile::Name(n) | SysfsFile::NodeProperties(n)
                if self.denied(n) =>
            {
                return Err(Errno::EPERM);
            }
            SysfsFile::GpuId(_) => 2,
            SysfsFile::Name(_) => 3,
            SysfsFile::NodeProperties(n) => 4 + (n as usize & 1),
            SysfsFile::EntryProperties { kind, .. } => 6 + (kind as usize % 3),
        };
        let data = self.chunks[chunk];
        let n = data.len().min(buf.len());
        buf[..n].copy_from_slice(&data[..n]);
        Ok(n)
    }

    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        let ids: &[u32] = match dir {
            SysfsDir::Nodes => self.nodes(),
            SysfsDir::Entries { node, .. } if self.denied(node) => return Err(Errno::EPERM),
            SysfsDir::Entries { kind, .. } => &[0, 1, 2, 5][..self.entries(kind)],
        };
        for (slot, v) in out.iter_mut().zip(ids) {
            *slot = *v;
        }
        Ok(ids.len())
    }
}

struct Env<'a>(&'a [u8]);

impl Host for Env<'_> {
    fn now_ns(&self) -> u64 {
        0
    }
    fn process_id(&self) -> u32 {
        1
    }
    fn env_var(&self, name: &str, buf: &mut [u8]) -> Option<usize> {
        if !name.starts_with("HSA_OVERRIDE_GFX_VERSION") || self.0.is_empty() {
            return None;
        }
        let n = self.0.len().min(buf.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        Some(self.0.len())
    }
}

fn check(result: Result<(), Error>) {
    match result {
        Ok(()) | Err(Error::GfxOverride { .. }) => {}
        Err(e) => panic!("unexpected error {e:?}"),
    }
}

fn exercise<const N: usize, const B: usize, const C: usize, const L: usize>(
    t: &Topology<N, B, C, L, 8, 16>,
) {
    for n in t.nodes() {
        let _ = (n.kind(), n.gfx(), n.effective_gfx(), n.vram_bytes(), n.shader_banks());
        let _ = (n.cu_count(), n.xcc_count(), n.vgpr_size_per_cu(), n.amd_name(), n.name());
        let _ = t.nearest_cpu(n.index());
        let _ = t.cpu_weights(n.index()).count();
        for c in n.caches() {
            let _ = c.sibling_map().map(|m| m.iter().count());
        }
        for l in n.links() {
            let _ = (l.weight(), l.link_type());
        }
    }
    for w in t.warnings() {
        let _ = format!("{w}");
    }
    for k in t.unknown_keys() {
        let _ = k.name();
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else { return };
    let mut buf = [0u8; 4096];
    // Small capacities (about 12 KiB) so that capacity errors are reachable too.
    let mut topo: Topology<8, 8, 16, 32, 8, 16> = Topology::new();
    let topo = &mut topo;

    // 1. The whole input as one node's properties file.
    let single = Tree { flags: 0, chunks: [b"1\n", b"", b"0\n", b"\n", rest, rest, b"", b"", b""] };
    check(topo.refresh(&single, &Env(b""), &mut buf));
    exercise(topo);

    // 2. The input split at NUL into the files of a small tree.
    let mut chunks: [&[u8]; 9] = [b""; 9];
    let mut parts = rest.split(|&b| b == 0);
    for c in &mut chunks {
        *c = parts.next().unwrap_or_default();
    }
    let env = parts.next().unwrap_or_default();
    let tree = Tree { flags, chunks };
    let single = topo.refresh(&tree, &Env(env), &mut buf);
    check(single);
    exercise(topo);
    let mut batched: Topology<8, 8, 16, 32, 8, 16> = Topology::new();
    let mut large = [0u8; READ_BUFFER];
    assert_eq!(batched.refresh(&tree, &Env(env), &mut large), single);
    assert!(batched == *topo, "a batching buffer changed the snapshot");
});
