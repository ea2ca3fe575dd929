//! Dispatches: the initial wave state per target (work-item ids in VGPRs, work-group ids and
//! info in SGPRs), several waves and work-groups, `s_barrier` (also with waves that ended),
//! GWS semaphores across work-groups, launch errors, kernel descriptors of both layouts, the
//! AQL user SGPRs and kernel-argument preloading, and launches from PM4 shader registers.
//! Programs assembled by LLVM (`llvm-mc-19`); their source is in each constant's comment.

use super::super::descriptor::{KernelDescriptor, register_counts};
use super::super::launch::{AqlDispatch, LaunchError, ShRegs, aql_launch, reg, scratch_resource};
use super::super::memory::{TestMemory, WaveMemory};
use super::super::{
    CodeCache, Device, Dispatch, FaultKind, Launch, RunState, ScratchBacking, Target,
};
use super::harness::{APERTURES, CODE, DATA, ENDPGM};

/// IDS_GFX900 (gfx900).
const IDS_GFX900: &[u32] = &[
    0xD1C30004, 0x04011101, 0xD1C30004, 0x04114102, 0x240C0288, 0x240E0490, 0xD2020006, 0x04020F06,
    0x92088203, 0x80080208, 0x9209FF08, 0x00000180, 0x8E0A9808, 0x280C0C0A, 0x240A0882, 0x680A0A09,
    0xDC708000, 0x00000605, 0xBF0D9F05, 0xBF840005, 0x7E0E0205, 0x7E100208, 0x24101082, 0xDC708800,
    0x00000708, 0xBF810000,
];
/// IDS_GFX90A (gfx90a).
const IDS_GFX90A: &[u32] = &[
    0x261400FF, 0x000003FF, 0xD1C8000B, 0x02291500, 0xD1C8000C, 0x02292900, 0xD1C30004, 0x0429110B,
    0xD1C30004, 0x0411410C, 0x240C1688, 0x240E1890, 0xD2020006, 0x042A0F06, 0x92088203, 0x80080208,
    0x9209FF08, 0x00000180, 0x8E0A9808, 0x280C0C0A, 0x240A0882, 0x680A0A09, 0xDC708000, 0x00000605,
    0xBF0D9F05, 0xBF840005, 0x7E0E0205, 0x7E100208, 0x24101082, 0xDC708800, 0x00000708, 0xBF810000,
];
/// IDS_GFX942 (gfx942).
const IDS_GFX942: &[u32] = &[
    0x261400FF, 0x000003FF, 0xD1C8000B, 0x02291500, 0xD1C8000C, 0x02292900, 0xD1C30004, 0x0429110B,
    0xD1C30004, 0x0411410C, 0x240C1688, 0x240E1890, 0xD2020006, 0x042A0F06, 0x92088203, 0x80080208,
    0x9209FF08, 0x00000180, 0x8E0A9808, 0x280C0C0A, 0x240A0882, 0x680A0A09, 0xDC708000, 0x00000605,
    0xBF0D9F05, 0xBF840005, 0x7E0E0205, 0x7E100208, 0x24101082, 0xDC708800, 0x00000708, 0xBF810000,
];
/// BARRIER (the same words on every target).
const BARRIER: &[u32] = &[
    0x260200FF, 0x000003FF, 0x20040286, 0x24060482, 0x68080481, 0xD81A0000, 0x00000403, 0xBF8CC07F,
    0xBF8A0000, 0x7E0A0280, 0xD9FE0000, 0x06000005, 0xBF8CC07F, 0xD1FF000A, 0x04220F06, 0x6814130A,
    0x24160282, 0xDC708000, 0x00000A0B, 0xBF810000,
];
/// EARLY_END (gfx942).
const EARLY_END: &[u32] = &[
    0x260200FF, 0x000003FF, 0x20040286, 0x7E040502, 0xBF098202, 0xBF850004, 0xBF8A0000, 0x24060282,
    0xDC708000, 0x00000203, 0xBF810000,
];
/// GWS_BARRIER (the same words on every target): each work-group (one wave, work-group id
/// in s2) stores 1 at its slot, meets the others at GWS barrier 0 (`v0` = 3: four waves), then
/// stores the sum of the four slots it loads after the barrier.
/// ```text
/// s_mov_b32 m0, 0; s_lshl_b32 s3, s2, 2; v_mov_b32 v1, 1; v_mov_b32 v2, s3
/// global_store_dword v2, v1, s[0:1]; s_waitcnt vmcnt(0)
/// v_mov_b32 v0, 3; ds_gws_barrier v0 offset:0 gds; s_waitcnt lgkmcnt(0)
/// s_load_dwordx4 s[4:7], s[0:1], 0x0; s_waitcnt lgkmcnt(0)
/// s_add_u32 s4, s4, s5; s_add_u32 s4, s4, s6; s_add_u32 s4, s4, s7; v_mov_b32 v1, s4
/// global_store_dword v2, v1, s[0:1] offset:0x100; s_endpgm
/// ```
const GWS_BARRIER: &[u32] = &[
    0xBEFC0080, 0x8E038202, 0x7E020281, 0x7E040203, 0xDC708000, 0x00000102, 0xBF8C0F70, 0x7E000283,
    0xD93B0000, 0x00000000, 0xBF8CC07F, 0xC00A0100, 0x00000000, 0xBF8CC07F, 0x80040504, 0x80040604,
    0x80040704, 0x7E020204, 0xDC708100, 0x00000102, 0xBF810000,
];
/// GWS (gfx90a).
const GWS: &[u32] = &[
    0xBEFC0080, 0xBF068002, 0xBF840007, 0xD9390000, 0x00000000, 0xBE830081, 0xC04300C0, 0x00000000,
    0xBF8CC07F, 0xBF810000, 0xBE830082, 0xC04300C0, 0x00000004, 0xBF8CC07F, 0xD9350000, 0x00000000,
    0xBF810000,
];

