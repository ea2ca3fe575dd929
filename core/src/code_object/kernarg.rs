//! Kernel-argument layout from a kernel's metadata: the explicit arguments by index, with
//! size and type checks, and the hidden arguments each code object version defines, filled
//! from the dispatch.
//!
//! The layout is the metadata's: each argument's `.offset` and `.size` inside a segment of
//! `.kernarg_segment_size` bytes; the segment's GPU address must be aligned to
//! [`KernargLayout::align`] (`.kernarg_segment_align`, at least 16 as AMDGPUUsage's "Kernel
//! Dispatch" requires). The builder zeroes the segment first, so bytes no argument covers —
//! padding, `hidden_none`, hidden kinds this crate does not know — are 0.
//!
//! Hidden arguments, by kind (the kind, not the version, decides; which kinds appear depends
//! on the version and on what the kernel uses):
//!
//! | kind | value | versions |
//! |---|---|---|
//! | `hidden_global_offset_{x,y,z}` | [`Dispatch::global_offset`] (AQL: 0) | v4+ |
//! | `hidden_none` | 0 | v4+ |
//! | `hidden_printf_buffer`, `hidden_hostcall_buffer`, `hidden_default_queue`, `hidden_completion_action`, `hidden_multigrid_sync_arg` | the [`Dispatch`] pointer of that name (0: none) | v4+ |
//! | `hidden_heap_v1` | [`Dispatch::heap_v1`] | v5+ |
//! | `hidden_block_count_{x,y,z}` | grid size / work-group size (full work-groups) | v5+ |
//! | `hidden_group_size_{x,y,z}` | work-group size | v5+ |
//! | `hidden_remainder_{x,y,z}` | grid size % work-group size (the partial work-group) | v5+ |
//! | `hidden_grid_dims` | dimensions (1–3) | v5+ |
//! | `hidden_dynamic_lds_size` | [`Dispatch::dynamic_lds_size`] | v5+ |
//! | `hidden_private_base`, `hidden_shared_base` | [`Dispatch::private_base`], [`Dispatch::shared_base`] (high halves of the apertures; only GFX8 reads them) | v5+ |
//! | `hidden_queue_ptr` | [`Dispatch::queue_ptr`] (`amd_queue_t`; pre-GFX9 trap handler) | v5+ |
//! | other `hidden_*` | 0 | |
//!
//! Unused dimensions count as size 1 (so their block count is 1 and remainder 0).

use core::fmt;

use super::MAX_KERNEL_ARGS;
use super::metadata::{KernelArg, KernelMetadata, ValueKind};
use crate::error::{Error, ErrorKind};

/// The dispatch a kernarg segment is laid out for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Dispatch {
    /// Grid dimensions (1–3).
    pub dimensions: u8,
    /// Work-group size per dimension (unused dimensions: 1).
    pub workgroup_size: [u16; 3],
    /// Grid size in work-items per dimension (unused dimensions: 1).
    pub grid_size: [u32; 3],
    /// Dynamically allocated LDS bytes (on top of the kernel's fixed group segment).
    pub dynamic_lds_size: u32,
    /// OpenCL global offset per dimension (AQL dispatches have none: 0).
    pub global_offset: [u64; 3],
    /// The queue's `amd_queue_t` address.
    pub queue_ptr: u64,
    /// High 32 bits of the private (scratch) aperture base.
    pub private_base: u32,
    /// High 32 bits of the shared (LDS) aperture base.
    pub shared_base: u32,
    /// printf buffer (0: none).
    pub printf_buffer: u64,
    /// hostcall buffer (0: none).
    pub hostcall_buffer: u64,
    /// device malloc heap (0: none).
    pub heap_v1: u64,
    /// default device-enqueue queue (0: none).
    pub default_queue: u64,
    /// device-enqueue completion action (0: none).
    pub completion_action: u64,
    /// multi-grid synchronisation argument (0: none).
    pub multigrid_sync_arg: u64,
}

