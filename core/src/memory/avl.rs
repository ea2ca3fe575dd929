//! Arena AVL trees: the address indexes of the memory tables.
//!
//! The nodes live inside the tables' own slots (the slot index is the node id), so an index
//! needs no storage of its own and never allocates. A tree orders its nodes by
//! `(key, end, slot)`; with the `INTERVAL` flag it also maintains, per node, the maximum `end` of
//! its subtree, which turns it into an interval tree (stabbing queries over overlapping ranges).
//!
//! # Bounds
//! An AVL tree of `n` nodes has height at most `1.4405 · log2(n + 2) − 0.3277`: 26 levels for
//! 2^18 nodes, 46 for 2^32. Every operation here walks one root-to-leaf path, sometimes twice
//! (insert: descend + retrace; remove: find successor + retrace; stabbing query: descend +
//! descend), so its worst case is a small multiple of that height — bounded by the compile-time
//! capacity of the table, independent of anything else. Each node records the heights of its
//! subtrees, so retracing touches only the nodes on its path (and rotations the nodes they
//! move), never a sibling for its height.

use super::Violation;

/// "No node".
pub(crate) const NIL: u32 = u32::MAX;

/// The tree links of one node. `height == 0` means "not in the tree".
///
/// Besides its own height, a node keeps the heights of its two subtrees (`hl`, `hr`, in what
/// would otherwise be padding), so that retracing and rotating read only the nodes on the path
/// and the ones that move — never a sibling just for its height (in a large table, each such
/// read is a cache miss).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Links {
    /// Primary sort key (a start address).
    pub(crate) key: u64,
    pub(crate) left: u32,
    pub(crate) right: u32,
    pub(crate) parent: u32,
    pub(crate) height: u8,
    /// Height of the left subtree.
    pub(crate) hl: u8,
    /// Height of the right subtree.
    pub(crate) hr: u8,
}

impl Links {
    /// An unlinked node.
    pub(crate) const EMPTY: Self =
        Self { key: 0, left: NIL, right: NIL, parent: NIL, height: 0, hl: 0, hr: 0 };
}

/// Read access to one tree stored in an arena.
pub(crate) trait Tree {
    /// Whether subtree maxima of `end` are maintained (interval tree).
    const INTERVAL: bool;
    /// The links of node `i` ([`Links::EMPTY`] if `i` is out of range).
    fn links(&self, i: u32) -> Links;
    /// Secondary key of node `i`: the exclusive end of its range.
    fn end(&self, i: u32) -> u64;
    /// Maximum `end` over the subtree rooted at `i` (interval trees only).
    fn max_end(&self, i: u32) -> u64;
    /// The root node, or [`NIL`].
    fn root(&self) -> u32;
}

/// Write access to one tree stored in an arena.
pub(crate) trait TreeMut: Tree {
    /// Mutable links of node `i` (`None` if out of range).
    fn links_mut(&mut self, i: u32) -> Option<&mut Links>;
    /// Stores the subtree maximum of node `i` (interval trees only).
    fn set_max_end(&mut self, i: u32, value: u64);
    /// Replaces the root.
    fn set_root(&mut self, root: u32);
}

fn height<T: Tree>(t: &T, i: u32) -> u8 {
    if i == NIL { 0 } else { t.links(i).height }
}

fn sub_max<T: Tree>(t: &T, i: u32) -> u64 {
    if i == NIL { 0 } else { t.max_end(i) }
}

fn set_left<T: TreeMut>(t: &mut T, i: u32, v: u32) {
    if let Some(l) = t.links_mut(i) {
        l.left = v;
    }
}

fn set_right<T: TreeMut>(t: &mut T, i: u32, v: u32) {
    if let Some(l) = t.links_mut(i) {
        l.right = v;
    }
}

fn set_parent<T: TreeMut>(t: &mut T, i: u32, v: u32) {
    if i != NIL
        && let Some(l) = t.links_mut(i)
    {
        l.parent = v;
    }
}

/// Records `h` as the height of `x`'s left (`left`) or right subtree.
fn set_side_height<T: TreeMut>(t: &mut T, x: u32, left: bool, h: u8) {
    if let Some(l) = t.links_mut(x) {
        if left {
            l.hl = h;
        } else {
            l.hr = h;
        }
    }
}

/// Whether `c` is the left child of `p` (`false` when `p` is [`NIL`]).
fn is_left_child<T: Tree>(t: &T, p: u32, c: u32) -> bool {
    p != NIL && t.links(p).left == c
}

