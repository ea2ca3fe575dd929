//! firmware-tests
