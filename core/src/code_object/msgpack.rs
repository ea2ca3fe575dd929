//! A bounded, allocation-free MessagePack reader over a borrowed byte slice.
//!
//! Values borrow from the input: strings and binaries are sub-slices, arrays and maps are
//! cursors that decode their elements on demand. Every read is bounds-checked and every loop
//! consumes at least one input byte per step, so the work is bounded by the input length;
//! nesting deeper than [`MAX_DEPTH`] is an error, so skipping a value needs no recursion and
//! a fixed, small stack.
//!
//! The format is the MessagePack specification's (<https://msgpack.org>): nil, booleans,
//! integers (fixint, `uint 8..64`, `int 8..64`), floats (32, 64), strings (`fixstr`,
//! `str 8..32`, UTF-8), binaries, arrays, maps and extensions. The byte `0xc1` is never used
//! and is an error.

use core::fmt;

/// The deepest nesting of arrays and maps the reader accepts (the top-level value is depth 1).
/// AMDGPU metadata nests 4 deep (`amdhsa.kernels` → kernel map → `.args` → argument map).
pub const MAX_DEPTH: usize = 16;

/// What is wrong with MessagePack input, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MsgPackError {
    /// Byte offset (in the MessagePack data) of the value that could not be read.
    pub offset: usize,
    /// What is wrong.
    pub problem: MsgPackProblem,
}

/// The kinds of malformed MessagePack input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MsgPackProblem {
    /// The value runs past the end of the input.
    Truncated,
    /// The never-used type byte `0xc1`.
    ReservedType,
    /// Arrays and maps nest deeper than [`MAX_DEPTH`].
    TooDeep,
    /// A string is not UTF-8.
    InvalidUtf8,
}

impl fmt::Display for MsgPackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.problem {
            MsgPackProblem::Truncated => "value runs past the end of the data",
            MsgPackProblem::ReservedType => "reserved type byte 0xc1",
            MsgPackProblem::TooDeep => "arrays and maps nested too deep",
            MsgPackProblem::InvalidUtf8 => "string is not UTF-8",
        };
        write!(f, "MessagePack byte {}: {what}", self.offset)
    }
}

/// A decoded MessagePack value borrowing from the input.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Value<'a> {
    /// `nil`.
    Nil,
    /// `true` / `false`.
    Bool(bool),
    /// A non-negative integer (any integer encoding).
    UInt(u64),
    /// A negative integer.
    NegInt(i64),
    /// A 32-bit float.
    F32(f32),
    /// A 64-bit float.
    F64(f64),
    /// A UTF-8 string.
    Str(&'a str),
    /// A binary blob.
    Bin(&'a [u8]),
    /// An extension value: its type and data.
    Ext(i8, &'a [u8]),
    /// An array.
    Array(Seq<'a>),
    /// A map.
    Map(Map<'a>),
}

impl<'a> Value<'a> {
    /// The value as an unsigned integer, if it is a non-negative integer.
    #[must_use]
    pub const fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::UInt(v) => Some(v),
            _ => None,
        }
    }

    /// The value as a `u32`, if it is a non-negative integer below 2^32.
    #[must_use]
    pub fn as_u32(&self) -> Option<u32> {
        self.as_u64().and_then(|v| u32::try_from(v).ok())
    }

    /// The value as a string, if it is one.
    #[must_use]
    pub const fn as_str(&self) -> Option<&'a str> {
        match *self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value as a boolean, if it is one.
    #[must_use]
    pub const fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The value as an array, if it is one.
    #[must_use]
    pub const fn as_array(&self) -> Option<Seq<'a>> {
        match *self {
            Value::Array(s) => Some(s),
            _ => None,
        }
    }

    /// The value as a map, if it is one.
    #[must_use]
    pub const fn as_map(&self) -> Option<Map<'a>> {
        match *self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }
}

/// An array: `len` values starting at byte `first` of `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Seq<'a> {
    data: &'a [u8],
    first: usize,
    len: u32,
    depth: usize,
}

impl<'a> Seq<'a> {
    /// An empty array.
    pub(super) const EMPTY: Seq<'static> = Seq { data: &[], first: 0, len: 0, depth: 0 };

    /// The number of elements the array header declares.
    #[must_use]
    pub const fn len(&self) -> u32 {
        self.len
    }

