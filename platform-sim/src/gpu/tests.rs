//! Unit tests of the command processor over host memory.
