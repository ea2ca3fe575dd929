//! Total parsers for the text the kernel prints: `key value\n` lines, single `%u` values, names
//! and `sibling_map` bit lists. Every input yields a value or a typed complaint, never a panic.
//!
//! Accepted beyond the kernel's exact format (KERNEL-CONTRACT §1.2): CRLF line ends, several
//! spaces or tabs between key and value, trailing blanks, blank lines, a missing final newline.

/// Why a value is not a decimal number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueError {
    /// The line has a key and nothing after it.
    Missing,
    /// The value contains something other than decimal digits.
    NotDecimal,
    /// The number does not fit 64 bits.
    Overflow,
}

/// One `key value` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    /// 1-based line number.
    pub(crate) number: u32,
    /// The key: printable ASCII without blanks.
    pub(crate) key: &'a [u8],
    /// The value text, blanks and CR trimmed (may be empty).
    pub(crate) raw: &'a [u8],
    /// The value as a decimal number.
    pub(crate) value: Result<u64, ValueError>,
}

/// What one line of a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Item<'a> {
    /// A key with a (possibly malformed) value.
    Line(Line<'a>),
    /// A line whose key is empty or holds bytes other than printable ASCII.
    Malformed {
        /// 1-based line number.
        number: u32,
    },
}

/// Iterator over the lines of a properties file; blank lines are skipped.
pub(crate) struct Lines<'a> {
    rest: &'a [u8],
    number: u32,
}

impl<'a> Lines<'a> {
    pub(crate) const fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes, number: 0 }
    }
}

#[inline]
const fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r')
}

#[inline]
const fn is_key_byte(b: u8) -> bool {
    b.is_ascii_graphic()
}

/// Splits off one line (without its `\n`).
#[inline]
fn split_line(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes.iter().position(|&b| b == b'\n') {
        Some(i) => (
            bytes.get(..i).unwrap_or_default(),
            bytes.get(i.saturating_add(1)..).unwrap_or_default(),
        ),
        None => (bytes, &[]),
    }
}

/// Trims blanks (space, tab, CR) at both ends.
#[inline]
pub(crate) fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if !is_blank(*first) {
            break;
        }
        s = rest;
    }
    while let [rest @ .., last] = s {
        if !is_blank(*last) {
            break;
        }
        s = rest;
    }
    s
}

