//! `hsakmt-image [TOPOLOGY_DIR]`: the embedded proof of hsakmt-rs.
//!
//! A `#![no_std]`, `#![no_main]` static x86_64 Linux executable without libc, made of
//! hsakmt-core and the no_std build of hsakmt-linux (system calls through rustix, runtime from
//! `hsakmt_linux::rt`). It opens `/dev/kfd` and asks its interface version, or says why it
//! cannot; takes a topology snapshot of `TOPOLOGY_DIR` (default: the kernel's tree,
//! `/sys/devices/virtual/kfd/kfd/topology`) into a static, with `HSA_OVERRIDE_GFX_VERSION*`
//! from the environment; and prints a summary. No heap, no unsafe code here.
//!
//! Exit code: 0 when the snapshot was taken (whether or not `/dev/kfd` is usable), 1 when it
//! failed, 2 for a usage error.
//!
//! Build it with `cargo xtask size`, test it with `cargo xtask image-test`.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use core::ffi::CStr;
use core::fmt;

use hsakmt_core::error::Errno;
use hsakmt_core::platform::{Host, Ioctl, OpenError};
use hsakmt_core::topology::{MIN_READ_BUFFER, NodeKind, NodeView, Topology};
use hsakmt_core::uapi::kfd_ioctl_get_version_args;
use hsakmt_linux::rt::{self, Args, Env, eprintln, println};
use hsakmt_linux::{KFD_DEVICE, KFD_TOPOLOGY_ROOT, SysfsTree};
use rustix::fd::AsFd;

rt::entry!(main);

/// The snapshot lives in a static (about half a megabyte with the default capacities, which
/// hold an 8-GPU MI300X in CPX mode), not on the stack.
static TOPOLOGY: spin::Mutex<Topology> = spin::Mutex::new(Topology::new());

/// Warnings printed in full; the rest are counted.
const WARNINGS_SHOWN: usize = 8;

const USAGE: &str = "usage: hsakmt-image [TOPOLOGY_DIR]

Opens /dev/kfd (reports its interface version, or why it cannot), snapshots the KFD topology
under TOPOLOGY_DIR (default /sys/devices/virtual/kfd/kfd/topology) and prints a summary.
HSA_OVERRIDE_GFX_VERSION[_<node>] apply as in libhsakmt.";

fn main(args: Args, env: Env) -> i32 {
    let root = match (args.get(1), args.len()) {
        (Some(a), _) if a == c"-h" || a == c"--help" => {
            println!("{USAGE}");
            return 0;
        }
        (Some(a), 2) if !a.is_empty() => a.to_bytes(),
        (None, _) => KFD_TOPOLOGY_ROOT.as_bytes(),
        _ => {
            eprintln!("{USAGE}");
            return 2;
        }
    };
    println!(
        "hsakmt-image {}: no_std, no libc, static; hsakmt-core over raw syscalls",
        env!("CARGO_PKG_VERSION")
    );
    report_kfd();
    snapshot(root, &ImageHost { env })
}

/// Opens `/dev/kfd` and issues `AMDKFD_IOC_GET_VERSION`, or says why not.
fn report_kfd() {
    let fd = match hsakmt_linux::open_device(KFD_DEVICE) {
        Ok(fd) => fd,
        Err(e) => {
            println!("kfd: unavailable: {e}");
            return;
        }
    };
    let mut version = kfd_ioctl_get_version_args::default();
    match hsakmt_linux::kfd::issue(fd.as_fd(), &mut Ioctl::GetVersion(&mut version)) {
        Ok(()) => println!(
            "kfd: {KFD_DEVICE}: interface version {}.{}",
            version.major_version, version.minor_version
        ),
        Err(Errno::ENOTTY) => println!("kfd: unavailable: {}", OpenError::NotKfd),
        Err(e) => println!("kfd: {KFD_DEVICE} opened, but GET_VERSION failed: {e}"),
    }
}

/// Takes the snapshot of the tree at `root` and prints it; the exit code.
fn snapshot(root: &[u8], host: &ImageHost) -> i32 {
    let tree = match SysfsTree::at(root) {
        Ok(tree) => tree,
        Err(e) => {
            eprintln!("hsakmt-image: bad topology path {}: {e}", Lossy(root));
            return 2;
        }
    };
    let mut topo = TOPOLOGY.lock();
    let mut buf = [0u8; MIN_READ_BUFFER];
    let started = host.now_ns();
    if let Err(e) = topo.refresh(&tree, host, &mut buf) {
        eprintln!("hsakmt-image: topology snapshot of {} failed: {e}", Lossy(root));
        return 1;
    }
    let micros = host.now_ns().saturating_sub(started) / 1000;
    print_summary(&topo, root, micros);
    0
}

