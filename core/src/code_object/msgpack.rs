//! A bounded, allocation-free MessagePack reader over a borrowed byte slice.
//!
//! Values borrow from the input: strings and binaries are sub-slices, arrays and maps are cursors
//! that decode their elements on demand. Every read is bounds-checked and every loop consumes at
//! least one input byte per step, so the work is bounded by the input length; nesting deeper than
//! [`MAX_METADATA_DEPTH`] is an error, so skipping a value needs no recursion and a fixed, small
//! stack.
//!
//! The format is the MessagePack specification's (<https://msgpack.org>): nil, booleans,
//! integers (fixint, `uint 8..64`, `int 8..64`), floats (32, 64), strings (`fixstr`,
//! `str 8..32`, UTF-8), binaries, arrays, maps and extensions. The byte `0xc1` is never used
//! and is an error.

use core::fmt;

use crate::config::MAX_METADATA_DEPTH;

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
    /// Arrays and maps nest deeper than [`MAX_METADATA_DEPTH`].
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
#[derive(Clone, Copy, PartialEq, Eq)]
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

/// Where the array is and how long, not the whole document it borrows.
impl fmt::Debug for Seq<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Seq {{ at: {}, len: {} }}", self.first, self.len)
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Seq<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Seq {{ at: {=usize}, len: {=u32} }}", self.first, self.len);
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
#[derive(Clone, Copy, PartialEq, Eq)]
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

/// Where the map is and how long, not the whole document it borrows.
impl fmt::Debug for Map<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Map {{ at: {}, len: {} }}", self.first, self.len)
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Map<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Map {{ at: {=usize}, len: {=u32} }}", self.first, self.len);
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

/// Reads the value that starts at byte 0 of `data` (the top level), and checks that the
/// whole value is well-formed: every nested element lies inside `data`, no reserved type
/// byte, nesting within [`MAX_METADATA_DEPTH`]. (A nested string that is not UTF-8 is reported when
/// that element is read.) Bytes after the value are ignored.
///
/// # Errors
/// The value is malformed or truncated.
pub fn read(data: &[u8]) -> Result<Value<'_>, MsgPackError> {
    // Reading a container measures (and so checks) all of it.
    read_at(data, 0, 0).map(|(value, _)| value)
}

/// A forward reader over a document, one value header at a time: a single pass over a
/// document whose structure the caller knows, where iterating [`Seq`]s and [`Map`]s would
/// measure each nested container once per level.
#[derive(Debug, Clone)]
pub(super) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `data`.
    pub(super) const fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    /// Reads the value at the cursor, inside `depth` containers. A leaf is consumed whole;
    /// for an array or a map the cursor moves to its first element, and the caller reads the
    /// elements next (or skips them with [`skip_contents`](Self::skip_contents)).
    pub(super) fn next(&mut self, depth: usize) -> Result<Value<'a>, MsgPackError> {
        let (data, pos) = (self.data, self.pos);
        let value = match shape(data, pos)? {
            Shape::Leaf { end } => {
                let v = leaf(data, pos, end)?;
                self.pos = end;
                return Ok(v);
            }
            Shape::Array { count, first } => {
                self.pos = first;
                Value::Array(Seq { data, first, len: count, depth: nested(depth, pos)? })
            }
            Shape::Map { count, first } => {
                self.pos = first;
                Value::Map(Map { data, first, len: count, depth: nested(depth, pos)? })
            }
        };
        Ok(value)
    }

    /// Skips the elements of the array or map [`next`](Self::next) just returned (nothing
    /// for a leaf).
    pub(super) fn skip_contents(&mut self, entered: &Value<'a>) -> Result<(), MsgPackError> {
        let (items, depth) = match entered {
            Value::Array(s) => (u64::from(s.len), s.depth),
            Value::Map(m) => (u64::from(m.len).saturating_mul(2), m.depth),
            _ => return Ok(()),
        };
        // Each skipped value is at least one byte: the loop ends within the data.
        for _ in 0..items {
            self.pos = skip(self.data, self.pos, depth)?;
        }
        Ok(())
    }
}

/// The value starting at `pos`, whose enclosing containers are `depth` deep, and the offset
/// just past it (past all its elements for an array or map).
fn read_at(data: &[u8], pos: usize, depth: usize) -> Result<(Value<'_>, usize), MsgPackError> {
    let value = match shape(data, pos)? {
        Shape::Leaf { end } => return Ok((leaf(data, pos, end)?, end)),
        Shape::Array { count, first } => {
            Value::Array(Seq { data, first, len: count, depth: nested(depth, pos)? })
        }
        Shape::Map { count, first } => {
            Value::Map(Map { data, first, len: count, depth: nested(depth, pos)? })
        }
    };
    Ok((value, skip(data, pos, depth)?))
}

