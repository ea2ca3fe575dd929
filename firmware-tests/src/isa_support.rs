//! Helpers for the ISA scenarios: loading the interpreter's test kernels (clang-19 code
//! objects committed under `platform-sim/src/isa/tests/kernels/`) into GPU-visible memory,
//! laying out their kernel arguments, and building PM4 packets.

use std::collections::HashMap;

use hsakmt_core::device::Kfd;
use hsakmt_core::platform::SharedMemory;
use hsakmt_sim::SimPlatform;

use crate::queue_support::{Buf, host_buffer};

/// The test kernels' code object for `gfx` (`"gfx900"`, `"gfx90a"`, `"gfx942"`).
///
/// # Panics
/// For another target.
#[must_use]
pub fn test_kernels(gfx: &str) -> &'static [u8] {
    match gfx {
        "gfx900" => include_bytes!("../../platform-sim/src/isa/tests/kernels/kernels-gfx900.co"),
        "gfx90a" => include_bytes!("../../platform-sim/src/isa/tests/kernels/kernels-gfx90a.co"),
        "gfx942" => include_bytes!("../../platform-sim/src/isa/tests/kernels/kernels-gfx942.co"),
        _ => panic!("no test kernels for {gfx}"),
    }
}

fn le(b: &[u8], at: usize, n: usize) -> u64 {
    let mut x = [0u8; 8];
    x[..n].copy_from_slice(&b[at..at + n]);
    u64::from_le_bytes(x)
}

/// A code object loaded into GPU-visible memory: the buffer and its kernel descriptors by
/// kernel name (the `name.kd` symbols of `.dynsym`).
pub struct Loaded {
    /// The memory holding the image.
    pub image: Buf,
    /// Kernel descriptor addresses by kernel name.
    pub kernels: HashMap<String, u64>,
}

/// Loads the `PT_LOAD` segments of the ELF64 code object `elf` (no relocations: the test
/// kernels have none) into a new host buffer mapped on the GPUs.
///
/// # Panics
/// On a malformed object.
#[must_use]
pub fn load_code_object(kfd: &Kfd<SimPlatform>, elf: &[u8]) -> Loaded {
    let (phoff, phnum) = (le(elf, 0x20, 8) as usize, le(elf, 0x38, 2) as usize);
    let mut image = Vec::new();
    for k in 0..phnum {
        let p = phoff + 56 * k;
        if le(elf, p, 4) != 1 {
            continue;
        }
        let (off, vaddr) = (le(elf, p + 8, 8) as usize, le(elf, p + 16, 8) as usize);
        let (filesz, memsz) = (le(elf, p + 32, 8) as usize, le(elf, p + 40, 8) as usize);
        if image.len() < vaddr + memsz {
            image.resize(vaddr + memsz, 0);
        }
        image[vaddr..vaddr + filesz].copy_from_slice(&elf[off..off + filesz]);
    }
    let buf = host_buffer(kfd, image.len() as u64);
    buf.write(0, &image).expect("image fits");
    let (shoff, shnum) = (le(elf, 0x28, 8) as usize, le(elf, 0x3C, 2) as usize);
    let sh = |k: usize| shoff + 64 * k;
    let mut kernels = HashMap::new();
    for k in (0..shnum).filter(|k| le(elf, sh(*k) + 4, 4) == 11) {
        let (off, size) = (le(elf, sh(k) + 0x18, 8) as usize, le(elf, sh(k) + 0x20, 8) as usize);
        let stroff = le(elf, sh(le(elf, sh(k) + 0x28, 4) as usize) + 0x18, 8) as usize;
        for s in (off..off + size).step_by(24) {
            let at = stroff + le(elf, s, 4) as usize;
            let end = elf[at..].iter().position(|b| *b == 0).unwrap_or(0);
            let name = String::from_utf8_lossy(&elf[at..at + end]).to_string();
            if let Some(kernel) = name.strip_suffix(".kd") {
                kernels.insert(kernel.to_string(), buf.addr() + le(elf, s + 8, 8));
            }
        }
    }
    Loaded { image: buf, kernels }
}

