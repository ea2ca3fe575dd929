//! What `hsakmt dispatch` is asked to do, parsed and checked before anything touches a device:
//! the grid and work-group geometry (`X[,Y[,Z]]`) and the argument specs
//! (`u32:V | i32:V | u64:V | i64:V | f32:V | f64:V | buf:TYPE:COUNT[:zero|iota|fill=V]`),
//! matched against the kernel's metadata in argument order.

use hsakmt_core::code_object::kernarg::{ArgClass, ArgValue, Dispatch, arg_class};
use hsakmt_core::code_object::{KernelArg, KernelMetadata};

/// The most work-items a grid may have on a GPU (the AQL packet's sizes are 32-bit per
/// dimension; this bounds their product too).
pub(super) const MAX_GRID_ITEMS: u64 = u32::MAX as u64;
/// The most work-items a grid may have on the simulator, which interprets every instruction
/// of every work-item on one thread (16 Mi: seconds to minutes).
pub(super) const MAX_SIM_GRID_ITEMS: u64 = 1 << 24;
/// Work-items per work-group on every AMD GPU.
pub(super) const MAX_WORKGROUP_ITEMS: u64 = 1024;
/// The most bytes one buffer argument may have (it is allocated, initialised and printed).
pub(super) const MAX_BUFFER_BYTES: u64 = 256 << 20;
/// The most bytes all buffer arguments together may have.
pub(super) const MAX_TOTAL_BUFFER_BYTES: u64 = 1 << 30;

/// An element type of a buffer argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ElemType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F32,
    F64,
}

impl ElemType {
    const ALL: [(&'static str, ElemType); 10] = [
        ("u8", Self::U8),
        ("i8", Self::I8),
        ("u16", Self::U16),
        ("i16", Self::I16),
        ("u32", Self::U32),
        ("i32", Self::I32),
        ("u64", Self::U64),
        ("i64", Self::I64),
        ("f32", Self::F32),
        ("f64", Self::F64),
    ];

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == s).map(|(_, t)| *t)
    }

    /// Its name in specs and reports.
    pub(super) fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, t)| *t == self).map_or("?", |(n, _)| n)
    }

    /// Bytes per element.
    pub(super) fn size(self) -> usize {
        match self {
            Self::U8 | Self::I8 => 1,
            Self::U16 | Self::I16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
            Self::U64 | Self::I64 | Self::F64 => 8,
        }
    }

    /// The little-endian bytes of `v` in this type, when it is one (integers in range,
    /// any float).
    fn encode(self, v: &Number) -> Option<Vec<u8>> {
        let int = |v: &Number| match *v {
            Number::Int(i) => Some(i),
            Number::Float(_) => None,
        };
        Some(match self {
            Self::U8 => u8::try_from(int(v)?).ok()?.to_le_bytes().to_vec(),
            Self::I8 => i8::try_from(int(v)?).ok()?.to_le_bytes().to_vec(),
            Self::U16 => u16::try_from(int(v)?).ok()?.to_le_bytes().to_vec(),
            Self::I16 => i16::try_from(int(v)?).ok()?.to_le_bytes().to_vec(),
            Self::U32 => u32::try_from(int(v)?).ok()?.to_le_bytes().to_vec(),
            Self::I32 => i32::try_from(int(v)?).ok()?.to_le_bytes().to_vec(),
            Self::U64 => u64::try_from(int(v)?).ok()?.to_le_bytes().to_vec(),
            Self::I64 => i64::try_from(int(v)?).ok()?.to_le_bytes().to_vec(),
            Self::F32 => (v.as_f64() as f32).to_le_bytes().to_vec(),
            Self::F64 => v.as_f64().to_le_bytes().to_vec(),
        })
    }

    /// Element `i` of `bytes` as a JSON value (non-finite floats as strings).
    pub(super) fn decode(self, bytes: &[u8]) -> serde_json::Value {
        use serde_json::Value;
        let b = |n: usize| -> [u8; 8] {
            let mut a = [0u8; 8];
            a[..n].copy_from_slice(&bytes[..n]);
            a
        };
        let float = |f: f64| {
            serde_json::Number::from_f64(f)
                .map_or_else(|| Value::String(f.to_string()), Value::Number)
        };
        match self {
            Self::U8 => bytes[0].into(),
            Self::I8 => (bytes[0] as i8).into(),
            Self::U16 => u16::from_le_bytes([bytes[0], bytes[1]]).into(),
            Self::I16 => i16::from_le_bytes([bytes[0], bytes[1]]).into(),
            Self::U32 => u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]).into(),
            Self::I32 => i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]).into(),
            Self::U64 => u64::from_le_bytes(b(8)).into(),
            Self::I64 => i64::from_le_bytes(b(8)).into(),
            Self::F32 => {
                float(f64::from(f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])))
            }
            Self::F64 => float(f64::from_le_bytes(b(8))),
        }
    }

    fn is_float(self) -> bool {
        matches!(self, Self::F32 | Self::F64)
    }
}