/// Whether node `a` sorts before node `b`.
fn less<T: Tree>(t: &T, a: u32, b: u32) -> bool {
    let (ka, kb) = (t.links(a).key, t.links(b).key);
    match ka.cmp(&kb) {
        core::cmp::Ordering::Less => true,
        core::cmp::Ordering::Greater => false,
        core::cmp::Ordering::Equal => (t.end(a), a) < (t.end(b), b),
    }
}

/// Recomputes the height of `x` from its recorded subtree heights (and, in interval trees, its
/// subtree maximum from its children); returns whether either changed.
fn update<T: TreeMut>(t: &mut T, x: u32) -> bool {
    let l = t.links(x);
    let h = l.hl.max(l.hr).saturating_add(1);
    let mut changed = h != l.height;
    if let Some(m) = t.links_mut(x) {
        m.height = h;
    }
    if T::INTERVAL {
        let m = t.end(x).max(sub_max(t, l.left)).max(sub_max(t, l.right));
        changed |= m != t.max_end(x);
        t.set_max_end(x, m);
    }
    changed
}

/// Makes `new` take the place of `old` under `parent` (or as the root).
fn replace_child<T: TreeMut>(t: &mut T, parent: u32, old: u32, new: u32) {
    if parent == NIL {
        t.set_root(new);
    } else if t.links(parent).left == old {
        set_left(t, parent, new);
    } else {
        set_right(t, parent, new);
    }
    set_parent(t, new, parent);
}

/// Rotates `x` down to the left; returns its right child, which takes its place. The parent's
/// record of the subtree's height is left to the caller (the retrace that follows).
fn rotate_left<T: TreeMut>(t: &mut T, x: u32) -> u32 {
    let lx = t.links(x);
    let y = lx.right;
    let ly = t.links(y);
    let b = ly.left;
    set_right(t, x, b);
    set_parent(t, b, x);
    set_side_height(t, x, false, ly.hl);
    set_left(t, y, x);
    replace_child(t, lx.parent, x, y);
    set_parent(t, x, y);
    update(t, x);
    let hx = t.links(x).height;
    set_side_height(t, y, true, hx);
    update(t, y);
    y
}

/// Rotates `x` down to the right (the mirror image of [`rotate_left`]).
fn rotate_right<T: TreeMut>(t: &mut T, x: u32) -> u32 {
    let lx = t.links(x);
    let y = lx.left;
    let ly = t.links(y);
    let b = ly.right;
    set_left(t, x, b);
    set_parent(t, b, x);
    set_side_height(t, x, true, ly.hr);
    set_right(t, y, x);
    replace_child(t, lx.parent, x, y);
    set_parent(t, x, y);
    update(t, x);
    let hx = t.links(x).height;
    set_side_height(t, y, false, hx);
    update(t, y);
    y
}

/// Restores the AVL balance at `x` (whose subtree heights are recorded); returns the subtree's
/// root.
fn rebalance<T: TreeMut>(t: &mut T, x: u32) -> u32 {
    let l = t.links(x);
    let bf = i32::from(l.hl).saturating_sub(i32::from(l.hr));
    if bf > 1 {
        let c = t.links(l.left);
        if c.hl < c.hr {
            rotate_left(t, l.left);
        }
        rotate_right(t, x)
    } else if bf < -1 {
        let c = t.links(l.right);
        if c.hr < c.hl {
            rotate_right(t, l.right);
        }
        rotate_left(t, x)
    } else {
        x
    }
}

/// Walks from `x` to the root updating and rebalancing. `side`: the subtree of `x` whose height
/// changed and its new height (`None`: `x`'s records are up to date, only its own height may be
/// stale). With `early_exit`, stops at the first node whose height and maximum did not change
/// (its parent's record of it is then still right).
fn retrace<T: TreeMut>(t: &mut T, mut x: u32, side: Option<(bool, u8)>, early_exit: bool) {
    // Above the first node, the changed side of a node is the child the walk came from, told
    // apart at the node itself (one access per level, not a second read of the parent).
    let (mut from, mut from_height) = (NIL, 0u8);
    let mut first = side;
    while x != NIL {
        // One access to `x`: record the changed side, and when `x` stays balanced, its height.
        let Some(m) = t.links_mut(x) else { return };
        match first.take() {
            Some((true, h)) => m.hl = h,
            Some((false, h)) => m.hr = h,
            None if from == NIL => {}
            None if m.left == from => m.hl = from_height,
            None => m.hr = from_height,
        }
        let l = *m;
        let h = l.hl.max(l.hr).saturating_add(1);
        if l.hl.abs_diff(l.hr) > 1 {
            let top = rebalance(t, x);
            let lt = t.links(top);
            (from, from_height) = (top, lt.height);
            x = lt.parent;
            continue;
        }
        // Balanced here: only the height (and maximum) can change.
        m.height = h;
        let mut changed = h != l.height;
        if T::INTERVAL {
            let m = t.end(x).max(sub_max(t, l.left)).max(sub_max(t, l.right));
            changed |= m != t.max_end(x);
            t.set_max_end(x, m);
        }
        if early_exit && !changed {
            return;
        }
        (from, from_height) = (x, h);
        x = l.parent;
    }
}