/// Kernel arguments of code object v5: `explicit` (already laid out), then the hidden
/// block counts, group sizes, remainders and grid dimensions for `grid` and `wg`.
#[must_use]
pub fn kernargs_v5(explicit: &[u8], grid: [u32; 3], wg: [u32; 3]) -> Vec<u8> {
    let mut ka = explicit.to_vec();
    ka.resize(ka.len().next_multiple_of(8), 0);
    let h = ka.len();
    ka.resize(h + 256, 0);
    for d in 0..3 {
        ka[h + 4 * d..h + 4 * d + 4].copy_from_slice(&grid[d].div_ceil(wg[d]).to_le_bytes());
        ka[h + 12 + 2 * d..h + 14 + 2 * d].copy_from_slice(&(wg[d] as u16).to_le_bytes());
        ka[h + 18 + 2 * d..h + 20 + 2 * d]
            .copy_from_slice(&((grid[d] % wg[d]) as u16).to_le_bytes());
    }
    let dims: u16 = if grid[2] > 1 {
        3
    } else if grid[1] > 1 {
        2
    } else {
        1
    };
    ka[h + 64..h + 66].copy_from_slice(&dims.to_le_bytes());
    ka
}

/// A PM4 type-3 header for `opcode` with `body` dwords after it.
#[must_use]
pub fn pm4_header(opcode: u32, body: usize) -> u32 {
    3 << 30 | ((body as u32 - 1) & 0x3FFF) << 16 | opcode << 8 | 1 << 1
}

/// `SET_SH_REG` of `values` from register `reg` (a dword address of the SH space).
#[must_use]
pub fn set_sh_reg(reg: u32, values: &[u32]) -> Vec<u32> {
    let mut p = vec![pm4_header(hsakmt_sim::PM4_SET_SH_REG, values.len() + 1), reg - 0x2C00];
    p.extend_from_slice(values);
    p
}

/// The packets kfdtest's `Dispatch` builds for a shader at `code` (256-byte aligned) with
/// `args` in `COMPUTE_USER_DATA_0..`, `dims` work-groups of one work-item each.
#[must_use]
pub fn kfdtest_dispatch(code: u64, args: &[u32], dims: [u32; 3], rsrc3: Option<u32>) -> Vec<u32> {
    let mut p = Vec::new();
    p.extend([pm4_header(hsakmt_sim::PM4_ACQUIRE_MEM, 6), 0x28C0_0000, u32::MAX, 0, 0, 0, 4]);
    p.extend(set_sh_reg(0x2E04, &[0, 0, 0, 1, 1, 1, 0, 0]));
    p.extend(set_sh_reg(0x2E0C, &[(code >> 8) as u32, (code >> 40) as u32, 0, 0, 0, 0]));
    // FLOAT_MODE 0xc0, SGPRS 2, VGPRS 4; USER_SGPR 4, TRAP_PRESENT, TGID_X_EN, TIDIG 1.
    p.extend(set_sh_reg(0x2E12, &[0xC0 << 12 | 2 << 6 | 4, 4 << 1 | 1 << 6 | 1 << 7 | 1 << 11]));
    if let Some(r3) = rsrc3 {
        p.extend(set_sh_reg(0x2E2D, &[r3]));
    }
    p.extend(set_sh_reg(0x2E15, &[0]));
    p.extend(set_sh_reg(0x2E18, &[0]));
    p.extend(set_sh_reg(0x2E1B, &[0, 0, 0, 0]));
    let mut user = [0u32; 16];
    user[..args.len()].copy_from_slice(args);
    p.extend(set_sh_reg(0x2E40, &user));
    p.extend([pm4_header(hsakmt_sim::PM4_DISPATCH_DIRECT, 4), dims[0], dims[1], dims[2], 0x21]);
    p.extend([pm4_header(hsakmt_sim::PM4_EVENT_WRITE, 1), 4 << 8 | 7]);
    p
}

/// `WRITE_DATA` of `value` to `address` (memory, confirmed).
#[must_use]
pub fn write_data(address: u64, value: u32) -> Vec<u32> {
    vec![
        pm4_header(hsakmt_sim::PM4_WRITE_DATA, 4),
        5 << 8 | 1 << 20,
        address as u32,
        (address >> 32) as u32,
        value,
    ]
}
