//! libscreedb: the ScreeDB engine behind LevelDB 1.23's C API.
//!
//! Every function of LevelDB's `include/leveldb/c.h` is exported under its own name and
//! signature (our header is `include/screedb/c.h`), so programs and bindings written for LevelDB
//! link against `libscreedb` unchanged, or pick it up through `LD_LIBRARY_PATH` under the name
//! `libleveldb.so.1` (see `docs/c-api.md` and `scripts/install-capi.sh`).
//!
//! Conventions, as LevelDB's: strings and values returned are `malloc`ed (free them with
//! `leveldb_free` or `free`); on success `*errptr` is left untouched, on failure the old message
//! is freed and `*errptr` receives a `malloc`ed one in LevelDB's wording (see `status.rs`). On
//! top of LevelDB's contract: no panic crosses the boundary (each function catches it and
//! reports an error), and NULL handles are reported as errors (or ignored where the function
//! has no error channel) instead of crashing.
//!
//! The safety contract of every function is the C API's: pointers are NULL or valid for the
//! lengths given, handles come from the matching `_create`/`_open` and are not used after their
//! `_destroy`/`_close`. It is stated once here rather than on each function.

#![allow(non_camel_case_types, reason = "the C API's type names")]
#![allow(
    clippy::missing_safety_doc,
    reason = "every function shares the C API's safety contract, stated in the crate docs"
)]

mod batch;
mod callbacks;
mod db;
mod ffi;
mod iter;
mod options;
mod property;
mod status;

// Every exported function and handle type, for Rust callers and tests.
pub use batch::*;
pub use callbacks::{
    leveldb_comparator_create, leveldb_comparator_destroy, leveldb_comparator_t,
    leveldb_filterpolicy_create, leveldb_filterpolicy_create_bloom, leveldb_filterpolicy_destroy,
    leveldb_filterpolicy_t,
};
pub use db::*;
pub use ffi::{leveldb_free, leveldb_major_version, leveldb_minor_version};
pub use iter::*;
pub use options::*;