impl Dispatch {
    /// A dispatch of `dimensions` with the given sizes (unused dimensions must be 1) and no
    /// runtime pointers.
    #[must_use]
    pub const fn new(dimensions: u8, workgroup_size: [u16; 3], grid_size: [u32; 3]) -> Self {
        Self {
            dimensions,
            workgroup_size,
            grid_size,
            dynamic_lds_size: 0,
            global_offset: [0; 3],
            queue_ptr: 0,
            private_base: 0,
            shared_base: 0,
            printf_buffer: 0,
            hostcall_buffer: 0,
            heap_v1: 0,
            default_queue: 0,
            completion_action: 0,
            multigrid_sync_arg: 0,
        }
    }

    /// A one-dimensional dispatch of `grid` work-items in work-groups of `workgroup`.
    #[must_use]
    pub const fn linear(grid: u32, workgroup: u16) -> Self {
        Self::new(1, [workgroup, 1, 1], [grid, 1, 1])
    }

    /// The value of hidden argument kind `kind` (`None`: not a value this table defines,
    /// left zero).
    fn hidden_value(&self, kind: ValueKind) -> Option<u64> {
        let dim = |d: usize| -> (u64, u64) {
            let g = self.grid_size.get(d).copied().unwrap_or(1);
            let w = self.workgroup_size.get(d).copied().unwrap_or(1);
            (u64::from(g), u64::from(w).max(1))
        };
        let blocks = |d| dim(d).0.checked_div(dim(d).1);
        let remainder = |d| dim(d).0.checked_rem(dim(d).1);
        let offset = |d: usize| self.global_offset.get(d).copied();
        match kind {
            ValueKind::HiddenGlobalOffsetX => offset(0),
            ValueKind::HiddenGlobalOffsetY => offset(1),
            ValueKind::HiddenGlobalOffsetZ => offset(2),
            ValueKind::HiddenBlockCountX => blocks(0),
            ValueKind::HiddenBlockCountY => blocks(1),
            ValueKind::HiddenBlockCountZ => blocks(2),
            ValueKind::HiddenGroupSizeX => Some(dim(0).1),
            ValueKind::HiddenGroupSizeY => Some(dim(1).1),
            ValueKind::HiddenGroupSizeZ => Some(dim(2).1),
            ValueKind::HiddenRemainderX => remainder(0),
            ValueKind::HiddenRemainderY => remainder(1),
            ValueKind::HiddenRemainderZ => remainder(2),
            ValueKind::HiddenGridDims => Some(u64::from(self.dimensions)),
            ValueKind::HiddenDynamicLdsSize => Some(u64::from(self.dynamic_lds_size)),
            ValueKind::HiddenPrivateBase => Some(u64::from(self.private_base)),
            ValueKind::HiddenSharedBase => Some(u64::from(self.shared_base)),
            ValueKind::HiddenQueuePtr => Some(self.queue_ptr),
            ValueKind::HiddenPrintfBuffer => Some(self.printf_buffer),
            ValueKind::HiddenHostcallBuffer => Some(self.hostcall_buffer),
            ValueKind::HiddenHeapV1 => Some(self.heap_v1),
            ValueKind::HiddenDefaultQueue => Some(self.default_queue),
            ValueKind::HiddenCompletionAction => Some(self.completion_action),
            ValueKind::HiddenMultigridSyncArg => Some(self.multigrid_sync_arg),
            _ => None,
        }
    }
}

/// A value for an explicit argument.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ArgValue<'v> {
    /// A 32-bit unsigned integer.
    U32(u32),
    /// A 32-bit signed integer.
    I32(i32),
    /// A 64-bit unsigned integer.
    U64(u64),
    /// A 64-bit signed integer.
    I64(i64),
    /// A 32-bit float.
    F32(f32),
    /// A 64-bit float.
    F64(f64),
    /// An address, for pointer arguments (`global_buffer`, ...).
    Pointer(u64),
    /// The argument's bytes as they are (any kind; the length must be the argument's size).
    Bytes(&'v [u8]),
}

