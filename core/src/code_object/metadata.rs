//! The `NT_AMDGPU_METADATA` note of code objects v4–v6: a MessagePack map with
//! `amdhsa.version`, `amdhsa.target`, `amdhsa.kernels` (and `amdhsa.printf`).
//!
//! [`Metadata::parse`] checks the whole document once — every kernel map and every argument
//! map, required keys and value types — so the accessors afterwards cannot fail: they decode
//! the (already validated) borrowed MessagePack again on demand instead of storing anything.
//! Unknown keys are ignored (vendors may add their own); unknown enumeration strings decode
//! to an `Unknown` variant. Keys and meanings: AMDGPUUsage, "Code Object V3 Metadata" to
//! "Code Object V6 Metadata".

use super::msgpack::{Cursor, Map, Seq, Value};
use super::parse_error::{MetadataError, MetadataProblem};

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

    /// Parses and validates a metadata document (the note's descriptor bytes), in one
    /// forward pass.
    ///
    /// # Errors
    /// Malformed MessagePack, a value of the wrong type, a required key missing, a value out
    /// of range (an argument past the kernarg segment, an alignment that is not a power of
    /// two) or a version other than 1.x — each naming the kernel, argument and key.
    pub fn parse(data: &'a [u8]) -> Result<Self, MetadataError> {
        let syntax = |kernel, arg| {
            move |e| MetadataError { kernel, arg, key: "", problem: MetadataProblem::Syntax(e) }
        };
        let top = |key, problem| MetadataError::top(key, problem);
        let mut c = Cursor::new(data);
        let doc = c.next(0).map_err(syntax(None, None))?;
        let map = doc.as_map().ok_or(top("", MetadataProblem::WrongType))?;
        let (mut version, mut target, mut kernels) = (None, None, None);
        for _ in 0..map.len() {
            let key = c.next(1).map_err(syntax(None, None))?;
            c.skip_contents(&key).map_err(syntax(None, None))?;
            let value = c.next(1).map_err(syntax(None, None))?;
            match key.as_str() {
                Some("amdhsa.kernels") => {
                    let seq = value.as_array();
                    let seq = seq.ok_or(top("amdhsa.kernels", MetadataProblem::WrongType))?;
                    for i in 0..seq.len() {
                        kernel_pass(&mut c, i)?;
                    }
                    kernels = Some(seq);
                    continue;
                }
                Some("amdhsa.version") => {
                    version = Some(pair_of(value).map_err(|p| top("amdhsa.version", p))?);
                }
                Some("amdhsa.target") => {
                    let text = value.as_str();
                    target = Some(text.ok_or(top("amdhsa.target", MetadataProblem::WrongType))?);
                }
                _ => {}
            }
            c.skip_contents(&value).map_err(syntax(None, None))?;
        }
        let missing = |key| top(key, MetadataProblem::MissingKey);
        let version = version.ok_or(missing("amdhsa.version"))?;
        if version[0] != 1 {
            return Err(top("amdhsa.version", MetadataProblem::UnsupportedVersion));
        }
        Ok(Self {
            version,
            target: target.ok_or(missing("amdhsa.target"))?,
            kernels: kernels.ok_or(missing("amdhsa.kernels"))?,
        })
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

/// Validates kernel map `index` at the cursor, its argument maps included.
fn kernel_pass(c: &mut Cursor<'_>, index: u32) -> Result<(), MetadataError> {
    let err = |arg, key, problem| MetadataError { kernel: Some(index), arg, key, problem };
    let syntax = |e| err(None, "", MetadataProblem::Syntax(e));
    let map =
        c.next(2).map_err(syntax)?.as_map().ok_or(err(None, "", MetadataProblem::WrongType))?;
    let mut fields = KernelFields::default();
    // The argument that ends last (checked against the segment size, which may follow).
    let mut last_end: Option<(u32, u32)> = None;
    for _ in 0..map.len() {
        let key = c.next(3).map_err(syntax)?;
        c.skip_contents(&key).map_err(syntax)?;
        let value = c.next(3).map_err(syntax)?;
        let Some(key) = key.as_str() else {
            c.skip_contents(&value).map_err(syntax)?;
            continue;
        };
        fields.set(key, value).map_err(|(key, p)| err(None, key, p))?;
        if key != ".args" {
            c.skip_contents(&value).map_err(syntax)?;
            continue;
        }
        for a in 0..value.as_array().map_or(0, |s| s.len()) {
            let syntax = |e| err(Some(a), "", MetadataProblem::Syntax(e));
            let arg = c.next(4).map_err(syntax)?.as_map();
            let arg = arg.ok_or(err(Some(a), "", MetadataProblem::WrongType))?;
            let mut fields = ArgFields::new(a);
            for _ in 0..arg.len() {
                let key = c.next(5).map_err(syntax)?;
                c.skip_contents(&key).map_err(syntax)?;
                let value = c.next(5).map_err(syntax)?;
                if let Some(key) = key.as_str() {
                    fields.set(key, value).map_err(|(key, p)| err(Some(a), key, p))?;
                }
                c.skip_contents(&value).map_err(syntax)?;
            }
            let arg = fields.finish().map_err(|(key, p)| err(Some(a), key, p))?;
            let end = arg.offset.checked_add(arg.size);
            let end = end.ok_or(err(Some(a), ".offset", MetadataProblem::OutOfRange))?;
            if last_end.is_none_or(|(_, e)| end > e) {
                last_end = Some((a, end));
            }
        }
    }
    let k = fields.finish(index)?;
    match last_end {
        Some((a, end)) if end > k.kernarg_segment_size => {
            Err(err(Some(a), ".offset", MetadataProblem::OutOfRange))
        }
        _ => Ok(()),
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

/// A problem with one key.
type KeyError = (&'static str, MetadataProblem);

/// The keys of a kernel map, as they are found.
#[derive(Default)]
struct KernelFields<'a> {
    name: Option<&'a str>,
    symbol: Option<&'a str>,
    language: Option<&'a str>,
    language_version: Option<[u32; 2]>,
    kernarg_segment_size: Option<u32>,
    kernarg_segment_align: Option<u32>,
    group_segment_fixed_size: Option<u32>,
    private_segment_fixed_size: Option<u32>,
    wavefront_size: Option<u32>,
    sgpr_count: Option<u32>,
    vgpr_count: Option<u32>,
    agpr_count: Option<u32>,
    sgpr_spill_count: Option<u32>,
    vgpr_spill_count: Option<u32>,
    max_flat_workgroup_size: Option<u32>,
    reqd_workgroup_size: Option<[u32; 3]>,
    workgroup_size_hint: Option<[u32; 3]>,
    uses_dynamic_stack: Option<bool>,
    workgroup_processor_mode: Option<bool>,
    uniform_work_group_size: bool,
    kind: Option<KernelKind>,
    args: Option<Seq<'a>>,
}

impl<'a> KernelFields<'a> {
    /// Takes one key's value (unknown keys are ignored).
    fn set(&mut self, key: &str, v: Value<'a>) -> Result<(), KeyError> {
        // Applies `decode` to the value, naming `key` in an error.
        fn with<'v, T>(
            key: &'static str,
            v: Value<'v>,
            decode: impl FnOnce(Value<'v>) -> Result<T, MetadataProblem>,
        ) -> Result<Option<T>, KeyError> {
            decode(v).map(Some).map_err(|p| (key, p))
        }
        let aligned = |v| int(v).and_then(power_of_two);
        match key {
            ".name" => self.name = with(".name", v, text)?,
            ".symbol" => self.symbol = with(".symbol", v, text)?,
            ".language" => self.language = with(".language", v, text)?,
            ".language_version" => self.language_version = with(".language_version", v, pair_of)?,
            ".kernarg_segment_size" => {
                self.kernarg_segment_size = with(".kernarg_segment_size", v, int)?
            }
            ".kernarg_segment_align" => {
                self.kernarg_segment_align = with(".kernarg_segment_align", v, aligned)?;
            }
            ".group_segment_fixed_size" => {
                self.group_segment_fixed_size = with(".group_segment_fixed_size", v, int)?;
            }
            ".private_segment_fixed_size" => {
                self.private_segment_fixed_size = with(".private_segment_fixed_size", v, int)?;
            }
            ".wavefront_size" => self.wavefront_size = with(".wavefront_size", v, aligned)?,
            ".sgpr_count" => self.sgpr_count = with(".sgpr_count", v, int)?,
            ".vgpr_count" => self.vgpr_count = with(".vgpr_count", v, int)?,
            ".agpr_count" => self.agpr_count = with(".agpr_count", v, int)?,
            ".sgpr_spill_count" => self.sgpr_spill_count = with(".sgpr_spill_count", v, int)?,
            ".vgpr_spill_count" => self.vgpr_spill_count = with(".vgpr_spill_count", v, int)?,
            ".max_flat_workgroup_size" => {
                self.max_flat_workgroup_size = with(".max_flat_workgroup_size", v, int)?;
            }
            ".reqd_workgroup_size" => {
                self.reqd_workgroup_size = with(".reqd_workgroup_size", v, ints::<3>)?;
            }
            ".workgroup_size_hint" => {
                self.workgroup_size_hint = with(".workgroup_size_hint", v, ints::<3>)?;
            }
            ".uses_dynamic_stack" => {
                self.uses_dynamic_stack = with(".uses_dynamic_stack", v, flag)?
            }
            ".workgroup_processor_mode" => {
                self.workgroup_processor_mode = with(".workgroup_processor_mode", v, flag)?;
            }
            ".uniform_work_group_size" => {
                self.uniform_work_group_size =
                    int(v).map_err(|p| (".uniform_work_group_size", p))? != 0;
            }
            ".kind" => {
                let kind = |v| {
                    text(v).map(|t| match t {
                        "normal" => KernelKind::Normal,
                        "init" => KernelKind::Init,
                        "fini" => KernelKind::Fini,
                        _ => KernelKind::Unknown,
                    })
                };
                self.kind = with(".kind", v, kind)?;
            }
            ".args" => {
                self.args = with(".args", v, |v| v.as_array().ok_or(MetadataProblem::WrongType))?;
            }
            _ => {}
        }
        Ok(())
    }

    /// The kernel, once every required key was found.
    fn finish(self, index: u32) -> Result<KernelMetadata<'a>, MetadataError> {
        let need = |key| MetadataError {
            kernel: Some(index),
            arg: None,
            key,
            problem: MetadataProblem::MissingKey,
        };
        let kernarg_segment_size =
            self.kernarg_segment_size.ok_or(need(".kernarg_segment_size"))?;
        Ok(KernelMetadata {
            index,
            name: self.name.ok_or(need(".name"))?,
            symbol: self.symbol.ok_or(need(".symbol"))?,
            language: self.language,
            language_version: self.language_version,
            kernarg_segment_size,
            kernarg_segment_align: self
                .kernarg_segment_align
                .ok_or(need(".kernarg_segment_align"))?,
            group_segment_fixed_size: self
                .group_segment_fixed_size
                .ok_or(need(".group_segment_fixed_size"))?,
            private_segment_fixed_size: self
                .private_segment_fixed_size
                .ok_or(need(".private_segment_fixed_size"))?,
            wavefront_size: self.wavefront_size.ok_or(need(".wavefront_size"))?,
            sgpr_count: self.sgpr_count.ok_or(need(".sgpr_count"))?,
            vgpr_count: self.vgpr_count.ok_or(need(".vgpr_count"))?,
            agpr_count: self.agpr_count,
            sgpr_spill_count: self.sgpr_spill_count,
            vgpr_spill_count: self.vgpr_spill_count,
            max_flat_workgroup_size: self
                .max_flat_workgroup_size
                .ok_or(need(".max_flat_workgroup_size"))?,
            reqd_workgroup_size: self.reqd_workgroup_size,
            workgroup_size_hint: self.workgroup_size_hint,
            uses_dynamic_stack: self.uses_dynamic_stack,
            workgroup_processor_mode: self.workgroup_processor_mode,
            uniform_work_group_size: self.uniform_work_group_size,
            kind: self.kind.unwrap_or(KernelKind::Normal),
            args: Args { seq: self.args, kernel: index, segment_size: kernarg_segment_size },
        })
    }
}

/// The keys of an argument map, as they are found.
struct ArgFields<'a> {
    arg: KernelArg<'a>,
    offset: Option<u32>,
    size: Option<u32>,
    value_kind: Option<&'a str>,
}

impl<'a> ArgFields<'a> {
    fn new(index: u32) -> Self {
        let arg = KernelArg {
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
        Self { arg, offset: None, size: None, value_kind: None }
    }

    /// Takes one key's value (unknown keys are ignored).
    fn set(&mut self, key: &str, v: Value<'a>) -> Result<(), KeyError> {
        let arg = &mut self.arg;
        let name = |v| text(v).map_err(|p| (".name", p));
        match key {
            ".offset" => self.offset = Some(int(v).map_err(|p| (".offset", p))?),
            ".size" => self.size = Some(int(v).map_err(|p| (".size", p))?),
            ".value_kind" => self.value_kind = Some(text(v).map_err(|p| (".value_kind", p))?),
            ".name" => arg.name = Some(name(v)?),
            ".type_name" => arg.type_name = Some(text(v).map_err(|p| (".type_name", p))?),
            ".address_space" => {
                let space = text(v).map_err(|p| (".address_space", p))?;
                arg.address_space = Some(AddressSpace::from_name(space));
            }
            ".access" => {
                arg.access = Some(Access::from_name(text(v).map_err(|p| (".access", p))?));
            }
            ".actual_access" => {
                let access = text(v).map_err(|p| (".actual_access", p))?;
                arg.actual_access = Some(Access::from_name(access));
            }
            ".pointee_align" => {
                let align = int(v).and_then(power_of_two);
                arg.pointee_align = Some(align.map_err(|p| (".pointee_align", p))?);
            }
            ".is_const" => arg.is_const = flag(v).map_err(|p| (".is_const", p))?,
            ".is_restrict" => arg.is_restrict = flag(v).map_err(|p| (".is_restrict", p))?,
            ".is_volatile" => arg.is_volatile = flag(v).map_err(|p| (".is_volatile", p))?,
            ".is_pipe" => arg.is_pipe = flag(v).map_err(|p| (".is_pipe", p))?,
            _ => {}
        }
        Ok(())
    }

    /// The argument, once the required keys were found (not yet checked against the
    /// segment size).
    fn finish(self) -> Result<KernelArg<'a>, KeyError> {
        let mut arg = self.arg;
        arg.offset = self.offset.ok_or((".offset", MetadataProblem::MissingKey))?;
        arg.size = self.size.ok_or((".size", MetadataProblem::MissingKey))?;
        let kind = self.value_kind.ok_or((".value_kind", MetadataProblem::MissingKey))?;
        arg.value_kind = ValueKind::from_name(kind);
        arg.value_kind_name = kind;
        Ok(arg)
    }
}

/// Decodes kernel map `index` (validated by [`Metadata::parse`]).
fn kernel(map: Map<'_>, index: u32) -> Result<KernelMetadata<'_>, MetadataError> {
    let err = |key, problem| MetadataError { kernel: Some(index), arg: None, key, problem };
    let mut fields = KernelFields::default();
    for pair in map.iter() {
        let (k, v) = pair.map_err(|e| err("", MetadataProblem::Syntax(e)))?;
        if let Some(key) = k.as_str() {
            fields.set(key, v).map_err(|(key, p)| err(key, p))?;
        }
    }
    fields.finish(index)
}

/// Decodes argument map `index` of kernel `kernel`, whose kernarg segment is `segment_size`
/// bytes (validated by [`Metadata::parse`]).
fn argument(
    map: Map<'_>,
    kernel: u32,
    index: u32,
    segment_size: u32,
) -> Result<KernelArg<'_>, MetadataError> {
    let err = |key, problem| MetadataError { kernel: Some(kernel), arg: Some(index), key, problem };
    let mut fields = ArgFields::new(index);
    for pair in map.iter() {
        let (k, v) = pair.map_err(|e| err("", MetadataProblem::Syntax(e)))?;
        if let Some(key) = k.as_str() {
            fields.set(key, v).map_err(|(key, p)| err(key, p))?;
        }
    }
    let arg = fields.finish().map_err(|(key, p)| err(key, p))?;
    // The argument lies inside the kernarg segment.
    match arg.offset.checked_add(arg.size) {
        Some(end) if end <= segment_size => Ok(arg),
        _ => Err(err(".offset", MetadataProblem::OutOfRange)),
    }
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