/// Parses a whole slice of decimal digits (no sign, no blanks) into a `u64`.
#[inline]
pub(crate) fn parse_decimal(s: &[u8]) -> Result<u64, ValueError> {
    if s.is_empty() {
        return Err(ValueError::Missing);
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(ValueError::NotDecimal);
        }
        match v.checked_mul(10).and_then(|x| x.checked_add(u64::from(d))) {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    if overflow { Err(ValueError::Overflow) } else { Ok(v) }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The zero bytes of `x` (as `0x80` flags): the lowest flag is always a true one.
#[inline(always)]
const fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// Position of the first `\n` in `s`, sixteen then eight bytes at a time.
#[inline]
fn find_newline(s: &[u8]) -> Option<usize> {
    const NEWLINES: u64 = 0x0A0A_0A0A_0A0A_0A0A;
    let mut done = 0usize;
    let mut rest = s;
    // Long values (`sibling_map`, hundreds of bytes) two words per step.
    while let Some((pair, tail)) = rest.split_first_chunk::<16>() {
        let both = u128::from_le_bytes(*pair);
        let lo = zero_bytes(both as u64 ^ NEWLINES);
        let hi = zero_bytes((both >> 64) as u64 ^ NEWLINES);
        if lo | hi != 0 {
            let at = if lo != 0 {
                lo.trailing_zeros() / 8
            } else {
                8u32.saturating_add(hi.trailing_zeros() / 8)
            };
            return Some(done.saturating_add(at as usize));
        }
        done = done.saturating_add(16);
        rest = tail;
    }
    while let Some((chunk, tail)) = rest.split_first_chunk::<8>() {
        // A zero byte of the xor is a newline.
        let m = zero_bytes(u64::from_le_bytes(*chunk) ^ NEWLINES);
        if m != 0 {
            return Some(done.saturating_add((m.trailing_zeros() / 8) as usize));
        }
        done = done.saturating_add(8);
        rest = tail;
    }
    rest.iter().position(|&b| b == b'\n').map(|p| done.saturating_add(p))
}

/// Splits `s` after its leading run of key bytes (printable ASCII), eight bytes at a time.
#[inline]
fn split_key(s: &[u8]) -> (&[u8], &[u8]) {
    let mut done = 0usize;
    let mut rest = s;
    while let Some((chunk, tail)) = rest.split_first_chunk::<8>() {
        let x = u64::from_le_bytes(*chunk);
        // Bytes below 0x21 (blank, control, newline) or above 0x7E (DEL, non-ASCII). Borrows
        // and carries only flag bytes above a true hit, so the lowest flag is exact.
        let below = x.wrapping_sub(0x21 * ONES) & !x;
        let above = x.wrapping_add(ONES) | x;
        let m = (below | above) & HIGHS;
        if m != 0 {
            done = done.saturating_add((m.trailing_zeros() / 8) as usize);
            return s.split_at_checked(done).unwrap_or((s, &[]));
        }
        done = done.saturating_add(8);
        rest = tail;
    }
    let (_, after) = take_while(rest, is_key_byte);
    let key_len = s.len().saturating_sub(after.len());
    (s.get(..key_len).unwrap_or_default(), after)
}

/// Skips to just after the next `\n` (or to the end).
#[inline]
fn skip_line(s: &[u8]) -> &[u8] {
    match find_newline(s) {
        Some(i) => s.get(i.saturating_add(1)..).unwrap_or_default(),
        None => &[],
    }
}

/// Splits `s` after its leading run of bytes matching `f`: `(run, rest)`.
#[inline(always)]
fn take_while(s: &[u8], f: impl Fn(u8) -> bool) -> (&[u8], &[u8]) {
    let mut rest = s;
    while let [b, tail @ ..] = rest {
        if !f(*b) {
            break;
        }
        rest = tail;
    }
    let n = s.len().saturating_sub(rest.len());
    (s.get(..n).unwrap_or_default(), rest)
}

/// The decimal digits at the start of a word of eight bytes (first byte lowest):
/// `(value, digits)`, `digits` from 0 (no digit) to 8 (the whole word).
/// No branch per byte: the bytes are flagged as non-digits together, and the digits before
/// the first flag are combined by three multiplications (pairs, quads, the whole).
#[inline(always)]
const fn word_digits(word: u64) -> (u64, usize) {
    let d = word ^ 0x3030_3030_3030_3030;
    // A digit byte is 0..=9 after the xor; 0x76 + that stays below 0x80. A byte of 10 or more
    // (or with its top bit set) is flagged; a carry only flags bytes above a true flag, so the
    // lowest flag is exact.
    let flags = (d.wrapping_add(0x76 * ONES) | d) & HIGHS;
    let n = (flags.trailing_zeros() / 8) as usize;
    if n == 0 {
        return (0, 0);
    }
    // Shift the `n` digits to the top: the bytes below become leading zeros, those after the
    // digits fall off. `n` is 1..=8, so the shift is 0..=56.
    let d = d.wrapping_shl(8u32.wrapping_mul(8u32.wrapping_sub(n as u32)));
    // Products of at most 8 digits stay within the word: no wrap happens.
    let d = (d & 0x0F0F_0F0F_0F0F_0F0F).wrapping_mul(2561) >> 8;
    let d = (d & 0x00FF_00FF_00FF_00FF).wrapping_mul(6_553_601) >> 16;
    let v = (d & 0x0000_FFFF_0000_FFFF).wrapping_mul(42_949_672_960_001) >> 32;
    (v, n)
}

/// Powers of ten for joining a second word of digits to the first.
const POW10: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// The kernel's own line, `key digits\n` with one space and 1 to 15 digits, in a few word
/// operations: the line (numbered `number`) and the bytes after its newline. `None` for
/// anything else, and when the words holding the digits run past the end of `s` (the last
/// line of a file, usually): the general path decides those. 15 digits cannot overflow, so
/// no per-digit check is needed.
#[inline(always)]
fn kernel_line(s: &[u8], number: u32) -> Option<(Line<'_>, &[u8])> {
    let (key, after) = split_key(s);
    if key.is_empty() {
        return None;
    }
    kernel_value(key, after, number)
}

/// The rest of the kernel's line after its key: ` digits\n` as [`kernel_line`] takes it.
#[inline(always)]
fn kernel_value<'a>(key: &'a [u8], after: &'a [u8], number: u32) -> Option<(Line<'a>, &'a [u8])> {
    let [b' ', value @ ..] = after else { return None };
    let (first, tail) = value.split_first_chunk::<8>()?;
    let (v, n) = word_digits(u64::from_le_bytes(*first));
    let (v, n) = match n {
        0 => return None,
        8 => {
            let (second, _) = tail.split_first_chunk::<8>()?;
            let (w, m) = word_digits(u64::from_le_bytes(*second));
            // At most 8 + 7 digits: `v < 10^8` times `10^m <= 10^7` plus `w` fits.
            let scale = *POW10.get(m)?;
            (v.wrapping_mul(scale).wrapping_add(w), m.wrapping_add(8))
        }
        _ => (v, n),
    };
    let (digits, rest) = value.split_at_checked(n)?;
    let [b'\n', rest @ ..] = rest else { return None };
    Some((Line { number, key, raw: digits, value: Ok(v) }, rest))
}

impl<'a> Iterator for Lines<'a> {
    type Item = Item<'a>;

    /// The kernel's form (`key digits\n`) in word-wide steps; any other line in one pass over
    /// its bytes: key, blanks, digits (accumulated as they are met), blanks, newline. Only a
    /// value that is not a plain number is scanned again, to find its end.
    #[inline(always)]
    fn next(&mut self) -> Option<Item<'a>> {
        if let Some((line, rest)) = kernel_line(self.rest, self.number.saturating_add(1)) {
            self.number = line.number;
            self.rest = rest;
            return Some(Item::Line(line));
        }
        self.general_line()
    }
}