/// What class of value an argument takes, from its kind and type name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ArgClass {
    /// An address (`global_buffer`, `dynamic_shared_pointer`, `image`, `sampler`, `pipe`,
    /// `queue`).
    Pointer,
    /// A by-value integer (type name `int`, `uint`, `ulong`, ...).
    Integer,
    /// A by-value float (type name `float`, `double`, `half`).
    Float,
    /// A by-value argument of another or no type name (any value of the right size).
    Other,
    /// A kind this crate does not know: raw bytes only.
    Unknown,
}

/// Why kernel arguments cannot be laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum KernargError {
    /// The buffer is smaller than the kernarg segment.
    BufferTooSmall {
        /// `.kernarg_segment_size`.
        needed: u32,
        /// The buffer length.
        got: usize,
    },
    /// The kernel has more than [`MAX_KERNEL_ARGS`] arguments.
    TooManyArguments {
        /// Its argument count.
        count: u32,
    },
    /// The number of values differs from the kernel's explicit argument count.
    ArgumentCount {
        /// The kernel's explicit arguments.
        expected: u32,
        /// The values given.
        got: usize,
    },
    /// No explicit argument of that index.
    NoSuchArgument {
        /// The index asked for.
        index: u32,
        /// The kernel's explicit arguments.
        count: u32,
    },
    /// The value does not fit the argument's kind, type or size.
    ArgumentType {
        /// Explicit argument index.
        index: u32,
        /// What the argument takes.
        expected: ArgClass,
        /// The argument's size in bytes.
        size: u32,
        /// The value given.
        given: ValueClass,
    },
    /// An explicit argument was never set.
    MissingArgument {
        /// Explicit argument index.
        index: u32,
    },
    /// The dispatch geometry is invalid: dimensions outside 1–3, a size of 0, or an unused
    /// dimension whose size is not 1.
    Geometry,
    /// The work-group has more work-items than `.max_flat_workgroup_size`.
    WorkgroupTooLarge {
        /// Work-items per work-group.
        size: u32,
        /// The kernel's maximum.
        max: u32,
    },
    /// The kernel requires another work-group size (`.reqd_workgroup_size`).
    WorkgroupSizeRequired {
        /// The size it requires.
        required: [u32; 3],
    },
    /// The kernel requires a grid that is a multiple of the work-group size
    /// (`.uniform_work_group_size`).
    NonUniformGrid,
    /// A hidden argument's value does not fit its size (for example a block count above
    /// 65535 in a 2-byte slot).
    HiddenValueTooLarge {
        /// Index in `.args`.
        index: u32,
        /// Its kind.
        kind: ValueKind,
    },
}

/// The class and size of a value given (for [`KernargError::ArgumentType`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ValueClass {
    /// Pointer, integer, float or bytes (`Other`).
    pub class: ArgClass,
    /// Its size in bytes.
    pub size: usize,
}

impl ArgValue<'_> {
    fn class(&self) -> ValueClass {
        let (class, size) = match self {
            Self::U32(_) | Self::I32(_) => (ArgClass::Integer, 4),
            Self::U64(_) | Self::I64(_) => (ArgClass::Integer, 8),
            Self::F32(_) => (ArgClass::Float, 4),
            Self::F64(_) => (ArgClass::Float, 8),
            Self::Pointer(_) => (ArgClass::Pointer, 8),
            Self::Bytes(b) => (ArgClass::Other, b.len()),
        };
        ValueClass { class, size }
    }

    /// The little-endian bytes of a scalar (`None` for `Bytes`).
    fn scalar(&self) -> Option<[u8; 8]> {
        Some(match *self {
            Self::U32(v) => u64::from(v).to_le_bytes(),
            Self::I32(v) => u64::from(v.cast_unsigned()).to_le_bytes(),
            Self::U64(v) | Self::Pointer(v) => v.to_le_bytes(),
            Self::I64(v) => v.to_le_bytes(),
            Self::F32(v) => u64::from(v.to_bits()).to_le_bytes(),
            Self::F64(v) => v.to_bits().to_le_bytes(),
            Self::Bytes(_) => return None,
        })
    }
}

