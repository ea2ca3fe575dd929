//! Queue creation (`hsaKmtCreateQueueExt`): the node's facts from the topology, the kernel's
//! checks done first, the sizing of the EOP buffer and context-save area, the allocation of the
//! queue's buffers and `AMDKFD_IOC_CREATE_QUEUE`.

use core::sync::atomic::Ordering;

use crate::device::memory_manager::MemoryStorage;
use crate::device::{Error as DeviceError, Kfd};
use crate::error::Errno;
use crate::platform::{Ioctl, Platform, SharedMemory};
use crate::queue::aql::{INVALID_HEADER_WORD, PACKET_SIZE};
use crate::queue::params::{
    ContextSaveSizes, GfxVersion, QueueNodeFacts, QueueParamError, RING_BASE_ALIGN,
    context_save_sizes, eop_buffer_size, validate_ring, write_context_save_headers,
};
use crate::uapi::{kfd_ioctl_create_queue_args, kfd_ioctl_destroy_queue_args};

use super::backing::{Placement, QueueBuffer, page_round};
use super::doorbell::doorbell_location;
use super::{
    Engine, Parts, QueueDesc, QueueError, QueueHandle, QueueInfo, QueuePointers, QueueRecord,
    QueueType, READ_POINTER_OFFSET, RingSpec, WRITE_POINTER_OFFSET,
};

/// What queue creation needs from a node's topology.
#[derive(Debug, Clone, Copy)]
pub(super) struct NodeFacts {
    pub(super) node: u32,
    /// The CPU node nearest the GPU (system memory for the queue's buffers).
    pub(super) host: Option<u32>,
    pub(super) index: usize,
    pub(super) gpu_id: u32,
    pub(super) queue: QueueNodeFacts,
    /// PCIe and XGMI SDMA engines as the topology reports them (`None`: a kernel too old to
    /// print `num_sdma_engines` / `num_sdma_xgmi_engines`; the kernel knows its engines).
    pub(super) sdma_engines: Option<u32>,
    pub(super) xgmi_engines: Option<u32>,
    pub(super) gws: u32,
}

impl NodeFacts {
    pub(super) fn gfx(&self) -> GfxVersion {
        self.queue.gfx
    }
}

