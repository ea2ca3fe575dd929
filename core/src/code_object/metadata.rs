//! The `NT_AMDGPU_METADATA` note of code objects v4–v6: a MessagePack map with
//! `amdhsa.version`, `amdhsa.target`, `amdhsa.kernels` (and `amdhsa.printf`).
//!
//! [`Metadata::parse`] checks the whole document once — every kernel map and every argument
//! map, required keys and value types — so the accessors afterwards cannot fail: they decode
//! the (already validated) borrowed MessagePack again on demand instead of storing anything.
//! Unknown keys are ignored (vendors may add their own); unknown enumeration strings decode
//! to an `Unknown` variant. Keys and meanings: AMDGPUUsage, "Code Object V3 Metadata" to
//! "Code Object V6 Metadata".

use super::error::{MetadataError, MetadataProblem};
use super::msgpack::{self, Map, Seq, Value};

/// The kind of a kernel argument (`.value_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ValueKind {
    /// `by_value`: the argument's bytes are copied into the kernarg segment.
    ByValue,
    /// `global_buffer`: a global address space pointer.
    GlobalBuffer,
    /// `dynamic_shared_pointer`: a group (LDS) pointer to dynamically allocated LDS.
    DynamicSharedPointer,
    /// `sampler`: a pointer to an S#.
    Sampler,
    /// `image`: a pointer to a T#.
    Image,
    /// `pipe`: a pointer to an OpenCL pipe.
    Pipe,
    /// `queue`: a pointer to an OpenCL device-enqueue queue.
    Queue,
    /// `hidden_global_offset_x`: the OpenCL global offset, X.
    HiddenGlobalOffsetX,
    /// `hidden_global_offset_y`.
    HiddenGlobalOffsetY,
    /// `hidden_global_offset_z`.
    HiddenGlobalOffsetZ,
    /// `hidden_none`: space left unused.
    HiddenNone,
    /// `hidden_printf_buffer`: the runtime's printf buffer.
    HiddenPrintfBuffer,
    /// `hidden_hostcall_buffer`: the runtime's hostcall buffer.
    HiddenHostcallBuffer,
    /// `hidden_default_queue`: the default device-enqueue queue.
    HiddenDefaultQueue,
    /// `hidden_completion_action`: device-enqueue completion action.
    HiddenCompletionAction,
    /// `hidden_multigrid_sync_arg`: multi-grid synchronisation.
    HiddenMultigridSyncArg,
    /// `hidden_heap_v1` (v5): the device malloc heap.
    HiddenHeapV1,
    /// `hidden_block_count_x` (v5): full work-groups in X (grid / work-group size).
    HiddenBlockCountX,
    /// `hidden_block_count_y` (v5).
    HiddenBlockCountY,
    /// `hidden_block_count_z` (v5).
    HiddenBlockCountZ,
    /// `hidden_group_size_x` (v5): the dispatch's work-group size, X.
    HiddenGroupSizeX,
    /// `hidden_group_size_y` (v5).
    HiddenGroupSizeY,
    /// `hidden_group_size_z` (v5).
    HiddenGroupSizeZ,
    /// `hidden_remainder_x` (v5): the size of the partial last work-group in X (0 if none).
    HiddenRemainderX,
    /// `hidden_remainder_y` (v5).
    HiddenRemainderY,
    /// `hidden_remainder_z` (v5).
    HiddenRemainderZ,
    /// `hidden_grid_dims` (v5): the dispatch's dimensions (1–3).
    HiddenGridDims,
    /// `hidden_dynamic_lds_size` (v5): the dynamically allocated LDS bytes.
    HiddenDynamicLdsSize,
    /// `hidden_private_base` (v5): high 32 bits of the private aperture (used by GFX8).
    HiddenPrivateBase,
    /// `hidden_shared_base` (v5): high 32 bits of the shared aperture (used by GFX8).
    HiddenSharedBase,
    /// `hidden_queue_ptr` (v5): the `amd_queue_t` address (pre-GFX9 trap handler ABI).
    HiddenQueuePtr,
    /// A `hidden_*` kind this crate does not know: left zero.
    UnknownHidden,
    /// Any other kind this crate does not know.
    Unknown,
}

