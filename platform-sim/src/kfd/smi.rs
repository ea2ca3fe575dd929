//! SMI events (`kfd_smi_events.c`): `AMDKFD_IOC_SMI_EVENTS` opens a client on one GPU, whose
//! FIFO receives one text line per event its mask enables, formatted as the kernel formats
//! them (`"%x "` of the event id, then the `KFD_EVENT_FMT_*` body; at most
//! `KFD_SMI_EVENT_MSG_SIZE` - 1 bytes). An event of a process reaches only clients that
//! process opened (the simulated process is not privileged, so `KFD_SMI_EVENT_ALL_PROCESS`
//! changes nothing); device-wide events (GPU resets, pid 0) reach every client of the device.
//!
//! The simulator raises: `VMFAULT` when a queue faults on memory or a fault is injected,
//! `GPU_PRE_RESET`/`GPU_POST_RESET` when a GPU resets (a hung queue that could not be preempted,
//! or an injected reset), `QUEUE_EVICTION`/`QUEUE_RESTORE` when the process's queues are evicted
//! and restored ([`crate::SimPlatform::evict_queues`]), and `MIGRATE_START`/`MIGRATE_END` when
//! an SVM prefetch moves a range to another location.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use hsakmt_core::uapi::{
    KFD_SMI_EVENT_GPU_POST_RESET, KFD_SMI_EVENT_GPU_PRE_RESET, KFD_SMI_EVENT_MASK_FROM_INDEX,
    KFD_SMI_EVENT_MIGRATE_END, KFD_SMI_EVENT_MIGRATE_START, KFD_SMI_EVENT_MSG_SIZE,
    KFD_SMI_EVENT_QUEUE_EVICTION, KFD_SMI_EVENT_QUEUE_RESTORE, KFD_SMI_EVENT_VMFAULT,
};

use super::files::SmiClient;
use super::lock;

/// What moved in a migration (`KFD_EVENT_FMT_MIGRATE_START`/`END`), in pages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    pub(crate) pid: u32,
    /// First page.
    pub(crate) start: u64,
    /// Pages.
    pub(crate) pages: u64,
    /// gpu_id the pages come from, 0 for system memory.
    pub(crate) from: u32,
    /// gpu_id they go to, 0 for system memory.
    pub(crate) to: u32,
    pub(crate) prefetch_loc: u32,
    pub(crate) preferred_loc: u32,
    /// `KFD_MIGRATE_TRIGGER_*`.
    pub(crate) trigger: u32,
}

/// The SMI clients of every GPU and the per-GPU reset sequence numbers.
#[derive(Debug)]
pub(crate) struct Smi {
    clients: Mutex<Vec<Weak<SmiClient>>>,
    reset_seq: Mutex<Vec<(u32, u32)>>,
    epoch: Instant,
}

impl Smi {
    pub(crate) fn new() -> Self {
        Smi {
            clients: Mutex::new(Vec::new()),
            reset_seq: Mutex::new(Vec::new()),
            epoch: Instant::now(),
        }
    }

    /// `kfd_smi_event_open`: a new client of `gpu_id` opened by process `pid`, with no event
    /// enabled.
    pub(crate) fn open(&self, gpu_id: u32, pid: u32) -> Arc<SmiClient> {
        let c = Arc::new(SmiClient::new(gpu_id, pid));
        let mut clients = lock(&self.clients);
        clients.retain(|w| w.strong_count() > 0);
        clients.push(Arc::downgrade(&c));
        c
    }

    /// Clients still open.
    pub(crate) fn open_clients(&self) -> usize {
        lock(&self.clients).iter().filter(|w| w.strong_count() > 0).count()
    }