/// A number as written in a spec.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Number {
    Int(i128),
    Float(f64),
}

impl Number {
    /// Decimal or `0x` hexadecimal integers (with a sign), or floats (`1.5`, `-2e3`, `inf`,
    /// `nan`).
    fn parse(s: &str, float: bool) -> Option<Self> {
        if float {
            return s.parse::<f64>().ok().map(Self::Float);
        }
        let (neg, digits) = match s.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        let v = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
            Some(hex) => i128::from_str_radix(hex, 16).ok()?,
            None => digits.parse::<i128>().ok()?,
        };
        Some(Self::Int(if neg { -v } else { v }))
    }

    fn as_f64(&self) -> f64 {
        match *self {
            Self::Int(i) => i as f64,
            Self::Float(f) => f,
        }
    }
}

/// How a buffer starts.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Init {
    /// All zero.
    Zero,
    /// Element `i` holds `i` (wrapping in the type; floats exactly up to 2^24 / 2^53).
    Iota,
    /// Every element holds these bytes.
    Fill(Vec<u8>),
}

/// One `--arg`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ArgSpec {
    /// A by-value argument: its type and little-endian bytes.
    Scalar { ty: ElemType, bytes: Vec<u8> },
    /// A buffer in device memory, passed by address.
    Buffer { ty: ElemType, count: u64, init: Init },
}

impl ArgSpec {
    /// Parses one spec.
    pub(super) fn parse(spec: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("--arg {spec}: {why}");
        let (kind, rest) = spec.split_once(':').ok_or_else(|| {
            bad("expected TYPE:VALUE (u32, i32, u64, i64, f32, f64) or buf:TYPE:COUNT[:INIT]")
        })?;
        if kind == "buf" {
            let mut parts = rest.splitn(3, ':');
            let ty = parts.next().unwrap_or_default();
            let ty = ElemType::parse(ty).ok_or_else(|| {
                bad(&format!("no element type {ty:?} (u8 i8 u16 i16 u32 i32 u64 i64 f32 f64)"))
            })?;
            let count = parts.next().ok_or_else(|| bad("a buffer needs a COUNT"))?;
            let count =
                count.parse::<u64>().ok().filter(|c| *c >= 1).ok_or_else(|| {
                    bad(&format!("COUNT {count:?} is not a number of at least 1"))
                })?;
            let bytes = count.checked_mul(ty.size() as u64).filter(|b| *b <= MAX_BUFFER_BYTES);
            if bytes.is_none() {
                return Err(bad(&format!(
                    "{count} elements of {} exceed the {} MiB a buffer may have",
                    ty.name(),
                    MAX_BUFFER_BYTES >> 20
                )));
            }
            let init = match parts.next() {
                None | Some("zero") => Init::Zero,
                Some("iota") => Init::Iota,
                Some(other) => {
                    let v = other.strip_prefix("fill=").ok_or_else(|| {
                        bad(&format!("INIT {other:?} is not zero, iota or fill=V"))
                    })?;
                    let n = Number::parse(v, ty.is_float())
                        .ok_or_else(|| bad(&format!("{v:?} is not a {} value", ty.name())))?;
                    let bytes = ty
                        .encode(&n)
                        .ok_or_else(|| bad(&format!("{v} does not fit a {}", ty.name())))?;
                    Init::Fill(bytes)
                }
            };
            return Ok(Self::Buffer { ty, count, init });
        }
        let ty = match kind {
            "u32" | "i32" | "u64" | "i64" | "f32" | "f64" => ElemType::parse(kind),
            _ => None,
        }
        .ok_or_else(|| bad(&format!("no argument type {kind:?} (u32 i32 u64 i64 f32 f64 buf)")))?;
        let n = Number::parse(rest, ty.is_float())
            .ok_or_else(|| bad(&format!("{rest:?} is not a {} value", ty.name())))?;
        let bytes = ty.encode(&n).ok_or_else(|| bad(&format!("{rest} does not fit a {kind}")))?;
        Ok(Self::Scalar { ty, bytes })
    }

    /// Bytes of a buffer (0 for a scalar).
    pub(super) fn buffer_bytes(&self) -> u64 {
        match self {
            Self::Buffer { ty, count, .. } => count.saturating_mul(ty.size() as u64),
            Self::Scalar { .. } => 0,
        }
    }

