//! The one device of the process: the device facade over the real `/dev/kfd`
//! ([`LinuxPlatform`]) or over the embedded simulator ([`SimPlatform`]), chosen at the first
//! `hsaKmtOpenKFD` from the environment:
//!
//! - `HSAKMT_DRIVER` unset or `kfd`: the real device;
//! - `HSAKMT_DRIVER=sim`: the simulator, over `HSAKMT_SIM_SYSFS=<topology dir>` when set, else
//!   the embedded profile `HSAKMT_SIM_PROFILE=<name>` (default `mi308x-8gpu-cpx`);
//! - set to anything else (empty, `host`, unknown, not UTF-8): an error, so `hsaKmtOpenKFD`
//!   fails — the `hsakmt` tool's rule (names case-insensitive, surrounding blanks ignored).
//!
//! The facade is generic over its platform; the C library holds it as [`Device`], an enum of the
//! two concrete facades, and every exported function dispatches once with [`with_kfd!`] into
//! code monomorphised for each. The real path pays one predictable branch per call and nothing
//! inside it.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, Ordering};

use hsakmt_core::device::Kfd;
use hsakmt_core::driver::DriverKind;
use hsakmt_core::driver::policy::DRIVER_ENV;
use hsakmt_linux::{BoxedMemory, LinuxPlatform, boxed_tables};
use hsakmt_sim::{Profile, SimPlatform};

use crate::config;

/// The facade over the real kernel.
pub(crate) type LinuxKfd = Kfd<LinuxPlatform, BoxedMemory>;
/// The facade over the simulator.
pub(crate) type SimKfd = Kfd<SimPlatform, BoxedMemory>;

/// The device of the process.
pub(crate) enum Device {
    /// `/dev/kfd`.
    Linux(Box<LinuxKfd>),
    /// The embedded simulator.
    Sim(Box<SimKfd>),
}

/// Runs `$body` with `$k` bound to the device's facade, whichever platform it has.
macro_rules! with_kfd {
    ($dev:expr, $k:ident => $body:expr) => {
        match $dev {
            $crate::device::Device::Linux($k) => $body,
            $crate::device::Device::Sim($k) => $body,
        }
    };
}
pub(crate) use with_kfd;

/// The device, once built (never freed: C callers may hold its memory for the whole process).
static DEVICE: AtomicPtr<Device> = AtomicPtr::new(core::ptr::null_mut());

/// Serialises building the device.
static BUILD: Mutex<()> = Mutex::new(());

/// The device, if an open built it.
#[inline]
pub(crate) fn device() -> Option<&'static Device> {
    let p = DEVICE.load(Ordering::Acquire);
    // SAFETY: `DEVICE` is null or a pointer from `Box::into_raw` in `device_or_build`, stored
    // once and never freed or replaced, so it is valid for the rest of the process.
    unsafe { p.as_ref() }
}

/// The device, building it from the environment at the first call.
///
/// # Errors
/// What is wrong with the environment (an unknown `HSAKMT_DRIVER`, an unknown profile, an
/// unreadable topology directory).
pub(crate) fn device_or_build() -> Result<&'static Device, String> {
    if let Some(d) = device() {
        return Ok(d);
    }
    let _guard = BUILD.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(d) = device() {
        return Ok(d);
    }
    let spec = Spec::from_env()?;
    // The facade keeps its tables (memory manager, topology snapshot, queues and events) on the
    // heap, so it is built on the caller's thread whatever its stack.
    let built = spec.build()?;
    DEVICE.store(Box::into_raw(Box::new(built)), Ordering::Release);
    device().ok_or_else(|| "the device vanished".to_owned())
}

/// A choice made in-process ([`choose_simulator`]), taking precedence over the environment.
static CHOSEN: Mutex<Option<String>> = Mutex::new(None);

/// Chooses the simulator over embedded profile `profile` for the device (see
/// [`crate::inproc::use_simulator`]).
pub(crate) fn choose_simulator(profile: &str) -> Result<(), String> {
    let _guard = BUILD.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if device().is_some() {
        return Err("the library's device was built already (opened before)".to_owned());
    }
    Profile::embedded(profile).map_err(|e| format!("profile {profile}: {e}"))?;
    *CHOSEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(profile.to_owned());
    Ok(())
}

