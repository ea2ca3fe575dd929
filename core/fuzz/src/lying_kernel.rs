//! A platform whose kernel lies: a small fixed topology (one CPU node, one MI300-class GPU
//! node), and an amdkfd whose every ioctl reply comes from the fuzz input. Each call first
//! draws whether it fails (with an errno from the input); a successful call then fills every
//! field the kernel writes with, per field, an honest value (what amdkfd would answer), a
//! nearby one, or arbitrary bytes. CPU mappings are heap memory of the requested size, so a
//! view the library builds beyond what the platform mapped is an out-of-bounds access the
//! target sees (a panic of the slice indexing).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use hsakmt_core::error::Errno;
use hsakmt_core::platform::EntryKind;
use hsakmt_core::platform::{
    Access, Host, Ioctl, KfdDevice, OpenError, Sysfs, SysfsDir, SysfsFile,
};
use hsakmt_core::uapi::{
    KFD_IOC_WAIT_RESULT_COMPLETE, KFD_IOC_WAIT_RESULT_FAIL, KFD_IOC_WAIT_RESULT_TIMEOUT, UapiType,
    kfd_event_data, kfd_process_device_apertures,
};

use crate::Mem;

/// The GPU's `gpu_id`.
pub const GPU_ID: u32 = 24248;
/// The GPU's topology node.
pub const GPU_NODE: u32 = 1;
/// The largest CPU mapping the platform makes (larger requests get `ENOMEM`), so a lying
/// size cannot exhaust the fuzzer's memory.
pub const MAX_MAPPING: u64 = 4 << 20;

const GPU_PROPERTIES: &str = "cpu_cores_count 0\nsimd_count 80\nmem_banks_count 1\n\
caches_count 0\nio_links_count 1\np2p_links_count 0\nmax_waves_per_simd 8\nlds_size_in_kb 64\n\
num_gws 64\nwave_front_size 64\narray_count 4\nsimd_arrays_per_engine 1\ncu_per_simd_array 10\n\
simd_per_cu 4\nmax_slots_scratch_cu 32\ngfx_target_version 90402\nvendor_id 4098\n\
device_id 29858\nlocation_id 2560\ndomain 0\ndrm_render_minor 128\nnum_sdma_engines 2\n\
num_sdma_xgmi_engines 0\nnum_sdma_queues_per_engine 8\nnum_cp_queues 24\n\
max_engine_clk_fcompute 1420\nlocal_mem_size 0\nfw_version 149\ncapability 746037888\n\
debug_prop 1511\nsdma_fw_version 19\nnum_xcc 1\nmax_engine_clk_ccompute 3800\n";
const CPU_PROPERTIES: &str = "cpu_cores_count 16\nsimd_count 0\nmem_banks_count 1\n\
caches_count 0\nio_links_count 1\np2p_links_count 0\nmax_engine_clk_ccompute 3800\n";
const VRAM_BANK: &str = "heap_type 1\nsize_in_bytes 51539607552\nflags 0\nwidth 8192\n";
const SYSTEM_BANK: &str = "heap_type 0\nsize_in_bytes 68719476736\nflags 0\nwidth 64\n";
const GPU_LINK: &str = "type 2\nversion_major 0\nversion_minor 0\nnode_from 1\nnode_to 0\n\
weight 20\nmin_latency 0\nmax_latency 0\nmin_bandwidth 0\nmax_bandwidth 0\nflags 1\n";
const CPU_LINK: &str = "type 2\nversion_major 0\nversion_minor 0\nnode_from 0\nnode_to 1\n\
weight 20\nmin_latency 0\nmax_latency 0\nmin_bandwidth 0\nmax_bandwidth 0\nflags 1\n";

/// Errnos a lying kernel fails with.
const ERRNOS: [Errno; 8] = [
    Errno::EINVAL,
    Errno::ENOMEM,
    Errno::EFAULT,
    Errno::EBUSY,
    Errno::EIO,
    Errno::EINTR,
    Errno::ETIME,
    Errno::ENOSPC,
];