impl<'a> Lines<'a> {
    /// The next line, as [`Iterator::next`] gives it, with its key when `starts` recognised it:
    /// `starts` returns `(key, len)` when the line's first `len` bytes are the key predicted
    /// from the kernel's print order, which then costs one comparison instead of a search for
    /// the key's end (and the caller's hash). Either way the value is read once: the kernel's
    /// form (as [`kernel_line`] takes it) word-wide, anything else byte by byte. A predicted key
    /// that `starts` marks as a list (`sibling_map`) in the kernel's form is read with its map
    /// ([`sibling_line`]) into `map`, and the returned flag is set.
    #[inline(always)]
    pub(crate) fn next_keyed<K>(
        &mut self,
        starts: impl FnOnce(&[u8]) -> Option<(K, usize, bool)>,
        map: &mut SiblingBits,
    ) -> Option<(Option<K>, Item<'a>, bool)> {
        let mut key = None;
        let mut list = false;
        let (name, after) = 'key: {
            if let Some((known, len, is_list)) = starts(self.rest)
                && let Some((name, after)) = self.rest.split_at_checked(len)
                // The key must end where the name does, as `split_key` would end it.
                && !after.first().is_some_and(|b| is_key_byte(*b))
            {
                key = Some(known);
                list = is_list;
                break 'key (name, after);
            }
            let (name, after) = split_key(self.rest);
            if name.is_empty() {
                // A blank or malformed line, or the end.
                return self.general_line().map(|item| (None, item, false));
            }
            (name, after)
        };
        let number = self.number.saturating_add(1);
        self.number = number;
        if list && let Some((raw, rest)) = sibling_line(after, map) {
            self.rest = rest;
            let line = Line { number, key: name, raw, value: Err(ValueError::NotDecimal) };
            return Some((key, Item::Line(line), true));
        }
        if let Some((line, rest)) = kernel_value(name, after, number) {
            self.rest = rest;
            return Some((key, Item::Line(line), false));
        }
        Some((key, self.value_after(number, name, after), false))
    }

    /// The next line read byte by byte (see [`Iterator::next`]).
    #[inline(never)]
    fn general_line(&mut self) -> Option<Item<'a>> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            self.number = self.number.saturating_add(1);
            let number = self.number;
            let (key, after_key) = split_key(self.rest);
            if key.is_empty() {
                // A blank line (skipped), or a line starting with a blank or a control or
                // non-ASCII byte (malformed).
                let (_, after) = take_while(after_key, is_blank);
                match after.split_first() {
                    None => {
                        self.rest = after;
                        return None;
                    }
                    Some((b'\n', rest)) => {
                        self.rest = rest;
                        continue;
                    }
                    Some(_) => {
                        self.rest = skip_line(after);
                        return Some(Item::Malformed { number });
                    }
                }
            }
            return Some(self.value_after(number, key, after_key));
        }
    }

    /// The rest of line `number` after its non-empty `key`, read byte by byte: a key alone,
    /// or blanks and a value (a number, or anything else up to the line's end). `Malformed`
    /// when the key runs into a byte that is neither a blank nor the line's end.
    #[inline(always)]
    fn value_after(&mut self, number: u32, key: &'a [u8], after_key: &'a [u8]) -> Item<'a> {
        match after_key.split_first() {
            None => {
                self.rest = after_key;
                return Item::Line(Line { number, key, raw: &[], value: Err(ValueError::Missing) });
            }
            Some((b'\n', rest)) => {
                self.rest = rest;
                return Item::Line(Line { number, key, raw: &[], value: Err(ValueError::Missing) });
            }
            Some((b, _)) if is_blank(*b) => {}
            Some(_) => {
                self.rest = skip_line(after_key);
                return Item::Malformed { number };
            }
        }
        let (_, value_start) = take_while(after_key, is_blank);
        // Digits, accumulated in the same pass. Up to 19 digits cannot overflow, so the
        // loop uses wrapping arithmetic and longer numbers are re-checked below.
        let mut v: u64 = 0;
        let mut rest = value_start;
        while let [b, tail @ ..] = rest {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v.wrapping_mul(10).wrapping_add(u64::from(d));
            rest = tail;
        }
        let digits = value_start.len().saturating_sub(rest.len());
        let overflow =
            digits > 19 && parse_decimal(value_start.get(..digits).unwrap_or_default()).is_err();
        let (_, after_blanks) = take_while(rest, is_blank);
        match after_blanks.split_first() {
            // `key digits [blanks] (\n | end)`: the common case.
            None | Some((b'\n', _)) => {
                self.rest = after_blanks.get(1..).unwrap_or_default();
                let raw = value_start.get(..digits).unwrap_or_default();
                let value = match (digits, overflow) {
                    (0, _) => Err(ValueError::Missing),
                    (_, true) => Err(ValueError::Overflow),
                    (_, false) => Ok(v),
                };
                Item::Line(Line { number, key, raw, value })
            }
            // Anything else: the value is not a number; find the line's end.
            Some(_) => {
                let end = find_newline(value_start);
                let (raw, rest) = match end {
                    Some(i) => (
                        value_start.get(..i).unwrap_or_default(),
                        value_start.get(i.saturating_add(1)..).unwrap_or_default(),
                    ),
                    None => (value_start, &[][..]),
                };
                self.rest = rest;
                let raw = trim(raw);
                Item::Line(Line { number, key, raw, value: Err(ValueError::NotDecimal) })
            }
        }
    }
}