fn print_summary(topo: &Topology, root: &[u8], micros: u64) {
    println!(
        "topology: {} (generation {}, {} attempt(s), {micros} us)",
        Lossy(root),
        Opt(topo.generation_id()),
        topo.attempts()
    );
    let count = |k: NodeKind| topo.nodes().filter(|n| n.kind() == k).count();
    println!(
        "nodes: {} (cpu {}, gpu {}, apu {}); gpus usable: {}",
        topo.node_count(),
        count(NodeKind::Cpu),
        count(NodeKind::Gpu),
        count(NodeKind::Apu),
        topo.gpu_count()
    );
    for node in topo.nodes() {
        print_node(&node);
    }
    let (nodes, banks, caches, links) = topo.usage();
    println!(
        "snapshot: {} bytes static; holds {nodes} nodes, {banks} mem banks, {caches} caches, \
         {links} links",
        core::mem::size_of::<Topology>()
    );
    let warnings = topo.warnings();
    println!("warnings: {} (+{} dropped)", warnings.len(), topo.warnings_dropped());
    for w in warnings.iter().take(WARNINGS_SHOWN) {
        println!("  {w}");
    }
    if warnings.len() > WARNINGS_SHOWN {
        println!("  ... {} more", warnings.len() - WARNINGS_SHOWN);
    }
}

/// One line per node: `node N: KIND key=value ...`.
fn print_node(node: &NodeView<'_>) {
    let access = if node.is_accessible() { "" } else { " (inaccessible)" };
    match node.kind() {
        NodeKind::Cpu => println!(
            "node {}: cpu cores={} name={}{access}",
            node.sysfs_id(),
            Opt(node.cpu_cores_count()),
            Name(node.name())
        ),
        kind @ (NodeKind::Gpu | NodeKind::Apu) => {
            let gfx_note = Note(node.gfx_override());
            println!(
                "node {}: {} gfx={}{gfx_note} cus={} vram_mib={} gpu_id={} name={}{access}",
                node.sysfs_id(),
                kind.name(),
                Opt(node.gfx()),
                Opt(node.cu_count()),
                Opt(node.vram_bytes().map(|b| b >> 20)),
                Opt(node.gpu_id()),
                Name(node.name())
            );
        }
    }
}

/// The environment of the process and its clock, for the snapshot's overrides.
struct ImageHost {
    env: Env,
}

impl Host for ImageHost {
    fn now_ns(&self) -> u64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        let secs = u64::try_from(t.tv_sec).unwrap_or(0);
        let nanos = u64::try_from(t.tv_nsec).unwrap_or(0);
        secs.saturating_mul(1_000_000_000).saturating_add(nanos)
    }

    fn process_id(&self) -> u32 {
        rustix::process::getpid().as_raw_nonzero().get().unsigned_abs()
    }

    fn env_var(&self, name: &str, buf: &mut [u8]) -> Option<usize> {
        let value = self.env.var(name).map(CStr::to_bytes)?;
        let n = value.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), value.get(..n)) {
            dst.copy_from_slice(src);
        }
        Some(value.len())
    }
}

/// Bytes shown as text, invalid UTF-8 replaced by U+FFFD.
struct Lossy<'a>(&'a [u8]);

impl fmt::Display for Lossy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            f.write_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                f.write_str("\u{fffd}")?;
            }
        }
        Ok(())
    }
}

/// A value, or `?` when absent.
struct Opt<T>(Option<T>);

impl<T: fmt::Display> fmt::Display for Opt<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("?"),
        }
    }
}

/// A node name in quotes, or `?`.
struct Name<'a>(Option<&'a str>);

impl fmt::Display for Name<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(n) => write!(f, "\"{n}\""),
            None => f.write_str("?"),
        }
    }
}

/// ` override=gfxNNN` when `HSA_OVERRIDE_GFX_VERSION*` set one.
struct Note<T>(Option<T>);

impl<T: fmt::Display> fmt::Display for Note<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(v) => write!(f, " override={v}"),
            None => Ok(()),
        }
    }
}
