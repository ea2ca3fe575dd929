//! hsakmt-sim
