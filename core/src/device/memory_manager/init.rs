//! Setting the memory manager up at open and tearing it down at close
//! (libhsakmt `hsakmt_fmm_init_process_apertures`, `init_svm_apertures`,
//! `init_mmap_apertures`, `init_mem_handle_aperture`, `hsakmt_fmm_destroy_process_apertures`).
//!
//! At open, per GPU: its render node is opened, `GET_PROCESS_APERTURES_NEW` reports its LDS,
//! scratch and GPUVM apertures, `ACQUIRE_VM` binds its VM to the render node. Then the SVM
//! apertures are set up in one of the two modes (see [`SvmMode`]), every GPU with canonical
//! GPUVM gets `SET_MEMORY_POLICY` (non-coherent default, coherent alternate aperture over the
//! coherent SVM aperture), and the `NoAddress` handle window is placed.

use crate::config::{NODE_SET_CAPACITY, SETTING_VALUE_CAPACITY};
use crate::memory::aperture::{
    ApertureConfig, ApertureKind, SVM_MIN_VM_SIZE, SvmGpu, SvmLayout, SvmPlan, accept_reservation,
    guard_pages_from_env, mem_handle_window, reported_gpus, reservation_attempts, svm_needed,
};
use crate::memory::{self, GPU_HUGE_PAGE_SIZE as HUGE, PAGE_SIZE};
use crate::platform::{Ioctl, Platform};
use crate::topology::{Capability, GfxVersion};
use crate::uapi::*;

use super::state::{MemorySettings, MemoryState, MemoryStorage, NodeInfo, SLAB_SIZE, SvmMode};
use super::{Error, Kfd};

/// Reads a variable the way libhsakmt's `getenv` + `strcmp(value, "0")` tests do: `None` when
/// unset, else its (truncated) text.
fn env<'b, H: crate::platform::Host + ?Sized>(
    host: &H,
    name: &str,
    buf: &'b mut [u8; SETTING_VALUE_CAPACITY],
) -> Option<&'b str> {
    let n = host.env_var(name, buf)?;
    core::str::from_utf8(buf.get(..n.min(buf.len()))?).ok()
}