/// The kernel's replies, drawn from the fuzz input; zeros (honest, successful) past its end.
pub struct LyingKernel {
    tape: Mutex<Vec<u8>>,
    clock: AtomicU64,
    next_va: AtomicU64,
    next_handle: AtomicU64,
    next_id: AtomicU32,
    /// Ioctls answered.
    pub calls: AtomicU64,
}

impl LyingKernel {
    /// A kernel answering from `replies`.
    pub fn new(replies: &[u8]) -> Self {
        Self {
            tape: Mutex::new(replies.iter().rev().copied().collect()),
            clock: AtomicU64::new(0),
            next_va: AtomicU64::new(0x7f00_0000_0000),
            next_handle: AtomicU64::new(0x1000),
            next_id: AtomicU32::new(1),
            calls: AtomicU64::new(0),
        }
    }

    fn byte(&self) -> u8 {
        self.tape.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop().unwrap_or(0)
    }

    fn raw(&self, n: usize) -> u64 {
        (0..n).fold(0u64, |v, i| v | u64::from(self.byte()) << (8 * i))
    }

    /// A 64-bit field: honest, nudged, or arbitrary.
    fn u64(&self, honest: u64) -> u64 {
        match self.byte() % 8 {
            0..=4 => honest,
            5 => honest.wrapping_add(self.raw(1)).wrapping_sub(128),
            6 => honest ^ (1 << (self.byte() % 64)),
            _ => self.raw(8),
        }
    }

    /// A 32-bit field: honest, nudged, or arbitrary.
    fn u32(&self, honest: u32) -> u32 {
        self.u64(u64::from(honest)) as u32
    }

    fn id(&self) -> u32 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    fn va(&self, size: u64, align: u64) -> Result<u64, Errno> {
        let align = align.max(4096);
        if !align.is_power_of_two() {
            return Err(Errno::EINVAL);
        }
        let size = size.checked_add(align).ok_or(Errno::ENOMEM)?;
        let base = self.next_va.fetch_add(size, Ordering::Relaxed);
        Ok(base.checked_add(align - 1).ok_or(Errno::ENOMEM)? & !(align - 1))
    }

    fn mapping(&self, addr: u64, size: u64) -> Result<Mem, Errno> {
        if size == 0 || size > MAX_MAPPING {
            return Err(Errno::ENOMEM);
        }
        Ok(Mem::new(addr, usize::try_from(size).map_err(|_| Errno::ENOMEM)?))
    }

