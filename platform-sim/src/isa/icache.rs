//! The decoded-instruction cache: machine code is decoded once per code page and reused by
//! every wave and every dispatch while the page's bytes stay the same.
//!
//! A page is [`CODE_PAGE`] bytes of code read from GPU memory; its instructions are decoded
//! lazily, at the first fetch of each address. At each dispatch ([`CodeCache::begin`]) every
//! page is checked against memory again on its first use, and decoded again when the code
//! changed (a program loaded at an address another one occupied before). Code that is not
//! inside one readable page (the tail of a buffer that is not page-sized) is decoded at every
//! fetch.

use std::collections::HashMap;

use super::Target;
use super::decode::{Undecodable, decode};
use super::fault::WaveFault;
use super::inst::Inst;
use super::limits::{CODE_PAGE, MAX_CODE_PAGES};
use super::memory::{MemFault, WaveMemory};

const WORDS: usize = (CODE_PAGE / 4) as usize;

#[derive(Clone, Copy)]
enum Slot {
    Empty,
    Inst(Inst),
    Bad(Undecodable),
}

struct Page {
    raw: Vec<u32>,
    slots: Vec<Slot>,
    /// The dispatch generation the page was last checked against memory in.
    checked: u64,
}

/// Decoded code pages of one target.
pub struct CodeCache {
    target: Target,
    pages: Vec<Page>,
    index: HashMap<u64, usize>,
    generation: u64,
    last: Option<(u64, usize)>,
    /// Instructions decoded so far (for tests and statistics).
    pub decoded: u64,
    /// The last instruction decoded outside the pages (what [`CodeCache::fetch`] lends then).
    loose: Option<Inst>,
}

impl std::fmt::Debug for CodeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeCache")
            .field("target", &self.target)
            .field("pages", &self.pages.len())
            .field("decoded", &self.decoded)
            .finish_non_exhaustive()
    }
}

impl CodeCache {
    /// An empty cache for `target`.
    #[must_use]
    pub fn new(target: Target) -> Self {
        CodeCache {
            target,
            pages: Vec::new(),
            index: HashMap::new(),
            generation: 1,
            last: None,
            decoded: 0,
            loose: None,
        }
    }

    /// The target it decodes for.
    #[must_use]
    pub fn target(&self) -> Target {
        self.target
    }

    /// Starts a dispatch: pages are checked against memory again at their next use.
    pub fn begin(&mut self) {
        self.generation += 1;
        self.last = None;
    }

    /// The page holding `base`, checked against memory in this generation; `None` when the
    /// page cannot be read whole.
    fn page<M: WaveMemory>(&mut self, base: u64, mem: &mut M) -> Option<usize> {
        if let Some((b, k)) = self.last
            && b == base
        {
            return Some(k);
        }
        let at = self.index.get(&base).copied();
        if let Some(k) = at
            && self.pages[k].checked == self.generation
        {
            self.last = Some((base, k));
            return Some(k);
        }
        // Read into the stack: checking a page that did not change allocates nothing.
        let mut bytes = [0u8; CODE_PAGE as usize];
        mem.fetch(base, &mut bytes).ok()?;
        let words = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        let k = match at {
            Some(k) => {
                let p = &mut self.pages[k];
                if !p.raw.iter().copied().eq(words.clone()) {
                    for (r, w) in p.raw.iter_mut().zip(words) {
                        *r = w;
                    }
                    p.slots.fill(Slot::Empty);
                }
                p.checked = self.generation;
                k
            }
            None => {
                if self.pages.len() >= MAX_CODE_PAGES {
                    self.pages.clear();
                    self.index.clear();
                }
                self.pages.push(Page {
                    raw: words.collect(),
                    slots: vec![Slot::Empty; WORDS],
                    checked: self.generation,
                });
                let k = self.pages.len() - 1;
                self.index.insert(base, k);
                k
            }
        };
        self.last = Some((base, k));
        Some(k)
    }

    /// The instruction at `pc`.
    ///
    /// # Errors
    /// A memory violation at `pc` when the code cannot be read, an illegal instruction when
    /// it does not decode.
    #[inline]
    pub fn fetch<M: WaveMemory>(&mut self, pc: u64, mem: &mut M) -> Result<&Inst, WaveFault> {
        let base = pc & !(CODE_PAGE - 1);
        let word = ((pc - base) / 4) as usize;
        let Some(k) = self.page(base, mem) else {
            return self.uncached(pc, mem);
        };
        if let Slot::Empty = self.pages[k].slots[word] {
            // An instruction is at most three dwords; one that runs past the page is decoded
            // from memory every time.
            if word + 3 > WORDS {
                return self.uncached(pc, mem);
            }
            self.decoded += 1;
            self.pages[k].slots[word] =
                match decode(self.target, &self.pages[k].raw[word..word + 3]) {
                    Ok(i) => Slot::Inst(i),
                    Err(u) => Slot::Bad(u),
                };
        }
        match &self.pages[k].slots[word] {
            Slot::Inst(i) => Ok(i),
            Slot::Bad(u) => Err(WaveFault::undecodable(*u).at(pc)),
            Slot::Empty => Err(WaveFault::memory(MemFault::not_present(pc, false)).at(pc)),
        }
    }

    fn uncached<M: WaveMemory>(&mut self, pc: u64, mem: &mut M) -> Result<&Inst, WaveFault> {
        let mut w = [0u32; 3];
        let mut have = 0;
        for (k, slot) in w.iter_mut().enumerate() {
            let mut b = [0u8; 4];
            match mem.fetch(pc.wrapping_add(4 * k as u64), &mut b) {
                Ok(()) => {
                    *slot = u32::from_le_bytes(b);
                    have += 1;
                }
                Err(_) if k > 0 => break,
                Err(f) => return Err(WaveFault::memory(MemFault { address: pc, ..f }).at(pc)),
            }
        }
        self.decoded += 1;
        let i = decode(self.target, &w[..have]).map_err(|u| WaveFault::undecodable(u).at(pc))?;
        Ok(self.loose.insert(i))
    }
}
