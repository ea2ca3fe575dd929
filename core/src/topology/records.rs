//! Filling one property record from a `key value` file: each line's key predicted from the
//! kernel's print order or looked up, its value stored or turned into a warning, keys the
//! contract does not list kept as unknown keys.

use crate::platform::SysfsFile;

use super::diag::{Diagnostics, UnknownKeys, ValueProblem, WarningKind};
use super::keys::{KeySet, OutOfRange};
use super::node::Owner;
use super::parse::{self, Item, Line, Lines, SiblingBits};

/// Parses a `key value` file into a record. `special` sees each known key first (with the
/// map when a list line was read with it) and returns `true` when it consumed the line.
pub(super) fn parse_props<K: KeySet, const W: usize, const U: usize>(
    bytes: &[u8],
    props: &mut K::Props,
    file: SysfsFile,
    owner: Owner,
    diag: &mut Diagnostics<W>,
    unknown: &mut UnknownKeys<U>,
    special: impl FnMut(K, &Line<'_>, Option<&SiblingBits>, &mut K::Props, &mut Diagnostics<W>) -> bool,
) {
    parse_lines::<K, W, U, true>(bytes, props, file, owner, diag, unknown, special);
}

/// [`parse_props`]; with `PREDICT` the kernel's print order (`kfd_topology.c` prints a file's
/// keys in a fixed order) is used: each line is first checked against the key after the
/// previous line's, and its key is searched for and looked up only when it is another. Without,
/// every key is looked up (the general path the tests hold the prediction to).
fn parse_lines<K: KeySet, const W: usize, const U: usize, const PREDICT: bool>(
    bytes: &[u8],
    props: &mut K::Props,
    file: SysfsFile,
    owner: Owner,
    diag: &mut Diagnostics<W>,
    unknown: &mut UnknownKeys<U>,
    mut special: impl FnMut(
        K,
        &Line<'_>,
        Option<&SiblingBits>,
        &mut K::Props,
        &mut Diagnostics<W>,
    ) -> bool,
) {
    let mut lines = Lines::new(bytes);
    let mut expected = 0usize;
    let mut map = SiblingBits::EMPTY;
    loop {
        let next = if PREDICT {
            lines.next_keyed(
                |text| K::expect(expected, text).map(|(k, len)| (k, len, K::LISTS.contains(&k))),
                &mut map,
            )
        } else {
            lines.next().map(|item| (None, item, false))
        };
        let Some((key, item, mapped)) = next else { break };
        let line = match item {
            Item::Line(l) => l,
            Item::Malformed { number } => {
                diag.file(file, WarningKind::MalformedLine { line: number });
                continue;
            }
        };
        let key = key.or_else(|| K::lookup(line.key));
        let Some(key) = key else {
            match line.value {
                Ok(v) => unknown.keep(owner, line.key, v),
                Err(e) => diag.file(
                    file,
                    WarningKind::MalformedValue {
                        line: line.number,
                        key: None,
                        problem: problem(e),
                    },
                ),
            }
            continue;
        };
        expected = key.position().saturating_add(1);
        if special(key, &line, mapped.then_some(&map), props, diag) {
            continue;
        }
        let kind = match line.value {
            Ok(v) => match K::store(props, key, v) {
                Ok(false) => continue,
                Ok(true) => WarningKind::DuplicateKey { line: line.number, key: key.id() },
                Err(OutOfRange) => {
                    WarningKind::ValueOutOfRange { line: line.number, key: key.id(), value: v }
                }
            },
            Err(e) => WarningKind::MalformedValue {
                line: line.number,
                key: Some(key.id()),
                problem: problem(e),
            },
        };
        diag.file(file, kind);
    }
}

/// The public words for a parser's complaint.
pub(super) const fn problem(e: parse::ValueError) -> ValueProblem {
    match e {
        parse::ValueError::Missing => ValueProblem::Missing,
        parse::ValueError::NotDecimal => ValueProblem::NotDecimal,
        parse::ValueError::Overflow => ValueProblem::Overflow,
    }
}

pub(super) fn no_special<K, P, D>(
    _: K,
    _: &Line<'_>,
    _: Option<&SiblingBits>,
    _: &mut P,
    _: &mut D,
) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::keys::{
        CacheKey, LinkKey, MemBankKey, NodeKey, NodeProperties, SystemKey,
    };
    use core::cell::Cell;
    use std::string::String;
    use std::vec::Vec;

    /// A xorshift generator: the same files on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A file of `names` mostly in the given (kernel) order with values of every shape, but also
    /// with keys skipped, repeated, swapped, unknown, cut short or run on, malformed lines,
    /// blank lines, other blanks and line ends, and no final newline.
    fn random_file(rng: &mut Rng, names: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut i = 0usize;
        while i < names.len() {
            let mut name = names[i].as_bytes().to_vec();
            match rng.below(40) {
                0 => {
                    i += 1; // skipped
                    continue;
                }
                1 => name = names[rng.below(names.len() as u64) as usize].as_bytes().to_vec(),
                2 => name = b"recommended_sdma_engine_id_mask".to_vec(),
                3 => name.truncate(name.len() - 1),
                4 => name.extend_from_slice(b"_x"),
                5 => name = b" leading".to_vec(),
                6 => name.push(0x01),
                7 => name.clear(),
                8 => out.extend_from_slice(b"\n"),
                _ => {}
            }
            out.extend_from_slice(&name);
            out.extend_from_slice(match rng.below(30) {
                0 => b"  ",
                1 => b"\t",
                2 => b"",
                _ => b" ",
            });
            let digits = match rng.below(10) {
                0 => 16 + rng.below(8) as usize,
                1..=3 => 9 + rng.below(7) as usize,
                _ => 1 + rng.below(8) as usize,
            };
            let list = names[i] == "sibling_map" && rng.below(3) != 0;
            match rng.below(30) {
                _ if list => out.extend_from_slice(&random_map(rng)),
                0 => out.extend_from_slice(b"0x10"),
                1 => out.extend_from_slice(b"-1"),
                2 => out.extend_from_slice(b"1,0,1,1"),
                3 => out.extend_from_slice(b"1 2"),
                4 => {}
                _ => out.extend((0..digits).map(|_| b'0' + rng.below(10) as u8)),
            }
            let last = i + 1 == names.len();
            out.extend_from_slice(match rng.below(30) {
                0 => b"\r\n",
                1 => b" \n",
                2 if last => b"",
                _ => b"\n",
            });
            if rng.below(20) != 0 {
                i += 1; // else repeated
            }
        }
        out
    }

    /// A `sibling_map` value: the kernel's form (of 1 to 300 entries, past the capacity too)
    /// or that form with one byte changed, cut short or run on.
    fn random_map(rng: &mut Rng) -> Vec<u8> {
        let n = 1 + rng.below(300) as usize;
        let mut map: Vec<u8> = (0..n).flat_map(|_| [b'0' + rng.below(2) as u8, b',']).collect();
        map.pop();
        match rng.below(8) {
            0 => {
                let at = rng.below(map.len() as u64) as usize;
                map[at] = b"012,\r\n\t "[rng.below(8) as usize];
            }
            1 => map.truncate(rng.below(map.len() as u64) as usize),
            2 => map.push(b','),
            _ => {}
        }
        map
    }

    /// Parses `text` with and without the predicted keys: the same record, warnings and
    /// unknown keys.
    fn both<K: KeySet>(text: &[u8]) -> bool
    where
        K::Props: Default + PartialEq + core::fmt::Debug,
    {
        both_counting::<K>(text, &Cell::new(0))
    }

    /// [`both`], adding to `with_map` the lines read with their map.
    fn both_counting<K: KeySet>(text: &[u8], with_map: &Cell<usize>) -> bool
    where
        K::Props: Default + PartialEq + core::fmt::Debug,
    {
        let file = SysfsFile::NodeProperties(0);
        let owner = Owner::Node { node: 0 };
        let run = |predict: bool| {
            let mut props = K::Props::default();
            let mut diag = Diagnostics::<64>::new();
            let mut unknown = UnknownKeys::<8>::new();
            let mut specials = Vec::new();
            let special = |key: K,
                           line: &Line<'_>,
                           map: Option<&SiblingBits>,
                           _: &mut K::Props,
                           _: &mut Diagnostics<64>| {
                // Every known key's line comes here first (as `sibling_map`'s does); some of
                // those that are not numbers are taken. A list key's map, read with its line
                // or from its value, must be the same.
                with_map.set(with_map.get() + usize::from(map.is_some()));
                let list = K::LISTS
                    .contains(&key)
                    .then(|| map.copied().unwrap_or_else(|| parse::parse_sibling_map(line.raw)));
                specials.push((key.position(), line.number, line.raw.to_vec(), line.value, list));
                key.position().is_multiple_of(2) && line.value.is_err()
            };
            if predict {
                parse_lines::<K, 64, 8, true>(
                    text,
                    &mut props,
                    file,
                    owner,
                    &mut diag,
                    &mut unknown,
                    special,
                );
            } else {
                parse_lines::<K, 64, 8, false>(
                    text,
                    &mut props,
                    file,
                    owner,
                    &mut diag,
                    &mut unknown,
                    special,
                );
            }
            (props, diag.list, diag.dropped, unknown.list, unknown.dropped, specials)
        };
        let (fast, general) = (run(true), run(false));
        assert_eq!(fast, general, "{:?}", String::from_utf8_lossy(text));
        general.1.is_empty() && general.3.is_empty()
    }

    fn names<K: KeySet>(all: &[K], name: impl Fn(K) -> &'static str) -> Vec<&'static str> {
        all.iter().map(|k| name(*k)).collect()
    }

    /// The predicted keys of every key set give what looking each key up gives, on the
    /// kernel's files and on files that break every assumption of the prediction.
    #[test]
    fn predicted_keys_match_the_lookup() {
        let node = names(NodeKey::ALL, NodeKey::name);
        let cache = names(CacheKey::ALL, CacheKey::name);
        let link = names(LinkKey::ALL, LinkKey::name);
        let bank = names(MemBankKey::ALL, MemBankKey::name);
        let system = names(SystemKey::ALL, SystemKey::name);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut clean = 0;
        let with_map = Cell::new(0);
        for _ in 0..3_000 {
            clean += usize::from(both::<NodeKey>(&random_file(&mut rng, &node)));
            clean +=
                usize::from(both_counting::<CacheKey>(&random_file(&mut rng, &cache), &with_map));
            clean += usize::from(both::<LinkKey>(&random_file(&mut rng, &link)));
            clean += usize::from(both::<MemBankKey>(&random_file(&mut rng, &bank)));
            clean += usize::from(both::<SystemKey>(&random_file(&mut rng, &system)));
        }
        assert!(clean > 100, "some files were the kernel's own ({clean})");
        assert!(with_map.get() > 100, "some sibling maps were read with their line");
        // The kernel's exact files.
        let exact = |names: &[&str]| {
            names.iter().flat_map(|n| [n.as_bytes(), b" 12345\n"].concat()).collect::<Vec<u8>>()
        };
        assert!(both::<NodeKey>(&exact(&node)));
        assert!(both::<LinkKey>(&exact(&link)));
        let props = {
            let mut p = NodeProperties::default();
            let mut diag = Diagnostics::<4>::new();
            let mut unknown = UnknownKeys::<4>::new();
            let file = SysfsFile::NodeProperties(0);
            let owner = Owner::Node { node: 0 };
            let text = exact(&node);
            parse_props::<NodeKey, 4, 4>(
                &text,
                &mut p,
                file,
                owner,
                &mut diag,
                &mut unknown,
                no_special,
            );
            p
        };
        assert_eq!(props.present_count() as usize, NodeKey::COUNT);
        assert!(NodeKey::ALL.iter().all(|k| props.get(*k) == Some(12345)));
    }
}
