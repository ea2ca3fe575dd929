//! hsakmt-linux
