//! Objects.