/// Inserts node `i` (not currently in the tree) with primary key `key`.
pub(crate) fn insert<T: TreeMut>(t: &mut T, i: u32, key: u64) {
    insert_hinted(t, i, key, NIL, NIL);
}

/// Inserts node `i` like [`insert`], given its in-order neighbours if the caller knows them
/// (`pred`: the node right before `i`, `succ`: the node right after, [`NIL`] if unknown). Of two
/// in-order neighbours, either the first has no right child or the second no left child; when a
/// known neighbour offers that free spot, `i` is attached there in `O(1)` instead of descending
/// from the root. A wrong hint breaks the tree: pass only exact neighbours.
pub(crate) fn insert_hinted<T: TreeMut>(t: &mut T, i: u32, key: u64, pred: u32, succ: u32) {
    if let Some(l) = t.links_mut(i) {
        *l = Links { key, height: 1, hl: 0, hr: 0, ..Links::EMPTY };
    }
    if T::INTERVAL {
        let e = t.end(i);
        t.set_max_end(i, e);
    }
    if pred != NIL && t.links(pred).right == NIL {
        set_right(t, pred, i);
        set_parent(t, i, pred);
        retrace(t, pred, Some((false, 1)), true);
        return;
    }
    if succ != NIL && t.links(succ).left == NIL {
        set_left(t, succ, i);
        set_parent(t, i, succ);
        retrace(t, succ, Some((true, 1)), true);
        return;
    }
    let mut cur = t.root();
    let mut parent = NIL;
    let mut go_left = false;
    while cur != NIL {
        parent = cur;
        go_left = less(t, i, cur);
        let l = t.links(cur);
        cur = if go_left { l.left } else { l.right };
    }
    set_parent(t, i, parent);
    if parent == NIL {
        t.set_root(i);
        return;
    }
    if go_left {
        set_left(t, parent, i);
    } else {
        set_right(t, parent, i);
    }
    retrace(t, parent, Some((go_left, 1)), true);
}

/// Removes node `i` (which must be in the tree); its key is kept, its links are cleared.
pub(crate) fn remove<T: TreeMut>(t: &mut T, i: u32) {
    let n = t.links(i);
    // Start reading the parent and both children at once (all three are touched below): in a
    // large table each is a cache miss, and these overlap instead of following one another.
    core::hint::black_box(height(t, n.parent) ^ height(t, n.left) ^ height(t, n.right));
    let (start, side);
    if n.left == NIL || n.right == NIL {
        let (child, h) = if n.left == NIL { (n.right, n.hr) } else { (n.left, n.hl) };
        side = Some((is_left_child(t, n.parent, i), h));
        replace_child(t, n.parent, i, child);
        start = n.parent;
    } else {
        let mut s = n.right;
        loop {
            let l = t.links(s).left;
            if l == NIL {
                break;
            }
            s = l;
        }
        let ls = t.links(s);
        if s == n.right {
            // `s` keeps its right subtree and takes `i`'s left one.
            start = s;
            side = None;
        } else {
            // `s`'s parent loses its left subtree `s` to `s`'s right one.
            start = ls.parent;
            side = Some((true, ls.hr));
            set_left(t, ls.parent, ls.right);
            set_parent(t, ls.right, ls.parent);
            set_right(t, s, n.right);
            set_parent(t, n.right, s);
        }
        set_left(t, s, n.left);
        set_parent(t, n.left, s);
        replace_child(t, n.parent, i, s);
        if let Some(l) = t.links_mut(s) {
            l.height = n.height;
            l.hl = n.hl;
            if s != n.right {
                l.hr = n.hr;
            }
        }
    }
    if let Some(l) = t.links_mut(i) {
        // Keep the key: the owning table may use it as the node's address.
        *l = Links { key: l.key, ..Links::EMPTY };
    }
    // Plain trees may stop retracing at the first unchanged node: `s` inherited `i`'s height,
    // which stays right unless a change propagates up to it. Interval trees always go to the
    // root, because `s`'s subtree maximum must be recomputed at its new place.
    retrace(t, start, side, !T::INTERVAL);
}