    fn answer(&self, request: &mut Ioctl<'_>) {
        match request {
            Ioctl::GetVersion(a) => {
                a.major_version = self.u32(1);
                a.minor_version = self.u32(17);
            }
            Ioctl::GetProcessAperturesNew { args, apertures } => {
                let honest = kfd_process_device_apertures {
                    lds_base: 1 << 48,
                    lds_limit: (1 << 48) + 0xFFFF_FFFF,
                    scratch_base: 2 << 48,
                    scratch_limit: (2 << 48) + 0xFFFF_FFFF,
                    gpuvm_base: 0x1_0000,
                    gpuvm_limit: (1 << 47) - 1,
                    gpu_id: GPU_ID,
                    pad: 0,
                };
                args.num_of_nodes = self.u32(1);
                for a in apertures.iter_mut() {
                    *a = kfd_process_device_apertures {
                        lds_base: self.u64(honest.lds_base),
                        lds_limit: self.u64(honest.lds_limit),
                        scratch_base: self.u64(honest.scratch_base),
                        scratch_limit: self.u64(honest.scratch_limit),
                        gpuvm_base: self.u64(honest.gpuvm_base),
                        gpuvm_limit: self.u64(honest.gpuvm_limit),
                        gpu_id: self.u32(honest.gpu_id),
                        pad: 0,
                    };
                }
            }
            Ioctl::AllocMemoryOfGpu(a) => {
                a.handle = self.u64(self.handle());
                a.mmap_offset = self.u64(a.va_addr >> 12 << 12);
            }
            Ioctl::MapMemoryToGpu { args, devices } => {
                args.n_success = self.u32(u32::try_from(devices.len()).unwrap_or(u32::MAX));
            }
            Ioctl::UnmapMemoryFromGpu { args, devices } => {
                args.n_success = self.u32(u32::try_from(devices.len()).unwrap_or(u32::MAX));
            }
            Ioctl::CreateQueue(a) => {
                let id = self.id();
                a.queue_id = self.u32(id);
                a.doorbell_offset =
                    self.u64((2 << 62) | (u64::from(GPU_ID) << 46) | u64::from(id) * 8);
            }
            Ioctl::CreateEvent(a) => {
                let id = self.id();
                a.event_id = self.u32(id);
                a.event_slot_index = self.u32(id);
                a.event_trigger_data = self.u32(id);
                a.event_page_offset = self.u64(a.event_page_offset);
            }
            Ioctl::WaitEvents { args, events } => {
                args.wait_result = match self.byte() % 8 {
                    0..=4 => KFD_IOC_WAIT_RESULT_COMPLETE,
                    5 => KFD_IOC_WAIT_RESULT_TIMEOUT,
                    6 => KFD_IOC_WAIT_RESULT_FAIL,
                    _ => self.u32(0),
                };
                for e in events.iter_mut() {
                    if self.byte() % 2 == 1 {
                        let image: Vec<u8> =
                            (0..kfd_event_data::SIZE).map(|_| self.byte()).collect();
                        let mut lie = kfd_event_data::read_from(&image);
                        lie.event_id = self.u32(e.event_id);
                        *e = lie;
                    }
                }
            }
            Ioctl::GetClockCounters(a) => {
                let now = self.clock.fetch_add(1000, Ordering::Relaxed);
                a.gpu_clock_counter = self.u64(now);
                a.cpu_clock_counter = self.u64(now);
                a.system_clock_counter = self.u64(now);
                a.system_clock_freq = self.u64(1_000_000_000);
            }
            Ioctl::GetTileConfig { args, tile_config, macro_tile_config } => {
                args.num_tile_configs = self.u32(u32::try_from(tile_config.len()).unwrap_or(0));
                args.num_macro_tile_configs =
                    self.u32(u32::try_from(macro_tile_config.len()).unwrap_or(0));
                args.gb_addr_config = self.u32(0x2a114042);
                args.num_banks = self.u32(16);
                args.num_ranks = self.u32(2);
                for t in tile_config.iter_mut().chain(macro_tile_config.iter_mut()) {
                    *t = self.u32(0);
                }
            }
            Ioctl::GetQueueWaveState(a) => {
                a.ctl_stack_used_size = self.u32(0x1000);
                a.save_area_used_size = self.u32(0x2000);
            }
            Ioctl::Svm { args, attrs } => {
                args.start_addr = self.u64(args.start_addr);
                args.size = self.u64(args.size);
                args.nattr = self.u32(args.nattr);
                for a in attrs.iter_mut() {
                    a.r#type = self.u32(a.r#type);
                    a.value = self.u32(a.value);
                }
            }
            Ioctl::AvailableMemory(a) => a.available = self.u64(48 << 30),
            Ioctl::GetDmabufInfo { args, metadata } => {
                args.size = self.u64(2 << 20);
                args.gpu_id = self.u32(GPU_ID);
                args.flags = self.u32(1 << 0);
                args.metadata_size = self.u32(0);
                for m in metadata.iter_mut() {
                    *m = self.byte();
                }
            }
            Ioctl::ImportDmabuf(a) => a.handle = self.u64(self.handle()),
            Ioctl::ExportDmabuf(a) => a.dmabuf_fd = self.u32(100),
            Ioctl::AllocQueueGws(a) => a.first_gws = self.u32(0),
            Ioctl::SmiEvents(a) => a.anon_fd = self.u32(101),
            Ioctl::RuntimeEnable(a) => a.capabilities_mask = self.u32(a.capabilities_mask),
            _ => {}
        }
    }
}