fn targets() -> [Target; 3] {
    [Target::Gfx900, Target::Gfx90a, Target::Gfx942]
}

/// Memory with `code` at [`CODE`] and 64 KiB of zeros at [`DATA`].
fn memory(code: &[u32]) -> TestMemory {
    let mut m = TestMemory::new();
    let mut c = code.to_vec();
    c.resize(1024, ENDPGM);
    m.map_words(CODE, &c);
    m.map(DATA, 64 << 10);
    m
}

fn launch(t: Target, rsrc2: u32, user: &[u32], grid: [u32; 3], wg: [u32; 3], lds: u32) -> Launch {
    let mut user_sgprs = [0u32; 32];
    user_sgprs[..user.len()].copy_from_slice(user);
    Launch {
        target: t,
        entry: CODE,
        rsrc1: 3,
        rsrc2,
        rsrc3: 0,
        user_sgprs,
        grid,
        workgroup: wg,
        lds_bytes: lds,
        scratch: None,
        apertures: APERTURES,
    }
}

fn run(
    l: Launch,
    mem: &mut TestMemory,
    dev: &mut Device,
) -> Result<Dispatch, super::super::WaveFault> {
    let t = l.target;
    let mut d = Dispatch::new(l)?;
    let mut code = CodeCache::new(t);
    code.begin();
    for _ in 0..1000 {
        if d.run(mem, dev, &mut code, 1 << 16)? == RunState::Done {
            return Ok(d);
        }
    }
    panic!("the dispatch does not end");
}

fn word(m: &TestMemory, at: u64) -> u32 {
    m.word(at)
}

/// USER_SGPR 2, TGID_X/Y/Z_EN, TG_SIZE_EN, TIDIG_COMP_CNT 2.
const RSRC2_IDS: u32 = 2 << 1 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 10 | 2 << 11;

#[test]
fn initial_wave_state_per_target() {
    for t in targets() {
        let code = match t {
            Target::Gfx900 => IDS_GFX900,
            Target::Gfx90a => IDS_GFX90A,
            Target::Gfx942 => IDS_GFX942,
        };
        let mut mem = memory(code);
        let l = launch(t, RSRC2_IDS, &[DATA as u32, 0], [16, 8, 3], [8, 4, 3], 0);
        let d = run(l, &mut mem, &mut Device::default())
            .unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        assert_eq!((d.stats.groups, d.stats.waves), (4, 8), "{}", t.name());
        for g in 0..4u32 {
            for tid in 0..96u32 {
                let (x, y, z) = (tid % 8, tid / 8 % 4, tid / 32);
                let got = word(&mem, DATA + u64::from(g * 96 + tid) * 4);
                assert_eq!(
                    got,
                    x | y << 8 | z << 16 | g << 24,
                    "{} group {g} item {tid}",
                    t.name()
                );
            }
            // Work-group info of the first wave: first-wave bit, two waves.
            assert_eq!(
                word(&mem, DATA + 0x800 + u64::from(g) * 4),
                0x8000_0002,
                "{} group {g}",
                t.name()
            );
        }
    }
}