/// The in-order neighbours `(pred, succ)` a new node with primary key `key` would get in a
/// unique-key tree: the last node with key `<= key` and the first with key `> key` ([`NIL`] if
/// none). One descent; the pair is a valid hint for [`insert_hinted`] until the tree changes.
pub(crate) fn neighbours<T: Tree>(t: &T, key: u64) -> (u32, u32) {
    let (mut cur, mut pred, mut succ) = (t.root(), NIL, NIL);
    while cur != NIL {
        let l = t.links(cur);
        if key < l.key {
            succ = cur;
            cur = l.left;
        } else {
            pred = cur;
            cur = l.right;
        }
    }
    (pred, succ)
}

/// The in-order neighbours `(pred, succ)` of a new key, found next to node `c` — a guess of
/// one of them (e.g. a recently touched node) — in a unique-key tree, or `None` when `c` is not
/// a neighbour of `key` with a free child slot on that side. Verifying the guess takes a climb
/// to the nearest ancestor on the other side (≤ height, typically a few steps); the result is
/// a valid [`insert_hinted`] hint, like that of [`neighbours`].
pub(crate) fn neighbours_near<T: Tree>(t: &T, key: u64, c: u32) -> Option<(u32, u32)> {
    let lc = t.links(c);
    if lc.height == 0 || lc.key == key {
        return None;
    }
    let right = lc.key < key;
    if (right && lc.right != NIL) || (!right && lc.left != NIL) {
        return None;
    }
    // The other neighbour of the gap beside c is the first ancestor reached from the other
    // side: for c's right slot, the first ancestor having c in its left subtree.
    let (mut x, mut p) = (c, lc.parent);
    while p != NIL {
        let lp = t.links(p);
        if (right && lp.left == x) || (!right && lp.right == x) {
            break;
        }
        x = p;
        p = lp.parent;
    }
    if p != NIL {
        let pk = t.links(p).key;
        if (right && key >= pk) || (!right && key <= pk) {
            return None;
        }
    }
    Some(if right { (c, p) } else { (p, c) })
}

/// A node whose primary key equals `key` (unique-key trees: the node).
pub(crate) fn find_key<T: Tree>(t: &T, key: u64) -> Option<u32> {
    let mut cur = t.root();
    while cur != NIL {
        let l = t.links(cur);
        if key < l.key {
            cur = l.left;
        } else if key > l.key {
            cur = l.right;
        } else {
            return Some(cur);
        }
    }
    None
}

/// The node whose `(key, end)` equals the arguments (if several, any of them).
pub(crate) fn find_key_end<T: Tree>(t: &T, key: u64, end: u64) -> Option<u32> {
    let mut cur = t.root();
    while cur != NIL {
        let l = t.links(cur);
        match (key, end).cmp(&(l.key, t.end(cur))) {
            core::cmp::Ordering::Less => cur = l.left,
            core::cmp::Ordering::Greater => cur = l.right,
            core::cmp::Ordering::Equal => return Some(cur),
        }
    }
    None
}

/// The last node (in tree order) whose key is `<= q`.
pub(crate) fn predecessor<T: Tree>(t: &T, q: u64) -> Option<u32> {
    let mut cur = t.root();
    let mut best = NIL;
    while cur != NIL {
        let l = t.links(cur);
        if l.key <= q {
            best = cur;
            cur = l.right;
        } else {
            cur = l.left;
        }
    }
    (best != NIL).then_some(best)
}

