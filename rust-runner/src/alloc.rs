//! The process's memory allocator: jemalloc, with its default options. glibc malloc spent ~17% of the
//! client's samples on CQL requests (the driver's ~4 KB request futures miss its per-thread cache);
//! jemalloc spends ~6% there at the same peak RSS (README, "Client CPU per request").

#[global_allocator]
static GLOBAL: jemallocator::Jemalloc = jemallocator::Jemalloc;
