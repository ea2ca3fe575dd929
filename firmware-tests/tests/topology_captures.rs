//! Every value in every file of every embedded capture appears, under its key, in the
//! snapshot the core parser takes through the simulator.

use firmware_tests::{key_values, sim, snapshot};
use hsakmt_core::platform::{EntryKind, SysfsFile};
use hsakmt_core::topology::{CacheKey, LinkKey, MemBankKey, NodeKey, Owner, SystemKey, Topology};
use hsakmt_sim::profile_names;

fn unknown(topo: &Topology, owner: Owner, key: &str) -> Option<u64> {
    topo.unknown_keys_of(owner).find(|k| k.name() == key).map(|k| k.value())
}

fn entry_value(
    topo: &Topology,
    name: &str,
    file: SysfsFile,
    key: &str,
    value: &str,
) -> Option<u64> {
    let SysfsFile::EntryProperties { node: n, kind, index } = file else { return None };
    let node = topo.node_by_sysfs_id(n).expect("node");
    let owner = Owner::Entry { node: n, kind, index };
    let known = match kind {
        EntryKind::MemBank => {
            let bank = node.mem_banks().iter().find(|b| b.index() == index)?;
            MemBankKey::from_name(key.as_bytes()).and_then(|k| bank.get(k))
        }
        EntryKind::Cache => {
            let cache = node.caches().iter().find(|c| c.index() == index)?;
            if key == "sibling_map" {
                let want: Vec<bool> = value.split(',').map(|b| b == "1").collect();
                let got: Vec<bool> = cache.sibling_map().expect("sibling map").iter().collect();
                assert_eq!(got, want, "{name}: {file:?} sibling_map");
                return Some(want.len() as u64);
            }
            CacheKey::from_name(key.as_bytes()).and_then(|k| cache.get(k))
        }
        EntryKind::IoLink | EntryKind::P2pLink => {
            let links = if kind == EntryKind::IoLink { node.io_links() } else { node.p2p_links() };
            let link = links.iter().find(|l| l.index() == index)?;
            LinkKey::from_name(key.as_bytes()).and_then(|k| link.get(k))
        }
    };
    known.or_else(|| unknown(topo, owner, key))
}

fn check_profile(name: &str) -> usize {
    let sim = sim(name);
    let topo = snapshot(&sim);
    let mut checked = 0;
    for (file, bytes) in sim.profile().files() {
        let text = String::from_utf8_lossy(bytes);
        match file {
            SysfsFile::GpuId(n) => {
                if let Ok(v) = text.trim().parse::<u32>() {
                    let node = topo.node_by_sysfs_id(n).expect("node of gpu_id file");
                    assert_eq!(node.gpu_id(), Some(v), "{name}: nodes/{n}/gpu_id");
                    checked += 1;
                }
            }
            SysfsFile::Name(n) => {
                if !bytes.is_empty() {
                    let node = topo.node_by_sysfs_id(n).expect("node of name file");
                    assert_eq!(node.name(), Some(text.trim_end_matches('\n')), "{name}: {n}");
                    checked += 1;
                }
            }
            SysfsFile::GenerationId => {
                if let Ok(v) = text.trim().parse::<u32>() {
                    assert_eq!(topo.generation_id(), Some(v));
                    checked += 1;
                }
            }
            _ => {
                for (key, value) in key_values(bytes) {
                    let got = match file {
                        SysfsFile::SystemProperties => SystemKey::from_name(key.as_bytes())
                            .and_then(|k| topo.system_properties().get(k))
                            .or_else(|| unknown(&topo, Owner::System, &key)),
                        SysfsFile::NodeProperties(n) => {
                            let node = topo.node_by_sysfs_id(n).expect("node");
                            NodeKey::from_name(key.as_bytes())
                                .and_then(|k| node.get(k))
                                .or_else(|| unknown(&topo, Owner::Node { node: n }, &key))
                        }
                        _ => entry_value(&topo, name, file, &key, &value),
                    };
                    if key == "sibling_map" {
                        assert!(got.is_some(), "{name}: {file:?} sibling_map missing");
                    } else {
                        assert_eq!(got, value.parse::<u64>().ok(), "{name}: {file:?} key {key}");
                    }
                    checked += 1;
                }
            }
        }
    }
    checked
}

#[test]
fn every_capture_value_is_in_the_snapshot() {
    let mut total = 0;
    for name in profile_names() {
        let n = check_profile(name);
        println!("{name}: {n} values checked");
        total += n;
    }
    // The MI308X capture alone has tens of thousands of values.
    assert!(total > 30_000, "only {total} values checked");
}

#[test]
fn capture_facts() {
    let topo = snapshot(&sim("mi308x-8gpu-cpx"));
    assert_eq!(topo.node_count(), 34);
    assert_eq!(topo.gpu_count(), 32);
    assert!(topo.warnings().is_empty(), "{:?}", topo.warnings());
    let gpu = topo.node(2).unwrap();
    assert_eq!(gpu.gfx().unwrap().to_string(), "gfx942");
    assert_eq!(gpu.vram_bytes(), Some(51_539_607_552));

    let topo = snapshot(&sim("mi25-vega10-rocm18"));
    assert_eq!(topo.node(1).unwrap().gfx().unwrap().to_string(), "gfx900");
    assert_eq!(topo.node(1).unwrap().caches().len(), 96);

    let topo = snapshot(&sim("cpu-only-virtual-crat-2021"));
    assert_eq!((topo.node_count(), topo.gpu_count()), (1, 0));
}