/// What class of value `arg` takes.
#[must_use]
pub fn arg_class(arg: &KernelArg<'_>) -> ArgClass {
    match arg.value_kind {
        ValueKind::GlobalBuffer
        | ValueKind::DynamicSharedPointer
        | ValueKind::Image
        | ValueKind::Sampler
        | ValueKind::Pipe
        | ValueKind::Queue => ArgClass::Pointer,
        ValueKind::ByValue => match arg.type_name {
            Some("float" | "double" | "half" | "_Float16") => ArgClass::Float,
            Some(
                "char" | "uchar" | "signed char" | "unsigned char" | "short" | "ushort"
                | "unsigned short" | "int" | "uint" | "unsigned int" | "long" | "ulong"
                | "unsigned long" | "long long" | "unsigned long long" | "size_t" | "bool"
                | "_Bool" | "int8_t" | "uint8_t" | "int16_t" | "uint16_t" | "int32_t" | "uint32_t"
                | "int64_t" | "uint64_t",
            ) => ArgClass::Integer,
            _ => ArgClass::Other,
        },
        _ => ArgClass::Unknown,
    }
}

/// The size and alignment of a laid-out kernarg segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KernargLayout {
    /// Bytes of the segment (`.kernarg_segment_size`).
    pub size: u32,
    /// The alignment its GPU address needs (`.kernarg_segment_align`, at least 16).
    pub align: u32,
}

/// Words of the set-argument bitmap.
const SET_WORDS: usize = MAX_KERNEL_ARGS.div_ceil(64);

/// Lays out the kernel arguments of one dispatch into a caller buffer.
#[derive(Debug)]
pub struct KernargBuilder<'m, 'b> {
    kernel: KernelMetadata<'m>,
    segment: &'b mut [u8],
    set: [u64; SET_WORDS],
    explicit: u32,
}

impl<'m, 'b> KernargBuilder<'m, 'b> {
    /// Starts a layout in `buf`, zeroing its first `.kernarg_segment_size` bytes.
    ///
    /// # Errors
    /// [`KernargError::BufferTooSmall`] (the buffer is left untouched) or
    /// [`KernargError::TooManyArguments`].
    pub fn new(kernel: &KernelMetadata<'m>, buf: &'b mut [u8]) -> Result<Self, KernargError> {
        let count = kernel.args.len();
        if usize::try_from(count).map_or(true, |c| c > MAX_KERNEL_ARGS) {
            return Err(KernargError::TooManyArguments { count });
        }
        let needed = kernel.kernarg_segment_size;
        let too_small = KernargError::BufferTooSmall { needed, got: buf.len() };
        let size = usize::try_from(needed).map_err(|_| too_small)?;
        let segment = buf.get_mut(..size).ok_or(too_small)?;
        segment.fill(0);
        Ok(Self {
            kernel: *kernel,
            segment,
            set: [0; SET_WORDS],
            explicit: kernel.args.explicit_count(),
        })
    }

    /// The kernel's explicit (caller-provided) argument count.
    #[must_use]
    pub const fn explicit_count(&self) -> u32 {
        self.explicit
    }

    /// Sets explicit argument `index` (counting only the caller-provided arguments, in
    /// order). Setting it again overwrites it.
    ///
    /// # Errors
    /// [`KernargError::NoSuchArgument`], or [`KernargError::ArgumentType`] when the value's
    /// class or size does not fit (a pointer for a `global_buffer`; an integer or float of
    /// the argument's size for `by_value`, floats only for `float`/`double`/`half` type
    /// names and integers only for integer type names; `Bytes` of exactly the size for
    /// anything). Signedness is not checked. On error nothing is written.
    pub fn set(&mut self, index: u32, value: ArgValue<'_>) -> Result<&mut Self, KernargError> {
        let count = self.explicit;
        let arg = usize::try_from(index)
            .ok()
            .and_then(|i| self.kernel.args.explicit().nth(i))
            .ok_or(KernargError::NoSuchArgument { index, count })?;
        let expected = arg_class(&arg);
        let given = value.class();
        let size = usize::try_from(arg.size).unwrap_or(usize::MAX);
        let fits = match (expected, given.class) {
            (_, ArgClass::Other) => given.size == size,
            (ArgClass::Pointer, ArgClass::Pointer) => {
                size == 8
                    || (size == 4
                        && matches!(value, ArgValue::Pointer(p) if p <= u64::from(u32::MAX)))
            }
            (ArgClass::Integer | ArgClass::Float, c) => c == expected && given.size == size,
            (ArgClass::Other, ArgClass::Integer | ArgClass::Float | ArgClass::Pointer) => {
                given.size == size
            }
            _ => false,
        };
        let wrong = KernargError::ArgumentType { index, expected, size: arg.size, given };
        if !fits {
            return Err(wrong);
        }
        let dst = self.slot(&arg).ok_or(wrong)?;
        match (value, value.scalar()) {
            (ArgValue::Bytes(b), _) => dst.copy_from_slice(b),
            (_, Some(bytes)) => dst.copy_from_slice(bytes.get(..size).ok_or(wrong)?),
            (_, None) => return Err(wrong),
        }
        self.mark(arg.index);
        Ok(self)
    }