impl Sysfs for LyingKernel {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        let entry = |node, kind, index| SysfsFile::EntryProperties { node, kind, index };
        let text: &str = match file {
            SysfsFile::GenerationId => "1\n",
            SysfsFile::SystemProperties => "platform_oem 0\nplatform_id 0\nplatform_rev 0\n",
            SysfsFile::GpuId(0) => "0\n",
            SysfsFile::GpuId(GPU_NODE) => "24248\n",
            SysfsFile::Name(0) => "\n",
            SysfsFile::Name(GPU_NODE) => "ip discovery\n",
            SysfsFile::NodeProperties(0) => CPU_PROPERTIES,
            SysfsFile::NodeProperties(GPU_NODE) => GPU_PROPERTIES,
            f if f == entry(0, EntryKind::MemBank, 0) => SYSTEM_BANK,
            f if f == entry(GPU_NODE, EntryKind::MemBank, 0) => VRAM_BANK,
            f if f == entry(0, EntryKind::IoLink, 0) => CPU_LINK,
            f if f == entry(GPU_NODE, EntryKind::IoLink, 0) => GPU_LINK,
            _ => return Err(Errno::ENOENT),
        };
        let n = text.len().min(buf.len());
        buf[..n].copy_from_slice(&text.as_bytes()[..n]);
        Ok(n)
    }

    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        let ids: &[u32] = match dir {
            SysfsDir::Nodes => &[0, GPU_NODE],
            SysfsDir::Entries { kind: EntryKind::MemBank | EntryKind::IoLink, .. } => &[0],
            SysfsDir::Entries { .. } => &[],
        };
        for (slot, id) in out.iter_mut().zip(ids) {
            *slot = *id;
        }
        Ok(ids.len())
    }
}

impl Host for LyingKernel {
    fn now_ns(&self) -> u64 {
        // Time moves a millisecond per look, so spins and timeouts end.
        self.clock.fetch_add(1_000_000, Ordering::Relaxed)
    }

    fn process_id(&self) -> u32 {
        42
    }

    fn env_var(&self, _: &str, _: &mut [u8]) -> Option<usize> {
        None
    }
}

impl KfdDevice for LyingKernel {
    type Mapping = Mem;

    fn open(&self) -> Result<(), OpenError> {
        Ok(())
    }

    fn close(&self) {}

    fn ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Errno> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let fate = self.byte();
        if fate >= 0xF0 {
            return Err(ERRNOS[usize::from(fate & 7)]);
        }
        self.answer(request);
        Ok(())
    }

    fn open_render_node(&self, minor: u32) -> Result<u32, Errno> {
        Ok(minor + 1000)
    }

    fn close_fd(&self, _: u32) {}

    // Descriptors (SMI streams, debugger pipes) say what the input says: ready or not, a read
    // of any length (even past the buffer), a write of any count.
    fn poll_fd(&self, _: u32, _: i32) -> Result<bool, Errno> {
        match self.byte() {
            0xF0.. => Err(Errno::EBADF),
            b => Ok(b % 2 == 0),
        }
    }

    fn read_fd(&self, _: u32, _: &mut [u8]) -> Result<usize, Errno> {
        match self.byte() {
            0xF0.. => Err(Errno::EAGAIN),
            b => Ok(usize::from(b)),
        }
    }

    fn write_fd(&self, _: u32, data: &[u8]) -> Result<usize, Errno> {
        Ok(data.len().min(usize::from(self.byte())))
    }

    fn create_pipe(&self) -> Result<(u32, u32), Errno> {
        Ok((2000, 2001))
    }

    fn reserve_va(&self, hint: Option<u64>, size: u64, align: u64) -> Result<u64, Errno> {
        match hint {
            Some(h) if self.byte() % 4 != 3 => Ok(h),
            _ => self.va(size, align),
        }
    }

    fn release_va(&self, _: u64, _: u64) -> Result<(), Errno> {
        Ok(())
    }

    fn map_kfd(&self, _: u64, size: u64, addr: Option<u64>, _: Access) -> Result<Mem, Errno> {
        let addr = match addr {
            Some(a) => a,
            None => self.va(size, 4096)?,
        };
        self.mapping(addr, size)
    }

    fn map_buffer(&self, _: u32, _: u64, size: u64, addr: u64, _: Access) -> Result<Mem, Errno> {
        self.mapping(addr, size)
    }

    fn map_anonymous(&self, addr: u64, size: u64) -> Result<Mem, Errno> {
        self.mapping(addr, size)
    }
}
