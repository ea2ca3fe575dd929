//! The tables against upstream's counts, and trace validation.

use super::*;

#[test]
fn tables_hold_upstreams_counts() {
    // Counter and slot totals of `vega_blocks` / `navi_blocks` in rocm-systems pmc_table.c.
    let total = |t: &[CounterBlock]| t.iter().map(CounterBlock::counter_count).sum::<u32>();
    let slots = |t: &[CounterBlock]| t.iter().map(|b| b.concurrent).sum::<u32>();
    assert_eq!(GFX9_BLOCKS.len(), 20);
    assert_eq!(total(GFX9_BLOCKS), 3289);
    assert_eq!(slots(GFX9_BLOCKS), 158);
    assert_eq!(GFX10_BLOCKS.len(), 15);
    assert_eq!(total(GFX10_BLOCKS), 3390);
    assert_eq!(slots(GFX10_BLOCKS), 129);
    let sq = GFX9_BLOCKS.iter().find(|b| b.block == PmcBlock::Sq).unwrap();
    assert_eq!(sq.counter_count(), 301);
    assert!(sq.has(1) && !sq.has(0) && !sq.has(200) && sq.has(372));
    assert_eq!(sq.counter_ids().next(), Some(1));
}

#[test]
fn families_without_tables_have_no_counters() {
    assert!(counter_blocks(GfxVersion::new(9, 4, 2)).is_ok());
    assert!(counter_blocks(GfxVersion::new(10, 3, 0)).is_ok());
    let g = GfxVersion::new(11, 0, 0);
    assert_eq!(counter_blocks(g), Err(Error::NoCounters { gfx: g }));
    assert_eq!(crate::error::Error::kind(&Error::NoCounters { gfx: g }), ErrorKind::NotSupported);
}

#[test]
fn traces_are_validated_like_upstream() {
    let priv_c =
        |block, counter| TraceCounter { block, counter, kind: CounterKind::PrivilegedImmediate };
    let user_c =
        |block, counter| TraceCounter { block, counter, kind: CounterKind::NonPrivilegedImmediate };
    assert_eq!(TraceRequest::new(GFX9_BLOCKS, &[]), Err(Error::InvalidCounters));
    // Only non-privileged counters: nothing to register.
    assert_eq!(TraceRequest::new(GFX9_BLOCKS, &[user_c(14, 1)]), Err(Error::InvalidCounters));
    // A block index past the last one.
    assert_eq!(TraceRequest::new(GFX9_BLOCKS, &[priv_c(24, 1)]), Err(Error::InvalidCounters));
    // GRBMSE counts one at a time.
    let two = [priv_c(PmcBlock::GrbmSe.index(), 0), priv_c(PmcBlock::GrbmSe.index(), 1)];
    assert_eq!(TraceRequest::new(GFX9_BLOCKS, &two), Err(Error::InvalidCounters));
    // gfx10 has no IA block.
    assert_eq!(
        TraceRequest::new(GFX10_BLOCKS, &[priv_c(PmcBlock::Ia.index(), 0)]),
        Err(Error::InvalidCounters)
    );
    let ok = [priv_c(PmcBlock::Sq.index(), 4), priv_c(PmcBlock::Sq.index(), 5), user_c(0, 0)];
    let t = TraceRequest::new(GFX9_BLOCKS, &ok).unwrap();
    assert_eq!(t, TraceRequest { min_buffer_bytes: 4096, passes: 1, counters: 2 });
    for i in 0..PMC_BLOCKS {
        assert_eq!(PmcBlock::from_index(i).map(PmcBlock::index), Some(i));
    }
    assert_eq!(PmcBlock::from_index(PMC_BLOCKS), None);
}