    /// Checks the dispatch against the kernel, checks every explicit argument was set, fills
    /// the hidden arguments and returns the layout.
    ///
    /// # Errors
    /// [`KernargError::Geometry`], [`WorkgroupTooLarge`](KernargError::WorkgroupTooLarge),
    /// [`WorkgroupSizeRequired`](KernargError::WorkgroupSizeRequired),
    /// [`NonUniformGrid`](KernargError::NonUniformGrid),
    /// [`MissingArgument`](KernargError::MissingArgument),
    /// [`HiddenValueTooLarge`](KernargError::HiddenValueTooLarge).
    pub fn finish(mut self, dispatch: &Dispatch) -> Result<KernargLayout, KernargError> {
        check_dispatch(&self.kernel, dispatch)?;
        for (n, arg) in (0u32..).zip(self.kernel.args.explicit()) {
            if !self.is_set(arg.index) {
                return Err(KernargError::MissingArgument { index: n });
            }
        }
        let args = self.kernel.args;
        for arg in args.iter().filter(|a| a.value_kind.is_hidden()) {
            let Some(value) = dispatch.hidden_value(arg.value_kind) else { continue };
            let too_large =
                KernargError::HiddenValueTooLarge { index: arg.index, kind: arg.value_kind };
            let dst = self.slot(&arg).ok_or(too_large)?;
            let bytes = value.to_le_bytes();
            let (low, high) = bytes.split_at(dst.len().min(8));
            if high.iter().any(|b| *b != 0) {
                return Err(too_large);
            }
            dst.get_mut(..low.len()).ok_or(too_large)?.copy_from_slice(low);
        }
        Ok(KernargLayout {
            size: self.kernel.kernarg_segment_size,
            align: self.kernel.kernarg_segment_align.max(16),
        })
    }

    /// The bytes of `arg` in the segment (inside it: checked by the metadata parser).
    fn slot(&mut self, arg: &KernelArg<'_>) -> Option<&mut [u8]> {
        let start = usize::try_from(arg.offset).ok()?;
        let end = start.checked_add(usize::try_from(arg.size).ok()?)?;
        self.segment.get_mut(start..end)
    }

    fn mark(&mut self, index: u32) {
        let i = usize::try_from(index).unwrap_or(usize::MAX);
        if let Some(word) = self.set.get_mut(i / 64) {
            *word |= 1u64.wrapping_shl((i % 64) as u32);
        }
    }

    fn is_set(&self, index: u32) -> bool {
        let i = usize::try_from(index).unwrap_or(usize::MAX);
        self.set.get(i / 64).is_some_and(|w| w & 1u64.wrapping_shl((i % 64) as u32) != 0)
    }
}