    /// The boot-time clock the kernel stamps events with, in ns.
    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// `kfd_smi_event_add`: formats the line and queues it on every client of `gpu_id` that
    /// enabled `event` and may see events of `pid` (0: every process).
    fn add(&self, pid: u32, gpu_id: u32, event: u32, body: std::fmt::Arguments<'_>) {
        let clients: Vec<Arc<SmiClient>> =
            lock(&self.clients).iter().filter_map(Weak::upgrade).collect();
        if clients.is_empty() {
            return;
        }
        let mut line = String::with_capacity(KFD_SMI_EVENT_MSG_SIZE as usize);
        let _ = write!(line, "{event:x} ");
        let _ = line.write_fmt(body);
        // snprintf into a KFD_SMI_EVENT_MSG_SIZE buffer keeps the first MSG_SIZE - 1 bytes.
        let max = KFD_SMI_EVENT_MSG_SIZE as usize - 1;
        let mut bytes = line.into_bytes();
        bytes.truncate(max);
        let mask = KFD_SMI_EVENT_MASK_FROM_INDEX(event);
        for c in clients {
            let enabled = c.events.load(std::sync::atomic::Ordering::Acquire) & mask != 0;
            if c.gpu_id == gpu_id && enabled && (pid == 0 || c.pid == pid) {
                // A full FIFO drops the event ("no space left").
                let _ = c.fifo.push_all(&bytes);
            }
        }
    }

    /// `kfd_smi_event_update_vmfault`: a VM fault of process `pid` (`task` its name).
    pub(crate) fn vm_fault(&self, gpu_id: u32, pid: u32, task: &str) {
        self.add(0, gpu_id, KFD_SMI_EVENT_VMFAULT, format_args!("{pid:x}:{task}\n"));
    }

    /// `kfd_smi_event_update_gpu_reset`: before a reset the device's sequence number advances;
    /// both events carry it and the cause.
    pub(crate) fn gpu_reset(&self, gpu_id: u32, post: bool, cause: &str) {
        let seq = {
            let mut seqs = lock(&self.reset_seq);
            let i = match seqs.iter().position(|(g, _)| *g == gpu_id) {
                Some(i) => i,
                None => {
                    seqs.push((gpu_id, 0));
                    seqs.len() - 1
                }
            };
            let entry = &mut seqs[i];
            if !post {
                entry.1 = entry.1.wrapping_add(1);
            }
            entry.1
        };
        let event = if post { KFD_SMI_EVENT_GPU_POST_RESET } else { KFD_SMI_EVENT_GPU_PRE_RESET };
        self.add(0, gpu_id, event, format_args!("{seq:x} {cause}\n"));
    }

    /// `kfd_smi_event_queue_eviction`.
    pub(crate) fn queue_eviction(&self, gpu_id: u32, pid: u32, trigger: u32) {
        let ns = self.now_ns();
        self.add(
            pid,
            gpu_id,
            KFD_SMI_EVENT_QUEUE_EVICTION,
            format_args!("{ns} -{pid} {gpu_id:x} {trigger}\n"),
        );
    }

    /// `kfd_smi_event_queue_restore`; `rescheduled` when the restore failed and was retried.
    pub(crate) fn queue_restore(&self, gpu_id: u32, pid: u32, rescheduled: bool) {
        let ns = self.now_ns();
        // `%c` of the flag: 'R', or 0 (a NUL byte) when not rescheduled.
        let r = if rescheduled { 'R' } else { '\0' };
        self.add(
            pid,
            gpu_id,
            KFD_SMI_EVENT_QUEUE_RESTORE,
            format_args!("{ns} -{pid} {gpu_id:x} {r}\n"),
        );
    }

    /// `kfd_smi_event_migration_start` on device `gpu_id`.
    pub(crate) fn migration_start(&self, gpu_id: u32, m: &Migration) {
        let ns = self.now_ns();
        self.add(
            m.pid,
            gpu_id,
            KFD_SMI_EVENT_MIGRATE_START,
            format_args!(
                "{ns} -{} @{:x}({:x}) {:x}->{:x} {:x}:{:x} {}\n",
                m.pid, m.start, m.pages, m.from, m.to, m.prefetch_loc, m.preferred_loc, m.trigger
            ),
        );
    }

