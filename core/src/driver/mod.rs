//! The driver abstraction layer: what an HSA-style runtime sees above any device driver —
//! agents and their memory regions, detection and a selection policy — plus the performance
//! helpers the design calls for (a sub-allocating pool for small objects).
//!
//! - [`api`]: the object-safe [`Driver`] trait: memory, queues, signals, events, clocks.
//! - [`registry`]: detection — every candidate initialised, failures kept with their
//!   reason — and lookup.
//! - [`agent`]: agents (identity = driver + node) and regions, derived from a topology.
//! - [`policy`]: choosing a driver explicitly, by `HSAKMT_DRIVER`, GPU-first,
//!   performance-first or feature-first, with the reason.
//! - [`pool`]: bounded-time sub-allocation of small objects out of one large buffer.
//! - [`executable`]: code objects loaded through a driver, their kernels resolved by name.

pub mod agent;
pub mod api;
pub mod executable;
pub mod kfd_driver;
pub mod policy;
pub mod pool;
pub mod registry;

pub use agent::{
    AgentFeatures, AgentId, AgentInfo, AgentKind, DriverId, RegionId, RegionInfo, RegionKind,
    regions_of,
};
pub use api::{
    Agents, Buffer, Capabilities, ClockCounters, CodeImage, Driver, DriverError, EventId,
    Producers, QueueErrorCallback, QueueId, QueueParams, Regions, SignalId, SystemInfo, Waited,
    agents, for_each_agent,
};
pub use executable::Executable;
pub use kfd_driver::KfdDriver;
pub use policy::{Choice, DriverKind, DriverSummary, Policy, PolicyError, Reason, choose};
pub use pool::{InlineSubAllocator, SubAllocator};
pub use registry::{Detection, Registry};
