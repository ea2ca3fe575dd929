//! The parameters of the tidy rules and every exception to them, each with its reason: the one
//! place to read or change what `cargo xtask tidy` allows.
//!
//! An exception that no longer matches anything (a file renamed, a constant removed) is itself
//! a failure, so this list cannot rot.

/// Longest non-test source file, in lines (inline `#[cfg(test)]` modules not counted).
pub(crate) const MAX_LINES: usize = 1000;

/// Files allowed more than [`MAX_LINES`] lines.
pub(crate) const LONG_FILES: &[(&str, &str)] = &[(
    "core/src/uapi/ioctl.rs",
    "the transcription of the kernel's kfd_ioctl.h, kept whole and in the header's order so \
     that it reads against the header (and `cargo xtask uapi-check` proves it equal)",
)];

/// The platform-side crates: hsakmt-core names none of them (in its manifest or its code).
pub(crate) const PLATFORM_CRATES: &[&str] =
    &["hsakmt-linux", "hsakmt-sim", "hsakmt-hostmem", "hsakmt-capi"];

/// Crates that must not depend on (or name) other crates: (crate, forbidden, why).
pub(crate) const FORBIDDEN_DEPENDENCIES: &[(&str, &[&str], &str)] = &[
    ("hsakmt-core", PLATFORM_CRATES, "core names no platform crate"),
    ("hsakmt-linux", &["hsakmt-sim"], "the platforms do not depend on each other"),
    ("hsakmt-sim", &["hsakmt-linux"], "the platforms do not depend on each other"),
    (
        "hsakmt-hostmem",
        &["hsakmt-linux", "hsakmt-sim", "hsakmt-capi"],
        "the host-memory crate sits below both platforms",
    ),
];

/// The lower modules of hsakmt-core: pure bookkeeping, formats and traits, below the facade.
pub(crate) const LOWER_CORE_MODULES: &[&str] = &[
    "uapi",
    "topology",
    "memory",
    "queue",
    "event",
    "code_object",
    "slot_table",
    "config",
    "error",
    "platform",
];

/// The upper modules of hsakmt-core, which no lower module imports: the facade and the driver
/// layer.
pub(crate) const UPPER_CORE_MODULES: &[&str] = &["device", "driver"];

/// The crates where `unsafe` may live (each use with its `// SAFETY:` comment); every other
/// crate's roots carry `#![forbid(unsafe_code)]`.
pub(crate) const UNSAFE_CRATES: &[&str] = &["hsakmt-linux", "hsakmt-hostmem", "hsakmt-capi"];

/// Files outside [`UNSAFE_CRATES`] allowed `unsafe` (each use still needs its `// SAFETY:`).
pub(crate) const UNSAFE_FILES: &[(&str, &str)] = &[(
    "firmware-tests/tests/fork.rs",
    "the fork tests fork the test process: libc's fork, waitpid and _exit have no safe \
     wrapper (rustix offers none), and the test binary is not one of the library crates",
)];

/// The configuration module of hsakmt-core: the one place capacities are declared.
pub(crate) const CONFIG_MODULE: &str = "core/src/config.rs";

/// Directories of hsakmt-core whose constants are all facts, never capacities: the
/// transcription of the kernel's uapi headers.
pub(crate) const FACT_MODULES: &[&str] = &["core/src/uapi/"];

/// Constants of hsakmt-core outside [`CONFIG_MODULE`] whose names read like capacities but that
/// are facts of the kernel, the hardware or a format (they stay with what they describe, as
/// `config.rs` says), or tuning values that bound no table: (file, name, why).
pub(crate) const CAPACITY_EXCEPTIONS: &[(&str, &str, &str)] = &[
    (
        "core/src/device/debug_manager/deprecated.rs",
        "MAX_WATCH_POINTS",
        "libhsakmt's MAX_ALLOWED_NUM_POINTS: past it hsaKmtDbgAddressWatch is INVALID_PARAMETER",
    ),
    (
        "core/src/driver/agent.rs",
        "MAX_QUEUE_PACKETS",
        "ROCr's largest AQL queue (64-byte packets in a 32-bit byte size)",
    ),
    (
        "core/src/queue/params.rs",
        "MAX_COMPUTE_RING_SIZE",
        "the largest compute ring CP_HQD_PQ_CONTROL.QUEUE_SIZE encodes",
    ),
    (
        "core/src/queue/sdma/packet.rs",
        "MAX_PACKET_DWORDS",
        "the longest fixed part of an SDMA packet of the format (COPY_LINEAR_RECT)",
    ),
    (
        "core/src/queue/sdma/packet.rs",
        "MAX_WRITE_DWORDS",
        "the SDMA WRITE packet's 20-bit count field",
    ),
    (
        "core/src/topology/gfx.rs",
        "MAX_MAJOR",
        "the largest gfx major version: six bits in ROCr's ISA names (HSA_OVERRIDE_GFX_VERSION)",
    ),
    ("core/src/queue/sdma.rs", "MAX_NOP_DWORDS", "the SDMA NOP packet's count field"),
    (
        "core/src/queue/amd_queue.rs",
        "MAX_CU_ID_OFFSET",
        "not a capacity: the byte offset of amd_queue_t's max_cu_id field",
    ),
    (
        "core/src/queue/amd_queue.rs",
        "MAX_WAVE_ID_OFFSET",
        "not a capacity: the byte offset of amd_queue_t's max_wave_id field",
    ),
    (
        "core/src/queue/scratch.rs",
        "MAX_PRIVATE_SEGMENT_SIZE",
        "ROCr's largest private segment per work-item (the runtime's limit, not this library's)",
    ),
    (
        "core/src/queue/scratch.rs",
        "MAX_SCRATCH_PER_XCC",
        "the most scratch one XCC addresses: the scratch V#'s 32-bit NUM_RECORDS",
    ),
    ("core/src/queue/sdma.rs", "MAX_FILL_BYTES", "the SDMA constant-fill packet's count field"),
    (
        "core/src/memory/aperture.rs",
        "DEFAULT_GUARD_PAGES",
        "libhsakmt's guard pages per allocation when HSA_SVM_GUARD_PAGES is unset",
    ),
    (
        "core/src/memory/aperture.rs",
        "DEFAULT_ALIGNMENT_ORDER",
        "libhsakmt's largest VA alignment order of slab apertures (2 MiB)",
    ),
    (
        "core/src/device/event_manager/mod.rs",
        "DEFAULT_SPIN_NS",
        "ROCr's 200 µs spin of a signal wait before it blocks: a duration, not a capacity",
    ),
];

/// Files allowed to set a thread's stack size: (file, why). No caller needs a big stack
/// (the topology lives in caller storage), so a `stack_size(` call elsewhere is a regression.
pub(crate) const STACK_SIZE_FILES: &[(&str, &str)] = &[(
    "platform-linux/src/monitor.rs",
    "the event monitor's thread takes a smaller stack than std's 2 MiB default (callbacks run \
     on it), with an option for callers whose callbacks need more",
)];