#[test]
fn barrier_waits_for_every_wave_of_the_work_group() {
    for t in targets() {
        let mut mem = memory(BARRIER);
        let l = launch(t, 2 << 1, &[DATA as u32, 0], [512, 1, 1], [256, 1, 1], 16);
        run(l, &mut mem, &mut Device::default()).unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        // Both work-groups store at their local ids.
        for i in 0..256 {
            assert_eq!(word(&mem, DATA + 4 * i), 10, "{} item {i}", t.name());
        }
    }
}

#[test]
fn waves_that_ended_do_not_hold_a_barrier() {
    let mut mem = memory(EARLY_END);
    let l = launch(Target::Gfx942, 2 << 1, &[DATA as u32, 0], [256, 1, 1], [256, 1, 1], 0);
    run(l, &mut mem, &mut Device::default()).expect("ends");
    assert_eq!(word(&mem, DATA + 4 * 64), 1, "wave 1 passed the barrier");
    assert_eq!(word(&mem, DATA + 4 * 128), 0, "wave 2 ended before it");
}

#[test]
fn gws_semaphore_orders_work_groups() {
    // Work-group 0 waits on the semaphore (zero), work-group 1 posts it.
    let mut mem = memory(GWS);
    let mut dev = Device::default();
    let l = launch(Target::Gfx90a, 2 << 1 | 1 << 7, &[DATA as u32, 0], [2, 1, 1], [1, 1, 1], 0);
    run(l, &mut mem, &mut dev).expect("ends");
    assert_eq!((word(&mem, DATA), word(&mem, DATA + 4)), (1, 2));
    assert_eq!(dev.gws[0], 0, "posted once, taken once");
}

#[test]
fn gws_barrier_holds_every_work_group_until_all_arrived() {
    for t in targets() {
        let mut mem = memory(GWS_BARRIER);
        let mut dev = Device::default();
        let l = launch(t, 2 << 1 | 1 << 7, &[DATA as u32, 0], [4, 1, 1], [1, 1, 1], 0);
        run(l, &mut mem, &mut dev).unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        // Every work-group saw all four stores made before the barrier.
        for g in 0..4 {
            assert_eq!(word(&mem, DATA + 0x100 + 4 * g), 4, "{} group {g}", t.name());
        }
        assert_eq!((dev.gws_arrived[0], dev.gws_rounds[0]), (0, 1), "{}", t.name());
    }
    // Three of the four waves: the barrier never opens, the dispatch stalls.
    let mut mem = memory(GWS_BARRIER);
    let mut dev = Device::default();
    let l = launch(Target::Gfx942, 2 << 1 | 1 << 7, &[DATA as u32, 0], [3, 1, 1], [1, 1, 1], 0);
    let mut d = Dispatch::new(l).expect("launch");
    let mut code = CodeCache::new(Target::Gfx942);
    code.begin();
    assert_eq!(d.run(&mut mem, &mut dev, &mut code, 1000), Ok(RunState::Running));
    assert_eq!(d.run(&mut mem, &mut dev, &mut code, 1000), Ok(RunState::Stalled));
    assert_eq!((dev.gws_arrived[0], word(&mem, DATA + 0x100)), (3, 0));
}

#[test]
fn a_semaphore_nobody_posts_stalls_the_dispatch() {
    let mut mem = memory(GWS);
    let mut dev = Device::default();
    let l = launch(Target::Gfx90a, 2 << 1 | 1 << 7, &[DATA as u32, 0], [1, 1, 1], [1, 1, 1], 0);
    let mut d = Dispatch::new(l).expect("launch");
    let mut code = CodeCache::new(Target::Gfx90a);
    code.begin();
    assert_eq!(d.run(&mut mem, &mut dev, &mut code, 1000), Ok(RunState::Stalled));
    assert_eq!(d.run(&mut mem, &mut dev, &mut code, 1000), Ok(RunState::Stalled));
    // Another queue's wave posts it.
    dev.gws[0] = 1;
    assert_eq!(d.run(&mut mem, &mut dev, &mut code, 1000), Ok(RunState::Done));
    assert_eq!(word(&mem, DATA), 1);
}