/// Marks every slot of an AQL ring unpublished (header `INVALID`, body zero) so the packet
/// processor never mistakes stale bytes for a packet.
fn init_aql_ring<M: SharedMemory>(ring: &M, size: u64) {
    let slots = usize::try_from(size).unwrap_or(usize::MAX) / PACKET_SIZE;
    let (d, q) = (ring.u32s(), ring.u64s());
    for (qwords, dwords) in q.chunks_exact(8).zip(d.chunks_exact(16)).take(slots) {
        for w in qwords.iter().skip(1) {
            w.store(0, Ordering::Relaxed);
        }
        if let [header, second, ..] = dwords {
            second.store(0, Ordering::Relaxed);
            header.store(INVALID_HEADER_WORD, Ordering::Release);
        }
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    pub(super) fn node_facts(&self, node: u32) -> Result<NodeFacts, QueueError> {
        self.with_topology(|t| {
            let v = t.node_by_user_id(node).ok_or(QueueError::InvalidNode(node))?;
            let n = v.node();
            if !n.has_gpu() {
                return Err(QueueError::NotAGpu { node });
            }
            let gpu_id = n
                .gpu_id()
                .filter(|g| *g != 0)
                .ok_or(QueueError::IncompleteNode { node, what: "gpu_id" })?;
            let g = n.gfx().ok_or(QueueError::IncompleteNode { node, what: "gfx version" })?;
            let p = n.properties();
            let host = t.nearest_cpu(v.index()).and_then(|(i, _)| t.node(i)?.node().user_id());
            Ok(NodeFacts {
                node,
                host,
                index: v.index(),
                gpu_id,
                queue: QueueNodeFacts::from_properties(g, p),
                sdma_engines: p.num_sdma_engines(),
                xgmi_engines: p.num_sdma_xgmi_engines(),
                gws: p.num_gws().unwrap_or(0),
            })
        })?
    }

    fn check_engine(&self, f: &NodeFacts, t: QueueType) -> Result<(), QueueError> {
        let node = f.node;
        match t {
            QueueType::Compute | QueueType::ComputeAql => {
                if f.queue.simd_count == 0 {
                    return Err(QueueError::NoEngine { node, engine: Engine::Compute });
                }
            }
            QueueType::Sdma if f.sdma_engines == Some(0) => {
                return Err(QueueError::NoEngine { node, engine: Engine::Sdma });
            }
            QueueType::SdmaXgmi if f.xgmi_engines == Some(0) => {
                return Err(QueueError::NoEngine { node, engine: Engine::SdmaXgmi });
            }
            QueueType::SdmaEngine(id) => {
                self.require_minor("SDMA queues on a chosen engine", 17)?;
                // KFD 1.17 prints both counts.
                let engines =
                    f.sdma_engines.unwrap_or(0).saturating_add(f.xgmi_engines.unwrap_or(0));
                if id >= engines {
                    return Err(QueueError::InvalidEngineId { engine_id: id, engines });
                }
            }
            QueueType::Sdma | QueueType::SdmaXgmi => {}
        }
        Ok(())
    }

    /// Creates a queue (`hsaKmtCreateQueueExt`): checks the node and the parameters the way
    /// the kernel will, allocates the queue's buffers, issues `AMDKFD_IOC_CREATE_QUEUE` and
    /// maps the node's doorbell page (once per node).
    ///
    /// # Errors
    /// [`QueueError::InvalidNode`], [`QueueError::NotAGpu`] for a CPU node,
    /// [`QueueError::NoEngine`] / [`QueueError::InvalidEngineId`] for SDMA engines the node
    /// reports it lacks (a topology without the engine counts leaves it to the kernel, as
    /// libhsakmt does), [`QueueError::Param`] for a bad ring, [`QueueError::InvalidPercentage`],
    /// [`QueueError::RingOutsideMapping`], [`QueueError::TooManyQueues`],
    /// [`QueueError::Memory`] when a buffer or the doorbell page cannot be had,
    /// [`QueueError::Device`] for a closed device, an old kernel (`SdmaEngine` needs KFD 1.17)
    /// or the kernel's refusal (`EINVAL` for a ring that is not exactly a GPU mapping, `ENOSPC`
    /// for too many queues, `ENOMEM` when the engine has no free queue). Nothing is left
    /// allocated on error.
    pub fn create_queue(&self, desc: &QueueDesc<'_, P::Mapping>) -> Result<QueueInfo, QueueError> {
        let created = self.create_queue_unlogged(desc);
        if let Err(e) = &created {
            log_warn!("queue creation on node {} failed: {:?}", desc.node, e);
        }
        created
    }

    fn create_queue_unlogged(
        &self,
        desc: &QueueDesc<'_, P::Mapping>,
    ) -> Result<QueueInfo, QueueError> {
        self.check_open()?;
        self.reclaim_queue_buffers();
        let f = self.node_facts(desc.node)?;
        let kind = desc.queue_type.kind();
        self.check_engine(&f, desc.queue_type)?;
        if desc.percentage > 100 {
            return Err(QueueError::InvalidPercentage(desc.percentage));
        }
        match desc.ring {
            RingSpec::Allocate { size } => validate_ring(kind, RING_BASE_ALIGN, page_round(size))?,
            RingSpec::Mapped { mapping, size } => {
                validate_ring(kind, mapping.addr(), size)?;
                if (mapping.len() as u64) < size {
                    return Err(QueueError::RingOutsideMapping {
                        ring_size: size,
                        mapping_len: mapping.len() as u64,
                    });
                }
            }
            RingSpec::Address { address, size } => validate_ring(kind, address, size)?,
        }
        let ring_size = match desc.ring {
            RingSpec::Allocate { size } => page_round(size),
            RingSpec::Mapped { size, .. } | RingSpec::Address { size, .. } => size,
        };
        if ring_size > u64::from(u32::MAX) {
            return Err(QueueParamError::RingTooLarge.into());
        }
        let sizes = if kind.is_compute() { context_save_sizes(&f.queue)? } else { None };
        let handle = self.queues().lock().table.reserve()?;
        let mut parts = Parts::new();
        match self.create_in(handle, desc, &f, sizes, &mut parts) {
            Ok((info, rest)) => {
                let record = QueueRecord { info, parts, ..rest };
                match self.queues().lock().table.fill(handle, record) {
                    Ok(()) => Ok(info),
                    // The slot cannot have changed hands (it was reserved), but never leak.
                    Err(record) => {
                        self.free_parts(record.parts);
                        Err(QueueError::InvalidHandle)
                    }
                }
            }
            Err(e) => {
                self.free_parts(parts);
                self.queues().lock().table.release(handle);
                Err(e)
            }
        }
    }

    /// The allocation + ioctl part of [`Kfd::create_queue`]; buffers go into `parts` as they
    /// are allocated so the caller can free them on error.
    fn create_in(
        &self,
        handle: QueueHandle,
        desc: &QueueDesc<'_, P::Mapping>,
        f: &NodeFacts,
        sizes: Option<ContextSaveSizes>,
        parts: &mut Parts<P::Mapping>,
    ) -> Result<(QueueInfo, QueueRecord<P::Mapping>), QueueError> {
        let kind = desc.queue_type.kind();
        let gpu = f.gpu_id;
        let (node, host) = (f.node, f.host);
        let mut user_ring = None;
        let (ring_address, ring_size) = match desc.ring {
            RingSpec::Allocate { size } => {
                let b = self.queue_buffer_alloc(node, host, size, Placement::System, "ring")?;
                let r = (b.addr(), b.size());
                parts.ring = Some(b);
                r
            }
            RingSpec::Mapped { mapping, size } => {
                user_ring = Some(mapping.clone());
                (mapping.addr(), size)
            }
            RingSpec::Address { address, size } => (address, size),
        };
        let (read_pointer, write_pointer) = match desc.pointers {
            QueuePointers::Library => {
                let what = "pointers page";
                let b =
                    self.queue_buffer_alloc(node, host, 4096, Placement::SystemUncached, what)?;
                let base = b.addr();
                parts.pointers = Some(b);
                // Offsets inside the page just allocated at `base`.
                let at = |offset: usize| base.saturating_add(offset as u64);
                (at(READ_POINTER_OFFSET), at(WRITE_POINTER_OFFSET))
            }
            QueuePointers::Caller { read, write } => (read, write),
        };
        let eop_size = u64::from(eop_buffer_size(f.gfx(), kind));
        if eop_size > 0 {
            let b = self.queue_buffer_alloc(node, host, eop_size, Placement::Vram, "EOP buffer")?;
            parts.eop = Some(b);
        }
        if let Some(s) = sizes {
            let what = "context-save area";
            let b = self.queue_buffer_alloc(node, host, s.alloc_size(), Placement::System, what)?;
            let (event, payload) = (desc.error.event_id, desc.error.payload_address);
            let written = b.mapping().map_or(Err(Errno::EFAULT), |m| {
                write_context_save_headers(m, 0, &s, event, payload)
            });
            parts.cwsr = Some(b);
            written.map_err(|e| QueueError::Memory { what, error: DeviceError::Platform(e) })?;
        }
        if desc.queue_type == QueueType::ComputeAql {
            match (parts.ring.as_ref().and_then(QueueBuffer::mapping), &user_ring) {
                (Some(m), _) | (None, Some(m)) => init_aql_ring(m, ring_size),
                _ => {}
            }
        }
        let (eop_address, eop_len) = parts.eop.as_ref().map_or((0, 0), |b| (b.addr(), eop_size));
        let ctx_address = parts.cwsr.as_ref().map_or(0, QueueBuffer::addr);
        let mut args = kfd_ioctl_create_queue_args {
            ring_base_address: ring_address,
            write_pointer_address: write_pointer,
            read_pointer_address: read_pointer,
            ring_size: u32::try_from(ring_size).unwrap_or(u32::MAX),
            gpu_id: gpu,
            queue_type: desc.queue_type.kfd_type(),
            queue_percentage: desc.percentage,
            queue_priority: desc.priority.kfd_priority(),
            eop_buffer_address: eop_address,
            eop_buffer_size: eop_len,
            ctx_save_restore_address: ctx_address,
            ctx_save_restore_size: sizes.map_or(0, |s| s.ctx_save_restore_size),
            ctl_stack_size: sizes.map_or(0, |s| s.ctl_stack_size),
            sdma_engine_id: match desc.queue_type {
                QueueType::SdmaEngine(id) => id,
                _ => 0,
            },
            ..Default::default()
        };
        self.ioctl(&mut Ioctl::CreateQueue(&mut args))?;
        let queue_id = args.queue_id;
        let loc = doorbell_location(f.gfx(), args.doorbell_offset, queue_id);
        let doorbell = match self.doorbell_page(f, loc.mmap_offset) {
            Ok(d) => d,
            Err(e) => {
                let mut d = kfd_ioctl_destroy_queue_args { queue_id, pad: 0 };
                let _ = self.ioctl(&mut Ioctl::DestroyQueue(&mut d));
                return Err(e);
            }
        };
        let info = QueueInfo {
            handle,
            queue_id,
            node: desc.node,
            gpu_id: gpu,
            queue_type: desc.queue_type,
            ring_address,
            ring_size,
            active: desc.percentage > 0 && ring_address != 0,
            read_pointer,
            write_pointer,
            doorbell_address: doorbell.addr().saturating_add(loc.offset_in_page),
            eop: (eop_address, eop_len),
            ctx_save_address: ctx_address,
            ctx_save_sizes: sizes,
            percentage: desc.percentage,
            priority: desc.priority,
            cu_mask_bits: 0,
            gws: None,
        };
        let record = QueueRecord {
            info,
            gfx: f.gfx(),
            kernel_ring: (ring_address, ring_size),
            user_ring,
            parts: Parts::new(),
            doorbell,
            doorbell_offset: loc.offset_in_page as usize,
        };
        Ok((info, record))
    }
}