/// The depth of the elements of a container at `depth`, or `TooDeep`.
fn nested(depth: usize, pos: usize) -> Result<usize, MsgPackError> {
    depth
        .checked_add(1)
        .filter(|d| *d <= MAX_METADATA_DEPTH)
        .ok_or(MsgPackError { offset: pos, problem: MsgPackProblem::TooDeep })
}

/// The offset just past the value at `pos` (including all nested elements), without
/// recursion: a stack of the element counts still to skip, one per open container. Leaves
/// are only measured ([`shape`]), not decoded: strings are checked for UTF-8 when read.
fn skip(data: &[u8], pos: usize, depth: usize) -> Result<usize, MsgPackError> {
    let mut open = [0u64; MAX_METADATA_DEPTH];
    let mut top = 0usize; // open containers
    let mut at = pos;
    loop {
        let start = at;
        let items = match shape(data, at)? {
            Shape::Leaf { end } => {
                at = end;
                0
            }
            Shape::Array { count, first } => {
                at = first;
                u64::from(count)
            }
            Shape::Map { count, first } => {
                at = first;
                u64::from(count).saturating_mul(2)
            }
        };
        if items > 0 {
            nested(depth.saturating_add(top), start)?;
            let too_deep = MsgPackError { offset: start, problem: MsgPackProblem::TooDeep };
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

/// The extent of the value at `start`, without decoding it.
enum Shape {
    /// A scalar, string, binary or extension ending at `end` (inside the data).
    Leaf { end: usize },
    /// An array of `count` elements, the first at `first`.
    Array { count: u32, first: usize },
    /// A map of `count` pairs, the first key at `first`.
    Map { count: u32, first: usize },
}

/// Measures the value at `start`: a leaf's end (checked to lie inside `data`), a
/// container's element count.
fn shape(data: &[u8], start: usize) -> Result<Shape, MsgPackError> {
    let truncated = MsgPackError { offset: start, problem: MsgPackProblem::Truncated };
    let tag = *data.get(start).ok_or(truncated)?;
    let body = start.checked_add(1).ok_or(truncated)?;
    let count = |len_bytes: usize| -> Result<(u32, usize), MsgPackError> {
        let n = u32::try_from(be(data, body, len_bytes, start)?).map_err(|_| truncated)?;
        Ok((n, body.checked_add(len_bytes).ok_or(truncated)?))
    };
    // A leaf: a big-endian length of `len_bytes`, then `fixed` + length payload bytes.
    let (len_bytes, fixed) = match tag {
        0x80..=0x8f => return Ok(Shape::Map { count: u32::from(tag & 0x0f), first: body }),
        0x90..=0x9f => return Ok(Shape::Array { count: u32::from(tag & 0x0f), first: body }),
        0xdc | 0xdd => {
            let (count, first) = count(if tag == 0xdc { 2 } else { 4 })?;
            return Ok(Shape::Array { count, first });
        }
        0xde | 0xdf => {
            let (count, first) = count(if tag == 0xde { 2 } else { 4 })?;
            return Ok(Shape::Map { count, first });
        }
        0xc1 => return Err(MsgPackError { offset: start, problem: MsgPackProblem::ReservedType }),
        0x00..=0x7f | 0xc0 | 0xc2 | 0xc3 | 0xe0..=0xff => (0, 0),
        0xa0..=0xbf => (0, usize::from(tag & 0x1f)),
        0xc4 | 0xd9 => (1, 0),
        0xc5 | 0xda => (2, 0),
        0xc6 | 0xdb => (4, 0),
        // ext 8/16/32: the length, then the type byte.
        0xc7 => (1, 1),
        0xc8 => (2, 1),
        0xc9 => (4, 1),
        0xcc | 0xd0 => (0, 1),
        0xcd | 0xd1 => (0, 2),
        0xca | 0xce | 0xd2 => (0, 4),
        0xcb | 0xcf | 0xd3 => (0, 8),
        // fixext 1/2/4/8/16: the type byte, then the data.
        0xd4 => (0, 2),
        0xd5 => (0, 3),
        0xd6 => (0, 5),
        0xd7 => (0, 9),
        0xd8 => (0, 17),
    };
    let n = if len_bytes == 0 { 0 } else { be(data, body, len_bytes, start)? };
    let n = usize::try_from(n).map_err(|_| truncated)?;
    let end = body
        .checked_add(len_bytes)
        .and_then(|e| e.checked_add(fixed))
        .and_then(|e| e.checked_add(n))
        .filter(|&e| e <= data.len())
        .ok_or(truncated)?;
    Ok(Shape::Leaf { end })
}

/// `n` bytes at `pos`, or `Truncated` at `start`.
fn take(data: &[u8], pos: usize, n: usize, start: usize) -> Result<&[u8], MsgPackError> {
    pos.checked_add(n)
        .and_then(|end| data.get(pos..end))
        .ok_or(MsgPackError { offset: start, problem: MsgPackProblem::Truncated })
}

/// A big-endian unsigned integer of `n` (1, 2, 4 or 8) bytes at `pos`.
fn be(data: &[u8], pos: usize, n: usize, start: usize) -> Result<u64, MsgPackError> {
    take(data, pos, n, start).map(be_of)
}

/// The big-endian value of up to 8 bytes.
fn be_of(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, b| acc.wrapping_shl(8) | u64::from(*b))
}

/// Decodes the leaf (scalar, string, binary, extension) encoded in `data[start..end]`, whose
/// extent [`shape`] measured.
fn leaf(data: &[u8], start: usize, end: usize) -> Result<Value<'_>, MsgPackError> {
    let truncated = MsgPackError { offset: start, problem: MsgPackProblem::Truncated };
    let bytes = data.get(start..end).ok_or(truncated)?;
    let tag = *bytes.first().ok_or(truncated)?;
    // The payload after `header` bytes of type and length.
    let tail = |header: usize| bytes.get(header..).ok_or(truncated);
    let text = |header: usize| {
        core::str::from_utf8(tail(header)?)
            .map(Value::Str)
            .map_err(|_| MsgPackError { offset: start, problem: MsgPackProblem::InvalidUtf8 })
    };
    // An extension: its type byte at `at`, its data after it.
    let ext = |at: usize| -> Result<Value<'_>, MsgPackError> {
        let kind = i8::from_be_bytes([*bytes.get(at).ok_or(truncated)?]);
        Ok(Value::Ext(kind, tail(at.saturating_add(1))?))
    };
    Ok(match tag {
        0x00..=0x7f => Value::UInt(u64::from(tag)),
        0xa0..=0xbf => text(1)?,
        0xc0 => Value::Nil,
        0xc2 => Value::Bool(false),
        0xc3 => Value::Bool(true),
        0xc4 => Value::Bin(tail(2)?),
        0xc5 => Value::Bin(tail(3)?),
        0xc6 => Value::Bin(tail(5)?),
        0xc7 => ext(2)?,
        0xc8 => ext(3)?,
        0xc9 => ext(5)?,
        0xca => Value::F32(f32::from_bits(u32::try_from(be_of(tail(1)?)).map_err(|_| truncated)?)),
        0xcb => Value::F64(f64::from_bits(be_of(tail(1)?))),
        0xcc..=0xcf => Value::UInt(be_of(tail(1)?)),
        0xd0..=0xd3 => {
            let payload = tail(1)?;
            // Sign-extend from the payload's width.
            let width = u32::try_from(payload.len()).unwrap_or(8).saturating_mul(8);
            let shift = 64u32.saturating_sub(width);
            let v = (be_of(payload).wrapping_shl(shift) as i64).wrapping_shr(shift);
            if v < 0 { Value::NegInt(v) } else { Value::UInt(v.unsigned_abs()) }
        }
        0xd4..=0xd8 => ext(1)?,
        0xd9 => text(2)?,
        0xda => text(3)?,
        0xdb => text(5)?,
        0xe0..=0xff => Value::NegInt(i64::from(i8::from_be_bytes([tag]))),
        // 0xc1, and containers (never leaves).
        _ => return Err(MsgPackError { offset: start, problem: MsgPackProblem::ReservedType }),
    })
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
        // Nesting: MAX_METADATA_DEPTH arrays are fine, one more is not.
        let mut deep = [0x91u8; MAX_METADATA_DEPTH + 1];
        deep[MAX_METADATA_DEPTH] = 0x01;
        assert!(read(&deep).is_ok());
        let mut deeper = [0x91u8; MAX_METADATA_DEPTH + 2];
        deeper[MAX_METADATA_DEPTH + 1] = 0x01;
        assert_eq!(read(&deeper), e(MAX_METADATA_DEPTH, MsgPackProblem::TooDeep));
        // An error inside a nested element surfaces from the top-level read.
        assert_eq!(read(&[0x81, 0xa1, b'k', 0xc1]), e(3, MsgPackProblem::ReservedType));
    }
}
