//! `cargo xtask fuzz --write-seeds`: (re)writes the committed seed inputs of the fuzz targets
//! (`core/fuzz/seeds/<target>/`), a few valid inputs each in the format the target parses —
//! topology trees from the simulator's captured profiles, realistic aperture replies, event
//! data, dma-buf replies, packets built with core's encoders, and committed code objects with
//! their metadata documents. Files named `finding-*` (the
//! inputs of fixed fuzzing findings, kept as regression seeds) are left alone.

use std::path::Path;

use hsakmt_core::queue::aql::{
    AgentDispatch, AqlPacket, Barrier, HeaderFlags, KernelDispatch, PACKET_SIZE, PacketWords,
    Pm4IndirectBuffer,
};
use hsakmt_core::queue::sdma::{
    GcrRequest, LinearRect, PollFunc, RectSurface, RegisterPoll, SdmaLimits, SdmaPacket,
};
use hsakmt_core::uapi::*;

use crate::workspace_root;

/// Named seed files.
type Seeds = Vec<(String, Vec<u8>)>;

/// A seed under construction.
#[derive(Default)]
struct Seed(Vec<u8>);

impl Seed {
    fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    fn uapi<T: UapiType>(self, v: &T) -> Self {
        let mut image = vec![0u8; T::SIZE];
        v.write_to(&mut image);
        self.bytes(&image)
    }
}

