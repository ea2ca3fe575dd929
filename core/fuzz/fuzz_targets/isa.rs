//! Fuzzes the simulator's gfx9 ISA interpreter with arbitrary machine code: the input picks a
//! target and the dispatch registers, the rest is instruction words run by two work-groups
//! of two waves over a small test memory (code, data, scratch, LDS). The interpreter must
//! never panic and must stop within its instruction budget; whatever the words do ends in a
//! finished dispatch, a wave fault naming the instruction, or waves still running when the
//! budget is spent.
//!
//! Built only with `--features sim`: `cargo +nightly fuzz run --features sim isa`.
#![no_main]

use hsakmt_core_fuzz::Input;
use hsakmt_sim::isa::{
    Apertures, CodeCache, Device, Dispatch, Launch, RunState, ScratchBacking, Target, TestMemory,
    WaveMemory, decode,
};
use libfuzzer_sys::fuzz_target;

const CODE: u64 = 0x1_0000;
const DATA: u64 = 0x2_0000;
const SCRATCH: u64 = 0x4_0000;
/// Dwords of code taken from the input.
const MAX_WORDS: usize = 512;
/// Instructions per run, and runs.
const BUDGET: u64 = 4096;
const RUNS: usize = 4;

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let target = [Target::Gfx900, Target::Gfx90a, Target::Gfx942][usize::from(input.u8() % 3)];
    let rsrc1 = input.u32();
    let rsrc2 = input.u32();
    let rsrc3 = input.u32();
    let with_handler = input.u8() & 1 != 0;
    let words: Vec<u32> = input
        .bytes(4 * MAX_WORDS)
        .chunks(4)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect();
    // Every position decodes or is refused.
    for k in 0..words.len() {
        let _ = decode(target, &words[k..]);
    }
    let mut mem = TestMemory::new();
    let mut code = words.clone();
    code.resize(1024, 0xBF81_0000);
    mem.map_words(CODE, &code);
    mem.map(DATA, 64 << 10);
    mem.map(SCRATCH, 64 << 10);
    let mut user_sgprs = [0u32; 32];
    user_sgprs[0] = DATA as u32;
    user_sgprs[4] = SCRATCH as u32;
    let launch = Launch {
        target,
        entry: CODE,
        rsrc1,
        rsrc2,
        rsrc3,
        user_sgprs,
        grid: [256, 1, 1],
        workgroup: [128, 1, 1],
        lds_bytes: 1024,
        scratch: Some(ScratchBacking { base: SCRATCH, wave_bytes: 4096, waves: 16 }),
        apertures: Apertures { shared: 1 << 48, private: 2 << 48 },
    };
    let Ok(mut dispatch) = Dispatch::new(launch) else { return };
    let mut cache = CodeCache::new(target);
    cache.begin();
    let mut dev = Device::default();
    if with_handler {
        dev.trap_handler = Some((CODE + 0x800, DATA));
    }
    for _ in 0..RUNS {
        match dispatch.run(&mut mem, &mut dev, &mut cache, BUDGET) {
            Ok(RunState::Done) | Err(_) => break,
            Ok(_) => {}
        }
    }
    mem.flush();
});
