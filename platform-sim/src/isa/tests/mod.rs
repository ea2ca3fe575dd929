//! Interpreter tests.
