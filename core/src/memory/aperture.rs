//! Apertures.