const VALUE_KINDS: &[(&str, ValueKind)] = &[
    ("by_value", ValueKind::ByValue),
    ("global_buffer", ValueKind::GlobalBuffer),
    ("dynamic_shared_pointer", ValueKind::DynamicSharedPointer),
    ("sampler", ValueKind::Sampler),
    ("image", ValueKind::Image),
    ("pipe", ValueKind::Pipe),
    ("queue", ValueKind::Queue),
    ("hidden_global_offset_x", ValueKind::HiddenGlobalOffsetX),
    ("hidden_global_offset_y", ValueKind::HiddenGlobalOffsetY),
    ("hidden_global_offset_z", ValueKind::HiddenGlobalOffsetZ),
    ("hidden_none", ValueKind::HiddenNone),
    ("hidden_printf_buffer", ValueKind::HiddenPrintfBuffer),
    ("hidden_hostcall_buffer", ValueKind::HiddenHostcallBuffer),
    ("hidden_default_queue", ValueKind::HiddenDefaultQueue),
    ("hidden_completion_action", ValueKind::HiddenCompletionAction),
    ("hidden_multigrid_sync_arg", ValueKind::HiddenMultigridSyncArg),
    ("hidden_heap_v1", ValueKind::HiddenHeapV1),
    ("hidden_block_count_x", ValueKind::HiddenBlockCountX),
    ("hidden_block_count_y", ValueKind::HiddenBlockCountY),
    ("hidden_block_count_z", ValueKind::HiddenBlockCountZ),
    ("hidden_group_size_x", ValueKind::HiddenGroupSizeX),
    ("hidden_group_size_y", ValueKind::HiddenGroupSizeY),
    ("hidden_group_size_z", ValueKind::HiddenGroupSizeZ),
    ("hidden_remainder_x", ValueKind::HiddenRemainderX),
    ("hidden_remainder_y", ValueKind::HiddenRemainderY),
    ("hidden_remainder_z", ValueKind::HiddenRemainderZ),
    ("hidden_grid_dims", ValueKind::HiddenGridDims),
    ("hidden_dynamic_lds_size", ValueKind::HiddenDynamicLdsSize),
    ("hidden_private_base", ValueKind::HiddenPrivateBase),
    ("hidden_shared_base", ValueKind::HiddenSharedBase),
    ("hidden_queue_ptr", ValueKind::HiddenQueuePtr),
];

impl ValueKind {
    /// The kind a `.value_kind` string names.
    #[must_use]
    pub fn from_name(name: &str) -> Self {
        match VALUE_KINDS.iter().find(|(n, _)| *n == name) {
            Some((_, k)) => *k,
            None if name.starts_with("hidden_") => Self::UnknownHidden,
            None => Self::Unknown,
        }
    }

    /// The metadata spelling (`None` for the unknown kinds).
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        VALUE_KINDS.iter().find(|(_, k)| *k == self).map(|(n, _)| *n)
    }

    /// Whether the runtime, not the caller, provides the argument.
    #[must_use]
    pub fn is_hidden(self) -> bool {
        self == Self::UnknownHidden || self.name().is_some_and(|n| n.starts_with("hidden_"))
    }
}

/// A kernel argument's address space (`.address_space`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AddressSpace {
    /// `private`.
    Private,
    /// `global`.
    Global,
    /// `constant`.
    Constant,
    /// `local` (LDS).
    Local,
    /// `generic` (flat).
    Generic,
    /// `region` (GDS).
    Region,
    /// Another spelling.
    Unknown,
}

impl AddressSpace {
    fn from_name(name: &str) -> Self {
        match name {
            "private" => Self::Private,
            "global" => Self::Global,
            "constant" => Self::Constant,
            "local" => Self::Local,
            "generic" => Self::Generic,
            "region" => Self::Region,
            _ => Self::Unknown,
        }
    }
}

/// An access qualifier (`.access`, `.actual_access`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Access {
    /// `read_only`.
    ReadOnly,
    /// `write_only`.
    WriteOnly,
    /// `read_write`.
    ReadWrite,
    /// Another spelling.
    Unknown,
}

