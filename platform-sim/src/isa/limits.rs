//! Capacities and fixed sizes of the interpreter, in one place.

/// Lanes of a wave (every gfx9 target runs wave64).
pub const LANES: usize = 64;
/// Scalar register file entries addressed by operand code (`s0`-`s101` and the special
/// registers up to `exec_hi` at 127).
pub const SGPR_FILE: usize = 128;
/// Most VGPRs a wave can have (arch VGPRs; gfx90a/gfx942 add as many AGPRs).
pub const MAX_VGPRS: usize = 256;
/// Most AGPRs a wave can have (gfx90a, gfx942).
pub const MAX_AGPRS: usize = 256;
/// Most work-items in a work-group.
pub const MAX_WORKGROUP_ITEMS: u32 = 1024;
/// Most LDS bytes a work-group may have.
pub const MAX_LDS_BYTES: u32 = 64 * 1024;
/// GWS resources (semaphores/barriers) of a device.
pub const GWS_RESOURCES: usize = 64;
/// Work-groups resident at once (round-robin scheduled, so that work-groups polling memory
/// another work-group writes make progress).
pub const MAX_RESIDENT_GROUPS: usize = 32;
/// Instructions a wave runs before the scheduler moves to the next wave.
pub const WAVE_SLICE: u64 = 512;
/// Bytes of code decoded per cache page.
pub const CODE_PAGE: u64 = 4096;
/// Code pages a queue's instruction cache holds before it starts over.
pub const MAX_CODE_PAGES: usize = 64;
/// Bytes of GPU virtual address space one translation of the memory view covers.
pub const TLB_WINDOW: u64 = 4096;
/// Translations the memory view caches.
pub const TLB_ENTRIES: usize = 8;
/// Bytes at which a gfx942 kernel with preloaded kernel arguments starts past its entry (the
/// entry holds `s_trap 2` for firmware that cannot preload).
pub const KERNARG_PRELOAD_SKIP: u64 = 256;
/// Most kernel-argument dwords a gfx942 kernel may preload into SGPRs.
pub const MAX_KERNARG_PRELOAD: u32 = 16;
/// Interrupts (`s_sendmsg MSG_INTERRUPT`) a dispatch may queue between command-processor
/// steps; more are dropped (the interrupt ring overflows).
pub const MAX_PENDING_INTERRUPTS: usize = 256;
/// Wave instructions a queue's dispatch runs per command-processor step.
pub const STEP_INSTRUCTIONS: u64 = 1 << 18;
/// Wave instructions per step while the dispatch makes no observable progress (waves polling
/// memory the host has not written yet), so that spinning costs less.
pub const STALLED_STEP_INSTRUCTIONS: u64 = 1 << 14;
/// Wave instructions `run_until_idle` lets kernels run in one call before it returns with a
/// kernel still running (one that never ends).
pub const IDLE_RUN_INSTRUCTIONS: u64 = 1 << 20;