/// Interval trees: among the nodes with `key <= q < end`, the last one in tree order (largest
/// start, then largest end). Two descents: `O(height)`.
pub(crate) fn stab_last<T: Tree>(t: &T, q: u64) -> Option<u32> {
    // Along the search path for q, every node with key <= q contributes itself and its left
    // subtree as candidates, and deeper such nodes sort after shallower ones.
    let mut cur = t.root();
    let mut cand = NIL;
    let mut cand_is_node = false;
    while cur != NIL {
        let l = t.links(cur);
        if l.key <= q {
            if t.end(cur) > q {
                cand = cur;
                cand_is_node = true;
            } else if l.left != NIL && t.max_end(l.left) > q {
                cand = l.left;
                cand_is_node = false;
            }
            cur = l.right;
        } else {
            cur = l.left;
        }
    }
    if cand == NIL {
        return None;
    }
    if cand_is_node {
        return Some(cand);
    }
    // Every key in cand's subtree is <= q: prefer the right-most subtree that reaches past q.
    let mut x = cand;
    while x != NIL {
        let l = t.links(x);
        if l.right != NIL && t.max_end(l.right) > q {
            x = l.right;
        } else if t.end(x) > q {
            return Some(x);
        } else if l.left != NIL && t.max_end(l.left) > q {
            x = l.left;
        } else {
            return None;
        }
    }
    None
}

/// The first node in tree order.
pub(crate) fn first<T: Tree>(t: &T) -> Option<u32> {
    let mut cur = t.root();
    if cur == NIL {
        return None;
    }
    loop {
        let l = t.links(cur).left;
        if l == NIL {
            return Some(cur);
        }
        cur = l;
    }
}

/// The node after `x` in tree order.
pub(crate) fn next<T: Tree>(t: &T, x: u32) -> Option<u32> {
    let l = t.links(x);
    if l.right != NIL {
        let mut cur = l.right;
        loop {
            let left = t.links(cur).left;
            if left == NIL {
                return Some(cur);
            }
            cur = left;
        }
    }
    let mut child = x;
    let mut p = l.parent;
    while p != NIL {
        if t.links(p).left == child {
            return Some(p);
        }
        child = p;
        p = t.links(p).parent;
    }
    None
}