/// Parses `sscanf("%u")`: leading blanks, then digits.
fn parse_u32(v: &str) -> Option<u32> {
    v.trim_start().split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// The settings libhsakmt reads in `hsakmt_fmm_init_process_apertures`.
pub(crate) fn read_settings<H: crate::platform::Host + ?Sized>(host: &H) -> MemorySettings {
    let mut buf = [0u8; SETTING_VALUE_CAPACITY];
    let on = |v: Option<&str>| v.is_some_and(|v| v != "0");
    let disable_cache = on(env(host, "HSA_DISABLE_CACHE", &mut buf));
    let userptr_for_paged_mem = env(host, "HSA_USERPTR_FOR_PAGED_MEM", &mut buf) != Some("0");
    let reserve_svm = on(env(host, "HSA_RESERVE_SVM", &mut buf));
    let guard_pages = guard_pages_from_env(env(host, "HSA_SVM_GUARD_PAGES", &mut buf));
    let max_va_align = env(host, "HSA_MAX_VA_ALIGN", &mut buf).and_then(parse_u32);
    let high_precision = on(env(host, "HSA_HIGH_PRECISION_MODE", &mut buf));
    MemorySettings {
        disable_cache,
        userptr_for_paged_mem,
        reserve_svm,
        guard_pages,
        max_va_align,
        high_precision,
    }
}

impl<M, S: MemoryStorage<M>> MemoryState<M, S> {
    /// Fills the node table from the topology: ids, gfx facts, and the peers that may map each
    /// GPU's memory (every GPU with an io link to it, and itself).
    fn build_nodes(&mut self, topo: &crate::topology::Topology) {
        self.is_dgpu = topo.is_dgpu_system();
        for view in topo.nodes() {
            let n = view.node();
            let Some(uid) = n.user_id() else { continue };
            let Some(info) = self.nodes.get_mut(uid as usize) else { continue };
            let gfx = n.gfx();
            let is_gfx = |g: Option<GfxVersion>, major, minor| {
                g.is_some_and(|g| g.major == major && g.minor == minor)
            };
            *info = NodeInfo {
                present: true,
                gpu_id: if n.has_gpu() { n.gpu_id().unwrap_or(0) } else { 0 },
                render_minor: n.drm_render_minor().unwrap_or(0),
                svm_api: n.capability().is_some_and(|c| c.contains(Capability::SVM_API_SUPPORTED)),
                gfx950: gfx.is_some_and(|g| g.major == 9 && g.minor == 5 && g.stepping == 0),
                kaveri: is_gfx(gfx, 7, 0),
                device_id: n.device_id().unwrap_or(0),
                svm: svm_needed(self.is_dgpu, gfx.map_or(0, |g| u32::from(g.major))),
                ..*info
            };
        }
        // libhsakmt: "Add this GPU to the usable_peer_id_arrays of all GPUs that this GPU has an
        // IO link to."
        for view in topo.nodes() {
            let Some(from) = view.node().user_id() else { continue };
            if !self.nodes.get(from as usize).is_some_and(NodeInfo::is_gpu) {
                continue;
            }
            if let Some(n) = self.nodes.get_mut(from as usize) {
                let _ = n.peers.insert(from);
            }
            for link in view.links() {
                let to = link
                    .node_to()
                    .and_then(|s| topo.node_by_sysfs_id(s))
                    .and_then(|v| v.node().user_id());
                if let Some(to) = to
                    && let Some(t) = self.nodes.get_mut(to as usize).filter(|t| t.is_gpu())
                {
                    let _ = t.peers.insert(from);
                }
            }
        }
    }

    /// Sets the slab-mode SVM aperture up over the window, re-adding the slabs kept from an
    /// earlier session that lie inside it; returns whether any slab is present.
    fn init_slabs(
        &mut self,
        base: u64,
        limit: u64,
        align: u64,
        order: u32,
    ) -> Result<bool, memory::Error> {
        let guard = self.settings.guard_pages;
        let SvmLayout::Unified(config) = SvmLayout::slabs(base, limit, align, guard, order) else {
            return Err(memory::Error::NotSupported);
        };
        self.default.reconfigure(config)?;
        let mut any = false;
        for i in 0..self.reservation_count {
            let Some(&(b, s)) = self.reservations.get(i) else { break };
            if b >= base
                && b.saturating_add(s.saturating_sub(1)) <= limit
                && self.default.add_slab(b, s).is_ok()
            {
                any = true;
            }
        }
        self.mode = SvmMode::Slabs;
        Ok(any)
    }

    /// Sets the reserved-mode apertures up over `[base, base + size)`.
    fn init_reserved(&mut self, base: u64, size: u64, align: u64) -> Result<(), memory::Error> {
        let guard = self.settings.guard_pages;
        let SvmLayout::Split { coherent, default } = SvmLayout::reserved(base, size, align, guard)?
        else {
            return Err(memory::Error::NotSupported);
        };
        self.coherent.reconfigure(coherent)?;
        self.default.reconfigure(default)?;
        self.mode = SvmMode::Reserved;
        Ok(())
    }

    /// Places the `NoAddress` handle window clear of every GPU's apertures.
    fn init_handles(&mut self) {
        let mut occupied = [(0u64, 0u64); 3 * NODE_SET_CAPACITY];
        for (slot, n) in occupied.chunks_exact_mut(3).zip(self.nodes.iter()) {
            if let [a, b, c] = slot {
                *a = (n.lds.base, n.lds.limit);
                *b = (n.scratch.base, n.scratch.limit);
                *c = (n.gpuvm.base, n.gpuvm.limit);
            }
        }
        self.handles_ready = mem_handle_window(&occupied).is_some_and(|(base, limit)| {
            let config = ApertureConfig::reserved(ApertureKind::MemHandle, base, limit)
                .with_guard_pages(self.settings.guard_pages);
            self.handles.reconfigure(config).is_ok()
        });
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// The memory part of open (after the topology snapshot). On error the caller closes the
    /// device; the state is reset by the next open.
    pub(crate) fn open_memory(&self) -> Result<(), Error> {
        let settings = read_settings(&self.platform);
        self.read_topology(|topo| {
            let mut st = self.memory.lock();
            st.reset();
            st.settings = settings;
            st.build_nodes(topo);
        });
        self.open_gpus()?;
        self.init_svm()?;
        self.set_policies()?;
        self.memory.lock().init_handles();
        Ok(())
    }

    /// Render nodes, apertures and VMs of every GPU.
    fn open_gpus(&self) -> Result<(), Error> {
        let mut minors = [(0u32, 0u32); NODE_SET_CAPACITY];
        let mut count = 0;
        {
            let st = self.memory.lock();
            for (node, info) in st.nodes.iter().enumerate() {
                if info.is_gpu()
                    && let Some(slot) = minors.get_mut(count)
                {
                    *slot = (node as u32, info.render_minor);
                    count = count.saturating_add(1);
                }
            }
        }
        let mut fds = [0u32; NODE_SET_CAPACITY];
        for (fd, &(_, minor)) in fds.iter_mut().zip(minors.iter().take(count)) {
            *fd = self.platform.open_render_node(minor).map_err(Error::Platform)?;
        }
        let mut apertures = [kfd_process_device_apertures::default(); NODE_SET_CAPACITY];
        let mut args = kfd_ioctl_get_process_apertures_new_args::default();
        self.raw_ioctl(&mut Ioctl::GetProcessAperturesNew {
            args: &mut args,
            apertures: &mut apertures,
        })?;
        let mut acquire = [(0u32, 0u32); NODE_SET_CAPACITY];
        let mut acquire_count = 0;
        {
            let mut st = self.memory.lock();
            for (&(node, _), &fd) in minors.iter().take(count).zip(fds.iter()) {
                if let Some(n) = st.nodes.get_mut(node as usize) {
                    n.render_fd = fd;
                }
            }
            for a in reported_gpus(&apertures, args.num_of_nodes) {
                let Some(node) = st.nodes.iter().position(|n| n.is_gpu() && n.gpu_id == a.gpu_id)
                else {
                    continue;
                };
                let node = node as u32;
                let Some(n) = st.nodes.get_mut(node as usize) else { continue };
                [n.lds, n.scratch, n.gpuvm] = a.reported(node);
                // Old APUs with a non-canonical GPUVM aperture would need a private aperture
                // per GPU; this library does not manage those (their device memory is refused).
                n.svm &= a.svm_capable();
                let fd = n.render_fd;
                let _ = st.gpus.insert(node);
                if let Some(slot) = acquire.get_mut(acquire_count) {
                    *slot = (a.gpu_id, fd);
                    acquire_count = acquire_count.saturating_add(1);
                }
            }
        }
        for &(gpu_id, drm_fd) in acquire.iter().take(acquire_count) {
            let mut args = kfd_ioctl_acquire_vm_args { drm_fd, gpu_id };
            self.raw_ioctl(&mut Ioctl::AcquireVm(&mut args))?;
        }
        Ok(())
    }

    /// The SVM apertures (`init_svm_apertures`), reusing address space kept from an earlier
    /// session.
    fn init_svm(&self) -> Result<(), Error> {
        let plan = {
            let st = self.memory.lock();
            let gpus = st.gpus.iter().filter_map(|n| st.nodes.get(n as usize));
            let gpus = gpus.map(|i| SvmGpu {
                gpuvm_base: i.gpuvm.base,
                gpuvm_limit: i.gpuvm.limit,
                device_id: i.device_id,
                gfx950: i.gfx950,
            });
            SvmPlan::new(gpus, st.settings.reserve_svm, st.settings.max_va_align)?
        };
        let Some(plan) = plan else { return Ok(()) };
        if let Some((base, limit)) = plan.slab_window() {
            let have =
                self.memory.lock().init_slabs(base, limit, plan.align, plan.alignment_order)?;
            if have || self.grow_slabs(SLAB_SIZE, None).is_ok() {
                return Ok(());
            }
            // "Falling back to reserved SVM apertures."
            self.memory.lock().mode = SvmMode::None;
        }
        let (base, limit) = plan.reserved_window()?;
        self.init_reserved_window(base, limit, plan.align)
    }

    /// Reserved mode over `[base, limit]`: reuse the kept reservation, or reserve the largest
    /// range libhsakmt would (halving from the whole window down to 4 GiB; a reservation is
    /// accepted when at least half of it is GPU addressable, and its tail is trimmed).
    fn init_reserved_window(&self, base: u64, limit: u64, align: u64) -> Result<(), Error> {
        let kept = {
            let st = self.memory.lock();
            st.reservations().iter().copied().find(|&(b, s)| {
                b >= base && b.saturating_add(s.saturating_sub(1)) <= limit && s >= SVM_MIN_VM_SIZE
            })
        };
        let (start, size) = match kept {
            Some(r) => r,
            None => self.reserve_svm(base, limit)?,
        };
        self.memory.lock().init_reserved(start, size, align)?;
        Ok(())
    }

    fn reserve_svm(&self, base: u64, limit: u64) -> Result<(u64, u64), Error> {
        for (len, size) in reservation_attempts(base, limit) {
            let Ok(got) = self.platform.reserve_va(Some(base), size, HUGE) else { continue };
            let Some(kept) = accept_reservation(base, limit, len, got, size) else {
                let _ = self.platform.release_va(got, size);
                continue;
            };
            if kept < size {
                // Trim the tail that is not GPU addressable.
                let _ =
                    self.platform.release_va(got.saturating_add(kept), size.saturating_sub(kept));
            }
            self.memory.lock().remember_reservation(got, kept);
            return Ok((got, kept));
        }
        Err(memory::Error::OutOfSpace { needed: SVM_MIN_VM_SIZE }.into())
    }

    /// Grows the slab aperture: a kernel-chosen slab of at least `size` bytes, or exactly at
    /// `at` (fixed-address requests). Syscalls happen outside the lock.
    pub(crate) fn grow_slabs(&self, size: u64, at: Option<u64>) -> Result<(), Error> {
        let (base, limit, guard) = {
            let st = self.memory.lock();
            if st.mode != SvmMode::Slabs {
                return Err(memory::Error::OutOfSpace { needed: size }.into());
            }
            let c = st.default.config();
            (c.base, c.limit, c.guard_bytes())
        };
        let (hint, len, align) = match at {
            Some(addr) => {
                let start = addr & !(PAGE_SIZE - 1);
                let len = size
                    .checked_add(guard)
                    .and_then(|l| l.checked_add(addr & (PAGE_SIZE - 1)))
                    .and_then(super::state::page_align)
                    .ok_or(memory::Error::SizeOverflow)?;
                (Some(start), len, PAGE_SIZE)
            }
            None => {
                let len =
                    size.max(SLAB_SIZE).checked_add(HUGE - 1).ok_or(memory::Error::SizeOverflow)?
                        & !(HUGE - 1);
                (None, len, HUGE)
            }
        };
        let got = self.platform.reserve_va(hint, len, align).map_err(Error::Platform)?;
        let end = got.checked_add(len.saturating_sub(1));
        let inside = got >= base && end.is_some_and(|e| e <= limit);
        if !inside || hint.is_some_and(|h| h != got) {
            let _ = self.platform.release_va(got, len);
            return Err(match hint {
                Some(addr) => memory::Error::AddressInUse { addr },
                None => memory::Error::OutOfSpace { needed: size },
            }
            .into());
        }
        let mut st = self.memory.lock();
        if let Err(e) = st.default.add_slab(got, len) {
            drop(st);
            let _ = self.platform.release_va(got, len);
            return Err(e.into());
        }
        st.remember_reservation(got, len);
        Ok(())
    }

    /// `SET_MEMORY_POLICY` for every GPU with canonical GPUVM.
    fn set_policies(&self) -> Result<(), Error> {
        let mut calls = [kfd_ioctl_set_memory_policy_args::default(); NODE_SET_CAPACITY];
        let mut count = 0;
        {
            let st = self.memory.lock();
            if st.mode == SvmMode::None {
                return Ok(());
            }
            let alt = if st.mode == SvmMode::Reserved {
                st.coherent.config()
            } else {
                st.default.config()
            };
            let alt_size = alt.limit.saturating_sub(alt.base).saturating_add(1);
            let alt_base = alt.base;
            for node in st.gpus.iter() {
                let Some(n) = st.nodes.get(node as usize) else { continue };
                if !n.svm {
                    continue;
                }
                if let Some(c) = calls.get_mut(count) {
                    *c = kfd_ioctl_set_memory_policy_args {
                        alternate_aperture_base: alt_base,
                        alternate_aperture_size: alt_size,
                        gpu_id: n.gpu_id,
                        default_policy: if st.settings.disable_cache {
                            KFD_IOC_CACHE_POLICY_COHERENT
                        } else {
                            KFD_IOC_CACHE_POLICY_NONCOHERENT
                        },
                        alternate_policy: KFD_IOC_CACHE_POLICY_COHERENT,
                        misc_process_flag: if n.gfx950 && st.settings.high_precision {
                            KFD_PROC_FLAG_MFMA_HIGH_PRECISION
                        } else {
                            0
                        },
                    };
                    count = count.saturating_add(1);
                }
            }
        }
        for c in calls.iter_mut().take(count) {
            self.raw_ioctl(&mut Ioctl::SetMemoryPolicy(c))?;
        }
        Ok(())
    }

    /// The memory part of the last close: refuses while a caller holds a CPU view, else
    /// forgets every object (the kernel releases the buffers with the device).
    pub(crate) fn close_memory(&self) -> Result<(), Error> {
        let mut st = self.memory.lock();
        let held = st.shared_mappings();
        if held > 0 {
            let addr = st
                .objects
                .iter()
                .find(|(_, o)| {
                    o.payload.mapping.as_ref().is_some_and(crate::platform::SharedMemory::is_shared)
                })
                .map_or(0, |(_, o)| o.start());
            return Err(memory::Error::MappingInUse { addr }.into());
        }
        st.reset();
        Ok(())
    }

    /// Forgets every object without checks (a failed open).
    pub(crate) fn forget_memory(&self) {
        self.memory.lock().reset();
    }

    /// A forked child forgets its parent's memory without touching any of it: the CPU views
    /// are leaked (the buffers are `MADV_DONTFORK`, so their ranges are holes in the child that
    /// may hold something else by now — dropping a view would map over it), and the parent's
    /// address reservations are never reused or released (the child reserves its own).
    pub(crate) fn forget_parent_memory(&self) {
        let mut st = self.memory.lock();
        st.objects.clear_with(|payload| core::mem::forget(payload.mapping));
        st.reset();
        // No free of the parent's will ever complete here.
        st.pending_frees.clear();
        st.reservation_count = 0;
    }
}
