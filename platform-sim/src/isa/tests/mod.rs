//! Interpreter tests: per-opcode cases (words from LLVM's assembler, expected state worked
//! out by hand), decoding, scheduling and the command-processor glue.

mod coverage;
mod decode;
mod dispatch;
pub(crate) mod ds;
mod e2e;
pub(crate) mod harness;
pub(crate) mod salu;
pub(crate) mod sdwa;
pub(crate) mod smem;
pub(crate) mod sopp;
pub(crate) mod valu;
pub(crate) mod vcmp;
mod vm_permissions;
pub(crate) mod vmem;
