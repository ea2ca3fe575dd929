//! The counter tables of upstream libhsakmt (rocm-systems `libhsakmt/src/pmc_table.c`,
//! `vega_blocks` for every gfx9 part and `navi_blocks` for gfx10), as counter-id ranges: the
//! counters each block has and how many it counts at once. Blocks absent from a table have no
//! slots on that family.

use super::{CounterBlock, PmcBlock};

/// gfx9 counter blocks (`vega_blocks`).
pub const GFX9_BLOCKS: &[CounterBlock] = &[
    CounterBlock { block: PmcBlock::Cb, concurrent: 7, ids: &[(0, 437)] },
    CounterBlock { block: PmcBlock::Cpf, concurrent: 5, ids: &[(0, 31)] },
    CounterBlock { block: PmcBlock::Cpg, concurrent: 5, ids: &[(0, 58)] },
    CounterBlock { block: PmcBlock::Db, concurrent: 12, ids: &[(0, 327)] },
    CounterBlock { block: PmcBlock::Gds, concurrent: 4, ids: &[(0, 120)] },
    CounterBlock { block: PmcBlock::Grbm, concurrent: 2, ids: &[(0, 37)] },
    CounterBlock { block: PmcBlock::GrbmSe, concurrent: 1, ids: &[(0, 15)] },
    CounterBlock { block: PmcBlock::Ia, concurrent: 7, ids: &[(0, 31)] },
    CounterBlock { block: PmcBlock::PaSc, concurrent: 11, ids: &[(0, 490)] },
    CounterBlock { block: PmcBlock::PaSu, concurrent: 10, ids: &[(0, 291)] },
    CounterBlock { block: PmcBlock::Spi, concurrent: 18, ids: &[(0, 195)] },
    CounterBlock { block: PmcBlock::Sq, concurrent: 16, ids: &[(1, 183), (255, 372)] },
    CounterBlock { block: PmcBlock::Sx, concurrent: 4, ids: &[(0, 207)] },
    CounterBlock { block: PmcBlock::Ta, concurrent: 6, ids: &[(0, 118)] },
    CounterBlock { block: PmcBlock::Tca, concurrent: 10, ids: &[(1, 34)] },
    CounterBlock { block: PmcBlock::Tcc, concurrent: 10, ids: &[(0, 107), (128, 255)] },
    CounterBlock { block: PmcBlock::Tcp, concurrent: 10, ids: &[(0, 84)] },
    CounterBlock { block: PmcBlock::Td, concurrent: 6, ids: &[(0, 56)] },
    CounterBlock { block: PmcBlock::Vgt, concurrent: 10, ids: &[(0, 147)] },
    CounterBlock { block: PmcBlock::Wd, concurrent: 4, ids: &[(0, 57)] },
];

/// gfx10 counter blocks (`navi_blocks`).
pub const GFX10_BLOCKS: &[CounterBlock] = &[
    CounterBlock { block: PmcBlock::Cb, concurrent: 7, ids: &[(0, 460)] },
    CounterBlock { block: PmcBlock::Cpf, concurrent: 6, ids: &[(0, 39)] },
    CounterBlock { block: PmcBlock::Cpg, concurrent: 6, ids: &[(0, 81)] },
    CounterBlock { block: PmcBlock::Db, concurrent: 12, ids: &[(0, 369)] },
    CounterBlock { block: PmcBlock::Gds, concurrent: 10, ids: &[(0, 122)] },
    CounterBlock { block: PmcBlock::Grbm, concurrent: 2, ids: &[(0, 46)] },
    CounterBlock { block: PmcBlock::GrbmSe, concurrent: 1, ids: &[(0, 18)] },
    CounterBlock { block: PmcBlock::PaSc, concurrent: 11, ids: &[(0, 551)] },
    CounterBlock { block: PmcBlock::PaSu, concurrent: 16, ids: &[(0, 265)] },
    CounterBlock { block: PmcBlock::Spi, concurrent: 18, ids: &[(0, 328)] },
    CounterBlock { block: PmcBlock::Sq, concurrent: 16, ids: &[(0, 511)] },
    CounterBlock { block: PmcBlock::Sx, concurrent: 4, ids: &[(0, 224)] },
    CounterBlock { block: PmcBlock::Ta, concurrent: 5, ids: &[(0, 225)] },
    CounterBlock { block: PmcBlock::Tcp, concurrent: 10, ids: &[(0, 76)] },
    CounterBlock { block: PmcBlock::Td, concurrent: 5, ids: &[(0, 60)] },
];