#[test]
fn a_restarted_dispatch_reuses_its_storage_and_allocates_nothing() {
    // What a queue does: one Dispatch restarted for every packet. After the first dispatch
    // grew the storage (two work-groups of four waves, LDS, decoded code), the next ones
    // allocate nothing, and their results are right.
    for t in targets() {
        let mut mem = memory(BARRIER);
        let mut dev = Device::default();
        let mut code = CodeCache::new(t);
        let l = launch(t, 2 << 1, &[DATA as u32, 0], [512, 1, 1], [256, 1, 1], 16);
        let mut d = Dispatch::new(l.clone()).expect("launch");
        for round in 0..4 {
            for i in 0..256 {
                mem.store_u32(DATA + 4 * i, 0).expect("data");
            }
            let before = hsakmt_hostmem::thread_allocations();
            if round > 0 {
                d.restart(l.clone()).expect("restart");
            }
            code.begin();
            while d.run(&mut mem, &mut dev, &mut code, 1 << 16).expect("runs") != RunState::Done {}
            let allocations = hsakmt_hostmem::thread_allocations() - before;
            assert_eq!((d.stats.groups, d.stats.waves), (2, 8), "{} round {round}", t.name());
            for i in 0..256 {
                assert_eq!(word(&mem, DATA + 4 * i), 10, "{} round {round} item {i}", t.name());
            }
            if round > 0 {
                assert_eq!(allocations, 0, "{} round {round}", t.name());
            }
        }
        // A smaller launch in the same storage, then a failing one: the dispatch is empty.
        d.restart(launch(t, 2 << 1, &[DATA as u32, 0], [256, 1, 1], [256, 1, 1], 16)).unwrap();
        while d.run(&mut mem, &mut dev, &mut code, 1 << 16).expect("runs") != RunState::Done {}
        assert_eq!((d.stats.groups, d.stats.waves), (1, 4));
        let bad = launch(t, 0, &[], [0, 1, 1], [1, 1, 1], 0);
        assert!(matches!(d.restart(bad).expect_err("empty grid").kind, FaultKind::Launch(_)));
        assert!(d.is_done());
    }
}

#[test]
fn launch_errors() {
    let t = Target::Gfx942;
    let bad = |grid, wg| Dispatch::new(launch(t, 0, &[], grid, wg, 0)).expect_err("refused");
    assert!(matches!(bad([0, 1, 1], [1, 1, 1]).kind, FaultKind::Launch(_)));
    assert!(matches!(bad([64, 1, 1], [1025, 1, 1]).kind, FaultKind::Launch(_)));
    assert!(matches!(bad([64, 1, 1], [0, 1, 1]).kind, FaultKind::Launch(_)));
    let mut l = launch(t, 1, &[], [256, 1, 1], [256, 1, 1], 0);
    l.scratch = Some(ScratchBacking { base: DATA, wave_bytes: 1024, waves: 2 });
    let f = Dispatch::new(l).expect_err("four waves, two scratch slots");
    assert!(f.to_string().contains("scratch"), "{f}");
}

#[test]
fn memory_violations_stop_the_dispatch_with_the_address() {
    // global_store_dword v0, v0, s[0:1] with s[0:1] pointing nowhere.
    let mut mem = memory(&[0xDC70_8000, 0x0000_0000]);
    let l = launch(Target::Gfx90a, 2 << 1, &[0x900_0000, 0], [64, 1, 1], [64, 1, 1], 0);
    let f = run(l, &mut mem, &mut Device::default()).expect_err("fault");
    let m = f.memory_fault().expect("a memory violation");
    assert_eq!((m.address, m.write, f.pc), (0x900_0000, true, CODE));
}

