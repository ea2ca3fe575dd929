//! The topology oracle of `capi-test`: what the C API must report, from `hsakmt info --json`
//! (the sysfs keys verbatim), mapped onto the `HsaNodeProperties` / memory / cache / link fields
//! the way upstream's `topology.c` fills them.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::cargo;

/// `"kind index field"` → value, as the C program prints them.
pub(super) type Fields = BTreeMap<String, u64>;

/// Heaps the library adds to every GPU node's banks: LDS, scratch, SVM and the MMIO page.
const GPU_HEAPS: u64 = 4;

/// `hsakmt info --sim PROFILE --json`, mapped.
pub(super) fn expected(profile: &str) -> Result<Fields, String> {
    let mut cmd = cargo();
    cmd.args(["run", "-q", "-p", "hsakmt-cli", "--", "info", "--sim", profile, "--json"]);
    let out = cmd.output().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let doc: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("`hsakmt info --json` output: {e}"))?;
    map(&doc)
}

fn num(o: &Value, key: &str) -> u64 {
    o.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// The non-empty string at `key`.
fn text<'a>(o: &'a Value, key: &str) -> Option<&'a str> {
    o.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// FNV-1a (64-bit) over the first 63 bytes of `s` (a name field holds 64 code units with its
/// NUL; the names here are ASCII, one code unit per byte): how the C program prints names.
fn fnv1a(s: &str) -> u64 {
    s.bytes()
        .take(63)
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

fn list<'a>(o: &'a Value, key: &str) -> &'a [Value] {
    o.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// `(major, minor, stepping)` of a `gfxNNNN` name: the last two characters are hex digits.
fn gfx(name: &str) -> Option<(u64, u64, u64)> {
    let digits = name.strip_prefix("gfx")?;
    let (major, rest) = digits.split_at(digits.len().checked_sub(2)?);
    let mut rest = rest.chars();
    let minor = rest.next()?.to_digit(16)?;
    let step = rest.next()?.to_digit(16)?;
    Some((major.parse().ok()?, u64::from(minor), u64::from(step)))
}