impl Access {
    fn from_name(name: &str) -> Self {
        match name {
            "read_only" => Self::ReadOnly,
            "write_only" => Self::WriteOnly,
            "read_write" => Self::ReadWrite,
            _ => Self::Unknown,
        }
    }
}

/// A kernel's kind (`.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum KernelKind {
    /// `normal` (also when the key is absent).
    Normal,
    /// `init`: run after loading, before normal kernels.
    Init,
    /// `fini`: run before unloading.
    Fini,
    /// Another spelling.
    Unknown,
}

/// One kernel argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KernelArg<'a> {
    /// Index in the kernel's `.args`.
    pub index: u32,
    /// Byte offset in the kernarg segment.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// The kind.
    pub value_kind: ValueKind,
    /// The kind as spelled in the metadata.
    pub value_kind_name: &'a str,
    /// `.name`, if present (OpenCL with `-cl-kernel-arg-info`, HIP).
    pub name: Option<&'a str>,
    /// `.type_name`, if present (`uint*`, `ulong`, `float`).
    pub type_name: Option<&'a str>,
    /// `.address_space` (pointer arguments).
    pub address_space: Option<AddressSpace>,
    /// `.access`.
    pub access: Option<Access>,
    /// `.actual_access`.
    pub actual_access: Option<Access>,
    /// `.pointee_align` (dynamic shared pointers).
    pub pointee_align: Option<u32>,
    /// `.is_const`.
    pub is_const: bool,
    /// `.is_restrict`.
    pub is_restrict: bool,
    /// `.is_volatile`.
    pub is_volatile: bool,
    /// `.is_pipe`.
    pub is_pipe: bool,
}

/// The arguments of a kernel, in kernarg order (validated by [`Metadata::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Args<'a> {
    seq: Option<Seq<'a>>,
    kernel: u32,
    segment_size: u32,
}

impl<'a> Args<'a> {
    /// The number of arguments (hidden ones included).
    #[must_use]
    pub fn len(&self) -> u32 {
        self.seq.map_or(0, |s| s.len())
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All arguments, hidden ones included.
    pub fn iter(&self) -> impl Iterator<Item = KernelArg<'a>> + 'a {
        let (kernel, size) = (self.kernel, self.segment_size);
        let values = self.seq.map(|s| s.iter()).into_iter().flatten();
        (0u32..).zip(values).map_while(move |(i, v)| {
            v.ok().and_then(|v| v.as_map()).and_then(|m| argument(m, kernel, i, size).ok())
        })
    }

    /// The arguments the caller provides (not hidden), in order.
    pub fn explicit(&self) -> impl Iterator<Item = KernelArg<'a>> + 'a {
        self.iter().filter(|a| !a.value_kind.is_hidden())
    }

    /// The number of arguments the caller provides.
    #[must_use]
    pub fn explicit_count(&self) -> u32 {
        self.explicit().fold(0u32, |n, _| n.saturating_add(1))
    }

    /// Argument `index` (hidden ones included).
    #[must_use]
    pub fn get(&self, index: u32) -> Option<KernelArg<'a>> {
        self.iter().nth(usize::try_from(index).ok()?)
    }
}

