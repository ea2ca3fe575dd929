//! The code objects built into `hsakmt` (see `build.rs`): the control step and the blit
//! kernels for every processor the project builds them for, unpacked on first use.

use std::sync::OnceLock;

use hsakmt_kernels::KernelSet;
use hsakmt_sim::archive::{self, Record};

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));

/// The unpacked archive.
fn unpacked() -> &'static [u8] {
    static RAW: OnceLock<Vec<u8>> = OnceLock::new();
    // build.rs wrote the archive; a failure here is a build defect, not input.
    RAW.get_or_init(|| match archive::unpack(PACKED, RAW_LEN) {
        Some(raw) => raw,
        None => unreachable!("the embedded code objects are corrupt"),
    })
}

/// The code object of `set` for `processor` (`gfx942`), if `hsakmt` carries one.
pub(crate) fn find(set: KernelSet, processor: &str) -> Option<&'static [u8]> {
    let path = format!("{}/{processor}.co", set.name());
    archive::records(unpacked()).map_while(|r| r).find_map(|r| match r {
        Record::File(p, bytes) if p == path => Some(bytes),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_processor_has_its_control_and_blit_objects() {
        for p in hsakmt_kernels::PROCESSORS {
            for set in [KernelSet::Control, KernelSet::Blit] {
                let embedded = find(set, p).unwrap();
                assert_eq!(embedded, hsakmt_kernels::find(set, p).unwrap().bytes, "{p}");
            }
        }
        assert_eq!(find(KernelSet::Test, "gfx942"), None);
        assert_eq!(find(KernelSet::Control, "gfx906"), None);
    }
}