pub(crate) fn write_seeds(root: &Path) -> Result<(), String> {
    let sets: [(&str, Seeds); 12] = [
        ("topology", topology()?),
        ("apertures", apertures()),
        ("event_data", event_data()),
        ("dmabuf_info", dmabuf_info()),
        ("aql", aql()?),
        ("sdma", sdma()?),
        ("smi", smi()),
        ("queue_sizing", queue_sizing()?),
        ("code_object", code_object()?),
        ("cp_pm4", cp_pm4()),
        ("kernel_replies", kernel_replies()),
        ("isa", isa()),
    ];
    for (target, seeds) in sets {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        // Generated seeds are replaced; the inputs of past findings (`finding-*`) stay.
        for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let keep =
                path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("finding-"));
            if !keep {
                std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        for (name, bytes) in &seeds {
            let path = dir.join(name);
            std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let total: usize = seeds.iter().map(|(_, b)| b.len()).sum();
        println!("{target}: {} seeds, {total} bytes", seeds.len());
    }
    Ok(())
}

/// The `smi` target's input: reads of an SMI stream, as amdkfd prints its events
/// (`kfd_smi_events.c`), with old kernels' shorter lines and a line of an unknown event.
fn smi() -> Seeds {
    let reads: [(&str, &[u8]); 5] = [
        ("vm-fault", b"1 4d2:rocminfo\n"),
        ("reset", b"3 1 HWS hang\n4 1 HWS hang\n3 2\n4 2\n"),
        (
            "migrations",
            b"5 1234567 -4242 @7f0000(200) 0->b00c b00c:0 0\n\
              6 1299999 -4242 @7f0000(200) 0->b00c 0 0\n\
              6 1300000 -4242 @7f0000(200) b00c->0 3\n",
        ),
        (
            "faults-queues",
            b"7 5 -1 @abc(b00c) W\n8 6 -1 @abc(b00c) M\n9 7 -1 b00c 3\n\
              a 8 -1 b00c \0\na 9 -1 b00c R\nb 9 -1 @1000(10) b00c 2\n",
        ),
        ("process-unknown", b"c 4d2 python3\nd 4d2 python3\n2 ff:10\n1f future event\n"),
    ];
    reads.iter().map(|(n, b)| ((*n).to_string(), b.to_vec())).collect()
}

/// The `topology` target's input: a flags byte, then the files of a two-node tree separated by
/// NUL bytes (generation id, system properties, gpu_id, name, even node's properties, odd
/// node's properties, mem_bank / p2p-link, cache and io-link properties).
fn topology() -> Result<Seeds, String> {
    let profiles = workspace_root().join("platform-sim/profiles");
    let mut entries: Vec<_> = std::fs::read_dir(&profiles)
        .map_err(|e| format!("{}: {e}", profiles.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    let mut seeds = Vec::new();
    for profile in entries {
        let topo = profile.join("topology");
        let nodes = topo.join("nodes");
        if !nodes.is_dir() {
            continue;
        }
        let read = |p: &Path| std::fs::read(p).unwrap_or_default();
        // The CPU node 0 and the first GPU node (non-zero simd_count).
        let gpu = (1..64).map(|n| nodes.join(n.to_string())).find(|n| {
            String::from_utf8_lossy(&read(&n.join("properties")))
                .lines()
                .any(|l| l.starts_with("simd_count ") && !l.ends_with(" 0"))
        });
        let Some(gpu) = gpu else { continue };
        let entry = |kind: &str| read(&gpu.join(kind).join("0/properties"));
        let files = [
            read(&topo.join("generation_id")),
            read(&topo.join("system_properties")),
            read(&gpu.join("gpu_id")),
            read(&gpu.join("name")),
            read(&nodes.join("0/properties")),
            read(&gpu.join("properties")),
            entry("mem_banks"),
            entry("caches"),
            entry("io_links"),
        ];
        // Two nodes; one mem bank, one cache and one io link each.
        let mut seed = vec![0x55u8];
        for (i, f) in files.iter().enumerate() {
            if i > 0 {
                seed.push(0);
            }
            seed.extend(f.iter().filter(|&&b| b != 0));
        }
        let name = profile.file_name().map_or("profile".into(), |n| n.to_string_lossy().into());
        seeds.push((name, seed));
    }
    if seeds.is_empty() {
        return Err(format!("no topology captures under {}", profiles.display()));
    }
    Ok(seeds)
}

/// The `queue_sizing` target's input: a byte picking the queue id and doorbell offset, then a
/// GPU node's `properties` file: each captured profile's first GPU, and that node retargeted to
/// the other sizing formulas (gfx10.3 with its control-stack cap, gfx11, gfx12.5 sized by
/// `max_waves_per_simd`, an APU before gfx9, and kernel-exported `cwsr_size` / `ctl_stack_size`).
fn queue_sizing() -> Result<Seeds, String> {
    let profiles = workspace_root().join("platform-sim/profiles");
    let mut entries: Vec<_> = std::fs::read_dir(&profiles)
        .map_err(|e| format!("{}: {e}", profiles.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    let mut seeds = Vec::new();
    let mut first = None;
    for profile in entries {
        let nodes = profile.join("topology/nodes");
        let gpu = (1..64)
            .map(|n| std::fs::read_to_string(nodes.join(n.to_string()).join("properties")))
            .filter_map(Result::ok)
            .find(|p| p.lines().any(|l| l.starts_with("simd_count ") && !l.ends_with(" 0")));
        let Some(gpu) = gpu else { continue };
        let name = profile.file_name().map_or("profile".into(), |n| n.to_string_lossy().into());
        seeds.push((name, [&[0x11u8][..], gpu.as_bytes()].concat()));
        first.get_or_insert(gpu);
    }
    let Some(base) = first else {
        return Err(format!("no GPU node under {}", profiles.display()));
    };
    // The captured node with some keys replaced (or added).
    let variant = |pick: u8, set: &[(&str, u64)]| {
        let mut text: String = base
            .lines()
            .filter(|l| !set.iter().any(|(k, _)| l.split(' ').next() == Some(*k)))
            .map(|l| format!("{l}\n"))
            .collect();
        for (k, v) in set {
            text.push_str(&format!("{k} {v}\n"));
        }
        [&[pick][..], text.as_bytes()].concat()
    };
    let gfx = "gfx_target_version";
    for (name, pick, set) in [
        ("gfx1030", 0x22, &[(gfx, 100_300), ("simd_arrays_per_engine", 2)][..]),
        ("gfx1100", 0x33, &[(gfx, 110_000)][..]),
        ("gfx1250", 0x44, &[(gfx, 120_500), ("max_waves_per_simd", 16)][..]),
        ("gfx801-apu", 0x55, &[(gfx, 80_001), ("cpu_cores_count", 4)][..]),
        ("kernel-sizes", 0x66, &[("cwsr_size", 0x12_3000), ("ctl_stack_size", 0x5000)][..]),
        // A garbled tree: values that overflowed the sizing before it was checked.
        ("garbled-lds", 0x77, &[("lds_size_in_kb", u64::from(u32::MAX))][..]),
        ("garbled-waves", 0x88, &[(gfx, 120_500), ("max_waves_per_simd", u64::from(u32::MAX))][..]),
        ("garbled-xcc", 0x99, &[("num_xcc", u64::from(u32::MAX))][..]),
    ] {
        seeds.push((name.to_string(), variant(pick, set)));
    }
    Ok(seeds)
}

/// A `kfd_process_device_apertures` as amdkfd reports it on gfx9+ (`kfd_init_apertures_v9`:
/// LDS at 2^48, scratch at 2^49, 4 GiB each), with GPUVM `[base, limit]`.
fn aperture(gpu_id: u32, gpuvm_base: u64, gpuvm_limit: u64) -> kfd_process_device_apertures {
    kfd_process_device_apertures {
        lds_base: 1 << 48,
        lds_limit: (1 << 48) + 0xFFFF_FFFF,
        scratch_base: 2 << 48,
        scratch_limit: (2 << 48) + 0xFFFF_FFFF,
        gpuvm_base,
        gpuvm_limit,
        gpu_id,
        pad: 0,
    }
}

/// An old APU's apertures (`kfd_init_apertures_vi` with the IOMMU: everything in the
/// non-canonical range, GPUVM at `(2 + id) << 61`).
fn apu_aperture(gpu_id: u32, id: u64) -> kfd_process_device_apertures {
    let gpuvm = (2 + id) << 61;
    kfd_process_device_apertures {
        lds_base: (1 << 61) + (id << 48),
        lds_limit: (1 << 61) + (id << 48) + 0xFFFF_FFFF,
        scratch_base: (1 << 61) + (id << 48) + (1 << 47),
        scratch_limit: (1 << 61) + (id << 48) + (1 << 47) + 0xFFFF_FFFF,
        gpuvm_base: gpuvm,
        gpuvm_limit: gpuvm + (1 << 40) - 1,
        gpu_id,
        pad: 0,
    }
}

/// Allocation requests for the `apertures` target's exercise: `(size, shift, align selector)`.
fn allocations(seed: Seed) -> Seed {
    [(2 << 20, 0, 0), (4096, 0, 1), (3 << 20, 0, 2), (64 << 10, 0, 0)]
        .iter()
        .fold(seed, |s, &(size, shift, align)| s.u64(size).u8(shift).u8(align))
}

/// The `apertures` target's input: control (GPUs − 1, `HSA_RESERVE_SVM` bit 3,
/// `HSA_MAX_VA_ALIGN` present bit 4), [max VA align], guard pages, `num_of_nodes`, device
/// flags (bit i: GPU i is a Tonga; bit 7: all gfx950), the replies, then the platform's
/// answers and allocation requests.
fn apertures() -> Seeds {
    let canonical = (1u64 << 47) - 1;
    let one = |control: u8, flags: u8, gpus: &[kfd_process_device_apertures]| {
        let s = Seed::default().u8(control).u8(1).u8(gpus.len() as u8).u8(flags);
        gpus.iter().fold(s, |s, a| s.uapi(a))
    };
    // 47-bit dGPU (MI210): slab mode; the platform's slab at 0x7f00_0000_0000.
    let mi210 = allocations(one(0, 0, &[aperture(0x3e2b, 0x1_0000, canonical)]).u64(0x7f00 << 32));
    // Eight of them (the simulator's GPUVM base).
    let eight: Vec<_> = (0..8).map(|i| aperture(0x1000 + i, 4 * 4096, canonical)).collect();
    let eight = allocations(one(7, 0, &eight).u64(0x7e00 << 32));
    // HSA_RESERVE_SVM: reserved mode; the platform honours the hint.
    let reserved = one(8, 0, &[aperture(0x3e2b, 0x1_0000, canonical)]).u8(1);
    let reserved = allocations(allocations(allocations(reserved)));
    // A 40-bit Tonga (gfx8): reserved mode at 32 KiB alignment.
    let tonga = one(0, 1, &[aperture(0x52, 0x1_0000, (1 << 40) - 1)]).u8(1);
    let tonga = allocations(allocations(allocations(tonga)));
    // An old APU with non-canonical GPUVM next to a dGPU; HSA_MAX_VA_ALIGN=12.
    let apu = Seed::default().u8(1 | 16).u8(12).u8(0).u8(2).u8(0);
    let apu = apu
        .uapi(&apu_aperture(0x11, 0))
        .uapi(&aperture(0x22, 0x1_0000, canonical))
        .u64(0x7f00 << 32);
    let apu = allocations(apu);
    // All gfx950, two GPUs.
    let gfx950 =
        one(1, 0x80, &[aperture(7, 0x1_0000, canonical), aperture(9, 0x1_0000, canonical)]);
    let gfx950 = allocations(gfx950.u64(0x7f00 << 32));
    [
        ("mi210-slab", mi210),
        ("sim-8gpu-slab", eight),
        ("reserve-svm", reserved),
        ("gfx8-tonga-40bit", tonga),
        ("apu-noncanonical", apu),
        ("gfx950-pair", gfx950),
    ]
    .into_iter()
    .map(|(n, s)| (n.to_string(), s.0))
    .collect()
}

fn event(data: kfd_event_data_union) -> kfd_event_data {
    kfd_event_data { data, event_id: 1, ..Default::default() }
}

/// The `event_data` target's input: control (wait-all bit 0, timed out bit 1, ages bit 2,
/// events − 1 in bits 3..6), per event a type byte (index into `EventType::ALL`, bit 7: an age
/// follows), then the kernel's `kfd_event_data` entries.
fn event_data() -> Seeds {
    const SIGNAL: u8 = 0;
    const HW: u8 = 3;
    const MEMORY: u8 = 8;
    let fault = event(
        kfd_hsa_memory_exception_data {
            failure: kfd_memory_exception_failure {
                NotPresent: 1,
                ReadOnly: 0,
                NoExecute: 0,
                imprecise: 0,
            },
            va: 0x7f12_3456_7000,
            gpu_id: 0x3e2b,
            ErrorType: KFD_MEM_ERR_NO_RAS,
        }
        .into(),
    );
    let ecc = event(
        kfd_hsa_memory_exception_data {
            failure: kfd_memory_exception_failure {
                NotPresent: 0,
                ReadOnly: 1,
                NoExecute: 1,
                imprecise: 1,
            },
            va: 0,
            gpu_id: 0x3e2c,
            ErrorType: KFD_MEM_ERR_SRAM_ECC,
        }
        .into(),
    );
    let reset = event(
        kfd_hsa_hw_exception_data {
            reset_type: KFD_HW_EXCEPTION_WHOLE_GPU_RESET,
            reset_cause: KFD_HW_EXCEPTION_ECC,
            memory_lost: 1,
            gpu_id: 0x3e2b,
        }
        .into(),
    );
    let aged = event(kfd_hsa_signal_event_data { last_event_age: 7 }.into());
    let none = kfd_event_data::default();
    let seeds = [
        ("memory-fault", Seed::default().u8(0).u8(MEMORY).uapi(&fault)),
        ("hw-exception", Seed::default().u8(0).u8(HW).uapi(&reset)),
        ("signal-age", Seed::default().u8(4).u8(SIGNAL | 0x80).u64(5).uapi(&aged)),
        (
            "any-of-three",
            Seed::default()
                .u8(2 << 3)
                .u8(SIGNAL)
                .u8(MEMORY)
                .u8(HW)
                .uapi(&none)
                .uapi(&ecc)
                .uapi(&none),
        ),
        ("all-of-two", Seed::default().u8(1 | 1 << 3).u8(MEMORY).u8(HW).uapi(&fault).uapi(&reset)),
        ("timed-out", Seed::default().u8(2 | 1 << 3).u8(SIGNAL).u8(MEMORY).uapi(&none).uapi(&none)),
    ];
    seeds.into_iter().map(|(n, s)| (n.to_string(), s.0)).collect()
}

/// The `dmabuf_info` target's input: control (guard pages), then operations: a byte (bit 0:
/// import into the handle window instead of the SVM aperture; `0xC0` and up: release an
/// import) followed, for imports, by a `kfd_ioctl_get_dmabuf_info_args` reply.
fn dmabuf_info() -> Seeds {
    let reply =
        |size: u64, gpu_id: u32, flags: u32, metadata_size: u32| kfd_ioctl_get_dmabuf_info_args {
            size,
            metadata_ptr: 0x7f00_0000_1000,
            metadata_size,
            gpu_id,
            flags,
            dmabuf_fd: 7,
        };
    let vram = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    let gtt = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT;
    let seeds = [
        ("vram-to-svm", Seed::default().u8(1).u8(0).uapi(&reply(2 << 20, 0x1002, vram, 0))),
        ("gtt-to-handles", Seed::default().u8(1).u8(1).uapi(&reply(64 << 10, 0x2fa3, gtt, 64))),
        ("unknown-gpu", Seed::default().u8(0).u8(0).uapi(&reply(4096, 0x9999, vram, 0))),
        (
            "import-release-import",
            Seed::default()
                .u8(1)
                .u8(0)
                .uapi(&reply(1 << 30, 0xbeef, vram | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC, 32))
                .u8(1)
                .uapi(&reply(5000, 0x1002, KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT, 200))
                .u8(0xC0)
                .u8(0)
                .uapi(&reply(3 << 20, 0x2fa3, vram, 0)),
        ),
    ];
    seeds.into_iter().map(|(n, s)| (n.to_string(), s.0)).collect()
}

fn slot(p: &AqlPacket) -> Result<[u8; PACKET_SIZE], String> {
    p.to_words().map(|w| w.to_bytes()).map_err(|e| format!("seed packet {p:?}: {e}"))
}

/// The `aql` target's input: control (ring of `1 << (c & 3)` slots), the start read index,
/// then the slots' 64 bytes each (more decode-only slots may follow).
fn aql() -> Result<Seeds, String> {
    let dispatch = AqlPacket::KernelDispatch(KernelDispatch {
        dimensions: 3,
        workgroup_size: [64, 2, 1],
        grid_size: [4096, 16, 1],
        private_segment_size: 256,
        group_segment_size: 1024,
        kernarg_address: 0x7f00_0000_0100,
        completion_signal: 0x7f00_0000_2000,
        ..KernelDispatch::linear(0x7f00_0010_0000, 1, 1)
    });
    let and = AqlPacket::BarrierAnd(Barrier {
        flags: HeaderFlags { barrier: true, ..HeaderFlags::SYSTEM },
        dep_signals: [0x7f00_0000_2000, 0x7f00_0000_2040, 0, 0, 0],
        completion_signal: 0,
    });
    let or = AqlPacket::BarrierOr(Barrier {
        dep_signals: [0x7f00_0000_3000, 0, 0, 0, 0],
        ..Barrier::NOP
    });
    let ib = AqlPacket::Pm4IndirectBuffer(Pm4IndirectBuffer {
        flags: HeaderFlags::SYSTEM,
        ib_address: 0x7f00_0020_0000,
        ib_size_dwords: 16,
        completion_signal: 0x7f00_0000_2080,
    });
    let agent = AqlPacket::AgentDispatch(AgentDispatch {
        flags: HeaderFlags::SYSTEM,
        function: 3,
        return_address: 0x7f00_0000_4000,
        args: [1, 2, 3, 4],
        completion_signal: 0,
    });
    let invalid = PacketWords::INVALID.to_bytes();
    let four = Seed::default().u8(2).u64(0).bytes(&slot(&dispatch)?).bytes(&slot(&and)?);
    let four = four.bytes(&slot(&ib)?).bytes(&invalid);
    let wrap = Seed::default().u8(1).u64(u64::MAX).bytes(&slot(&agent)?).bytes(&slot(&or)?);
    let single = Seed::default().u8(0).u64(41).bytes(&slot(&dispatch)?).bytes(&slot(&ib)?);
    Ok([("ring-of-four", four), ("index-wraps", wrap), ("one-slot-plus-decode", single)]
        .into_iter()
        .map(|(n, s)| (n.to_string(), s.0))
        .collect())
}

/// The `sdma` target's input: control (30-bit counts bit 0, ring of `64 << ((c >> 1) & 7)`
/// bytes, write-pointer mode in bits 4..6), a dword count and the dwords to decode, the ring's
/// dwords, the read pointer and the write pointer's distance. Three packet mixes: this crate's
/// producers' packets, ROCr's blit packets (atomic decrement, HDP flush, timestamp, GCR) with a
/// kfdtest `WRITE`, and the two larger copies (broadcast, rect).
fn sdma() -> Result<Seeds, String> {
    let l = SdmaLimits::COUNT22;
    let at = 0x7f00_0000_2000;
    let producer = [
        SdmaPacket::CopyLinear { src: 0x7f00_0000_0000, dst: 0x7f00_0010_0000, bytes: 4096 },
        SdmaPacket::ConstantFill { dst: 0x7f00_0020_0000, data: 0xDEAD_BEEF, bytes: 256 },
        SdmaPacket::Fence { addr: at, data: 1, mtype: 3 },
        SdmaPacket::Trap { int_ctx: 17 },
        SdmaPacket::PollRegMem {
            addr: at,
            reference: 0,
            mask: u32::MAX,
            func: PollFunc::Equal,
            interval: 10,
            retry_count: 0xFFF,
        },
        SdmaPacket::Nop { dwords: 3 },
    ];
    let blit = [
        SdmaPacket::PollRegister(RegisterPoll {
            hdp_flush: false,
            func: PollFunc::Always,
            registers: [0, 0x8000_0000],
            reference: 0,
            mask: 0,
            interval: 0,
            retry_count: 0,
        }),
        SdmaPacket::Timestamp { addr: at + 32 },
        SdmaPacket::AtomicAdd64 { addr: at + 8, value: u64::MAX },
        SdmaPacket::Write { dst: at + 64, dwords: 1 },
        SdmaPacket::Gcr(GcrRequest {
            base_va: 0,
            limit_va: 0,
            control: 0xC3C0,
            range_is_pa: false,
            seq: 0,
            vmid: 0,
        }),
    ];
    let surface = |addr| RectSurface { addr, offset: [1, 2, 0], pitch: 64, slice_pitch: 1024 };
    let copies = [
        SdmaPacket::CopyLinearBroadcast {
            src: 0x7f00_0000_0000,
            dst: [0x7f00_0010_0000, 0x7f00_0020_0000],
            bytes: 4096,
        },
        SdmaPacket::CopyLinearRect(LinearRect {
            element_log2: 2,
            src: surface(0x7f00_0000_0000),
            dst: surface(0x7f00_0010_0000),
            extent: [8, 4, 1],
        }),
    ];
    let encode = |packets: &[SdmaPacket]| -> Result<Vec<u32>, String> {
        let mut dwords = Vec::new();
        for p in packets {
            let mut out = vec![0u32; p.dwords() as usize];
            let n = p.encode(l, &mut out).map_err(|e| format!("seed packet {p:?}: {e}"))?;
            dwords.extend_from_slice(&out[..n]);
        }
        Ok(dwords)
    };
    let mut seeds = Seeds::new();
    for (name, packets) in [("", &producer[..]), ("blit-", &blit[..]), ("copies-", &copies[..])] {
        let dwords = encode(packets)?;
        let stream = |s: Seed| dwords.iter().fold(s.u8(dwords.len() as u8), |s, &d| s.u32(d));
        // A 256-byte ring holding the packets from `rptr`, write pointer just past them.
        let ring = |s: Seed, rptr: u64| {
            let mut ring = vec![0u32; 64];
            for (i, d) in dwords.iter().enumerate() {
                ring[(rptr as usize / 4 + i) % 64] = *d;
            }
            ring.iter().fold(s, |s, &d| s.u32(d)).u64(rptr).u8(dwords.len() as u8)
        };
        let plain = ring(stream(Seed::default().u8(2 << 1)), 0);
        let wrapping = ring(stream(Seed::default().u8(2 << 1)), 200);
        let count30 = ring(stream(Seed::default().u8(1 | 2 << 1)), 64);
        for (n, s) in [("ring", plain), ("ring-wraps", wrapping), ("count30", count30)] {
            seeds.push((format!("{name}{n}"), s.0));
        }
    }
    Ok(seeds)
}

/// Where the `cp_pm4` target maps its host buffer.
const CP_BUFFER: u64 = 0x7e00_0000_0000;

/// The `cp_pm4` target's input: PM4 dwords for a compute queue; the host buffer the target
/// maps lives at [`CP_BUFFER`].
fn cp_pm4() -> Seeds {
    const NOP: u32 = 0x10;
    const WRITE_DATA: u32 = 0x37;
    const WAIT_REG_MEM: u32 = 0x3C;
    const INDIRECT_BUFFER: u32 = 0x3F;
    const RELEASE_MEM: u32 = 0x49;
    let header = |op: u32, len: u32| (3 << 30) | ((len - 2) << 16) | (op << 8);
    let lo = |a: u64| a as u32;
    let hi = |a: u64| (a >> 32) as u32;
    let write = |addr: u64, values: &[u32]| {
        let mut v =
            vec![header(WRITE_DATA, 4 + values.len() as u32), 5 << 8 | 1 << 20, lo(addr), hi(addr)];
        v.extend_from_slice(values);
        v
    };
    let ib_at = CP_BUFFER + 0x1000;
    let mut with_ib = write(ib_at, &[header(NOP, 2), 0, header(NOP, 3), 0, 0]);
    with_ib.extend([header(INDIRECT_BUFFER, 4), lo(ib_at), hi(ib_at), 5 | 1 << 23]);
    let release = vec![
        header(RELEASE_MEM, 8),
        0,
        2 << 29 | 2 << 24,
        lo(CP_BUFFER + 8),
        hi(CP_BUFFER + 8),
        7,
        1,
        21,
    ];
    // Memory poll, equal: buffer[0] & mask == 0 (met) and == 1 (holds the queue).
    let wait = |reference: u32| {
        vec![
            header(WAIT_REG_MEM, 7),
            1 << 4 | 3,
            lo(CP_BUFFER),
            hi(CP_BUFFER),
            reference,
            u32::MAX,
            4,
        ]
    };
    let mut all = write(CP_BUFFER + 16, &[1, 2, 3]);
    all.extend(wait(0));
    all.extend(&release);
    all.push(2 << 30); // type-2 filler
    all.extend(&with_ib);
    let seeds = [
        ("write-data", write(CP_BUFFER, &[0xDEAD_BEEF, 7])),
        ("indirect-buffer", with_ib),
        ("release-mem", release),
        ("wait-met", wait(0)),
        ("wait-holds", wait(1)),
        ("mixed", all),
    ];
    seeds
        .into_iter()
        .map(|(n, v)| (n.to_string(), v.iter().flat_map(|d| d.to_le_bytes()).collect()))
        .collect()
}

/// The `kernel_replies` target's input interleaves operations (even bytes: operation, then its
/// argument) with the kernel's replies (odd bytes). A zero reply byte is an honest answer, so
/// these seeds run every operation against an honest kernel, then against kernels whose replies
/// are noise of increasing density.
fn kernel_replies() -> Seeds {
    // (operation, argument): allocations of every kind, maps, queues, events, waits, clocks,
    // wave state, SVM attributes, available memory, dma-buf import and export, then releases.
    const SCRIPT: [(u8, u8); 27] = [
        (0, 0x00),
        (0, 0x13),
        (0, 0x20),
        (0, 0xA0),
        (1, 0),
        (1, 1),
        (4, 0),
        (4, 1),
        (6, 0),
        (6, 1),
        (6, 2),
        (7, 0),
        (8, 0),
        (8, 3),
        (10, 0),
        (11, 0),
        (12, 0),
        (13, 0),
        (14, 0),
        (14, 1),
        (15, 0),
        (15, 1),
        (2, 0),
        (9, 0),
        (5, 0),
        (3, 0),
        (3, 1),
    ];
    // Replies: zero (honest), or every `every`th byte from a fixed xorshift sequence.
    let interleave = |every: usize| {
        let mut x: u32 = 0x9E37_79B9;
        let mut out = Vec::new();
        for (i, &(op, arg)) in SCRIPT.iter().enumerate() {
            for (j, b) in [op, arg].into_iter().enumerate() {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let lie = if every > 0 && (2 * i + j) % every == 0 { x as u8 } else { 0 };
                out.extend([b, lie]);
            }
        }
        out
    };
    vec![
        ("honest".to_string(), interleave(0)),
        ("lies-sparse".to_string(), interleave(7)),
        ("lies-dense".to_string(), interleave(2)),
        ("lies-everywhere".to_string(), interleave(1)),
    ]
}

/// The `code_object` target's input: whole code objects (one per kernel set, code object
/// version and ISA family) and bare metadata documents (the `NT_AMDGPU_METADATA` note
/// descriptors), which the target also parses on their own.
fn code_object() -> Result<Seeds, String> {
    let paths = [
        "control/gfx900.co",
        "control/gfx900-v4.co",
        "control/gfx9-generic-v6.co",
        "control/gfx942-sramecc-on-xnack-off-v6.co",
        "blit/gfx942.co",
        "blit/gfx1201.co",
        "test/gfx900.co",
        "test/gfx1100.co",
    ];
    let mut seeds = Vec::new();
    for path in paths {
        let o = hsakmt_kernels::all()
            .iter()
            .find(|o| o.path == path)
            .ok_or(format!("no committed code object {path}"))?;
        let name = path.trim_end_matches(".co").replace('/', "-");
        seeds.push((name.clone(), o.bytes.to_vec()));
        // The note record: namesz, descsz, type, "AMDGPU\0" padded to 8, the descriptor.
        let at = o
            .bytes
            .windows(8)
            .position(|w| w == b"AMDGPU\0\0")
            .ok_or(format!("{path}: no AMDGPU note"))?;
        let word = |i: usize| {
            o.bytes.get(i..i + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
        };
        let descsz = word(at - 8).ok_or(format!("{path}: note header"))? as usize;
        let desc =
            o.bytes.get(at + 8..at + 8 + descsz).ok_or(format!("{path}: note descriptor"))?;
        seeds.push((format!("{name}-metadata"), desc.to_vec()));
    }
    Ok(seeds)
}

/// The `isa` target's input: target (0 gfx900, 1 gfx90a, 2 gfx942), `COMPUTE_PGM_RSRC1/2/3`,
/// whether a trap handler is installed, then instruction words (programs of the interpreter's
/// dispatch tests, assembled by `llvm-mc-19`).
fn isa() -> Seeds {
    // Work-item ids and work-group ids/info into memory (gfx90a).
    const IDS: &[u32] = &[
        0x261400FF, 0x000003FF, 0xD1C8000B, 0x02291500, 0xD1C8000C, 0x02292900, 0xD1C30004,
        0x0429110B, 0xD1C30004, 0x0411410C, 0x240C1688, 0x240E1890, 0xD2020006, 0x042A0F06,
        0x92088203, 0x80080208, 0x9209FF08, 0x00000180, 0x8E0A9808, 0x280C0C0A, 0x240A0882,
        0x680A0A09, 0xDC708000, 0x00000605, 0xBF0D9F05, 0xBF840005, 0x7E0E0205, 0x7E100208,
        0x24101082, 0xDC708800, 0x00000708, 0xBF810000,
    ];
    // LDS writes, s_barrier, LDS reads, global store.
    const BARRIER: &[u32] = &[
        0x260200FF, 0x000003FF, 0x20040286, 0x24060482, 0x68080481, 0xD81A0000, 0x00000403,
        0xBF8CC07F, 0xBF8A0000, 0x7E0A0280, 0xD9FE0000, 0x06000005, 0xBF8CC07F, 0xD1FF000A,
        0x04220F06, 0x6814130A, 0x24160282, 0xDC708000, 0x00000A0B, 0xBF810000,
    ];
    // GWS semaphore wait/post between work-groups.
    const GWS: &[u32] = &[
        0xBEFC0080, 0xBF068002, 0xBF840007, 0xD9390000, 0x00000000, 0xBE830081, 0xC04300C0,
        0x00000000, 0xBF8CC07F, 0xBF810000, 0xBE830082, 0xC04300C0, 0x00000004, 0xBF8CC07F,
        0xD9350000, 0x00000000, 0xBF810000,
    ];
    // v_mbcnt_lo_u32_b32 v1, -1, 0; scratch_store_dword off, v1, off; s_trap 2; s_endpgm.
    const SCRATCH: &[u32] =
        &[0xD28C_0001, 0x0001_00C1, 0xDC70_4000, 0x007F_0100, 0xBF92_0002, 0xBF81_0000];
    let seed = |target: u8, rsrc: [u32; 3], handler: bool, words: &[u32]| {
        let s =
            Seed::default().u8(target).u32(rsrc[0]).u32(rsrc[1]).u32(rsrc[2]).u8(u8::from(handler));
        words.iter().fold(s, |s, &w| s.u32(w)).0
    };
    let ids = 2 << 1 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 10 | 2 << 11;
    vec![
        ("ids-gfx90a".to_string(), seed(1, [3, ids, 0], false, IDS)),
        ("barrier-gfx900".to_string(), seed(0, [3, 2 << 1, 0], false, BARRIER)),
        ("gws-gfx90a".to_string(), seed(1, [3, 2 << 1 | 1 << 7, 0], false, GWS)),
        ("scratch-trap-gfx942".to_string(), seed(2, [3, 1, 0], true, SCRATCH)),
    ]
}