/// One kernel's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KernelMetadata<'a> {
    /// Index in `amdhsa.kernels`.
    pub index: u32,
    /// `.name`: the source name.
    pub name: &'a str,
    /// `.symbol`: the kernel descriptor symbol (`<name>.kd`).
    pub symbol: &'a str,
    /// `.language` (`OpenCL C`, `HIP`, ...).
    pub language: Option<&'a str>,
    /// `.language_version`.
    pub language_version: Option<[u32; 2]>,
    /// `.kernarg_segment_size`.
    pub kernarg_segment_size: u32,
    /// `.kernarg_segment_align` (a power of two).
    pub kernarg_segment_align: u32,
    /// `.group_segment_fixed_size`: fixed LDS bytes per work-group.
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size`: fixed scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// `.wavefront_size` (a power of two: 32 or 64).
    pub wavefront_size: u32,
    /// `.sgpr_count`.
    pub sgpr_count: u32,
    /// `.vgpr_count`.
    pub vgpr_count: u32,
    /// `.agpr_count` (gfx908/gfx90a+).
    pub agpr_count: Option<u32>,
    /// `.sgpr_spill_count`.
    pub sgpr_spill_count: Option<u32>,
    /// `.vgpr_spill_count`.
    pub vgpr_spill_count: Option<u32>,
    /// `.max_flat_workgroup_size`.
    pub max_flat_workgroup_size: u32,
    /// `.reqd_workgroup_size`: the only work-group size the kernel accepts.
    pub reqd_workgroup_size: Option<[u32; 3]>,
    /// `.workgroup_size_hint`.
    pub workgroup_size_hint: Option<[u32; 3]>,
    /// `.uses_dynamic_stack` (v5+).
    pub uses_dynamic_stack: Option<bool>,
    /// `.workgroup_processor_mode` (v5+, GFX10+).
    pub workgroup_processor_mode: Option<bool>,
    /// `.uniform_work_group_size` (v5+): the grid must be a multiple of the work-group size.
    pub uniform_work_group_size: bool,
    /// `.kind`.
    pub kind: KernelKind,
    /// `.args`.
    pub args: Args<'a>,
}

/// The decoded metadata document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Metadata<'a> {
    /// `amdhsa.version` (1.1: v4; 1.2: v5 and v6).
    pub version: [u32; 2],
    /// `amdhsa.target`: `amdgcn-amd-amdhsa--<target ID>`.
    pub target: &'a str,
    kernels: Seq<'a>,
}

impl<'a> Metadata<'a> {
    /// A document without kernels (a placeholder until parsing finds the real one).
    pub(super) const EMPTY: Metadata<'static> =
        Metadata { version: [1, 0], target: "", kernels: Seq::EMPTY };

    /// Parses and validates a metadata document (the note's descriptor bytes).
    ///
    /// # Errors
    /// Malformed MessagePack, a value of the wrong type, a required key missing, a value out
    /// of range (an argument past the kernarg segment, an alignment that is not a power of
    /// two) or a version other than 1.x — each naming the kernel, argument and key.
    pub fn parse(data: &'a [u8]) -> Result<Self, MetadataError> {
        let top = |key, problem| MetadataError::top(key, problem);
        let doc = msgpack::read(data).map_err(|e| top("", MetadataProblem::Syntax(e)))?;
        let map = doc.as_map().ok_or(top("", MetadataProblem::WrongType))?;
        let (mut version, mut target, mut kernels) = (None, None, None);
        for pair in map.iter() {
            let (k, v) = pair.map_err(|e| top("", MetadataProblem::Syntax(e)))?;
            match k.as_str() {
                Some("amdhsa.version") => {
                    version = Some(pair_of(v).map_err(|p| top("amdhsa.version", p))?);
                }
                Some("amdhsa.target") => {
                    target =
                        Some(v.as_str().ok_or(top("amdhsa.target", MetadataProblem::WrongType))?);
                }
                Some("amdhsa.kernels") => {
                    let seq = v.as_array();
                    kernels = Some(seq.ok_or(top("amdhsa.kernels", MetadataProblem::WrongType))?);
                }
                _ => {}
            }
        }
        let missing = |key| top(key, MetadataProblem::MissingKey);
        let version = version.ok_or(missing("amdhsa.version"))?;
        if version[0] != 1 {
            return Err(top("amdhsa.version", MetadataProblem::UnsupportedVersion));
        }
        let meta = Self {
            version,
            target: target.ok_or(missing("amdhsa.target"))?,
            kernels: kernels.ok_or(missing("amdhsa.kernels"))?,
        };
        for (i, k) in (0u32..).zip(meta.kernels.iter()) {
            let err = |problem| MetadataError { kernel: Some(i), arg: None, key: "", problem };
            let map = k.map_err(|e| err(MetadataProblem::Syntax(e)))?.as_map();
            let kernel = kernel(map.ok_or(err(MetadataProblem::WrongType))?, i)?;
            for (a, arg) in (0u32..).zip(kernel.args.seq.iter().flat_map(|s| s.iter())) {
                let err =
                    |problem| MetadataError { kernel: Some(i), arg: Some(a), key: "", problem };
                let map = arg.map_err(|e| err(MetadataProblem::Syntax(e)))?.as_map();
                argument(
                    map.ok_or(err(MetadataProblem::WrongType))?,
                    i,
                    a,
                    kernel.args.segment_size,
                )?;
            }
        }
        Ok(meta)
    }

    /// The number of kernels.
    #[must_use]
    pub const fn kernel_count(&self) -> u32 {
        self.kernels.len()
    }

    /// Every kernel, in `amdhsa.kernels` order.
    pub fn kernels(&self) -> impl Iterator<Item = KernelMetadata<'a>> + 'a {
        (0u32..)
            .zip(self.kernels.iter())
            .map_while(|(i, v)| v.ok().and_then(|v| v.as_map()).and_then(|m| kernel(m, i).ok()))
    }

    /// The kernel whose `.symbol` is `symbol`.
    #[must_use]
    pub fn by_symbol(&self, symbol: &[u8]) -> Option<KernelMetadata<'a>> {
        self.kernels().find(|k| k.symbol.as_bytes() == symbol)
    }
}

/// A `u32` from an integer value.
fn int(v: Value<'_>) -> Result<u32, MetadataProblem> {
    match v {
        Value::UInt(n) => u32::try_from(n).map_err(|_| MetadataProblem::OutOfRange),
        _ => Err(MetadataProblem::WrongType),
    }
}

/// `N` integers from an array of exactly `N`.
fn ints<const N: usize>(v: Value<'_>) -> Result<[u32; N], MetadataProblem> {
    let seq = v.as_array().ok_or(MetadataProblem::WrongType)?;
    if usize::try_from(seq.len()).ok() != Some(N) {
        return Err(MetadataProblem::WrongType);
    }
    let mut out = [0u32; N];
    for (slot, item) in out.iter_mut().zip(seq.iter()) {
        *slot = int(item.map_err(MetadataProblem::Syntax)?)?;
    }
    Ok(out)
}

fn pair_of(v: Value<'_>) -> Result<[u32; 2], MetadataProblem> {
    ints::<2>(v)
}

fn text(v: Value<'_>) -> Result<&str, MetadataProblem> {
    v.as_str().ok_or(MetadataProblem::WrongType)
}

/// A boolean, also as the integer 0 or 1 (LLVM writes `.workgroup_processor_mode` as one).
fn flag(v: Value<'_>) -> Result<bool, MetadataProblem> {
    match v {
        Value::Bool(b) => Ok(b),
        Value::UInt(0) => Ok(false),
        Value::UInt(1) => Ok(true),
        Value::UInt(_) => Err(MetadataProblem::OutOfRange),
        _ => Err(MetadataProblem::WrongType),
    }
}

/// A power of two, or `OutOfRange`.
fn power_of_two(n: u32) -> Result<u32, MetadataProblem> {
    if n.is_power_of_two() { Ok(n) } else { Err(MetadataProblem::OutOfRange) }
}

/// Decodes kernel map `index`.
fn kernel(map: Map<'_>, index: u32) -> Result<KernelMetadata<'_>, MetadataError> {
    let at = |key: &'static str| {
        move |problem| MetadataError { kernel: Some(index), arg: None, key, problem }
    };
    let mut name = None;
    let mut symbol = None;
    let mut language = None;
    let mut language_version = None;
    let mut kernarg_segment_size = None;
    let mut kernarg_segment_align = None;
    let mut group_segment_fixed_size = None;
    let mut private_segment_fixed_size = None;
    let mut wavefront_size = None;
    let mut sgpr_count = None;
    let mut vgpr_count = None;
    let mut agpr_count = None;
    let mut sgpr_spill_count = None;
    let mut vgpr_spill_count = None;
    let mut max_flat_workgroup_size = None;
    let mut reqd_workgroup_size = None;
    let mut workgroup_size_hint = None;
    let mut uses_dynamic_stack = None;
    let mut workgroup_processor_mode = None;
    let mut uniform_work_group_size = false;
    let mut kind = KernelKind::Normal;
    let mut args = None;
    for pair in map.iter() {
        let (k, v) = pair.map_err(|e| at("")(MetadataProblem::Syntax(e)))?;
        let Some(key) = k.as_str() else { continue };
        match key {
            ".name" => name = Some(text(v).map_err(at(".name"))?),
            ".symbol" => symbol = Some(text(v).map_err(at(".symbol"))?),
            ".language" => language = Some(text(v).map_err(at(".language"))?),
            ".language_version" => {
                language_version = Some(pair_of(v).map_err(at(".language_version"))?);
            }
            ".kernarg_segment_size" => {
                kernarg_segment_size = Some(int(v).map_err(at(".kernarg_segment_size"))?);
            }
            ".kernarg_segment_align" => {
                let a = int(v).and_then(power_of_two);
                kernarg_segment_align = Some(a.map_err(at(".kernarg_segment_align"))?);
            }
            ".group_segment_fixed_size" => {
                group_segment_fixed_size = Some(int(v).map_err(at(".group_segment_fixed_size"))?);
            }
            ".private_segment_fixed_size" => {
                private_segment_fixed_size =
                    Some(int(v).map_err(at(".private_segment_fixed_size"))?);
            }
            ".wavefront_size" => {
                let w = int(v).and_then(power_of_two);
                wavefront_size = Some(w.map_err(at(".wavefront_size"))?);
            }
            ".sgpr_count" => sgpr_count = Some(int(v).map_err(at(".sgpr_count"))?),
            ".vgpr_count" => vgpr_count = Some(int(v).map_err(at(".vgpr_count"))?),
            ".agpr_count" => agpr_count = Some(int(v).map_err(at(".agpr_count"))?),
            ".sgpr_spill_count" => {
                sgpr_spill_count = Some(int(v).map_err(at(".sgpr_spill_count"))?);
            }
            ".vgpr_spill_count" => {
                vgpr_spill_count = Some(int(v).map_err(at(".vgpr_spill_count"))?);
            }
            ".max_flat_workgroup_size" => {
                max_flat_workgroup_size = Some(int(v).map_err(at(".max_flat_workgroup_size"))?);
            }
            ".reqd_workgroup_size" => {
                reqd_workgroup_size = Some(ints::<3>(v).map_err(at(".reqd_workgroup_size"))?);
            }
            ".workgroup_size_hint" => {
                workgroup_size_hint = Some(ints::<3>(v).map_err(at(".workgroup_size_hint"))?);
            }
            ".uses_dynamic_stack" => {
                uses_dynamic_stack = Some(flag(v).map_err(at(".uses_dynamic_stack"))?);
            }
            ".workgroup_processor_mode" => {
                workgroup_processor_mode = Some(flag(v).map_err(at(".workgroup_processor_mode"))?);
            }
            ".uniform_work_group_size" => {
                uniform_work_group_size = int(v).map_err(at(".uniform_work_group_size"))? != 0;
            }
            ".kind" => {
                kind = match text(v).map_err(at(".kind"))? {
                    "normal" => KernelKind::Normal,
                    "init" => KernelKind::Init,
                    "fini" => KernelKind::Fini,
                    _ => KernelKind::Unknown,
                };
            }
            ".args" => args = Some(v.as_array().ok_or(at(".args")(MetadataProblem::WrongType))?),
            _ => {}
        }
    }
    let need = |key: &'static str| at(key)(MetadataProblem::MissingKey);
    let kernarg_segment_size = kernarg_segment_size.ok_or(need(".kernarg_segment_size"))?;
    Ok(KernelMetadata {
        index,
        name: name.ok_or(need(".name"))?,
        symbol: symbol.ok_or(need(".symbol"))?,
        language,
        language_version,
        kernarg_segment_size,
        kernarg_segment_align: kernarg_segment_align.ok_or(need(".kernarg_segment_align"))?,
        group_segment_fixed_size: group_segment_fixed_size
            .ok_or(need(".group_segment_fixed_size"))?,
        private_segment_fixed_size: private_segment_fixed_size
            .ok_or(need(".private_segment_fixed_size"))?,
        wavefront_size: wavefront_size.ok_or(need(".wavefront_size"))?,
        sgpr_count: sgpr_count.ok_or(need(".sgpr_count"))?,
        vgpr_count: vgpr_count.ok_or(need(".vgpr_count"))?,
        agpr_count,
        sgpr_spill_count,
        vgpr_spill_count,
        max_flat_workgroup_size: max_flat_workgroup_size.ok_or(need(".max_flat_workgroup_size"))?,
        reqd_workgroup_size,
        workgroup_size_hint,
        uses_dynamic_stack,
        workgroup_processor_mode,
        uniform_work_group_size,
        kind,
        args: Args { seq: args, kernel: index, segment_size: kernarg_segment_size },
    })
}

/// Decodes argument map `index` of kernel `kernel`, whose kernarg segment is `segment_size`
/// bytes.
fn argument(
    map: Map<'_>,
    kernel: u32,
    index: u32,
    segment_size: u32,
) -> Result<KernelArg<'_>, MetadataError> {
    let at = |key: &'static str| {
        move |problem| MetadataError { kernel: Some(kernel), arg: Some(index), key, problem }
    };
    let (mut offset, mut size, mut value_kind) = (None, None, None);
    let mut arg = KernelArg {
        index,
        offset: 0,
        size: 0,
        value_kind: ValueKind::Unknown,
        value_kind_name: "",
        name: None,
        type_name: None,
        address_space: None,
        access: None,
        actual_access: None,
        pointee_align: None,
        is_const: false,
        is_restrict: false,
        is_volatile: false,
        is_pipe: false,
    };
    for pair in map.iter() {
        let (k, v) = pair.map_err(|e| at("")(MetadataProblem::Syntax(e)))?;
        let Some(key) = k.as_str() else { continue };
        match key {
            ".offset" => offset = Some(int(v).map_err(at(".offset"))?),
            ".size" => size = Some(int(v).map_err(at(".size"))?),
            ".value_kind" => value_kind = Some(text(v).map_err(at(".value_kind"))?),
            ".name" => arg.name = Some(text(v).map_err(at(".name"))?),
            ".type_name" => arg.type_name = Some(text(v).map_err(at(".type_name"))?),
            ".address_space" => {
                let name = text(v).map_err(at(".address_space"))?;
                arg.address_space = Some(AddressSpace::from_name(name));
            }
            ".access" => arg.access = Some(Access::from_name(text(v).map_err(at(".access"))?)),
            ".actual_access" => {
                let name = text(v).map_err(at(".actual_access"))?;
                arg.actual_access = Some(Access::from_name(name));
            }
            ".pointee_align" => {
                let a = int(v).and_then(power_of_two);
                arg.pointee_align = Some(a.map_err(at(".pointee_align"))?);
            }
            ".is_const" => arg.is_const = flag(v).map_err(at(".is_const"))?,
            ".is_restrict" => arg.is_restrict = flag(v).map_err(at(".is_restrict"))?,
            ".is_volatile" => arg.is_volatile = flag(v).map_err(at(".is_volatile"))?,
            ".is_pipe" => arg.is_pipe = flag(v).map_err(at(".is_pipe"))?,
            _ => {}
        }
    }
    arg.offset = offset.ok_or(at(".offset")(MetadataProblem::MissingKey))?;
    arg.size = size.ok_or(at(".size")(MetadataProblem::MissingKey))?;
    let kind = value_kind.ok_or(at(".value_kind")(MetadataProblem::MissingKey))?;
    arg.value_kind = ValueKind::from_name(kind);
    arg.value_kind_name = kind;
    // The argument must lie inside the kernarg segment.
    let end = arg.offset.checked_add(arg.size);
    if end.is_none_or(|e| e > segment_size) {
        return Err(at(".offset")(MetadataProblem::OutOfRange));
    }
    Ok(arg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_kinds_round_trip() {
        for (name, kind) in VALUE_KINDS {
            assert_eq!(ValueKind::from_name(name), *kind);
            assert_eq!(kind.name(), Some(*name));
            assert_eq!(kind.is_hidden(), name.starts_with("hidden_"));
        }
        assert_eq!(ValueKind::from_name("hidden_future_thing"), ValueKind::UnknownHidden);
        assert!(ValueKind::UnknownHidden.is_hidden());
        assert_eq!(ValueKind::from_name("struct"), ValueKind::Unknown);
        assert!(!ValueKind::Unknown.is_hidden());
    }
}