/// Parses a file holding one `%u` value (`generation_id`, `gpu_id`).
pub(crate) fn parse_single_u32(bytes: &[u8]) -> Result<u32, ValueError> {
    let (line, rest) = split_line(bytes);
    if !trim(rest).is_empty() {
        return Err(ValueError::NotDecimal);
    }
    let v = parse_decimal(trim(line))?;
    u32::try_from(v).map_err(|_| ValueError::Overflow)
}

/// The content of a `name` file: everything before the first newline (the kernel prints
/// `"%s\n"`; a CPU node's file is a single `\n`).
pub(crate) fn name_of(bytes: &[u8]) -> &[u8] {
    let (line, _) = split_line(bytes);
    match line {
        [rest @ .., b'\r'] => rest,
        _ => line,
    }
}

pub use crate::config::SIBLING_MAP_CAPACITY;

/// Result of parsing a `sibling_map` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SiblingBits {
    pub(crate) bits: [u32; SIBLING_MAP_CAPACITY / 32],
    /// Entries parsed (may exceed the capacity; bits beyond it are not stored).
    pub(crate) entries: u32,
    /// A malformed entry was found; parsing stopped before it.
    pub(crate) malformed: bool,
}

/// The entries of the kernel's form (`d,` with d in {0, 1}) at the start of `s`, sixteen
/// (thirty-two bytes) then four (eight bytes) at a time, their bits stored in `bits` (those
/// beyond its capacity dropped): `(entries, rest)`, `rest` starting at the first block not of
/// that form (which the caller reads entry by entry).
#[inline(always)]
fn map_blocks<'s>(s: &'s [u8], bits: &mut [u32; SIBLING_MAP_CAPACITY / 32]) -> (usize, &'s [u8]) {
    /// Four entries `d,` as the kernel prints them, with every `d` a `0`.
    const FORM: u64 = 0x2C30_2C30_2C30_2C30;
    /// Moves bits 0, 16, 32 and 48 to bits 48 to 51: the partial products land on distinct
    /// bits, so nothing carries into those four.
    const GATHER: u64 = (1 << 48) | (1 << 33) | (1 << 18) | (1 << 3);
    /// Moves bits 0, 16, 32, 48 to bits 56 to 59 and bits 4, 20, 36, 52 to bits 60 to 63.
    const GATHER8: u64 = (1 << 56) | (1 << 41) | (1 << 26) | (1 << 11);
    const LOW_BITS: u64 = 0x0001_0001_0001_0001;
    let mut i = 0usize;
    let mut rest = s;
    // Sixteen entries per step: four words tested together, their bits stored at once.
    while let Some((block, tail)) = rest.split_first_chunk::<32>() {
        let (lo, hi) = (block.first_chunk::<16>(), block.last_chunk::<16>());
        let lo = lo.map_or(0, |b| u128::from_le_bytes(*b));
        let hi = hi.map_or(0, |b| u128::from_le_bytes(*b));
        let d = [lo as u64, (lo >> 64) as u64, hi as u64, (hi >> 64) as u64].map(|w| w ^ FORM);
        let [d0, d1, d2, d3] = d;
        if (d0 | d1 | d2 | d3) & !LOW_BITS != 0 {
            break;
        }
        // Two words' entries (bits 0, 16, 32, 48 and, shifted, 4, 20, 36, 52) to the top
        // byte in order: the partial products land on distinct bits, so nothing carries.
        let byte = |lo: u64, hi: u64| ((lo | hi << 4).wrapping_mul(GATHER8) >> 56) as u32;
        let b = byte(d0, d1) | byte(d2, d3) << 8;
        if let Some(word) = bits.get_mut(i / 32) {
            // i is a multiple of 16, so the sixteen bits never straddle two words.
            *word |= b << (i % 32);
        }
        i = i.saturating_add(16);
        rest = tail;
    }
    while let Some((chunk, tail)) = rest.split_first_chunk::<8>() {
        // A chunk of the kernel's form differs from `FORM` only in its entries' low bits.
        let d = u64::from_le_bytes(*chunk) ^ FORM;
        if d & !LOW_BITS != 0 {
            break;
        }
        let nibble = (d.wrapping_mul(GATHER) >> 48) as u32 & 0xF;
        if let Some(word) = bits.get_mut(i / 32) {
            // i is a multiple of 4, so the nibble never straddles two words.
            *word |= nibble << (i % 32);
        }
        i = i.saturating_add(4);
        rest = tail;
    }
    (i, rest)
}

