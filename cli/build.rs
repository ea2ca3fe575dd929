//! Embeds the code objects `hsakmt run` dispatches — the control step and the blit kernels of
//! every processor the project builds for (`hsakmt-kernels`) — as one DEFLATE-compressed
//! archive (the simulator's archive format, `platform-sim/src/archive.rs`): 57 KB of objects
//! cost the binary about 7 KB.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::{env, fs};

use hsakmt_kernels::{KernelSet, PROCESSORS, find};

#[path = "../platform-sim/src/archive.rs"]
#[expect(unreachable_pub, reason = "the simulator's public archive module, included")]
mod archive;

fn main() {
    let mut raw = Vec::new();
    for set in [KernelSet::Control, KernelSet::Blit] {
        for p in PROCESSORS {
            let object = find(set, p).expect("every set is built for every processor");
            archive::write_record(&mut raw, object.path, Some(object.bytes));
        }
    }
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let blob = out_dir.join("kernels.deflate");
    fs::write(&blob, archive::pack(&raw)).expect("OUT_DIR is writable");
    let mut out = String::new();
    writeln!(out, "/// The packed archive of code objects.").unwrap();
    writeln!(out, "const PACKED: &[u8] = include_bytes!({:?});", blob.display().to_string())
        .unwrap();
    writeln!(out, "/// Its unpacked length.").unwrap();
    writeln!(out, "const RAW_LEN: usize = {};", raw.len()).unwrap();
    fs::write(out_dir.join("kernels.rs"), out).expect("OUT_DIR is writable");
    println!("cargo::rerun-if-changed=build.rs");
}
