//! The process's memory allocator: jemalloc, with a larger per-thread cache for small objects.
//!
//! glibc malloc spent ~17% of the client's samples on CQL requests (the driver's ~4 KB request futures
//! miss its per-thread cache); jemalloc with its defaults ~14%, most of it creating and destroying slabs:
//! its thread cache keeps only ~20 objects of the larger small sizes, and 128 requests in flight
//! allocate and free 128 such futures in bursts. With room for 256 of each size in the thread cache
//! the burst never reaches the arena (~8% of samples; README, "Client CPU per request"). The cache
//! holds at most 256 objects per size class, so peak RSS grows by about a megabyte.

#[global_allocator]
static GLOBAL: jemallocator::Jemalloc = jemallocator::Jemalloc;

/// `f()` on the heap, for the large futures of the request path. A plain function, so that the value's
/// temporary lives on this stack frame and not in the caller's async state (rustc keeps room in an
/// `async fn` for a temporary moved out before an `.await`); written into memory allocated first, so
/// that the compiler can build it in place instead of copying it there.
pub fn boxed<T>(f: impl FnOnce() -> T) -> std::pin::Pin<Box<T>> {
    let b = Box::<T>::new_uninit();
    Box::into_pin(Box::write(b, f()))
}

/// jemalloc's compile-time options (its `malloc_conf` string; `_RJEM_MALLOC_CONF` in the environment
/// still overrides them, as jemalloc documents).
pub const MALLOC_CONF: &str = "tcache_nslots_small_min:256,tcache_nslots_small_max:1024";

/// A C string pointer jemalloc reads before `main`; `Option<&u8>` has the layout of `const char *`.
#[used]
#[export_name = "_rjem_malloc_conf"]
static JEMALLOC_CONF: Option<&u8> = Some(&MALLOC_CONF_C[0]);

static MALLOC_CONF_C: [u8; MALLOC_CONF.len() + 1] = nul_terminated();

const fn nul_terminated() -> [u8; MALLOC_CONF.len() + 1] {
    let mut out = [0u8; MALLOC_CONF.len() + 1];
    let src = MALLOC_CONF.as_bytes();
    let mut i = 0;
    while i < src.len() {
        out[i] = src[i];
        i += 1;
    }
    out
}

/// The value of one of jemalloc's unsigned options as the running allocator sees it.
#[cfg(test)]
fn opt_unsigned(name: &str) -> u32 {
    let key = std::ffi::CString::new(format!("opt.{name}")).unwrap();
    let mut v: u32 = 0;
    let mut len = std::mem::size_of::<u32>();
    // SAFETY: a read-only mallctl of an `unsigned` option into a buffer of its size.
    let rc = unsafe {
        jemalloc_sys::mallctl(key.as_ptr(), (&mut v as *mut u32).cast(), &mut len, std::ptr::null_mut(), 0)
    };
    assert_eq!(rc, 0, "mallctl opt.{name} failed");
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jemalloc_reads_our_options() {
        if std::env::var_os("_RJEM_MALLOC_CONF").is_some() {
            return; // the environment overrides the compiled-in options
        }
        for pair in MALLOC_CONF.split(',') {
            let (name, value) = pair.split_once(':').unwrap();
            assert_eq!(opt_unsigned(name), value.parse::<u32>().unwrap(), "{name}");
        }
    }
}