/// Checks a dispatch's geometry against the kernel's limits.
fn check_dispatch(kernel: &KernelMetadata<'_>, d: &Dispatch) -> Result<(), KernargError> {
    let dims = usize::from(d.dimensions);
    if !(1..=3).contains(&dims) {
        return Err(KernargError::Geometry);
    }
    for (i, (&w, &g)) in d.workgroup_size.iter().zip(&d.grid_size).enumerate() {
        let ok = if i < dims { w >= 1 && g >= 1 } else { w == 1 && g == 1 };
        if !ok {
            return Err(KernargError::Geometry);
        }
    }
    let size = d.workgroup_size.iter().fold(1u32, |acc, &w| acc.saturating_mul(u32::from(w)));
    if size > kernel.max_flat_workgroup_size {
        return Err(KernargError::WorkgroupTooLarge { size, max: kernel.max_flat_workgroup_size });
    }
    if let Some(required) = kernel.reqd_workgroup_size.filter(|r| *r != [0; 3]) {
        let given = d.workgroup_size.map(u32::from);
        if given != required {
            return Err(KernargError::WorkgroupSizeRequired { required });
        }
    }
    if kernel.uniform_work_group_size
        && d.grid_size
            .iter()
            .zip(&d.workgroup_size)
            .any(|(&g, &w)| g.checked_rem(u32::from(w)) != Some(0))
    {
        return Err(KernargError::NonUniformGrid);
    }
    Ok(())
}

/// Lays out all explicit arguments from `values` (in order) and the hidden ones for
/// `dispatch` into `buf`.
///
/// # Errors
/// [`KernargError::ArgumentCount`] when `values` does not match the kernel's explicit
/// arguments, and every error of [`KernargBuilder`].
pub fn write_kernargs(
    kernel: &KernelMetadata<'_>,
    buf: &mut [u8],
    values: &[ArgValue<'_>],
    dispatch: &Dispatch,
) -> Result<KernargLayout, KernargError> {
    let mut b = KernargBuilder::new(kernel, buf)?;
    if usize::try_from(b.explicit_count()).ok() != Some(values.len()) {
        return Err(KernargError::ArgumentCount {
            expected: b.explicit_count(),
            got: values.len(),
        });
    }
    for (i, v) in (0u32..).zip(values) {
        b.set(i, *v)?;
    }
    b.finish(dispatch)
}

impl fmt::Display for ArgClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Pointer => "pointer",
            Self::Integer => "integer",
            Self::Float => "float",
            Self::Other => "bytes",
            Self::Unknown => "raw bytes (unknown kind)",
        })
    }
}

impl fmt::Display for KernargError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::BufferTooSmall { needed, got } => {
                write!(f, "kernel arguments need {needed} bytes, the buffer has {got}")
            }
            Self::TooManyArguments { count } => {
                write!(f, "kernel has {count} arguments, more than {MAX_KERNEL_ARGS}")
            }
            Self::ArgumentCount { expected, got } => {
                write!(f, "kernel takes {expected} arguments, {got} given")
            }
            Self::NoSuchArgument { index, count } => {
                write!(f, "no argument {index} (kernel takes {count})")
            }
            Self::ArgumentType { index, expected, size, given } => write!(
                f,
                "argument {index} takes a {size}-byte {expected}, given a {}-byte {}",
                given.size, given.class
            ),
            Self::MissingArgument { index } => write!(f, "argument {index} not set"),
            Self::Geometry => f.write_str(
                "invalid dispatch geometry (dimensions 1-3, sizes >= 1, unused dimensions 1)",
            ),
            Self::WorkgroupTooLarge { size, max } => {
                write!(f, "work-group of {size} work-items exceeds the kernel's maximum {max}")
            }
            Self::WorkgroupSizeRequired { required: [x, y, z] } => {
                write!(f, "kernel requires work-group size {x}x{y}x{z}")
            }
            Self::NonUniformGrid => {
                f.write_str("kernel requires a grid that is a multiple of the work-group size")
            }
            Self::HiddenValueTooLarge { index, kind } => write!(
                f,
                "hidden argument {index} ({}) cannot hold its value",
                kind.name().unwrap_or("unknown")
            ),
        }
    }
}

impl Error for KernargError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::TooManyArguments { .. } => ErrorKind::CapacityExhausted,
            _ => ErrorKind::InvalidArgument,
        }
    }
}

impl core::error::Error for KernargError {}