/// The kernel's `sibling_map` line after its key, ` d,d,...,d\n` with two entries or more,
/// read in one pass (the blocks that hold no newline are the map's own): the map into `out`,
/// then the value text and the bytes after the newline. `None` for anything else (`out` then
/// holds nothing of use), which the general path reads: a line, then [`parse_sibling_map`] on
/// its value.
#[inline]
pub(crate) fn sibling_line<'a>(
    after: &'a [u8],
    out: &mut SiblingBits,
) -> Option<(&'a [u8], &'a [u8])> {
    let [b' ', value @ ..] = after else { return None };
    *out = SiblingBits::EMPTY;
    let (mut i, mut rest) = map_blocks(value, &mut out.bits);
    loop {
        let (bit, tail) = match rest {
            [b'0', tail @ ..] => (0u32, tail),
            [b'1', tail @ ..] => (1u32, tail),
            _ => return None,
        };
        if let Some(w) = out.bits.get_mut(i / 32) {
            *w |= bit << (i % 32);
        }
        i = i.saturating_add(1);
        match tail {
            [b',', more @ ..] => rest = more,
            [b'\n', more @ ..] if i >= 2 => {
                let raw = value.get(..value.len().saturating_sub(more.len()).saturating_sub(1))?;
                out.entries = i as u32;
                return Some((raw, more));
            }
            _ => return None,
        }
    }
}

impl SiblingBits {
    /// No entries.
    pub(crate) const EMPTY: Self =
        Self { bits: [0; SIBLING_MAP_CAPACITY / 32], entries: 0, malformed: false };
}

