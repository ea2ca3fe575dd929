//! Helpers for the ISA scenarios: loading the project's code objects (`hsakmt-kernels`,
//! parsed and relocated by `hsakmt_core::code_object`) into GPU-visible memory, an AQL queue
//! with scratch that runs their kernels, and building PM4 packets.

use std::time::Duration;

use hsakmt_core::code_object::kernarg::{ArgValue, Dispatch, write_kernargs};
use hsakmt_core::code_object::{CodeObject, Kernel};
use hsakmt_core::device::queue_manager::{AqlQueue, QueueDesc, QueueInfo, QueueType};
use hsakmt_core::platform::{SharedMemory, SysfsFile};
use hsakmt_core::queue::aql::{AqlPacket, KernelDispatch};
use hsakmt_sim::{CpMode, Profile, QueueFault, SimMapping, SimPlatform};

use crate::SimKfd;
use crate::queue_support::{Buf, Signals, host_buffer, wait_until};

/// Each gfx9 profile with the target its GPUs run.
pub const TARGETS: [(&str, &str); 3] = [
    ("mi25-vega10-rocm18", "gfx900"),
    ("mi210-8gpu-2hive", "gfx90a"),
    ("mi308x-8gpu-cpx", "gfx942"),
];

/// The embedded profile `name` (one of [`TARGETS`]) with every GPU node usable.
///
/// # Panics
/// When the profile is unknown.
#[must_use]
pub fn profile(name: &str) -> Profile {
    let mut p = Profile::embedded(name).expect("embedded profile");
    if name == "mi210-8gpu-2hive" {
        // The MI210 capture lacks the `gpu_id` files; give its GPU nodes 2..=9 ids.
        for node in 2..=9u32 {
            p.set_file(SysfsFile::GpuId(node), format!("{}\n", 40000 + node).as_bytes());
        }
    }
    p
}

/// An open device over the simulator with `profile` (one of [`TARGETS`]).
///
/// # Panics
/// When the profile is unknown or the device does not open.
#[must_use]
pub fn open(profile: &str, mode: CpMode) -> Box<SimKfd> {
    let p = self::profile(profile);
    let kfd = crate::device(SimPlatform::builder().profile(p).cp_mode(mode).build());
    kfd.open().expect("open");
    kfd
}

/// A code object loaded into a GPU-visible host buffer at the buffer's address.
pub struct Loaded<'a> {
    /// The parsed object.
    pub object: CodeObject<'a>,
    /// The memory holding the relocated image.
    pub image: Buf,
}

impl<'a> Loaded<'a> {
    /// Parses `bytes` and loads the image (segments and relocations) into a new host buffer.
    ///
    /// # Panics
    /// On a malformed object.
    #[must_use]
    pub fn new(kfd: &SimKfd, bytes: &'a [u8]) -> Self {
        let object = CodeObject::parse(bytes).expect("a valid code object");
        let mut image = vec![0u8; object.image_size() as usize];
        let buf = host_buffer(kfd, image.len() as u64);
        object.load_into(&mut image, buf.addr()).expect("loaded");
        buf.write(0, &image).expect("image fits");
        Loaded { object, image: buf }
    }

    /// Kernel `name` and its kernel object (descriptor address).
    ///
    /// # Panics
    /// When the object has no such kernel.
    #[must_use]
    pub fn kernel(&self, name: &str) -> (Kernel<'a>, u64) {
        let k = self.object.kernel(name).expect("the kernel");
        let at = k.descriptor_address(self.image.addr()).expect("address");
        (k, at)
    }
}

/// Bytes of scratch per lane the test queues provide (ROCr sizes this per dispatch; tests
/// use one size that fits every kernel here).
pub const SCRATCH_LANE_BYTES: u32 = 1024;
/// Waves that hold scratch at once on a test queue.
pub const SCRATCH_WAVES: u32 = 32;

/// An AQL queue on a GPU node with its scratch backing set up in the `amd_queue_t` (as
/// ROCr does before dispatching a kernel with private memory), a completion signal and a
/// kernel-argument buffer.
pub struct IsaQueue {
    /// The queue.
    pub info: QueueInfo,
    /// Its producer.
    pub queue: AqlQueue<SimMapping>,
    signals: Signals,
    args: Buf,
    _scratch: Buf,
}

impl IsaQueue {
    /// A queue on GPU node `node`.
    ///
    /// # Panics
    /// When the facade refuses.
    #[must_use]
    pub fn new(kfd: &SimKfd, node: u32) -> Self {
        let info =
            kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).expect("queue");
        let queue = kfd.aql_queue(info.handle).expect("AQL queue");
        let wave_bytes = u64::from(SCRATCH_LANE_BYTES) * 64;
        let scratch = host_buffer(kfd, wave_bytes * u64::from(SCRATCH_WAVES));
        let amd_queue = &queue.producer().cells().memory().indices;
        amd_queue.write(140, &SCRATCH_WAVES.to_le_bytes()).expect("tmpring");
        amd_queue.write(160, &scratch.addr().to_le_bytes()).expect("scratch base");
        amd_queue.write(168, &(wave_bytes * u64::from(SCRATCH_WAVES)).to_le_bytes()).expect("size");
        amd_queue.write(176, &SCRATCH_LANE_BYTES.to_le_bytes()).expect("lane size");
        IsaQueue {
            info,
            queue,
            signals: Signals::new(kfd, 1, 0),
            args: host_buffer(kfd, 4096),
            _scratch: scratch,
        }
    }

    /// Dispatches `kernel` (at kernel object `object`) over `dispatch` with the explicit
    /// arguments `args` and waits for it; the queue's fault if it raised one.
    ///
    /// # Panics
    /// When the arguments do not fit the kernel, or after `timeout`.
    pub fn run(
        &self,
        kfd: &SimKfd,
        (kernel, object): (Kernel<'_>, u64),
        args: &[ArgValue<'_>],
        dispatch: &Dispatch,
        timeout: Duration,
    ) -> Result<(), QueueFault> {
        let sim = kfd.platform();
        let mut buf = [0u8; 4096];
        write_kernargs(&kernel.metadata, &mut buf, args, dispatch).expect("kernel arguments");
        self.args.write(0, &buf).expect("fits");
        self.signals.get(0).store_relaxed(1);
        let packet = KernelDispatch {
            dimensions: dispatch.dimensions,
            workgroup_size: dispatch.workgroup_size,
            grid_size: dispatch.grid_size,
            private_segment_size: kernel.metadata.private_segment_fixed_size,
            group_segment_size: kernel.metadata.group_segment_fixed_size,
            kernarg_address: self.args.addr(),
            completion_signal: self.signals.handle(0),
            ..KernelDispatch::linear(object, 1, 1)
        };
        self.queue.submit(&AqlPacket::KernelDispatch(packet).to_words().expect("packet"), || {});
        let id = self.info.queue_id;
        wait_until(sim, timeout, "the dispatch", || {
            self.signals.get(0).load_acquire() == 0 || sim.queue_fault(id).is_some()
        });
        sim.queue_fault(id).map_or(Ok(()), Err)
    }
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