    /// The initial contents of a buffer.
    pub(super) fn initial_bytes(&self) -> Vec<u8> {
        let Self::Buffer { ty, count, init } = self else { return Vec::new() };
        let size = ty.size();
        let n = *count as usize;
        match init {
            Init::Zero => vec![0; n * size],
            Init::Fill(b) => b.repeat(n),
            Init::Iota => {
                let mut out = Vec::with_capacity(n * size);
                for i in 0..n {
                    let bytes = match ty {
                        ElemType::F32 => (i as f32).to_le_bytes().to_vec(),
                        ElemType::F64 => (i as f64).to_le_bytes().to_vec(),
                        _ => (i as u64).to_le_bytes()[..size].to_vec(),
                    };
                    out.extend_from_slice(&bytes);
                }
                out
            }
        }
    }

    /// The kernel-argument value, for a buffer at `addr`.
    pub(super) fn value(&self, addr: u64) -> ArgValue<'_> {
        match self {
            Self::Buffer { .. } => ArgValue::Pointer(addr),
            Self::Scalar { bytes, .. } => ArgValue::Bytes(bytes),
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Scalar { ty, .. } => format!("a {} ({} bytes)", ty.name(), ty.size()),
            Self::Buffer { ty, .. } => format!("a buffer of {}", ty.name()),
        }
    }
}

/// Parses `X[,Y[,Z]]` into (dimensions, sizes), unused dimensions 1.
pub(super) fn parse_dims(flag: &str, s: &str) -> Result<(u8, [u64; 3]), String> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("--{flag} {s}: expected X, X,Y or X,Y,Z"));
    }
    let mut out = [1u64; 3];
    for (o, p) in out.iter_mut().zip(&parts) {
        *o = p
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|v| *v >= 1)
            .ok_or_else(|| format!("--{flag} {s}: {p:?} is not a size of at least 1"))?;
    }
    Ok((parts.len() as u8, out))
}

/// The dispatch geometry, checked: the grid's dimensions (work-group dimensions beyond it
/// must be 1), 32-bit sizes, work-groups of at most 1024 work-items, a grid of at most
/// `max_items` work-items.
pub(super) fn geometry(grid: &str, workgroup: &str, max_items: u64) -> Result<Dispatch, String> {
    let (dims, g) = parse_dims("grid", grid)?;
    let (wdims, w) = parse_dims("workgroup", workgroup)?;
    if wdims > dims {
        return Err(format!(
            "--workgroup {workgroup} has {wdims} dimensions, the grid {grid} only {dims}"
        ));
    }
    let items: u64 = w.iter().product();
    if items > MAX_WORKGROUP_ITEMS {
        return Err(format!(
            "--workgroup {workgroup}: {items} work-items per work-group, at most \
             {MAX_WORKGROUP_ITEMS}"
        ));
    }
    let total = g.iter().try_fold(1u64, |acc, v| acc.checked_mul(*v));
    match total {
        Some(t) if t <= max_items => {}
        _ => {
            return Err(format!(
                "--grid {grid}: more than {max_items} work-items{}",
                if max_items == MAX_SIM_GRID_ITEMS {
                    " (the simulator interprets every instruction of every work-item)"
                } else {
                    ""
                }
            ));
        }
    }
    let g32 = g.map(|v| u32::try_from(v).unwrap_or(u32::MAX));
    let w16 = w.map(|v| u16::try_from(v).unwrap_or(u16::MAX));
    Ok(Dispatch::new(dims, w16, g32))
}

/// A kernel argument's description for messages: `2 (words: ulong, 8 bytes)`.
fn describe_arg(n: usize, arg: &KernelArg<'_>) -> String {
    let name = arg.name.unwrap_or("unnamed");
    let ty = arg.type_name.unwrap_or(arg.value_kind.name().unwrap_or("?"));
    format!("{n} ({name}: {ty}, {} bytes)", arg.size)
}

