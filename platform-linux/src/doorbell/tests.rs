//! The doorbell store: what it writes, and — from the test binary's own machine code — which
//! instructions it compiles to.

use std::path::Path;
use std::process::Command;

use hsakmt_core::platform::SharedMemory;
use hsakmt_hostmem::{HostMapping, map_shared_anywhere};

use crate::LinuxMapping;

fn page() -> LinuxMapping {
    LinuxMapping::from(map_shared_anywhere(4096).unwrap())
}

fn word(m: &HostMapping, offset: usize) -> u64 {
    let mut b = [0u8; 8];
    m.read(offset, &mut b).unwrap();
    u64::from_ne_bytes(b)
}

#[test]
fn stores_the_whole_doorbell_and_nothing_else() {
    let m = page();
    m.host().write(0, &[0xa5; 64]).unwrap();
    m.ring_doorbell64(16, 0x0123_4567_89ab_cdef);
    assert_eq!(word(m.host(), 16), 0x0123_4567_89ab_cdef);
    assert_eq!(word(m.host(), 8), u64::from_ne_bytes([0xa5; 8]));
    assert_eq!(word(m.host(), 24), u64::from_ne_bytes([0xa5; 8]));
    m.ring_doorbell32(36, 0xdead_beef);
    assert_eq!(word(m.host(), 32), u64::from(0xdead_beefu32) << 32 | 0xa5a5_a5a5);
    // The last doorbell of the page.
    m.ring_doorbell64(4088, 7);
    assert_eq!(word(m.host(), 4088), 7);
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "doorbell offset 4096 outside its 4096-byte page")]
fn an_offset_outside_the_page_is_a_caller_bug() {
    page().ring_doorbell64(4096, 1);
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "doorbell offset 12 outside its 4096-byte page")]
fn a_misaligned_offset_is_a_caller_bug() {
    page().ring_doorbell64(12, 1);
}

#[cfg(not(debug_assertions))]
#[test]
fn an_offset_outside_the_page_stores_nothing() {
    let m = page();
    m.ring_doorbell64(4096, 1);
    m.ring_doorbell64(usize::MAX - 3, 1);
    m.ring_doorbell64(12, 1);
    m.ring_doorbell32(4094, 1);
    assert!((0..4096).step_by(8).all(|o| word(m.host(), o) == 0));
}

/// The instructions (Intel syntax, no addresses or bytes) of every function of this test
/// binary whose demangled name is `name`.
fn disassemble(name: &str) -> Vec<Vec<String>> {
    let exe = std::env::current_exe().unwrap();
    let symbols = tool(Command::new("nm").args(["--demangle", "--defined-only", "-S"]).arg(&exe));
    let mut functions = Vec::new();
    for line in symbols.lines() {
        // `address size type name`
        let mut parts = line.splitn(4, ' ');
        let (Some(addr), Some(size), Some(_), Some(sym)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if sym != name {
            continue;
        }
        let start = u64::from_str_radix(addr, 16).unwrap();
        let end = start + u64::from_str_radix(size, 16).unwrap();
        functions.push(instructions(&exe, start, end));
    }
    functions
}

fn instructions(exe: &Path, start: u64, end: u64) -> Vec<String> {
    let text = tool(
        Command::new("objdump")
            .args(["-d", "--no-show-raw-insn", "--no-addresses", "-M", "intel"])
            .arg(format!("--start-address={start:#x}"))
            .arg(format!("--stop-address={end:#x}"))
            .arg(exe),
    );
    // Instruction lines are indented; labels, headers and blank lines are not.
    text.lines()
        .filter(|l| l.starts_with(char::is_whitespace) && !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

fn tool(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e} (binutils is required)"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Checks one compiled doorbell function: `sfence`, then as the first memory write after it
/// one plain `mov` of `width` to memory; no locked instruction, no `xchg`, no `mfence`.
fn check_store(name: &str, width: &str) {
    let functions = disassemble(name);
    assert!(!functions.is_empty(), "{name} not found in the test binary");
    for code in functions {
        let listing = code.join("\n");
        assert!(
            !code.iter().any(|i| i.starts_with("lock") || i.contains("xchg") || i == "mfence"),
            "{name}: a locked or fencing instruction:\n{listing}"
        );
        let fences: Vec<usize> =
            code.iter().enumerate().filter(|(_, i)| *i == "sfence").map(|(n, _)| n).collect();
        assert_eq!(fences.len(), 1, "{name}: one sfence expected:\n{listing}");
        let store = code[fences[0] + 1..]
            .iter()
            .find(|i| {
                i.contains(" PTR [") && i.split_once(',').is_some_and(|(d, _)| d.contains('['))
            })
            .unwrap_or_else(|| panic!("{name}: no store after the sfence:\n{listing}"));
        assert!(
            store.starts_with(&format!("mov {width} PTR [")),
            "{name}: the doorbell store is `{store}`, not a plain {width} mov:\n{listing}"
        );
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn doorbell_stores_compile_to_sfence_and_one_plain_mov() {
    // Keep both functions in the binary as standalone symbols.
    let ring64: fn(&LinuxMapping, usize, u64) = <LinuxMapping as SharedMemory>::ring_doorbell64;
    let ring32: fn(&LinuxMapping, usize, u32) = <LinuxMapping as SharedMemory>::ring_doorbell32;
    let m = page();
    std::hint::black_box(ring64)(&m, 0, 1);
    std::hint::black_box(ring32)(&m, 8, 2);
    check_store(
        "<hsakmt_linux::mapping::LinuxMapping as hsakmt_core::platform::shared_memory::SharedMemory>::ring_doorbell64",
        "QWORD",
    );
    check_store(
        "<hsakmt_linux::mapping::LinuxMapping as hsakmt_core::platform::shared_memory::SharedMemory>::ring_doorbell32",
        "DWORD",
    );
}