/// A v3 kernel descriptor: `rsrc1`, `rsrc2`, `rsrc3`, properties, entry 0x100 past it.
fn kd_bytes(rsrc1: u32, rsrc2: u32, rsrc3: u32, props: u16, preload: u16) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[0..4].copy_from_slice(&64u32.to_le_bytes());
    b[4..8].copy_from_slice(&16u32.to_le_bytes());
    b[8..12].copy_from_slice(&24u32.to_le_bytes());
    b[16..24].copy_from_slice(&0x100i64.to_le_bytes());
    b[44..48].copy_from_slice(&rsrc3.to_le_bytes());
    b[48..52].copy_from_slice(&rsrc1.to_le_bytes());
    b[52..56].copy_from_slice(&rsrc2.to_le_bytes());
    b[56..58].copy_from_slice(&props.to_le_bytes());
    b[58..60].copy_from_slice(&preload.to_le_bytes());
    b
}

#[test]
fn kernel_descriptors_of_both_layouts() {
    let kd = KernelDescriptor::parse(&kd_bytes(0x00AF_0041, 0x92, 0x0001_0003, 0x7F, 0x0083));
    assert!(!kd.legacy);
    assert_eq!(
        (kd.group_segment_fixed_size, kd.private_segment_fixed_size, kd.entry_offset),
        (64, 16, 0x100)
    );
    assert_eq!(
        (kd.rsrc1, kd.rsrc2, kd.rsrc3, kd.properties),
        (0x00AF_0041, 0x92, 0x0001_0003, 0x7F)
    );
    assert_eq!((kd.kernarg_preload_length, kd.kernarg_preload_offset), (3, 1));
    assert_eq!(kd.user_sgprs(), 15);
    // amd_kernel_code_t: version 1.1, machine kind 1, gfx9; grid work-group counts x and z.
    let mut b = [0u8; 64];
    b[0..4].copy_from_slice(&1u32.to_le_bytes());
    b[4..8].copy_from_slice(&1u32.to_le_bytes());
    b[8..10].copy_from_slice(&1u16.to_le_bytes());
    b[10..12].copy_from_slice(&9u16.to_le_bytes());
    b[16..24].copy_from_slice(&256i64.to_le_bytes());
    b[48..52].copy_from_slice(&0x2C0_0000u32.to_le_bytes());
    b[52..56].copy_from_slice(&0x90u32.to_le_bytes());
    b[56..60].copy_from_slice(&(1u32 << 3 | 1 << 7 | 1 << 9 | 1 << 16).to_le_bytes());
    let kd = KernelDescriptor::parse(&b);
    assert!(kd.legacy);
    assert_eq!((kd.entry_offset, kd.rsrc3, kd.kernarg_preload_length), (256, 0, 0));
    assert_eq!(kd.user_sgprs(), 4, "kernarg pointer and two work-group counts");
    // VGPR granules: 4 on gfx900, 8 (covering AGPRs) on gfx90a/gfx942.
    assert_eq!(register_counts(Target::Gfx900, 7, 0), (32, 0));
    assert_eq!(register_counts(Target::Gfx90a, 7, 7), (32, 32));
    assert_eq!(register_counts(Target::Gfx942, 7, 15), (64, 0));
}

/// `global_store_dwordx4 v0, v[10:13], s[20:21]`-style dump of user SGPRs: stores s0..s15
/// at s[20:21]. Built per test (v_mov of each SGPR then stores).
fn dump_user_sgprs(at_sgpr: u16) -> Vec<u32> {
    let mut w = Vec::new();
    // v_mov_b32 v(k+1), s(k) for k in 0..16
    for k in 0..16u32 {
        w.push(0x7E00_0200 | (k + 1) << 17 | k);
    }
    // v_mov_b32 v0, 0
    w.push(0x7E00_0280);
    // global_store_dwordx4 v0, v[1+4j : 4+4j], s[at:at+1] offset:16j
    for j in 0..4u32 {
        w.push(0xDC7C_8000 | (16 * j));
        w.push(u32::from(at_sgpr) << 16 | ((1 + 4 * j) << 8));
    }
    w.push(ENDPGM);
    w
}