    /// `kfd_smi_event_migration_end` on device `gpu_id`, with its error code (0: none).
    pub(crate) fn migration_end(&self, gpu_id: u32, m: &Migration, error: i32) {
        let ns = self.now_ns();
        self.add(
            m.pid,
            gpu_id,
            KFD_SMI_EVENT_MIGRATE_END,
            format_args!(
                "{ns} -{} @{:x}({:x}) {:x}->{:x} {} {error}\n",
                m.pid, m.start, m.pages, m.from, m.to, m.trigger
            ),
        );
    }
}

/// The simulated process's name, as the kernel's `task->comm` (at most 15 bytes).
pub(crate) fn task_name() -> String {
    let name = std::fs::read_to_string("/proc/self/comm").unwrap_or_else(|_| "hsakmt".into());
    let mut n: String = name.trim_end().chars().take(15).collect();
    if n.is_empty() {
        n.push_str("hsakmt");
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kfd::files::{Files, SMI_FIFO_SIZE};
    use hsakmt_core::error::Errno;
    use std::sync::atomic::Ordering;

    /// Everything the client's stream holds, read the way user space reads it.
    fn drain(c: &Arc<SmiClient>) -> Vec<u8> {
        let files = Files::default();
        let fd = files.smi(c.clone());
        let mut out = Vec::new();
        let mut buf = [0u8; 256];
        loop {
            match files.read(fd, &mut buf) {
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => {
                    assert_eq!(e, Errno::EAGAIN);
                    return out;
                }
            }
        }
    }

    #[test]
    fn events_reach_the_clients_that_enabled_them() {
        let smi = Smi::new();
        let a = smi.open(5, 100);
        let b = smi.open(5, 200);
        let other = smi.open(6, 100);
        let mask = KFD_SMI_EVENT_MASK_FROM_INDEX(KFD_SMI_EVENT_GPU_PRE_RESET)
            | KFD_SMI_EVENT_MASK_FROM_INDEX(KFD_SMI_EVENT_QUEUE_EVICTION);
        for c in [&a, &b, &other] {
            c.events.store(mask, Ordering::Release);
        }
        smi.gpu_reset(5, false, "GPU_HANG");
        // Post reset is not enabled.
        smi.gpu_reset(5, true, "GPU_HANG");
        smi.queue_eviction(5, 100, 3);
        let text = String::from_utf8(drain(&a)).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("3 1 GPU_HANG"));
        let ev = lines.next().unwrap();
        assert!(ev.starts_with("9 ") && ev.ends_with(" -100 5 3"), "{ev}");
        assert_eq!(lines.next(), None);
        // Another process's client sees the reset (pid 0) but not the eviction.
        assert_eq!(String::from_utf8(drain(&b)).unwrap(), "3 1 GPU_HANG\n");
        // Another device's client sees nothing.
        assert!(drain(&other).is_empty());
        // The next reset advances the device's sequence number.
        smi.gpu_reset(5, false, "RAS");
        assert_eq!(String::from_utf8(drain(&a)).unwrap(), "3 2 RAS\n");
    }

    #[test]
    fn lines_are_cut_at_the_message_size_and_dropped_when_the_fifo_is_full() {
        let smi = Smi::new();
        let c = smi.open(1, 7);
        c.events.store(u64::MAX, Ordering::Release);
        let long = "x".repeat(200);
        smi.vm_fault(1, 7, &long);
        let line = drain(&c);
        assert_eq!(line.len(), KFD_SMI_EVENT_MSG_SIZE as usize - 1);
        assert!(line.starts_with(b"1 7:xxx"));
        for _ in 0..200 {
            smi.vm_fault(1, 7, "app");
        }
        let all = drain(&c);
        assert_eq!(all.len(), SMI_FIFO_SIZE / 8 * 8);
        assert!(all.split(|b| *b == b'\n').filter(|l| !l.is_empty()).all(|l| l == b"1 7:app"));
        drop(c);
        assert_eq!(smi.open_clients(), 0);
    }
}
