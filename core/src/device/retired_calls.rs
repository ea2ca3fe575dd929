//! Calls of libhsakmt's header that upstream no longer implements, answered as upstream
//! answers them (`memory.c`): `hsaKmtProcessVMRead` and `hsaKmtProcessVMWrite` ("deprecated",
//! `HSAKMT_STATUS_NOT_IMPLEMENTED`) and `hsaKmtMapGraphicHandle` (Kaveri graphics interop,
//! never upstream: `NOT_IMPLEMENTED`). They touch no memory and no device.

use super::{Error, Kfd};
use crate::device::MemoryStorage;
use crate::platform::Platform;

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// `hsaKmtProcessVMRead`: reading another process's memory through the thunk is gone.
    ///
    /// # Errors
    /// Always [`Error::NotImplemented`].
    pub fn process_vm_read(&self, _pid: u32) -> Result<u64, Error> {
        Err(Error::NotImplemented { call: "hsaKmtProcessVMRead" })
    }

    /// `hsaKmtProcessVMWrite`: writing another process's memory through the thunk is gone.
    ///
    /// # Errors
    /// Always [`Error::NotImplemented`].
    pub fn process_vm_write(&self, _pid: u32) -> Result<u64, Error> {
        Err(Error::NotImplemented { call: "hsaKmtProcessVMWrite" })
    }

    /// `hsaKmtMapGraphicHandle`: mapping a graphics driver handle (Kaveri only).
    ///
    /// # Errors
    /// Always [`Error::NotImplemented`].
    pub fn map_graphic_handle(&self, _node: u32, _graphic_handle: u64) -> Result<u64, Error> {
        Err(Error::NotImplemented { call: "hsaKmtMapGraphicHandle" })
    }
}
