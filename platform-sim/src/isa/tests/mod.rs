//! Interpreter tests: per-opcode cases (words from LLVM's assembler, expected state worked
//! out by hand), decoding, scheduling and the command-processor glue.

mod ds;
mod e2e;
mod harness;
mod salu;
mod smem;
mod sopp;
mod valu;
mod vcmp;
mod vmem;