/// Checks `specs` against the kernel's explicit arguments, in order.
pub(super) fn check_against(kernel: &KernelMetadata<'_>, specs: &[ArgSpec]) -> Result<(), String> {
    let args: Vec<KernelArg<'_>> = kernel.args.explicit().collect();
    let list =
        || args.iter().enumerate().map(|(n, a)| describe_arg(n, a)).collect::<Vec<_>>().join(", ");
    if args.len() != specs.len() {
        return Err(format!(
            "kernel {} takes {} argument(s), {} given: {}",
            kernel.name,
            args.len(),
            specs.len(),
            list()
        ));
    }
    for (n, (arg, spec)) in args.iter().zip(specs).enumerate() {
        let class = arg_class(arg);
        let ok = match (class, spec) {
            (ArgClass::Pointer, ArgSpec::Buffer { .. }) => true,
            (ArgClass::Integer, ArgSpec::Scalar { ty, .. }) => {
                !ty.is_float() && ty.size() as u32 == arg.size
            }
            (ArgClass::Float, ArgSpec::Scalar { ty, .. }) => {
                ty.is_float() && ty.size() as u32 == arg.size
            }
            (ArgClass::Other, ArgSpec::Scalar { ty, .. }) => ty.size() as u32 == arg.size,
            _ => false,
        };
        if !ok {
            let wants = match class {
                ArgClass::Pointer => "a buffer (buf:TYPE:COUNT)".to_string(),
                ArgClass::Integer => format!("an integer of {} bytes", arg.size),
                ArgClass::Float => format!("a float of {} bytes", arg.size),
                ArgClass::Other => format!("a value of {} bytes", arg.size),
                ArgClass::Unknown => "an argument kind hsakmt cannot pass".to_string(),
            };
            return Err(format!(
                "argument {} takes {wants}; given {}",
                describe_arg(n, arg),
                spec.describe()
            ));
        }
    }
    let total: u64 = specs.iter().map(ArgSpec::buffer_bytes).sum();
    if total > MAX_TOTAL_BUFFER_BYTES {
        return Err(format!(
            "the buffers need {total} bytes, more than the {} MiB hsakmt dispatch allocates",
            MAX_TOTAL_BUFFER_BYTES >> 20
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(
            ArgSpec::parse("u32:7"),
            Ok(ArgSpec::Scalar { ty: ElemType::U32, bytes: 7u32.to_le_bytes().to_vec() })
        );
        assert_eq!(
            ArgSpec::parse("i64:-0x10"),
            Ok(ArgSpec::Scalar { ty: ElemType::I64, bytes: (-16i64).to_le_bytes().to_vec() })
        );
        assert_eq!(
            ArgSpec::parse("f32:1.5"),
            Ok(ArgSpec::Scalar { ty: ElemType::F32, bytes: 1.5f32.to_le_bytes().to_vec() })
        );
        assert_eq!(
            ArgSpec::parse("buf:u16:3:fill=0xffff"),
            Ok(ArgSpec::Buffer { ty: ElemType::U16, count: 3, init: Init::Fill(vec![0xff, 0xff]) })
        );
        let iota = ArgSpec::parse("buf:i16:3:iota").unwrap();
        assert_eq!(iota.initial_bytes(), [0, 0, 1, 0, 2, 0]);
        let f = ArgSpec::parse("buf:f32:2:iota").unwrap();
        assert_eq!(f.initial_bytes(), [0f32.to_le_bytes(), 1f32.to_le_bytes()].concat());
        assert_eq!(ArgSpec::parse("buf:u8:4").unwrap().initial_bytes(), [0; 4]);
        for (bad, why) in [
            ("u32", "expected TYPE:VALUE"),
            ("u32:-1", "does not fit a u32"),
            ("i32:2147483648", "does not fit a i32"),
            ("u16:1", "no argument type"),
            ("u32:seven", "is not a u32 value"),
            ("buf:u32", "needs a COUNT"),
            ("buf:u32:0", "at least 1"),
            ("buf:u32:99999999999999999999", "is not a number"),
            ("buf:f64:1000000000", "exceed the 256 MiB"),
            ("buf:u128:4", "no element type"),
            ("buf:u8:4:ones", "is not zero, iota or fill=V"),
            ("buf:u8:4:fill=256", "does not fit a u8"),
        ] {
            let e = ArgSpec::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn geometries() {
        let d = geometry("100,3", "64", MAX_GRID_ITEMS).unwrap();
        assert_eq!((d.dimensions, d.grid_size, d.workgroup_size), (2, [100, 3, 1], [64, 1, 1]));
        for (grid, wg, why) in [
            ("10", "4,4", "only 1"),
            ("10", "2048", "at most 1024"),
            ("65536,65536,2", "1", "more than"),
            ("0", "1", "at least 1"),
            ("1,2,3,4", "1", "expected X"),
            ("99999999999999999999999", "1", "not a size"),
        ] {
            let e = geometry(grid, wg, MAX_GRID_ITEMS).unwrap_err();
            assert!(e.contains(why), "{grid} {wg}: {e}");
        }
        let e = geometry("5000,5000", "1", MAX_SIM_GRID_ITEMS).unwrap_err();
        assert!(e.contains("simulator"), "{e}");
    }

    #[test]
    fn decoding() {
        assert_eq!(ElemType::I8.decode(&[0xff]), serde_json::json!(-1));
        assert_eq!(ElemType::F32.decode(&f32::NAN.to_le_bytes()), serde_json::json!("NaN"));
        assert_eq!(ElemType::U64.decode(&u64::MAX.to_le_bytes()), serde_json::json!(u64::MAX));
    }
}
