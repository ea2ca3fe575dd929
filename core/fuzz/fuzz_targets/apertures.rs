//! Fuzzes the memory manager's consumption of `GET_PROCESS_APERTURES_NEW`: arbitrary aperture
//! values for 1–8 GPUs (each entry built from its byte image), an arbitrary `num_of_nodes`,
//! settings, and a platform whose address-space reservations land where the input says. The
//! steps are the device's ([`hsakmt_core::memory::aperture`]'s `process` helpers): usable
//! entries, SVM plan, slab or reserved mode, the split of the reservation, the `NoAddress`
//! handle window, and a few allocations in each aperture. Nothing may panic, and every
//! aperture must lie where the plan allows.
#![no_main]

use hsakmt_core::memory::aperture::*;
use hsakmt_core::memory::va::VaSlot;
use hsakmt_core::memory::{Error, PAGE_SIZE};
use hsakmt_core::uapi::kfd_process_device_apertures;
use hsakmt_core_fuzz::Input;
use libfuzzer_sys::fuzz_target;

/// Device ids the VM alignment depends on: an ordinary one and a Tonga.
const DEVICE_IDS: [u32; 2] = [0x740f, 0x6920];

/// Allocates a few buffers (sizes and alignments from the input) and checks each lies in the
/// aperture at its alignment; then releases them.
fn exercise(ap: &mut InlineAperture<64>, input: &mut Input) {
    let mut live = Vec::new();
    for _ in 0..4 {
        let size = input.u64() >> (input.u8() % 64);
        let align = match input.u8() % 4 {
            0 => None,
            n => Some(PAGE_SIZE << (n * 4)),
        };
        match ap.allocate(size, align, None) {
            Ok(a) => {
                assert!(ap.contains(a.addr) && ap.contains(a.addr + (a.size - 1)), "{a:?}");
                assert_eq!(a.addr % align.unwrap_or(PAGE_SIZE), 0, "{a:?}");
                assert!(a.size >= size);
                live.push(a);
            }
            Err(e) => assert!(
                matches!(
                    e,
                    Error::ZeroSize
                        | Error::SizeOverflow
                        | Error::OutOfSpace { .. }
                        | Error::CapacityExhausted { .. }
                ),
                "{e:?}"
            ),
        }
    }
    assert_eq!(ap.check_invariants(), Ok(()));
    for a in live {
        assert_eq!(ap.release_allocation(a), Ok(a.size));
    }
}

fn within(config: &ApertureConfig, base: u64, limit: u64) -> bool {
    base <= config.base && config.base <= config.limit && config.limit <= limit
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let control = input.u8();
    let gpus = usize::from(control & 7) + 1;
    let reserve_svm = control & 8 != 0;
    let max_va_align = (control & 16 != 0).then(|| u32::from(input.u8()));
    let guard_pages = u32::from(input.u8() % 4);
    let num_of_nodes = u32::from(input.u8());
    let flags = input.u8();

    let reply: Vec<kfd_process_device_apertures> = (0..gpus).map(|_| input.uapi()).collect();
    let usable: Vec<GpuApertures> = reported_gpus(&reply, num_of_nodes).collect();
    assert!(usable.len() <= gpus.min(num_of_nodes as usize));
    for (i, g) in usable.iter().enumerate() {
        assert_ne!(g.gpu_id, 0);
        assert!(usable[..i].iter().all(|e| e.gpu_id != g.gpu_id));
        let [lds, scratch, gpuvm] = g.reported(i as u32);
        let _ = (lds.size(), scratch.contains(g.scratch.0), gpuvm.is_valid());
    }
    let svm_gpus = usable
        .iter()
        .enumerate()
        .map(|(i, g)| g.svm_gpu(DEVICE_IDS[usize::from(flags >> i & 1)], flags & 0x80 != 0));

    match SvmPlan::new(svm_gpus, reserve_svm, max_va_align) {
        Err(e) => assert!(matches!(e, Error::OutOfSpace { .. } | Error::SizeOverflow), "{e:?}"),
        Ok(None) => assert!(usable.iter().all(|g| !g.svm_capable())),
        Ok(Some(plan)) => {
            for g in usable.iter().filter(|g| g.svm_capable()) {
                assert!(plan.bounds.base >= g.gpuvm.0 && plan.bounds.limit <= g.gpuvm.1);
            }
            let slots = [VaSlot::EMPTY; 64];
            if let Some((base, limit)) = plan.slab_window() {
                assert!(
                    base < limit && base >= plan.bounds.base && limit <= plan.bounds.limit,
                    "{plan:?}"
                );
                let layout =
                    SvmLayout::slabs(base, limit, plan.align, guard_pages, plan.alignment_order);
                let config = *layout.default_aperture();
                let mut ap = InlineAperture::new(config, slots).expect("slab aperture");
                // The platform's slab: where the input says, 2 MiB aligned, 1 GiB.
                let at = input.u64() & !((2 << 20) - 1);
                if ap.add_slab(at, 1 << 30).is_ok() {
                    assert!(within(&config, base, limit));
                    exercise(&mut ap, &mut input);
                    return;
                }
            }
            // Reserved mode (or the fallback from slab mode).
            let (base, limit) = match plan.reserved_window() {
                Ok(w) => w,
                Err(e) => {
                    assert!(matches!(e, Error::OutOfSpace { .. }), "{e:?}");
                    return;
                }
            };
            assert!(base <= limit && limit <= SVM_RESERVATION_LIMIT);
            for (len, size) in reservation_attempts(base, limit) {
                assert!(len >= SVM_MIN_VM_SIZE && size <= len && size % PAGE_SIZE == 0);
                // The platform: fail, honour the hint, or place the range elsewhere.
                let got = match input.u8() % 4 {
                    0 => continue,
                    1 | 2 => base,
                    _ => input.u64() & !((2 << 20) - 1),
                };
                let Some(kept) = accept_reservation(base, limit, len, got, size) else {
                    continue;
                };
                assert!(kept <= size && kept >= SVM_MIN_VM_SIZE);
                assert!(got >= base && got + (kept - 1) <= limit, "{got:#x}+{kept:#x}");
                let layout = SvmLayout::reserved(got, kept, plan.align, guard_pages)
                    .expect("split of an accepted reservation");
                for config in [layout.coherent_aperture(), layout.default_aperture()] {
                    assert!(within(config, got, got + (kept - 1)));
                    let mut ap = InlineAperture::new(*config, slots).expect("reserved aperture");
                    exercise(&mut ap, &mut input);
                }
                break;
            }
        }
    }

    // The NoAddress handle window, clear of every GPU's apertures.
    let occupied: Vec<(u64, u64)> = usable.iter().flat_map(|g| g.occupied()).collect();
    if let Some((base, limit)) = mem_handle_window(&occupied) {
        assert_eq!(limit - base, MEM_HANDLE_APERTURE_SIZE - 1);
        for &(b, l) in &occupied {
            assert!(b == 0 || b > limit || l < base, "{b:#x}..{l:#x} in {base:#x}..{limit:#x}");
        }
        let config = ApertureConfig::reserved(ApertureKind::MemHandle, base, limit)
            .with_guard_pages(guard_pages);
        let mut ap = InlineAperture::new(config, [VaSlot::EMPTY; 64]).expect("handle window");
        exercise(&mut ap, &mut input);
    }
});