/// The driver a value of `HSAKMT_DRIVER` names, by the rule the `hsakmt` tool applies
/// ([`DriverKind::parse`]: ASCII case-insensitive, surrounding blanks ignored): unset is `kfd`;
/// a set value must name a driver — empty, unknown or non-UTF-8 values are errors, never taken
/// for "unset".
fn driver(value: Option<&OsStr>) -> Result<DriverKind, String> {
    let Some(value) = value else { return Ok(DriverKind::Kfd) };
    let bytes = value.as_encoded_bytes();
    DriverKind::parse(bytes).map_err(|_| {
        if bytes.is_empty() {
            format!("{DRIVER_ENV} is set but empty: set it to `kfd` or `sim`, or unset it")
        } else {
            format!(
                "{DRIVER_ENV}=\"{}\" names no driver: this library drives `kfd` or `sim`",
                bytes.escape_ascii()
            )
        }
    })
}

/// What the environment (or [`choose_simulator`]) asks for.
enum Spec {
    Linux,
    Sim(Profile),
}

impl Spec {
    fn from_env() -> Result<Self, String> {
        if let Some(name) = CHOSEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
        {
            return Ok(Self::Sim(Profile::embedded(&name).map_err(|e| e.to_string())?));
        }
        match driver(std::env::var_os(DRIVER_ENV).as_deref())? {
            DriverKind::Kfd => Ok(Self::Linux),
            DriverKind::Sim => {
                let profile = if let Some(dir) = std::env::var_os("HSAKMT_SIM_SYSFS") {
                    Profile::from_dir(Path::new(&dir)).map_err(|e| {
                        format!("HSAKMT_SIM_SYSFS={}: {e}", Path::new(&dir).display())
                    })?
                } else if let Ok(name) = std::env::var("HSAKMT_SIM_PROFILE") {
                    Profile::embedded(&name).map_err(|e| format!("HSAKMT_SIM_PROFILE: {e}"))?
                } else {
                    Profile::default_profile()
                };
                Ok(Self::Sim(profile))
            }
            DriverKind::Host => Err(format!(
                "{DRIVER_ENV}=host: the host-CPU driver has no KFD interface; this library drives \
                 `kfd` or `sim`"
            )),
        }
    }

    fn build(self) -> Result<Device, String> {
        let objects = config::MEMORY_OBJECTS;
        Ok(match self {
            Self::Linux => Device::Linux(Box::new(Kfd::with_memory(
                LinuxPlatform::new(),
                boxed_tables(objects),
            ))),
            Self::Sim(profile) => {
                let sim = SimPlatform::builder().profile(profile).inherit_env(true).build();
                Device::Sim(Box::new(Kfd::with_memory(sim, boxed_tables(objects))))
            }
        })
    }
}

/// `HSAKMT_DEBUG_LEVEL` (upstream's logging switch), read once.
pub(crate) fn debug_level() -> i32 {
    static LEVEL: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(|| {
        std::env::var("HSAKMT_DEBUG_LEVEL").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(-1)
    })
}

/// Prints an error to stderr when `HSAKMT_DEBUG_LEVEL` asks for errors.
macro_rules! log_err {
    ($($arg:tt)*) => {
        if $crate::device::debug_level() >= $crate::config::DEBUG_LEVEL_ERR {
            eprintln!("hsakmt-rs: {}", format_args!($($arg)*));
        }
    };
}
pub(crate) use log_err;

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    #[test]
    fn a_set_driver_variable_must_name_a_driver_of_this_library() {
        assert_eq!(driver(None), Ok(DriverKind::Kfd));
        assert_eq!(driver(Some(OsStr::new("kfd"))), Ok(DriverKind::Kfd));
        assert_eq!(driver(Some(OsStr::new(" Sim\n"))), Ok(DriverKind::Sim));
        let empty = driver(Some(OsStr::new(""))).unwrap_err();
        assert!(empty.contains("set but empty"), "{empty}");
        let bytes = driver(Some(OsStr::from_bytes(b"s\xffm"))).unwrap_err();
        assert!(bytes.contains("\"s\\xffm\" names no driver"), "{bytes}");
        let escape = driver(Some(OsStr::from_bytes(b"\x1b[2J"))).unwrap_err();
        assert!(!escape.contains('\u{1b}'), "{escape:?}");
        // `host` is a driver, but not one with a KFD interface: refused when building the device.
        assert_eq!(driver(Some(OsStr::new("host"))), Ok(DriverKind::Host));
    }
}