fn map(doc: &Value) -> Result<Fields, String> {
    let mut f = Fields::new();
    let sys = doc.get("system").ok_or("no `system` in `hsakmt info --json`")?;
    let nodes = list(doc, "nodes");
    let low = |v: u64| v & 0xFFFF_FFFF;
    f.insert("system - NumNodes".into(), nodes.len() as u64);
    f.insert("system - PlatformOem".into(), low(num(sys, "platform_oem")));
    f.insert("system - PlatformId".into(), low(num(sys, "platform_id")));
    f.insert("system - PlatformRev".into(), low(num(sys, "platform_rev")));
    for (i, n) in nodes.iter().enumerate() {
        // Upstream adds the GPU heaps to nodes with a gpu_id, and derives the shader banks and
        // the XCC count on nodes with compute cores.
        let gpu = num(n, "gpu_id") != 0;
        let compute = num(n, "simd_count") != 0;
        let mut put = |field: &str, v: u64| {
            f.insert(format!("node {i} {field}"), v);
        };
        let banks = list(n, "mem_banks");
        let links = list(n, "io_links").len() + list(n, "p2p_links").len();
        put("NumCPUCores", num(n, "cpu_cores_count"));
        put("NumFComputeCores", num(n, "simd_count"));
        put("NumMemoryBanks", banks.len() as u64 + if gpu { GPU_HEAPS } else { 0 });
        put("NumCaches", list(n, "caches").len() as u64);
        put("NumIOLinks", links as u64);
        put("CComputeIdLo", num(n, "cpu_core_id_base"));
        put("FComputeIdLo", num(n, "simd_id_base"));
        put("Capability", num(n, "capability"));
        put("Capability2", num(n, "capability2"));
        put("MaxWavesPerSIMD", num(n, "max_waves_per_simd"));
        put("LDSSizeInKB", num(n, "lds_size_in_kb"));
        put("GDSSizeInKB", num(n, "gds_size_in_kb"));
        put("WaveFrontSize", num(n, "wave_front_size"));
        let arrays = num(n, "simd_arrays_per_engine");
        let banks_of_shaders =
            if compute && arrays != 0 { num(n, "array_count") / arrays } else { 0 };
        put("NumShaderBanks", banks_of_shaders);
        put("NumArrays", arrays);
        put("NumCUPerArray", num(n, "cu_per_simd_array"));
        put("NumSIMDPerCU", num(n, "simd_per_cu"));
        put("MaxSlotsScratchCU", num(n, "max_slots_scratch_cu"));
        put("EngineId.uCode", num(n, "fw_version") & 0x3FF);
        let version = n.get("gfx").and_then(Value::as_str).and_then(gfx).unwrap_or((0, 0, 0));
        put("EngineId.Major", version.0);
        put("EngineId.Minor", version.1);
        put("EngineId.Stepping", version.2);
        put("VendorId", num(n, "vendor_id") & 0xFFFF);
        put("DeviceId", num(n, "device_id") & 0xFFFF);
        put("LocationId", num(n, "location_id"));
        put("LocalMemSize", num(n, "local_mem_size"));
        put("MaxEngineClockMhzFCompute", num(n, "max_engine_clk_fcompute"));
        put("MaxEngineClockMhzCCompute", num(n, "max_engine_clk_ccompute"));
        put("DrmRenderMinor", num(n, "drm_render_minor"));
        put("uCodeEngineVersions.uCodeSDMA", num(n, "sdma_fw_version") & 0x3FF);
        put("DebugProperties", num(n, "debug_prop"));
        put("HiveID", num(n, "hive_id"));
        put("NumSdmaEngines", num(n, "num_sdma_engines"));
        put("NumSdmaXgmiEngines", num(n, "num_sdma_xgmi_engines"));
        put("NumSdmaQueuesPerEngine", num(n, "num_sdma_queues_per_engine"));
        put("NumCpQueues", num(n, "num_cp_queues"));
        put("NumGws", num(n, "num_gws"));
        put("Domain", num(n, "domain"));
        put("UniqueID", num(n, "unique_id"));
        // Upstream: a GPU's AMDName is the gfx IP's name and its MarketingName libdrm's for the
        // device (here the table by device id, else the sysfs name); a CPU node's are its name.
        // A node is a GPU here by its kind (it has SIMDs), gpu_id or not (the MI210 capture
        // has none).
        let (amd, marketing) = if n.get("kind").and_then(Value::as_str) != Some("cpu") {
            let amd = text(n, "amd_name").unwrap_or("");
            let marketing = text(n, "marketing_name").or(text(n, "name")).unwrap_or(amd);
            (amd, marketing)
        } else {
            let name = text(n, "name").unwrap_or("");
            (name, name)
        };
        put("AMDName.fnv1a", fnv1a(amd));
        put("MarketingName.fnv1a", fnv1a(marketing));
        put("NumXcc", if compute { num(n, "num_xcc").max(1) } else { num(n, "num_xcc") });
        put("KFDGpuID", num(n, "gpu_id"));
        for (b, bank) in banks.iter().enumerate() {
            for (field, key) in [
                ("HeapType", "heap_type"),
                ("SizeInBytes", "size_in_bytes"),
                ("Flags", "flags"),
                ("Width", "width"),
                ("MemoryClockMax", "mem_clk_max"),
            ] {
                f.insert(format!("bank {i}.{b} {field}"), num(bank, key));
            }
        }
        for (c, cache) in list(n, "caches").iter().enumerate() {
            for (field, key) in [
                ("ProcessorIdLow", "processor_id_low"),
                ("CacheLevel", "level"),
                ("CacheSize", "size"),
                ("CacheLineSize", "cache_line_size"),
                ("CacheLinesPerTag", "cache_lines_per_tag"),
                ("CacheAssociativity", "association"),
                ("CacheLatency", "latency"),
                ("CacheType", "type"),
            ] {
                f.insert(format!("cache {i}.{c} {field}"), num(cache, key));
            }
        }
        let all_links = list(n, "io_links").iter().chain(list(n, "p2p_links"));
        for (l, link) in all_links.enumerate() {
            f.insert(format!("link {i}.{l} NodeFrom"), i as u64);
            for (field, key) in [
                ("IoLinkType", "type"),
                ("VersionMajor", "version_major"),
                ("VersionMinor", "version_minor"),
                ("NodeTo", "node_to"),
                ("Weight", "weight"),
                ("MinimumLatency", "min_latency"),
                ("MaximumLatency", "max_latency"),
                ("MinimumBandwidth", "min_bandwidth"),
                ("MaximumBandwidth", "max_bandwidth"),
                ("RecTransferSize", "recommended_transfer_size"),
                ("RecSdmaEngIdMask", "recommended_sdma_engine_id_mask"),
                ("Flags", "flags"),
            ] {
                f.insert(format!("link {i}.{l} {field}"), num(link, key));
            }
        }
    }
    Ok(f)
}

/// Compares the topology lines of a test run with `expected`, both ways; returns how many
/// fields were compared.
pub(super) fn compare(what: &str, out: &str, expected: &Fields) -> Result<usize, String> {
    let mut got = Fields::new();
    for line in out.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        if let [kind @ ("system" | "node" | "bank" | "cache" | "link"), id, field, value] =
            words.as_slice()
        {
            let v = value.parse().map_err(|e| format!("{what}: bad line `{line}`: {e}"))?;
            got.insert(format!("{kind} {id} {field}"), v);
        }
    }
    let mut problems = Vec::new();
    for (k, v) in expected {
        match got.get(k) {
            Some(g) if g == v => {}
            Some(g) => problems.push(format!("{k}: the C API reports {g}, `hsakmt info` {v}")),
            None => problems.push(format!("{k}: not reported by the C API")),
        }
    }
    for k in got.keys().filter(|k| !expected.contains_key(*k)) {
        problems.push(format!("{k}: reported by the C API, not by `hsakmt info`"));
    }
    if problems.is_empty() {
        Ok(expected.len())
    } else {
        Err(format!(
            "{what}: {} topology differences:\n  {}",
            problems.len(),
            problems.iter().take(40).cloned().collect::<Vec<_>>().join("\n  ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfx_names() {
        assert_eq!(gfx("gfx942"), Some((9, 4, 2)));
        assert_eq!(gfx("gfx90a"), Some((9, 0, 10)));
        assert_eq!(gfx("gfx1100"), Some((11, 0, 0)));
        assert_eq!(gfx("gfx"), None);
    }
}