#[test]
fn aql_user_sgprs_in_order() {
    for t in targets() {
        const KD: u64 = CODE + 0x1000;
        let mut mem = TestMemory::new();
        // SCRATCH_EN, USER_SGPR 15, TGID_X_EN: s15 = work-group id; every user SGPR enable.
        let rsrc2 = 1 | 15 << 1 | 1 << 7;
        mem.map_bytes(KD, &kd_bytes(3, rsrc2, 0, 0x7F, 0));
        let mut code = dump_user_sgprs(16);
        // The program needs an address in s[16:17]: prepend s_mov_b32 s16, DATA; s_mov_b32 s17, 0.
        code.splice(0..0, [0xBE90_00FF, DATA as u32, 0xBE91_0080]);
        let mut image = code.clone();
        image.resize(64, ENDPGM);
        mem.map_words(KD + 0x100, &image);
        mem.map(DATA, 4096);
        // amd_queue_t with a scratch backing.
        let queue = DATA + 0x800;
        mem.write(queue + 160, &0x7000_0000u64.to_le_bytes()).expect("mapped");
        mem.write(queue + 168, &(1u64 << 20).to_le_bytes()).expect("mapped");
        mem.write(queue + 176, &256u32.to_le_bytes()).expect("mapped");
        let d = AqlDispatch {
            kernel_object: KD,
            kernarg_address: 0x5555_0000_1000,
            grid: [64, 1, 1],
            workgroup: [64, 1, 1],
            group_segment_size: 0,
            private_segment_size: 48,
            packet_address: 0x6666_0000_0040,
            dispatch_id: 0x1_0000_0002,
            queue_address: queue,
        };
        let l = aql_launch(&mut mem, t, &d, APERTURES).expect("launch");
        assert_eq!(l.entry, KD + 0x100);
        run(l, &mut mem, &mut Device::default()).unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let s: Vec<u32> = (0..16).map(|k| word(&mem, DATA + 4 * k)).collect();
        let srd = scratch_resource(0x7000_0000);
        assert_eq!(&s[0..4], &srd, "{} private segment buffer", t.name());
        assert_eq!(&s[4..6], &[0x0040, 0x6666], "{} dispatch packet", t.name());
        assert_eq!(&s[6..8], &[queue as u32, 0], "{} queue", t.name());
        assert_eq!(&s[8..10], &[0x1000, 0x5555], "{} kernarg", t.name());
        assert_eq!(&s[10..12], &[2, 1], "{} dispatch id", t.name());
        assert_eq!(&s[12..14], &[0x7000_0000, 0], "{} flat scratch init", t.name());
        assert_eq!(s[14], 48, "{} private segment size", t.name());
        assert_eq!(s[15], 0, "{} work-group id x", t.name());
    }
}

#[test]
fn preloaded_kernel_arguments_on_gfx942() {
    const KD: u64 = CODE + 0x1000;
    let mut mem = TestMemory::new();
    // kernarg pointer (s[0:1]) then 3 preloaded dwords (s2..s4) from dword 1 of the kernargs.
    mem.map_bytes(KD, &kd_bytes(3, 5 << 1, 0, 1 << 3, 3 | 1 << 7));
    // At the entry: s_trap 2 (firmware without preloading stops there); 256 bytes on: the dump.
    let mut image = vec![0xBF92_0002];
    image.resize(64, 0xBF80_0000);
    let mut dump = vec![0xBE90_00FF, DATA as u32, 0xBE91_0080];
    dump.extend(dump_user_sgprs(16));
    image.extend(dump);
    mem.map_words(KD + 0x100, &image);
    mem.map(DATA, 4096);
    mem.map_words(0x5000, &[10, 11, 12, 13, 14]);
    let d = AqlDispatch {
        kernel_object: KD,
        kernarg_address: 0x5000,
        grid: [1, 1, 1],
        workgroup: [1, 1, 1],
        group_segment_size: 0,
        private_segment_size: 0,
        packet_address: 0,
        dispatch_id: 0,
        queue_address: 0,
    };
    let l = aql_launch(&mut mem, Target::Gfx942, &d, APERTURES).expect("launch");
    assert_eq!(l.entry, KD + 0x100 + 256);
    run(l, &mut mem, &mut Device::default()).expect("runs");
    let s: Vec<u32> = (0..5).map(|k| word(&mem, DATA + 4 * k)).collect();
    assert_eq!(s, vec![0x5000, 0, 11, 12, 13]);
    // gfx900 and gfx90a firmware does not preload: refused by name (the packet processor's
    // register-invalid queue error), never run from the `s_trap 2` at the entry.
    for t in [Target::Gfx900, Target::Gfx90a] {
        let e = aql_launch(&mut mem, t, &d, APERTURES).expect_err("refused");
        assert_eq!(e, LaunchError::Registers("kernel-argument preloading not supported here"));
        assert!(e.to_string().contains("kernel-argument preloading"), "{e}");
    }
}