    /// Whether the array is empty.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements, front to back. A malformed element yields one `Err` and ends the walk.
    #[must_use]
    pub const fn iter(&self) -> SeqIter<'a> {
        SeqIter { data: self.data, pos: self.first, left: self.len, depth: self.depth }
    }
}

/// The elements of a [`Seq`].
#[derive(Debug, Clone)]
pub struct SeqIter<'a> {
    data: &'a [u8],
    pos: usize,
    left: u32,
    depth: usize,
}

impl<'a> Iterator for SeqIter<'a> {
    type Item = Result<Value<'a>, MsgPackError>;

    fn next(&mut self) -> Option<Self::Item> {
        let left = self.left.checked_sub(1)?;
        match read_at(self.data, self.pos, self.depth) {
            Ok((value, end)) => {
                self.pos = end;
                self.left = left;
                Some(Ok(value))
            }
            Err(e) => {
                self.left = 0;
                Some(Err(e))
            }
        }
    }
}

/// A map: `len` key/value pairs starting at byte `first` of `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Map<'a> {
    data: &'a [u8],
    first: usize,
    len: u32,
    depth: usize,
}

impl<'a> Map<'a> {
    /// The number of pairs the map header declares.
    #[must_use]
    pub const fn len(&self) -> u32 {
        self.len
    }

    /// Whether the map is empty.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pairs, front to back. A malformed pair yields one `Err` and ends the walk.
    #[must_use]
    pub const fn iter(&self) -> MapIter<'a> {
        MapIter { data: self.data, pos: self.first, left: self.len, depth: self.depth }
    }

    /// The value of the first pair whose key is the string `key`.
    ///
    /// # Errors
    /// The map is malformed up to (and including) that pair.
    pub fn get(&self, key: &str) -> Result<Option<Value<'a>>, MsgPackError> {
        for pair in self.iter() {
            let (k, v) = pair?;
            if k.as_str() == Some(key) {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }
}

/// The pairs of a [`Map`].
#[derive(Debug, Clone)]
pub struct MapIter<'a> {
    data: &'a [u8],
    pos: usize,
    left: u32,
    depth: usize,
}

impl<'a> Iterator for MapIter<'a> {
    type Item = Result<(Value<'a>, Value<'a>), MsgPackError>;

    fn next(&mut self) -> Option<Self::Item> {
        let left = self.left.checked_sub(1)?;
        let pair = read_at(self.data, self.pos, self.depth).and_then(|(key, end)| {
            read_at(self.data, end, self.depth).map(|(value, end)| ((key, value), end))
        });
        match pair {
            Ok((pair, end)) => {
                self.pos = end;
                self.left = left;
                Some(Ok(pair))
            }
            Err(e) => {
                self.left = 0;
                Some(Err(e))
            }
        }
    }
}

/// Reads the value that starts at byte 0 of `data` (the top level, depth 1), and checks that
/// the whole value is well-formed (every nested element readable, nesting within
/// [`MAX_DEPTH`]). Bytes after the value are ignored.
///
/// # Errors
/// The value is malformed or truncated.
pub fn read(data: &[u8]) -> Result<Value<'_>, MsgPackError> {
    skip(data, 0, 0)?;
    read_at(data, 0, 0).map(|(value, _)| value)
}

/// The value starting at `pos`, whose enclosing containers are `depth` deep, and the offset
/// just past it (past all its elements for an array or map).
fn read_at(data: &[u8], pos: usize, depth: usize) -> Result<(Value<'_>, usize), MsgPackError> {
    let header = header(data, pos)?;
    let value = match header.kind {
        Kind::Scalar(v) => return Ok((v, header.end)),
        Kind::Array(len) => {
            Value::Array(Seq { data, first: header.end, len, depth: nested(depth, pos)? })
        }
        Kind::Map(len) => {
            Value::Map(Map { data, first: header.end, len, depth: nested(depth, pos)? })
        }
    };
    Ok((value, skip(data, pos, depth)?))
}

/// The depth of the elements of a container at `depth`, or `TooDeep`.
fn nested(depth: usize, pos: usize) -> Result<usize, MsgPackError> {
    depth
        .checked_add(1)
        .filter(|d| *d <= MAX_DEPTH)
        .ok_or(MsgPackError { offset: pos, problem: MsgPackProblem::TooDeep })
}

