//! `hsaKmtGetTileConfig` (`AMDKFD_IOC_GET_TILE_CONFIG`): a GPU's address and tiling
//! configuration, as the graphics driver programs it.

use super::{Error, Kfd};
use crate::device::MemoryStorage;
use crate::platform::{Ioctl, Platform};
use crate::uapi::kfd_ioctl_get_tile_config_args;

/// What the kernel reports besides the tile-mode arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TileConfig {
    /// `GB_ADDR_CONFIG`.
    pub gb_addr_config: u32,
    /// Memory banks (0 from gfx9 on).
    pub num_banks: u32,
    /// Memory ranks (0 from gfx9 on).
    pub num_ranks: u32,
    /// Tile modes stored into the caller's array (at most 32).
    pub num_tile_configs: u32,
    /// Macro-tile modes stored into the caller's array (at most 16).
    pub num_macro_tile_configs: u32,
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// The tiling configuration of GPU `node`; the tile and macro-tile modes go into the
    /// caller's arrays (as many as fit).
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`]; [`Error::InvalidNode`];
    /// [`Error::Ioctl`].
    pub fn tile_config(
        &self,
        node: u32,
        tile_config: &mut [u32],
        macro_tile_config: &mut [u32],
    ) -> Result<TileConfig, Error> {
        let gpu_id = self.gpu_id_of(node)?;
        let mut args = kfd_ioctl_get_tile_config_args { gpu_id, ..Default::default() };
        self.ioctl(&mut Ioctl::GetTileConfig { args: &mut args, tile_config, macro_tile_config })?;
        Ok(TileConfig {
            gb_addr_config: args.gb_addr_config,
            num_banks: args.num_banks,
            num_ranks: args.num_ranks,
            num_tile_configs: args.num_tile_configs,
            num_macro_tile_configs: args.num_macro_tile_configs,
        })
    }
}