#[test]
fn an_unreadable_or_wave32_descriptor_is_refused() {
    let mut mem = TestMemory::new();
    let mut d = AqlDispatch {
        kernel_object: 0x9000,
        kernarg_address: 0,
        grid: [1, 1, 1],
        workgroup: [1, 1, 1],
        group_segment_size: 0,
        private_segment_size: 0,
        packet_address: 0,
        dispatch_id: 0,
        queue_address: 0,
    };
    assert!(aql_launch(&mut mem, Target::Gfx942, &d, APERTURES).is_err());
    mem.map_bytes(0xA000, &kd_bytes(0, 0, 0, 1 << 10, 0));
    d.kernel_object = 0xA000;
    let e = aql_launch(&mut mem, Target::Gfx942, &d, APERTURES).expect_err("wave32");
    assert!(e.to_string().contains("wave32"), "{e}");
}

#[test]
fn pm4_shader_registers_make_the_launch() {
    let mut sh = ShRegs::default();
    let at = |r: u32| r - super::super::launch::SH_REG_START;
    sh.set(at(reg::COMPUTE_NUM_THREAD_X), [64, 2, 1]);
    sh.set(
        at(reg::COMPUTE_PGM_LO),
        [(0x12_3456_7800u64 >> 8) as u32, (0x12_3456_7800u64 >> 40) as u32],
    );
    sh.set(at(reg::COMPUTE_DISPATCH_SCRATCH_BASE_LO), [0x7000_0000 >> 8, 0]);
    sh.set(at(reg::COMPUTE_PGM_RSRC1), [0x2C0_0041, 1 | 4 << 1 | 1 << 7 | 2 << 15]);
    sh.set(at(reg::COMPUTE_TMPRING_SIZE), [1 << 12 | 4]);
    sh.set(at(reg::COMPUTE_USER_DATA_0), [1, 2, 3, 4]);
    let l = sh.launch(Target::Gfx900, [3, 1, 1], 1, APERTURES).expect("launch");
    assert_eq!(l.entry, 0x12_3456_7800);
    assert_eq!((l.grid, l.workgroup), ([192, 2, 1], [64, 2, 1]), "groups when not in threads");
    assert_eq!((l.rsrc1, l.lds_bytes), (0x2C0_0041, 1024));
    assert_eq!(&l.user_sgprs[..5], &[1, 2, 3, 4, 0]);
    assert_eq!(l.scratch, Some(ScratchBacking { base: 0x7000_0000, wave_bytes: 1024, waves: 4 }));
    let l = sh.launch(Target::Gfx900, [100, 2, 1], 1 | 1 << 5, APERTURES).expect("launch");
    assert_eq!(l.grid, [100, 2, 1], "USE_THREAD_DIMENSIONS");
    sh.set(at(reg::COMPUTE_NUM_THREAD_X), [0]);
    assert!(sh.launch(Target::Gfx900, [1, 1, 1], 1, APERTURES).is_err());
}

#[test]
fn scratch_slots_give_each_resident_wave_its_own_private_memory() {
    // gfx942 architected flat scratch: scratch_store_dword off, v1, off (lane id); every wave
    // of two work-groups holds its own slot.
    for t in [Target::Gfx942] {
        // v_mbcnt_lo_u32_b32 v1, -1, 0; scratch_store_dword off, v1, off; s_endpgm
        let mut mem = memory(&[0xD28C_0001, 0x0001_00C1, 0xDC70_4000, 0x007F_0100]);
        mem.map(0x7000_0000, 4 * 1024);
        let mut l = launch(t, 1, &[], [256, 1, 1], [128, 1, 1], 0);
        l.scratch = Some(ScratchBacking { base: 0x7000_0000, wave_bytes: 1024, waves: 4 });
        run(l, &mut mem, &mut Device::default()).expect("runs");
        for slot in 0..4u64 {
            for lane in [0u64, 31, 32, 63] {
                let want = if lane < 32 { lane } else { 32 };
                assert_eq!(
                    word(&mem, 0x7000_0000 + slot * 1024 + lane * 4),
                    want as u32,
                    "slot {slot} lane {lane}"
                );
            }
        }
    }
}
