//! What the host driver learns about the machine: NUMA nodes with their cores and memory
//! (`/sys/devices/system/node/node*/{cpulist,meminfo}`), the CPU's maximum clock
//! (`/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq`) and system memory
//! (`/proc/meminfo`), all read below a root directory so tests can supply their own tree.

use std::path::Path;

/// One CPU agent's share of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeFacts {
    /// The NUMA node number (0 when the machine has no NUMA nodes in sysfs).
    pub(crate) node: u32,
    /// CPU cores (logical CPUs) of the node.
    pub(crate) cores: u32,
    /// Memory of the node in bytes.
    pub(crate) memory: u64,
}

/// The machine as the host driver sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostFacts {
    /// One entry per CPU agent, in node order.
    pub(crate) nodes: Vec<NodeFacts>,
    /// Maximum CPU clock in MHz (0 when unknown).
    pub(crate) max_clock_mhz: u32,
}

/// Counts the CPUs of a sysfs cpulist (`0-3,8,10-11` → 7); malformed pieces count nothing.
pub(crate) fn cpulist_count(text: &str) -> u32 {
    text.trim()
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => match (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => u32::from(p.trim().parse::<u32>().is_ok()),
        })
        .sum()
}

/// The value of `key` in a meminfo file, in bytes: `/proc/meminfo` lines (`MemTotal:  16 kB`)
/// and node meminfo lines (`Node 0 MemTotal:  16 kB`) alike.
pub(crate) fn meminfo_bytes(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        if name.split_whitespace().last()? != key {
            return None;
        }
        let mut parts = value.split_whitespace();
        let n: u64 = parts.next()?.parse().ok()?;
        Some(match parts.next() {
            Some("kB") => n.saturating_mul(1024),
            _ => n,
        })
    })
}

fn read(root: &Path, path: &str) -> Option<String> {
    std::fs::read_to_string(root.join(path)).ok()
}

/// `MemAvailable` of `/proc/meminfo` below `root`.
pub(crate) fn mem_available(root: &Path) -> Option<u64> {
    meminfo_bytes(&read(root, "proc/meminfo")?, "MemAvailable")
}

/// Reads the machine below `root` (`/` for the real one): one node per NUMA node with CPUs,
/// else one node with [`std::thread::available_parallelism`] cores and all memory.
pub(crate) fn read_facts(root: &Path) -> HostFacts {
    let total = read(root, "proc/meminfo").and_then(|t| meminfo_bytes(&t, "MemTotal"));
    let mut numbers: Vec<u32> = std::fs::read_dir(root.join("sys/devices/system/node"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    numbers.sort_unstable();
    let mut nodes: Vec<NodeFacts> = numbers
        .into_iter()
        .filter_map(|node| {
            let dir = format!("sys/devices/system/node/node{node}");
            let cores = cpulist_count(&read(root, &format!("{dir}/cpulist"))?);
            let memory = read(root, &format!("{dir}/meminfo"))
                .and_then(|t| meminfo_bytes(&t, "MemTotal"))
                .or(total)
                .unwrap_or(0);
            (cores > 0).then_some(NodeFacts { node, cores, memory })
        })
        .collect();
    if nodes.is_empty() {
        let cores = std::thread::available_parallelism()
            .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX));
        nodes.push(NodeFacts { node: 0, cores, memory: total.unwrap_or(0) });
    }
    let max_clock_mhz = read(root, "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .and_then(|t| t.trim().parse::<u64>().ok())
        .map_or(0, |khz| u32::try_from(khz / 1000).unwrap_or(u32::MAX));
    HostFacts { nodes, max_clock_mhz }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpulists_and_meminfo() {
        assert_eq!(cpulist_count("0-3,8,10-11\n"), 7);
        assert_eq!(cpulist_count("\n"), 0);
        assert_eq!(cpulist_count("5"), 1);
        assert_eq!(cpulist_count("3-1,x"), 0);
        let proc = "MemTotal:       16318060 kB\nMemFree:  1 kB\nMemAvailable:   8000000 kB\n";
        assert_eq!(meminfo_bytes(proc, "MemTotal"), Some(16_318_060 * 1024));
        assert_eq!(meminfo_bytes(proc, "MemAvailable"), Some(8_000_000 * 1024));
        assert_eq!(meminfo_bytes(proc, "Total"), None);
        let node = "Node 1 MemTotal:       2048 kB\nNode 1 MemFree: 1024 kB\n";
        assert_eq!(meminfo_bytes(node, "MemTotal"), Some(2048 * 1024));
        assert_eq!(meminfo_bytes(node, "MemUsed"), None);
    }

    fn tree(files: &[(&str, &str)]) -> std::path::PathBuf {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("hsakmt-host-sys-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (path, text) in files {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        root
    }

    #[test]
    fn numa_nodes_become_agents() {
        let root = tree(&[
            ("proc/meminfo", "MemTotal: 4096 kB\nMemAvailable: 1024 kB\n"),
            ("sys/devices/system/node/node0/cpulist", "0-3\n"),
            ("sys/devices/system/node/node0/meminfo", "Node 0 MemTotal: 1024 kB\n"),
            ("sys/devices/system/node/node1/cpulist", "\n"), // memory only: no agent
            ("sys/devices/system/node/node10/cpulist", "4-5\n"), // no meminfo: the total
            ("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "3500000\n"),
        ]);
        let f = read_facts(&root);
        assert_eq!(
            f.nodes,
            [
                NodeFacts { node: 0, cores: 4, memory: 1 << 20 },
                NodeFacts { node: 10, cores: 2, memory: 4 << 20 },
            ]
        );
        assert_eq!(f.max_clock_mhz, 3500);
        assert_eq!(mem_available(&root), Some(1 << 20));
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn without_sysfs_one_agent_has_every_core() {
        let root = tree(&[("proc/meminfo", "MemTotal: 8 kB\n")]);
        let f = read_facts(&root);
        let cores = std::thread::available_parallelism().unwrap().get() as u32;
        assert_eq!(f.nodes, [NodeFacts { node: 0, cores, memory: 8192 }]);
        assert_eq!(f.max_clock_mhz, 0);
        assert_eq!(mem_available(&root), None);
        std::fs::remove_dir_all(root).unwrap();
    }
}
