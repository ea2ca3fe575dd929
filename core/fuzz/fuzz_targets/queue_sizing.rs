//! Fuzzes queue sizing fed with topology values: the input after its first byte is a GPU
//! node's `properties` file, read by the topology; the node's facts, taken as the device takes
//! them ([`QueueNodeFacts::from_properties`]), size the context-save area
//! ([`context_save_sizes`], whose per-XCC headers are then written), the EOP buffer, the
//! doorbell page and the default CU mask. The first byte picks a queue id and the doorbell
//! offset the kernel would return. Nothing may panic, and every size returned must hold
//! together: the total is exactly `(save area + debugger area) × XCCs` and fits 32 bits, the
//! control stack fits the save area, sizes the kernel exported win, the doorbell lies in its
//! page, and the default CU mask passes the CU-mask check.
#![no_main]

use hsakmt_core::error::Errno;
use hsakmt_core::platform::{Host, SharedMemory, Sysfs, SysfsDir, SysfsFile};
use hsakmt_core::queue::params::{
    ContextSaveAreaHeader, KFD_MAX_CU_MASK_BITS, QueueKind, QueueNodeFacts, QueueParamError,
    context_save_sizes, default_cu_mask, doorbell_location, doorbell_page_size, eop_buffer_size,
    validate_cu_mask, write_context_save_headers,
};
use hsakmt_core::topology::Topology;
use hsakmt_core_fuzz::Mem;
use libfuzzer_sys::fuzz_target;

/// Context-save areas up to this size are also written (their headers checked).
const WRITE_LIMIT: u64 = 256 << 10;

/// One GPU node (id 0, gpu_id 1) whose `properties` file is the input.
struct OneGpu<'a>(&'a [u8]);

impl Sysfs for OneGpu<'_> {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        let data = match file {
            SysfsFile::GenerationId | SysfsFile::GpuId(_) => b"1\n",
            SysfsFile::NodeProperties(_) => self.0,
            _ => &b""[..],
        };
        let n = data.len().min(buf.len());
        buf[..n].copy_from_slice(&data[..n]);
        Ok(n)
    }

    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        match dir {
            SysfsDir::Nodes => {
                if let Some(slot) = out.first_mut() {
                    *slot = 0;
                }
                Ok(1)
            }
            SysfsDir::Entries { .. } => Ok(0),
        }
    }
}

/// No environment (no gfx override: the device sizes queues by the real version).
struct NoEnv;

impl Host for NoEnv {
    fn now_ns(&self) -> u64 {
        0
    }
    fn process_id(&self) -> u32 {
        1
    }
    fn env_var(&self, _: &str, _: &mut [u8]) -> Option<usize> {
        None
    }
}

fn check_context_save(facts: &QueueNodeFacts) {
    let sizes = match context_save_sizes(facts) {
        Ok(Some(s)) => s,
        Ok(None) => return,
        Err(
            QueueParamError::Overflow
            | QueueParamError::MissingNodeFact
            | QueueParamError::UnsupportedGfx
            | QueueParamError::InconsistentNodeFacts,
        ) => return,
        Err(e) => panic!("unexpected error {e:?} for {facts:?}"),
    };
    let xcc = facts.num_xcc.max(1);
    assert_eq!(sizes.num_xcc, xcc);
    let per_xcc = u64::from(sizes.ctx_save_restore_size) + u64::from(sizes.debug_memory_size);
    assert_eq!(u64::from(sizes.total_size), per_xcc * u64::from(xcc), "{sizes:?}");
    assert!(sizes.ctl_stack_size <= sizes.ctx_save_restore_size, "{sizes:?}");
    assert!(sizes.debug_memory_size.is_multiple_of(64), "{sizes:?}");
    if facts.cwsr_size > 0 {
        assert_eq!(sizes.ctx_save_restore_size, facts.cwsr_size);
    }
    if facts.ctl_stack_size > 0 {
        assert_eq!(sizes.ctl_stack_size, facts.ctl_stack_size);
    }
    let alloc = sizes.alloc_size();
    assert!(alloc >= u64::from(sizes.total_size) && alloc.is_multiple_of(4096), "{sizes:?}");
    assert!(alloc - u64::from(sizes.total_size) < 4096);

    if alloc <= WRITE_LIMIT {
        let mem = Mem::new(0x10_0000, alloc as usize);
        write_context_save_headers(&mem, 0, &sizes, 7, 0xABC0).expect("area fits its allocation");
        for i in 0..xcc {
            let h = ContextSaveAreaHeader::for_xcc(&sizes, i, 7, 0xABC0);
            let at = i as usize * sizes.ctx_save_restore_size as usize;
            let mut got = [0u8; 40];
            mem.read(at, &mut got).expect("header inside the area");
            assert_eq!(got, h.to_bytes(), "header of XCC {i}");
        }
    }
    // A mapping without room for the area: refused.
    if sizes.total_size > 0 {
        let short = Mem::new(0x10_0000, 0);
        assert_eq!(write_context_save_headers(&short, 0, &sizes, 7, 0xABC0), Err(Errno::EFAULT));
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, properties)) = data.split_first() else { return };
    let mut topo: Topology<4, 4, 8, 16, 8, 16> = Topology::new();
    let mut buf = [0u8; 4096];
    if topo.refresh(&OneGpu(properties), &NoEnv, &mut buf).is_err() {
        return;
    }
    for view in topo.nodes() {
        let node = view.node();
        let Some(gfx) = node.gfx().filter(|_| node.has_gpu()) else { continue };
        let facts = QueueNodeFacts::from_properties(gfx, node.properties());
        check_context_save(&facts);

        for kind in [QueueKind::Compute, QueueKind::ComputeAql, QueueKind::Sdma] {
            let eop = eop_buffer_size(gfx, kind);
            assert!(eop == 0 || (kind.is_compute() && eop.is_power_of_two()), "{kind:?} {eop}");
        }

        let page = doorbell_page_size(gfx);
        assert!(page >= 4096 && page.is_power_of_two());
        let queue_id = u32::from(pick) * 4;
        let offset = u64::from(pick).rotate_right(7) | u64::from(queue_id) * 8;
        let at = doorbell_location(gfx, offset, queue_id);
        assert!(at.offset_in_page < page, "{at:?} in a page of {page}");
        if gfx.major >= 9 {
            // SOC15: the page's mmap offset above the page size, the doorbell's offset below.
            assert_eq!(at.mmap_offset + at.offset_in_page, offset);
            assert!(at.mmap_offset.is_multiple_of(page));
        } else {
            assert_eq!((at.mmap_offset, at.offset_in_page), (offset, u64::from(queue_id) * 4));
        }

        let cu = facts.cu_count();
        let mut mask = [0u32; (KFD_MAX_CU_MASK_BITS / 32) as usize];
        match default_cu_mask(cu, &mut mask) {
            Ok(bits) if cu > 0 && bits <= KFD_MAX_CU_MASK_BITS => {
                assert_eq!(validate_cu_mask(bits, &mask, cu), Ok(()));
            }
            Ok(bits) => assert!(cu == 0 || bits > KFD_MAX_CU_MASK_BITS),
            Err(e) => {
                assert_eq!(e, QueueParamError::BufferTooSmall);
                assert!(cu > KFD_MAX_CU_MASK_BITS);
            }
        }
    }
});
