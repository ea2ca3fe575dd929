//! Core's logging shim under the `log` feature (this crate's dev-dependencies turn it on): a
//! topology warning, a failed queue creation and a retried ioctl reach the installed logger.

use std::sync::Mutex;

use firmware_tests::{opened, sim};
use hsakmt_core::device::queue_manager::{QueueDesc, QueueType};
use hsakmt_core::error::Errno;
use hsakmt_core::platform::{Host, Sysfs, SysfsDir, SysfsFile};
use hsakmt_core::topology::{READ_BUFFER, Topology};
use log::{Level, LevelFilter, Log, Metadata, Record};

/// Every record logged, as `(level, target, message)`.
static RECORDS: Mutex<Vec<(Level, String, String)>> = Mutex::new(Vec::new());

struct Capture;

impl Log for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &Record<'_>) {
        let entry = (record.level(), record.target().to_string(), record.args().to_string());
        RECORDS.lock().unwrap().push(entry);
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture;

fn install() {
    // Each test installs the same logger; the first call wins, later ones are refused.
    let _ = log::set_logger(&CAPTURE);
    log::set_max_level(LevelFilter::Trace);
}

fn logged(level: Level, needle: &str) -> bool {
    RECORDS
        .lock()
        .unwrap()
        .iter()
        .any(|(l, target, msg)| *l == level && target == "hsakmt" && msg.contains(needle))
}

/// One CPU node whose `properties` file has a value that is not a number.
struct Garbled;

impl Sysfs for Garbled {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        let data: &[u8] = match file {
            SysfsFile::GenerationId => b"1\n",
            SysfsFile::GpuId(_) => b"0\n",
            SysfsFile::NodeProperties(_) => {
                b"cpu_cores_count 4\nsimd_count 0\nmax_slots_scratch_cu x7\n"
            }
            _ => b"",
        };
        let n = data.len().min(buf.len());
        buf[..n].copy_from_slice(&data[..n]);
        Ok(n)
    }
    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        match dir {
            SysfsDir::Nodes => {
                out[0] = 0;
                Ok(1)
            }
            SysfsDir::Entries { .. } => Ok(0),
        }
    }
}

impl Host for Garbled {
    fn now_ns(&self) -> u64 {
        0
    }
    fn process_id(&self) -> u32 {
        1
    }
    fn env_var(&self, _: &str, _: &mut [u8]) -> Option<usize> {
        None
    }
}

#[test]
fn topology_warnings_are_logged() {
    install();
    let mut topo: Box<Topology> = Box::new(const { Topology::new() });
    let mut buf = vec![0u8; READ_BUFFER];
    topo.refresh(&Garbled, &Garbled, &mut buf).expect("a snapshot with a warning");
    let warning = topo.warnings().first().expect("the malformed value is a warning").to_string();
    assert!(logged(Level::Warn, &format!("topology: {warning}")), "{:?}", RECORDS.lock());
}

#[test]
fn failed_queue_creation_is_logged() {
    install();
    let kfd = opened(sim("mi210-8gpu-2hive"));
    let desc = QueueDesc::<hsakmt_sim::SimMapping>::new(9999, QueueType::ComputeAql, 4096);
    let err = kfd.create_queue(&desc).expect_err("no node 9999");
    let want = format!("queue creation on node 9999 failed: {err:?}");
    assert!(logged(Level::Warn, &want), "{:?}", RECORDS.lock());
}
