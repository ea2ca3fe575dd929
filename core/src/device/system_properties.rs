//! `hsaKmtAcquireSystemProperties` / `hsaKmtReleaseSystemProperties`: the topology snapshot is
//! taken at open; releasing it and acquiring again re-reads the tree, so a GPU that was hot
//! plugged, repartitioned or hidden meanwhile shows up — as libhsakmt's acquire retakes the
//! snapshot (`topology_take_snapshot`, with its `generation_id` check before and after).
//!
//! The snapshot is re-read in place. When the tree's `generation_id` is unchanged the GPUs are
//! the same and the library's state stays valid. When it changed, the memory manager is set up
//! again for the new GPUs — which is only possible while the process holds nothing on the old
//! ones (no queue, event or memory object); otherwise the acquire fails with
//! [`Error::TopologyChanged`] and the old snapshot stays: close the device (every open) and
//! open it again.

use core::borrow::BorrowMut;
use core::sync::atomic::{AtomicBool, Ordering};

use super::{Error, Kfd};
use crate::device::MemoryStorage;
use crate::platform::{Platform, SysfsFile};
use crate::topology::{READ_BUFFER, Topology};

/// Whether the snapshot was released (`hsaKmtReleaseSystemProperties`).
#[derive(Debug)]
pub(crate) struct Released(AtomicBool);

impl Released {
    pub(crate) const fn new() -> Self {
        Self(AtomicBool::new(false))
    }
}

/// What an acquire did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Acquired {
    /// The snapshot was held (no release since it was taken): nothing was read.
    Held,
    /// The snapshot was re-read; `generation_id` had not changed.
    Reread,
    /// The snapshot was re-read for a changed tree and the memory manager set up again.
    Changed,
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// `hsaKmtReleaseSystemProperties`: the next [`Kfd::acquire_system_properties`] re-reads
    /// the topology. The library's own calls keep using the snapshot until then.
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn release_system_properties(&self) -> Result<(), Error> {
        self.check_open()?;
        self.system_released.0.store(true, Ordering::Release);
        Ok(())
    }

    pub(crate) fn system_released_reset(&self) {
        self.system_released.0.store(false, Ordering::Release);
    }

    /// `hsaKmtAcquireSystemProperties`: after a release, re-reads the topology (see the
    /// module docs); else keeps the held snapshot.
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`]; [`Error::TopologyChanged`] when the tree
    /// changed while the process holds queues, events or memory; [`Error::Topology`] when
    /// the tree cannot be read (the snapshot is then empty until the next acquire); errors of
    /// setting the memory manager up again (the properties stay released, the snapshot empty,
    /// and the next acquire sets the memory manager up once more).
    pub fn acquire_system_properties(&self) -> Result<Acquired, Error> {
        let _guard = self.lifecycle.lock();
        self.check_open()?;
        if !self.system_released.0.load(Ordering::Acquire) {
            return Ok(Acquired::Held);
        }
        let held_generation = self.read_topology(Topology::generation_id);
        let now = self.current_generation();
        let changed = now != held_generation;
        if changed {
            let holds =
                self.queue_count() > 0 || self.event_count() > 0 || self.memory_usage().objects > 0;
            if holds {
                return Err(Error::TopologyChanged { held: held_generation, now });
            }
        }
        let mut buf = [0u8; READ_BUFFER];
        let mut topology = self.topology.write();
        let refreshed = (*topology).borrow_mut().refresh_visible(
            &self.platform,
            &self.platform,
            &self.platform,
            &mut buf,
        );
        drop(topology);
        refreshed?;
        if changed {
            let reset = self.close_memory().and_then(|()| self.open_memory());
            if let Err(e) = reset {
                self.forget_memory();
                // An empty snapshot has no generation: the next acquire sets memory up again.
                (*self.topology.write()).borrow_mut().clear();
                return Err(e);
            }
        }
        self.system_released.0.store(false, Ordering::Release);
        Ok(if changed { Acquired::Changed } else { Acquired::Reread })
    }

    /// The tree's `generation_id` now (`None` when it cannot be read).
    fn current_generation(&self) -> Option<u32> {
        let mut buf = [0u8; 32];
        let read = self.platform.read_file(SysfsFile::GenerationId, &mut buf);
        self.platform.walk_done();
        let n = read.ok()?;
        let text = core::str::from_utf8(buf.get(..n)?).ok()?;
        text.trim().parse().ok()
    }
}