/// Validates the whole tree (order, parent links, heights, balance, maxima) and returns its node
/// count. Visits at most `limit` nodes (so a corrupted, cyclic tree terminates).
pub(crate) fn check<T: Tree>(t: &T, limit: u32) -> Result<u32, Violation> {
    let root = t.root();
    if root == NIL {
        return Ok(0);
    }
    if t.links(root).parent != NIL {
        return Err(Violation::Index { slot: root });
    }
    let mut count = 0u32;
    let mut prev = NIL;
    let mut cur = first(t);
    while let Some(x) = cur {
        count = count.saturating_add(1);
        if count > limit {
            return Err(Violation::Index { slot: x });
        }
        let l = t.links(x);
        if l.height == 0 {
            return Err(Violation::Index { slot: x });
        }
        for c in [l.left, l.right] {
            if c != NIL && t.links(c).parent != x {
                return Err(Violation::Index { slot: x });
            }
        }
        let (hl, hr) = (height(t, l.left), height(t, l.right));
        if l.height != hl.max(hr).saturating_add(1)
            || hl.abs_diff(hr) > 1
            || (l.hl, l.hr) != (hl, hr)
        {
            return Err(Violation::Index { slot: x });
        }
        if T::INTERVAL {
            let m = t.end(x).max(sub_max(t, l.left)).max(sub_max(t, l.right));
            if m != t.max_end(x) {
                return Err(Violation::Index { slot: x });
            }
        }
        if prev != NIL && !less(t, prev, x) {
            return Err(Violation::Index { slot: x });
        }
        prev = x;
        cur = next(t, x);
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;
    use std::vec::Vec;

    /// A test arena: node i has range [key, end).
    struct Arena<const I: bool> {
        links: Vec<Links>,
        ends: Vec<u64>,
        max: Vec<u64>,
        root: u32,
    }

    impl<const I: bool> Arena<I> {
        fn new(n: usize) -> Self {
            Self {
                links: std::vec![Links::EMPTY; n],
                ends: std::vec![0; n],
                max: std::vec![0; n],
                root: NIL,
            }
        }
    }

    impl<const I: bool> Tree for Arena<I> {
        const INTERVAL: bool = I;
        fn links(&self, i: u32) -> Links {
            self.links.get(i as usize).copied().unwrap_or(Links::EMPTY)
        }
        fn end(&self, i: u32) -> u64 {
            self.ends[i as usize]
        }
        fn max_end(&self, i: u32) -> u64 {
            self.max[i as usize]
        }
        fn root(&self) -> u32 {
            self.root
        }
    }

    impl<const I: bool> TreeMut for Arena<I> {
        fn links_mut(&mut self, i: u32) -> Option<&mut Links> {
            self.links.get_mut(i as usize)
        }
        fn set_max_end(&mut self, i: u32, v: u64) {
            self.max[i as usize] = v;
        }
        fn set_root(&mut self, r: u32) {
            self.root = r;
        }
    }

    #[test]
    fn sequential_insert_remove_stays_balanced() {
        let n = 1000u32;
        let mut a = Arena::<false>::new(n as usize);
        for i in 0..n {
            a.ends[i as usize] = u64::from(i) * 10 + 5;
            insert(&mut a, i, u64::from(i) * 10);
            assert_eq!(check(&a, n).unwrap(), i + 1);
        }
        // height bound of an AVL tree with 1000 nodes
        assert!(a.links(a.root).height <= 14);
        assert_eq!(find_key(&a, 500), Some(50));
        assert_eq!(find_key(&a, 501), None);
        assert_eq!(predecessor(&a, 509), Some(50));
        assert_eq!(predecessor(&a, 0), Some(0));
        for i in (0..n).step_by(2) {
            remove(&mut a, i);
            check(&a, n).unwrap();
        }
        assert_eq!(check(&a, n).unwrap(), n / 2);
        let order: Vec<u32> = core::iter::successors(first(&a), |&x| next(&a, x)).collect();
        assert_eq!(order, (0..n).filter(|i| i % 2 == 1).collect::<Vec<_>>());
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u64, u64),
        Remove(usize),
        Stab(u64),
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        proptest::collection::vec(
            prop_oneof![
                3 => (0u64..200, 1u64..40).prop_map(|(s, l)| Op::Insert(s, s + l)),
                2 => any::<usize>().prop_map(Op::Remove),
                2 => (0u64..260).prop_map(Op::Stab),
            ],
            1..200,
        )
    }

    proptest! {
        /// A plain tree (early-exit retracing on removal too) stays a valid AVL tree — heights,
        /// recorded subtree heights, order — and holds exactly the model's keys, through hinted
        /// and unhinted insertions and removals.
        #[test]
        fn plain_tree_matches_model(ops in proptest::collection::vec((any::<bool>(), 0u64..300, any::<bool>()), 1..300)) {
            const N: usize = 256;
            let mut a = Arena::<false>::new(N);
            let mut live: std::collections::BTreeMap<u64, u32> = std::collections::BTreeMap::new();
            let mut free: Vec<u32> = (0..N as u32).rev().collect();
            for (ins, key, hinted) in ops {
                if ins && !live.contains_key(&key) {
                    if let Some(i) = free.pop() {
                        a.ends[i as usize] = key + 1;
                        if hinted {
                            let (p, s) = neighbours(&a, key);
                            insert_hinted(&mut a, i, key, p, s);
                        } else {
                            insert(&mut a, i, key);
                        }
                        live.insert(key, i);
                    }
                } else if let Some((&k, &i)) = live.range(key..).next().or_else(|| live.iter().next()) {
                    remove(&mut a, i);
                    live.remove(&k);
                    free.push(i);
                }
                prop_assert_eq!(check(&a, N as u32), Ok(live.len() as u32));
                for (&k, &i) in &live {
                    prop_assert_eq!(find_key(&a, k), Some(i));
                }
            }
        }

        /// The interval tree agrees with a brute-force model on insert/remove/stab sequences.
        #[test]
        fn interval_tree_matches_model(ops in ops()) {
            const N: usize = 256;
            let mut a = Arena::<true>::new(N);
            let mut live: BTreeSet<u32> = BTreeSet::new();
            let mut free: Vec<u32> = (0..N as u32).rev().collect();
            for op in ops {
                match op {
                    Op::Insert(s, e) => {
                        if let Some(i) = free.pop() {
                            a.ends[i as usize] = e;
                            insert(&mut a, i, s);
                            live.insert(i);
                        }
                    }
                    Op::Remove(k) => {
                        if !live.is_empty() {
                            let i = *live.iter().nth(k % live.len()).unwrap();
                            remove(&mut a, i);
                            live.remove(&i);
                            free.push(i);
                        }
                    }
                    Op::Stab(q) => {
                        let want = live
                            .iter()
                            .copied()
                            .filter(|&i| a.links[i as usize].key <= q && q < a.ends[i as usize])
                            .max_by_key(|&i| (a.links[i as usize].key, a.ends[i as usize], i));
                        prop_assert_eq!(stab_last(&a, q), want);
                    }
                }
                prop_assert_eq!(check(&a, N as u32), Ok(live.len() as u32));
            }
        }
    }
}
