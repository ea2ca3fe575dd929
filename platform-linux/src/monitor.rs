//! [`EventMonitor`]: a thread that runs a device's event callbacks as events fire — the
//! asynchronous counterpart of [`Kfd::poll`].
//!
//! It lives here, in the one crate with `std` that every platform shares, and is generic over
//! the platform, so the Linux platform and the simulator (and any other) use the same monitor.
//! Core cannot own a thread; all it needs from the monitor is a loop around [`Kfd::poll`] and a
//! wake event, which core sets whenever callbacks are registered or unregistered so the thread
//! rebuilds its wait at once.

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use hsakmt_core::device::{
    DEFAULT_MEMORY_OBJECTS, Error, EventDescriptor, Inline, Kfd, MemoryStorage,
};
use hsakmt_core::event::{EventHandle, Timeout};
use hsakmt_core::platform::Platform;

/// How long the monitor pauses after a failed wait before it waits again.
pub const RETRY_PAUSE: Duration = Duration::from_millis(1);

/// The monitor thread's stack unless told otherwise (callbacks run on it).
pub const DEFAULT_STACK: usize = 256 * 1024;

/// Why a monitor could not start.
#[derive(Debug)]
pub enum MonitorError {
    /// The device refused the wake event.
    Device(Error),
    /// The thread could not be spawned.
    Spawn(std::io::Error),
}

impl core::fmt::Display for MonitorError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Device(e) => write!(f, "cannot create the monitor's wake event: {e}"),
            Self::Spawn(e) => write!(f, "cannot start the event monitor thread: {e}"),
        }
    }
}

impl std::error::Error for MonitorError {}

/// What the monitor thread did.
#[derive(Debug, Default)]
pub struct MonitorStats {
    /// Completed waits.
    pub waits: AtomicU64,
    /// Callback calls.
    pub calls: AtomicU64,
    /// Waits that failed (for example because an event was destroyed while watched).
    pub errors: AtomicU64,
}

/// A thread dispatching the callbacks of one device (see the module docs).
///
/// Dropping the monitor stops it (waiting for a running callback to return).
pub struct EventMonitor<
    P: Platform,
    K: Deref<Target = Kfd<P, S>>,
    S: MemoryStorage<P::Mapping> = Inline<DEFAULT_MEMORY_OBJECTS>,
> {
    kfd: K,
    wake: EventHandle,
    stop: Arc<AtomicBool>,
    stats: Arc<MonitorStats>,
    thread: Option<JoinHandle<Result<(), Error>>>,
}

impl<P: Platform, K: Deref<Target = Kfd<P, S>>, S: MemoryStorage<P::Mapping>> core::fmt::Debug
    for EventMonitor<P, K, S>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("EventMonitor")
            .field("wake", &self.wake)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<P, K, S> EventMonitor<P, K, S>
where
    P: Platform + 'static,
    K: Deref<Target = Kfd<P, S>> + Clone + Send + 'static,
    S: MemoryStorage<P::Mapping> + 'static,
{
    /// Starts a monitor for the (open) device `kfd` — an `Arc<Kfd<P>>` or a `&'static Kfd<P>`.
    /// It creates one signal event to wake itself and names it the device's dispatch wake
    /// event; only one monitor per device makes sense.
    ///
    /// # Errors
    /// [`MonitorError::Device`] when the wake event cannot be created,
    /// [`MonitorError::Spawn`] when the thread cannot be started (nothing is left behind).
    pub fn start(kfd: K) -> Result<Self, MonitorError> {
        Self::start_with_stack(kfd, DEFAULT_STACK)
    }

    /// As [`EventMonitor::start`], with the thread's stack size in bytes (callbacks run on it).
    ///
    /// # Errors
    /// As [`EventMonitor::start`].
    pub fn start_with_stack(kfd: K, stack: usize) -> Result<Self, MonitorError> {
        let wake = kfd.create_event(&EventDescriptor::signal()).map_err(MonitorError::Device)?;
        kfd.set_dispatch_wake(Some(wake));
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(MonitorStats::default());
        let (k, s, st) = (kfd.clone(), stop.clone(), stats.clone());
        let spawned = std::thread::Builder::new()
            .name("hsakmt-events".into())
            .stack_size(stack)
            .spawn(move || run(&k, &s, &st));
        match spawned {
            Ok(thread) => Ok(Self { kfd, wake, stop, stats, thread: Some(thread) }),
            Err(e) => {
                kfd.set_dispatch_wake(None);
                let _ = kfd.destroy_event(wake);
                Err(MonitorError::Spawn(e))
            }
        }
    }

    /// What the thread has done so far.
    #[must_use]
    pub fn stats(&self) -> &MonitorStats {
        &self.stats
    }

    /// Whether the thread is still running (it ends by itself when the device closes).
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// The monitor's wake event.
    #[must_use]
    pub fn wake_event(&self) -> EventHandle {
        self.wake
    }

    /// Stops the thread, waits for it, and destroys the wake event. Returns the error that
    /// ended the thread early, if any (the device was closed under it).
    ///
    /// # Errors
    /// As described.
    pub fn stop(mut self) -> Result<(), Error> {
        self.shutdown()
    }
}

impl<P: Platform, K: Deref<Target = Kfd<P, S>>, S: MemoryStorage<P::Mapping>>
    EventMonitor<P, K, S>
{
    fn shutdown(&mut self) -> Result<(), Error> {
        let Some(thread) = self.thread.take() else { return Ok(()) };
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.kfd.set_event(self.wake);
        let result = thread.join().unwrap_or(Ok(()));
        self.kfd.set_dispatch_wake(None);
        let _ = self.kfd.destroy_event(self.wake);
        result
    }
}

impl<P: Platform, K: Deref<Target = Kfd<P, S>>, S: MemoryStorage<P::Mapping>> Drop
    for EventMonitor<P, K, S>
{
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

fn run<P: Platform, S: MemoryStorage<P::Mapping>>(
    kfd: &Kfd<P, S>,
    stop: &AtomicBool,
    stats: &MonitorStats,
) -> Result<(), Error> {
    while !stop.load(Ordering::SeqCst) {
        match kfd.poll(Timeout::Infinite) {
            Ok(d) => {
                stats.waits.fetch_add(1, Ordering::Relaxed);
                stats.calls.fetch_add(d.calls as u64, Ordering::Relaxed);
            }
            // The device is gone (closed, or this is a forked child): nothing more to watch.
            Err(e @ (Error::NotOpened | Error::ForkedChild)) => return Err(e),
            Err(_) => {
                stats.errors.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(RETRY_PAUSE);
            }
        }
    }
    Ok(())
}