/// The offset just past the value at `pos` (including all nested elements), without
/// recursion: a stack of the element counts still to skip, one per open container.
fn skip(data: &[u8], pos: usize, depth: usize) -> Result<usize, MsgPackError> {
    let mut open = [0u64; MAX_DEPTH];
    let mut top = 0usize; // open containers
    let mut at = pos;
    loop {
        let h = header(data, at)?;
        at = h.end;
        let items = match h.kind {
            Kind::Scalar(_) => 0,
            Kind::Array(n) => u64::from(n),
            Kind::Map(n) => u64::from(n).saturating_mul(2),
        };
        if items > 0 {
            nested(depth.saturating_add(top), h.start)?;
            let too_deep = MsgPackError { offset: h.start, problem: MsgPackProblem::TooDeep };
            *open.get_mut(top).ok_or(too_deep)? = items;
            top = top.saturating_add(1);
            continue;
        }
        // Close every container whose last element this was.
        loop {
            let Some(last) = top.checked_sub(1) else { return Ok(at) };
            let Some(count) = open.get_mut(last) else { return Ok(at) };
            *count = count.saturating_sub(1);
            if *count > 0 {
                break;
            }
            top = last;
        }
    }
}

/// What a type byte introduces.
enum Kind<'a> {
    Scalar(Value<'a>),
    Array(u32),
    Map(u32),
}

/// A decoded header: the value's start, what it is, and where its payload (for a
/// container: its first element) or its end (for a scalar) is.
struct Header<'a> {
    start: usize,
    kind: Kind<'a>,
    end: usize,
}

/// `n` bytes at `pos`, or `Truncated` at `start`.
fn take(data: &[u8], pos: usize, n: usize, start: usize) -> Result<&[u8], MsgPackError> {
    pos.checked_add(n)
        .and_then(|end| data.get(pos..end))
        .ok_or(MsgPackError { offset: start, problem: MsgPackProblem::Truncated })
}

/// A big-endian unsigned integer of `n` (1, 2, 4 or 8) bytes at `pos`.
fn be(data: &[u8], pos: usize, n: usize, start: usize) -> Result<u64, MsgPackError> {
    let bytes = take(data, pos, n, start)?;
    Ok(bytes.iter().fold(0u64, |acc, b| acc.wrapping_shl(8) | u64::from(*b)))
}