/// Parses `0,1,0,...` (entries of exactly `0` or `1`). Stops at the first malformed entry,
/// keeping the entries before it.
pub(crate) fn parse_sibling_map(raw: &[u8]) -> SiblingBits {
    let mut out = SiblingBits::EMPTY;
    if raw.is_empty() {
        return out;
    }
    // Fast path for the kernel's exact form, `d,d,...,d` with d in {0, 1}: sixteen, then four
    // entries at a time (`map_blocks`), then two bytes per entry. Anything else goes through
    // the general loop below.
    if raw.len() % 2 == 1 && raw.len() / 2 < SIBLING_MAP_CAPACITY {
        let (mut i, mut rest) = map_blocks(raw, &mut out.bits);
        let mut ok = true;
        while ok {
            let (bit, tail) = match rest {
                [b'0', tail @ ..] => (0u32, tail),
                [b'1', tail @ ..] => (1u32, tail),
                _ => {
                    ok = false;
                    break;
                }
            };
            if let Some(w) = out.bits.get_mut(i / 32) {
                *w |= bit << (i % 32);
            }
            i = i.saturating_add(1);
            match tail {
                [] => break,
                [b',', more @ ..] => rest = more,
                _ => ok = false,
            }
        }
        if ok {
            out.entries = i as u32;
            return out;
        }
        out.bits = [0; SIBLING_MAP_CAPACITY / 32];
    }
    for item in raw.split(|&b| b == b',') {
        let bit = match trim(item) {
            b"0" => false,
            b"1" => true,
            _ => {
                out.malformed = true;
                break;
            }
        };
        let i = out.entries as usize;
        if bit && let Some(w) = out.bits.get_mut(i / 32) {
            *w |= 1 << (i % 32);
        }
        out.entries = out.entries.saturating_add(1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    fn lines(s: &[u8]) -> Vec<Item<'_>> {
        Lines::new(s).collect()
    }

    fn kv(number: u32, key: &'static [u8], v: u64) -> Item<'static> {
        let raw: &'static [u8] = std::boxed::Box::leak(std::format!("{v}").into_bytes().into());
        Item::Line(Line { number, key, raw, value: Ok(v) })
    }

    #[test]
    fn empty_file_has_no_lines() {
        assert!(lines(b"").is_empty());
        assert!(lines(b"\n").is_empty());
        assert!(lines(b"\n\n  \r\n").is_empty());
    }

    #[test]
    fn kernel_format() {
        assert_eq!(lines(b"a 1\nbb 22\n"), [kv(1, b"a", 1), kv(2, b"bb", 22)]);
    }

    #[test]
    fn no_trailing_newline_and_crlf() {
        assert_eq!(lines(b"a 1\r\nb 2"), [kv(1, b"a", 1), kv(2, b"b", 2)]);
        assert_eq!(lines(b"a\t 7 \r"), [kv(1, b"a", 7)]);
    }

    #[test]
    fn blank_lines_keep_numbering() {
        assert_eq!(lines(b"\na 1\n\nb 2\n"), [kv(2, b"a", 1), kv(4, b"b", 2)]);
    }

    #[test]
    fn garbage_lines() {
        let items = lines(b" leading 1\n\xff\xfe 2\nkey\x01 3\nok 4\n");
        assert_eq!(items[0], Item::Malformed { number: 1 });
        assert_eq!(items[1], Item::Malformed { number: 2 });
        assert_eq!(items[2], Item::Malformed { number: 3 });
        assert_eq!(items[3], kv(4, b"ok", 4));
    }

    #[test]
    fn bad_values() {
        let items = lines(b"a\nb x\nc -1\nd 0x10\ne 1 2\nf 99999999999999999999\ng 1.5\n");
        let vals: Vec<_> = items
            .iter()
            .map(|i| match i {
                Item::Line(l) => l.value,
                Item::Malformed { .. } => panic!("{i:?}"),
            })
            .collect();
        assert_eq!(
            vals,
            [
                Err(ValueError::Missing),
                Err(ValueError::NotDecimal),
                Err(ValueError::NotDecimal),
                Err(ValueError::NotDecimal),
                Err(ValueError::NotDecimal),
                Err(ValueError::Overflow),
                Err(ValueError::NotDecimal),
            ]
        );
    }

    #[test]
    fn huge_numbers() {
        assert_eq!(parse_decimal(b"18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_decimal(b"18446744073709551616"), Err(ValueError::Overflow));
        assert_eq!(parse_decimal(b"000000000000000000000000000042"), Ok(42));
        assert_eq!(parse_decimal(b"99999999999999999999999999999x"), Err(ValueError::NotDecimal));
    }

    #[test]
    fn single_values() {
        assert_eq!(parse_single_u32(b"33\n"), Ok(33));
        assert_eq!(parse_single_u32(b"33"), Ok(33));
        assert_eq!(parse_single_u32(b"4294967295\n"), Ok(u32::MAX));
        assert_eq!(parse_single_u32(b"4294967296\n"), Err(ValueError::Overflow));
        assert_eq!(parse_single_u32(b""), Err(ValueError::Missing));
        assert_eq!(parse_single_u32(b"\n"), Err(ValueError::Missing));
        assert_eq!(parse_single_u32(b"1\n2\n"), Err(ValueError::NotDecimal));
        assert_eq!(parse_single_u32(b"1 2\n"), Err(ValueError::NotDecimal));
    }

    #[test]
    fn newline_search() {
        let mut v = std::vec![b'x'; 40];
        assert_eq!(find_newline(&v), None);
        for i in 0..40 {
            v[i] = b'\n';
            assert_eq!(find_newline(&v), Some(i));
            assert_eq!(find_newline(&v[..i]), None);
            v[i] = 0x8a; // high-bit bytes are not newlines
            assert_eq!(find_newline(&v), None);
            v[i] = b'x';
        }
        assert_eq!(find_newline(b"\x0b\x09\n"), Some(2));
        // Long inputs: the two-word steps, then the one-word and byte tails.
        let mut long = std::vec![b'0'; 600];
        for i in (0..600).step_by(7) {
            long[i] = b'\n';
            assert_eq!(find_newline(&long), Some(i));
            assert_eq!(find_newline(&long[..i]), None);
            long[i] = b',';
        }
    }

    #[test]
    fn key_split_matches_bytewise_scan() {
        let mut v = std::vec![b'k'; 30];
        for i in 0..30 {
            for b in [b' ', b'\t', b'\n', 0x00, 0x1f, 0x7f, 0x80, 0xff] {
                v[i] = b;
                let (k, rest) = split_key(&v);
                assert_eq!(k.len(), i, "byte {b:#x} at {i}");
                assert_eq!(rest.len(), 30 - i);
            }
            v[i] = b'~';
        }
        assert_eq!(split_key(&v).0.len(), 30);
        assert_eq!(split_key(b"!~ x").0, b"!~");
    }

    #[test]
    fn word_digits_match_a_bytewise_scan() {
        let bytewise = |w: &[u8; 8]| {
            let n = w.iter().take_while(|b| b.is_ascii_digit()).count();
            let v = w[..n].iter().fold(0u64, |v, b| v * 10 + u64::from(b - b'0'));
            (v, n)
        };
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut w = [0u8; 8];
            for (i, b) in w.iter_mut().enumerate() {
                let r = (seed >> (i * 8)) as u8;
                // Mostly digits, sometimes a byte next to them or any byte.
                *b = match r % 8 {
                    0 => r,
                    1 => [b'/', b':', b' ', b'\n', 0x80 | b'0', 0xff, 0][usize::from(r / 8) % 7],
                    _ => b'0' + r % 10,
                };
            }
            assert_eq!(word_digits(u64::from_le_bytes(w)), bytewise(&w), "{w:?}");
        }
        assert_eq!(word_digits(u64::from_le_bytes(*b"99999999")), (99_999_999, 8));
        assert_eq!(word_digits(u64::from_le_bytes(*b"00000001")), (1, 8));
        assert_eq!(word_digits(u64::from_le_bytes(*b"7\n000000")), (7, 1));
    }

    /// The word-wide path and the general one agree on every line, whatever its digits,
    /// blanks and neighbours.
    #[test]
    fn kernel_lines_match_the_general_path() {
        let mut fast_lines = 0;
        for digits in 1..=20usize {
            for tail in
                [&b""[..], b"\n", b"\nnext 1\n", b"\nxxxxxxxxxxxxxxxxxxxx", b" \n", b"\r\n", b"x\n"]
            {
                let mut text = b"some_key ".to_vec();
                text.extend((0..digits).map(|i| b"1234567890"[(i * 7) % 10]));
                text.extend_from_slice(tail);
                let expected: u64 = text[9..9 + digits].iter().fold(0u64, |v, b| {
                    v.checked_mul(10)
                        .and_then(|v| v.checked_add(u64::from(b - b'0')))
                        .unwrap_or(u64::MAX)
                });
                let fast = kernel_line(&text, 1);
                let mut general = Lines::new(&text);
                let Some(Item::Line(first)) = general.general_line() else { panic!("{text:?}") };
                assert_eq!(first.key, b"some_key");
                if let Some((line, rest)) = fast {
                    assert!(digits <= 15 && tail.starts_with(b"\n"), "{text:?}");
                    assert_eq!(line, first);
                    assert_eq!(line.value, Ok(expected));
                    fast_lines += 1;
                    assert_eq!(rest, &tail[1..]);
                    assert_eq!(rest, general.rest);
                } else {
                    // Declined: too many digits, another line end, or too few bytes to load.
                    assert!(digits > 15 || !tail.starts_with(b"\n") || text.len() < 9 + 16);
                }
                if digits <= 19
                    && (tail.is_empty()
                        || tail.starts_with(b"\n")
                        || tail == b" \n"
                        || tail == b"\r\n")
                {
                    assert_eq!(first.value, Ok(expected), "{text:?}");
                }
            }
        }
        assert!(fast_lines > 20, "the word-wide path was taken");
    }

    #[test]
    fn names() {
        assert_eq!(name_of(b"\n"), b"");
        assert_eq!(name_of(b"ip discovery\n"), b"ip discovery");
        assert_eq!(name_of(b"vega10"), b"vega10");
        assert_eq!(name_of(b"x\r\nmore"), b"x");
    }

    fn map_text(n: usize, set: &[usize]) -> Vec<u8> {
        let mut v = Vec::new();
        for i in 0..n {
            if i > 0 {
                v.push(b',');
            }
            v.push(if set.contains(&i) { b'1' } else { b'0' });
        }
        v
    }

    fn bit(m: &SiblingBits, i: usize) -> bool {
        m.bits[i / 32] >> (i % 32) & 1 == 1
    }

    #[test]
    fn sibling_maps_of_32_128_256() {
        for n in [32usize, 128, 256] {
            let set = [0, 5, n - 1];
            let m = parse_sibling_map(&map_text(n, &set));
            assert_eq!(m.entries as usize, n);
            assert!(!m.malformed);
            for i in 0..n {
                assert_eq!(bit(&m, i), set.contains(&i), "n={n} i={i}");
            }
        }
    }

    #[test]
    fn sibling_fast_and_slow_paths_agree() {
        for n in 1..=70usize {
            let set: std::vec::Vec<usize> = (0..n).filter(|i| (i * 7 + n) % 3 == 0).collect();
            let text = map_text(n, &set);
            let fast = parse_sibling_map(&text);
            let mut spaced = std::vec::Vec::new();
            for (i, b) in text.iter().enumerate() {
                spaced.push(*b);
                if *b == b',' && i % 4 == 1 {
                    spaced.push(b' '); // forces the general loop
                }
            }
            let slow = parse_sibling_map(&spaced);
            assert_eq!(fast, slow, "n={n}");
            assert_eq!(fast.entries as usize, n);
            for i in 0..n {
                assert_eq!(bit(&fast, i), set.contains(&i));
            }
        }
        // A bad byte inside a fast chunk.
        let m = parse_sibling_map(b"1,0,1,2,0,1,0,1,1");
        assert_eq!((m.entries, m.malformed), (3, true));
        let m = parse_sibling_map(b"1,0,1,0;0,1,0,1,1");
        assert_eq!((m.entries, m.malformed), (3, true));
    }

    /// The word-wide path against the general loop on random maps of every length up to
    /// beyond the capacity, clean or with one byte changed anywhere.
    #[test]
    fn random_sibling_maps_match_the_general_loop() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..4_000 {
            let n = 1 + (next() % 300) as usize;
            let set: Vec<usize> = (0..n).filter(|_| next() % 3 == 0).collect();
            let mut text = map_text(n, &set);
            if next() % 2 == 0 {
                let at = (next() % text.len() as u64) as usize;
                // Bytes one bit away from the kernel's, others, and any byte at all.
                let bytes = [b'2', b' ', b',', b'-', b'0', b'1', b'/', 0x31 | 0x80, b'\n', b'\r'];
                let r = next();
                text[at] = bytes.get((r % 12) as usize).copied().unwrap_or((r >> 8) as u8);
            }
            // The general loop alone: a blank after the last entry keeps the fast path out.
            let mut general = text.clone();
            general.push(b' ');
            let (fast, slow) = (parse_sibling_map(&text), parse_sibling_map(&general));
            assert_eq!(fast, slow, "{:?}", String::from_utf8_lossy(&text));
        }
    }

    #[test]
    fn longer_sibling_map_counts_entries_beyond_capacity() {
        let m = parse_sibling_map(&map_text(1024, &[1, 300]));
        assert_eq!(m.entries, 1024);
        assert!(bit(&m, 1));
        assert!(!m.malformed);
    }

    #[test]
    fn truncated_and_bad_sibling_maps() {
        let m = parse_sibling_map(b"1,0,1,");
        assert_eq!((m.entries, m.malformed), (3, true));
        let m = parse_sibling_map(b"1,0,2,1");
        assert_eq!((m.entries, m.malformed), (2, true));
        let m = parse_sibling_map(b"1,0,");
        assert_eq!((m.entries, m.malformed), (2, true));
        let m = parse_sibling_map(b"");
        assert_eq!((m.entries, m.malformed), (0, false));
        let m = parse_sibling_map(b"1");
        assert_eq!((m.entries, m.malformed, bit(&m, 0)), (1, false, true));
    }

    #[test]
    fn sibling_line_through_the_line_parser() {
        let items = lines(b"type 9\nsibling_map 1,0,0,1\n");
        let Item::Line(l) = items[1] else { panic!() };
        assert_eq!(l.key, b"sibling_map");
        assert_eq!(l.value, Err(ValueError::NotDecimal));
        let m = parse_sibling_map(l.raw);
        assert_eq!(m.entries, 4);
        assert!(bit(&m, 3));
    }
}