fn header<'a>(data: &'a [u8], start: usize) -> Result<Header<'a>, MsgPackError> {
    let truncated = MsgPackError { offset: start, problem: MsgPackProblem::Truncated };
    let tag = *data.get(start).ok_or(truncated)?;
    let body = start.checked_add(1).ok_or(truncated)?;
    // A payload of `n` bytes after a `len_bytes`-byte big-endian length.
    let sized = |len_bytes: usize| -> Result<(usize, usize), MsgPackError> {
        let n = usize::try_from(be(data, body, len_bytes, start)?).map_err(|_| truncated)?;
        let payload = body.checked_add(len_bytes).ok_or(truncated)?;
        take(data, payload, n, start)?;
        Ok((payload, n))
    };
    let scalar = |value: Value<'a>, len: usize| -> Result<Header<'a>, MsgPackError> {
        Ok(Header {
            start,
            kind: Kind::Scalar(value),
            end: body.checked_add(len).ok_or(truncated)?,
        })
    };
    let count = |len_bytes: usize| -> Result<(u32, usize), MsgPackError> {
        // Counts of 16 and 32 bits; both fit a u32.
        let n = u32::try_from(be(data, body, len_bytes, start)?).map_err(|_| truncated)?;
        Ok((n, body.checked_add(len_bytes).ok_or(truncated)?))
    };
    let string = |(payload, n): (usize, usize)| -> Result<Header<'a>, MsgPackError> {
        let bytes = take(data, payload, n, start)?;
        let s = core::str::from_utf8(bytes)
            .map_err(|_| MsgPackError { offset: start, problem: MsgPackProblem::InvalidUtf8 })?;
        let end = payload.checked_add(n).ok_or(truncated)?;
        Ok(Header { start, kind: Kind::Scalar(Value::Str(s)), end })
    };
    let binary = |(payload, n): (usize, usize)| -> Result<Header<'a>, MsgPackError> {
        let bytes = take(data, payload, n, start)?;
        let end = payload.checked_add(n).ok_or(truncated)?;
        Ok(Header { start, kind: Kind::Scalar(Value::Bin(bytes)), end })
    };
    // An extension: type byte then `n` data bytes, the length read from `len_bytes` bytes
    // (`None`: a fixext of `fixed` bytes).
    let ext = |len_bytes: Option<usize>, fixed: usize| -> Result<Header<'a>, MsgPackError> {
        let (n, type_at) = match len_bytes {
            None => (fixed, body),
            Some(lb) => {
                let n = usize::try_from(be(data, body, lb, start)?).map_err(|_| truncated)?;
                (n, body.checked_add(lb).ok_or(truncated)?)
            }
        };
        let kind = i8::from_be_bytes([*data.get(type_at).ok_or(truncated)?]);
        let payload = type_at.checked_add(1).ok_or(truncated)?;
        let bytes = take(data, payload, n, start)?;
        let end = payload.checked_add(n).ok_or(truncated)?;
        Ok(Header { start, kind: Kind::Scalar(Value::Ext(kind, bytes)), end })
    };
    let uint = |n: usize| -> Result<Header<'a>, MsgPackError> {
        scalar(Value::UInt(be(data, body, n, start)?), n)
    };
    let int = |n: usize| -> Result<Header<'a>, MsgPackError> {
        let raw = be(data, body, n, start)?;
        // Sign-extend from `n` bytes.
        let shift = 64u32.saturating_sub(u32::try_from(n).unwrap_or(8).saturating_mul(8));
        let v = (raw.wrapping_shl(shift) as i64).wrapping_shr(shift);
        scalar(if v < 0 { Value::NegInt(v) } else { Value::UInt(v.unsigned_abs()) }, n)
    };
    match tag {
        0x00..=0x7f => scalar(Value::UInt(u64::from(tag)), 0),
        0x80..=0x8f => Ok(Header { start, kind: Kind::Map(u32::from(tag & 0x0f)), end: body }),
        0x90..=0x9f => Ok(Header { start, kind: Kind::Array(u32::from(tag & 0x0f)), end: body }),
        0xa0..=0xbf => string((body, usize::from(tag & 0x1f))),
        0xc0 => scalar(Value::Nil, 0),
        0xc1 => Err(MsgPackError { offset: start, problem: MsgPackProblem::ReservedType }),
        0xc2 => scalar(Value::Bool(false), 0),
        0xc3 => scalar(Value::Bool(true), 0),
        0xc4 => binary(sized(1)?),
        0xc5 => binary(sized(2)?),
        0xc6 => binary(sized(4)?),
        0xc7 => ext(Some(1), 0),
        0xc8 => ext(Some(2), 0),
        0xc9 => ext(Some(4), 0),
        0xca => {
            let bits = u32::try_from(be(data, body, 4, start)?).map_err(|_| truncated)?;
            scalar(Value::F32(f32::from_bits(bits)), 4)
        }
        0xcb => scalar(Value::F64(f64::from_bits(be(data, body, 8, start)?)), 8),
        0xcc => uint(1),
        0xcd => uint(2),
        0xce => uint(4),
        0xcf => uint(8),
        0xd0 => int(1),
        0xd1 => int(2),
        0xd2 => int(4),
        0xd3 => int(8),
        0xd4 => ext(None, 1),
        0xd5 => ext(None, 2),
        0xd6 => ext(None, 4),
        0xd7 => ext(None, 8),
        0xd8 => ext(None, 16),
        0xd9 => string(sized(1)?),
        0xda => string(sized(2)?),
        0xdb => string(sized(4)?),
        0xdc => {
            let (n, end) = count(2)?;
            Ok(Header { start, kind: Kind::Array(n), end })
        }
        0xdd => {
            let (n, end) = count(4)?;
            Ok(Header { start, kind: Kind::Array(n), end })
        }
        0xde => {
            let (n, end) = count(2)?;
            Ok(Header { start, kind: Kind::Map(n), end })
        }
        0xdf => {
            let (n, end) = count(4)?;
            Ok(Header { start, kind: Kind::Map(n), end })
        }
        0xe0..=0xff => scalar(Value::NegInt(i64::from(i8::from_be_bytes([tag]))), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn scalars() {
        assert_eq!(read(&[0x05]), Ok(Value::UInt(5)));
        assert_eq!(read(&[0xff]), Ok(Value::NegInt(-1)));
        assert_eq!(read(&[0xe0]), Ok(Value::NegInt(-32)));
        assert_eq!(read(&[0xc0]), Ok(Value::Nil));
        assert_eq!(read(&[0xc3]), Ok(Value::Bool(true)));
        assert_eq!(read(&[0xcc, 0xfe]), Ok(Value::UInt(254)));
        assert_eq!(read(&[0xcd, 0x01, 0x18]), Ok(Value::UInt(280)));
        assert_eq!(read(&[0xce, 0, 1, 0, 0]), Ok(Value::UInt(65536)));
        assert_eq!(
            read(&[0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Ok(Value::UInt(u64::MAX))
        );
        assert_eq!(read(&[0xd0, 0x80]), Ok(Value::NegInt(-128)));
        assert_eq!(read(&[0xd0, 0x05]), Ok(Value::UInt(5)));
        assert_eq!(read(&[0xd1, 0xff, 0x00]), Ok(Value::NegInt(-256)));
        assert_eq!(read(&[0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0]), Ok(Value::NegInt(i64::MIN)));
        assert_eq!(read(&[0xca, 0x3f, 0xc0, 0, 0]), Ok(Value::F32(1.5)));
        assert_eq!(read(&[0xcb, 0x40, 0x04, 0, 0, 0, 0, 0, 0]), Ok(Value::F64(2.5)));
        assert_eq!(read(&[0xa3, b'a', b'b', b'c']), Ok(Value::Str("abc")));
        assert_eq!(read(&[0xd9, 2, b'h', b'i']), Ok(Value::Str("hi")));
        assert_eq!(read(&[0xc4, 2, 9, 8]), Ok(Value::Bin(&[9, 8])));
        assert_eq!(read(&[0xd4, 0x7f, 1]), Ok(Value::Ext(127, &[1])));
        assert_eq!(read(&[0xc7, 2, 0xfe, 1, 2]), Ok(Value::Ext(-2, &[1, 2])));
    }

    #[test]
    fn containers() {
        // {"a": [1, 2, {"b": true}], "c": nil}
        let data = [0x82, 0xa1, b'a', 0x93, 0x01, 0x02, 0x81, 0xa1, b'b', 0xc3, 0xa1, b'c', 0xc0];
        let map = read(&data).unwrap().as_map().unwrap();
        assert_eq!(map.len(), 2);
        let a = map.get("a").unwrap().unwrap().as_array().unwrap();
        let items: Vec<_> = a.iter().map(Result::unwrap).collect();
        assert_eq!(items.len(), 3);
        assert_eq!(items[1], Value::UInt(2));
        let inner = items[2].as_map().unwrap();
        assert_eq!(inner.get("b"), Ok(Some(Value::Bool(true))));
        assert_eq!(map.get("c"), Ok(Some(Value::Nil)));
        assert_eq!(map.get("z"), Ok(None));
        // array16 / map16 headers.
        let data = [0xdc, 0, 2, 0x01, 0x02];
        assert_eq!(read(&data).unwrap().as_array().unwrap().len(), 2);
        let data = [0xde, 0, 1, 0x01, 0x02];
        assert_eq!(read(&data).unwrap().as_map().unwrap().len(), 1);
    }

    #[test]
    fn malformed() {
        let e = |offset, problem| Err(MsgPackError { offset, problem });
        assert_eq!(read(&[]), e(0, MsgPackProblem::Truncated));
        assert_eq!(read(&[0xc1]), e(0, MsgPackProblem::ReservedType));
        assert_eq!(read(&[0xa3, b'a']), e(0, MsgPackProblem::Truncated));
        assert_eq!(read(&[0xa1, 0xff]), e(0, MsgPackProblem::InvalidUtf8));
        assert_eq!(read(&[0x92, 0x01]), e(2, MsgPackProblem::Truncated));
        // A 2^32-1 element array in 5 bytes ends at the first missing element.
        assert_eq!(read(&[0xdd, 0xff, 0xff, 0xff, 0xff]), e(5, MsgPackProblem::Truncated));
        assert_eq!(read(&[0xdb, 0xff, 0xff, 0xff, 0xff]), e(0, MsgPackProblem::Truncated));
        // Nesting: MAX_DEPTH arrays are fine, one more is not.
        let mut deep = [0x91u8; MAX_DEPTH + 1];
        deep[MAX_DEPTH] = 0x01;
        assert!(read(&deep).is_ok());
        let mut deeper = [0x91u8; MAX_DEPTH + 2];
        deeper[MAX_DEPTH + 1] = 0x01;
        assert_eq!(read(&deeper), e(MAX_DEPTH, MsgPackProblem::TooDeep));
        // An error inside a nested element surfaces from the top-level read.
        assert_eq!(read(&[0x81, 0xa1, b'k', 0xc1]), e(3, MsgPackProblem::ReservedType));
    }
}
