//! The process's memory allocator: jemalloc, with a larger per-thread cache for small objects.
//!
//! glibc malloc spent ~17% of the client's samples on CQL requests (the driver's ~4 KB request futures
//! miss its per-thread cache); jemalloc with its defaults ~14%, most of it creating and destroying slabs:
//! its thread cache keeps only ~20 objects of the larger small sizes, and 128 requests in flight
//! allocate and free 128 such futures in bursts. With room for 256 of each size in the thread cache
//! the burst never reaches the arena (~8% of samples; README, "Client CPU per request"). The cache
//! holds at most 256 objects per size class, so peak RSS grows by about a megabyte.

#[global_allocator]
static GLOBAL: Guarded = Guarded(jemallocator::Jemalloc);

/// jemalloc, plus the script stack guard's check. Script code nests the native stack two ways: a Rune
/// future awaited inside another polls a nested VM inside the outer one's poll, and a native function
/// that calls a script function (`iter().map(f)`) runs a nested VM inside the outer one's instruction.
/// Every level allocates its VM (and future), so an allocation is where the thread's deepest point is
/// seen. The check is a thread-local load and a compare. Past the mark it records that (an allocator
/// must not unwind or fail std's allocations) and zeroes Rune's instruction budget: the next VM to
/// start on this thread halts at once, and the halt returns up through every level as an error
/// (`exec` then names the stack budget). A VM already running keeps its own copy of the budget, so
/// async nesting is stopped by the check slice instead (exec::call::CHECK_SLICE), and by `exec` when a
/// poll returns pending.
pub struct Guarded(jemallocator::Jemalloc);

std::thread_local! {
    /// The lowest stack address script code on this thread may reach (0: not guarded).
    static STACK_MARK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Set when an allocation was made below the mark.
    static STACK_PASSED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The stack pointer, near enough (a local's address where there is no register to read).
#[inline(always)]
fn stack_pointer() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let sp: usize;
        // SAFETY: reads a register, touches no memory.
        unsafe { std::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags)) };
        sp
    }
    #[cfg(target_arch = "aarch64")]
    {
        let sp: usize;
        // SAFETY: reads a register, touches no memory.
        unsafe { std::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags)) };
        sp
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let here = 0u8;
        std::ptr::addr_of!(here) as usize
    }
}

#[inline(always)]
fn check_stack() {
    let sp = stack_pointer();
    if sp < STACK_MARK.with(|m| m.get()) {
        stack_mark_passed();
    }
}

#[cold]
#[inline(never)]
fn stack_mark_passed() {
    STACK_PASSED.with(|p| p.set(true));
    zero_rune_budget();
}

/// Sets this thread's Rune instruction budget to 0. Rune 0.14 (pinned in Cargo.toml) has no setter:
/// its `BudgetGuard` is a `repr(transparent)` `usize` that writes its value back to the thread's
/// budget when dropped (the test below checks that this still holds). No allocation, no unwinding.
fn zero_rune_budget() {
    // SAFETY: BudgetGuard is #[repr(transparent)] over a usize, with no other state.
    drop(unsafe { std::mem::transmute::<usize, rune::runtime::budget::BudgetGuard>(0) });
}

// SAFETY: every call is jemalloc's own; the check beside it neither allocates nor unwinds.
unsafe impl std::alloc::GlobalAlloc for Guarded {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        check_stack();
        self.0.alloc(layout)
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        check_stack();
        self.0.alloc_zeroed(layout)
    }
    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        self.0.dealloc(ptr, layout)
    }
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        check_stack();
        self.0.realloc(ptr, layout, new_size)
    }
}

/// Room a thread that runs scripts has beyond the script's stack budget: what one poll of a call can
/// still nest after the mark (at most one level per instruction of the 10k-instruction slice, see
/// exec::call::CHECK_SLICE) plus the drop of the nested futures, with a wide margin. Only the pages a
/// script touches are ever committed.
pub const STACK_HEADROOM: usize = 56 << 20;

/// The stack size for a thread that runs scripts under a stack budget of `budget` bytes.
pub fn script_thread_stack(budget: usize) -> usize {
    budget + STACK_HEADROOM
}

/// Guards this thread: script code may use `budget` bytes of stack below the caller's frame (the
/// thread must have `script_thread_stack(budget)`).
pub fn guard_stack(budget: usize) {
    let sp = stack_pointer();
    STACK_MARK.with(|m| m.set(sp.saturating_sub(budget)));
    STACK_PASSED.with(|p| p.set(false));
}

/// Whether an allocation on this thread was made past its stack budget since the last call (clears it).
#[inline]
pub fn stack_passed() -> bool {
    // Set only past the mark, which only script code reaches: a load on the path of every call.
    STACK_PASSED.with(|p| p.get() && p.replace(false))
}

/// `f()` on the heap, for the large futures of the request path. A plain function, so that the value's
/// temporary lives on this stack frame and not in the caller's async state (rustc keeps room in an
/// `async fn` for a temporary moved out before an `.await`); written into memory allocated first, so
/// that the compiler can build it in place instead of copying it there.
pub fn boxed<T>(f: impl FnOnce() -> T) -> std::pin::Pin<Box<T>> {
    let b = Box::<T>::new_uninit();
    Box::into_pin(Box::write(b, f()))
}

/// Heap room for one value, reused: `place` builds a value in the room (or in a new box) and pins it
/// there; `give_back` drops a pinned value where it is and keeps its room. The worker's loop polls each
/// call future where `place` put it: a call that completes on that first poll (every call that does no
/// I/O) gives its box back, so it costs no allocation, and, built in place, no copy (a copy of the
/// future into its box cost ~100 instructions a call); a pending one keeps its box, since a polled
/// future must not move, and the next `place` allocates a new one.
pub struct Room<T>(Option<Box<std::mem::MaybeUninit<T>>>);

impl<T> Room<T> {
    pub const fn new() -> Room<T> {
        Room(None)
    }

    /// `f()` in the room, pinned. `f` runs once the room exists, so that the value can be built in
    /// place (as in `boxed`).
    #[inline(always)]
    pub fn place(&mut self, f: impl FnOnce() -> T) -> std::pin::Pin<Box<T>> {
        let b = self.0.take().unwrap_or_else(Box::new_uninit);
        Box::into_pin(Box::write(b, f()))
    }

    /// Drops `v` in place and keeps its room for the next `place`.
    #[inline(always)]
    pub fn give_back(&mut self, v: std::pin::Pin<Box<T>>) {
        // SAFETY: the pinned value is dropped where it is before its memory is reused, as `Pin`
        // requires, and nothing else points into it; `MaybeUninit<T>` has `T`'s layout. (Were the
        // drop to panic, the box would leak, not be freed twice.)
        unsafe {
            let p = Box::into_raw(std::pin::Pin::into_inner_unchecked(v));
            std::ptr::drop_in_place(p);
            self.0 = Some(Box::from_raw(p.cast::<std::mem::MaybeUninit<T>>()));
        }
    }
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
    fn the_budget_can_be_zeroed_from_outside_the_vm() {
        let left = rune::runtime::budget::with(1000, || {
            zero_rune_budget();
            rune::runtime::budget::acquire().take()
        })
        .call();
        assert!(!left, "the instruction budget was not zeroed");
        // Outside `with`, the thread's budget is back to unlimited.
        assert!(rune::runtime::budget::acquire().take());
    }

    #[test]
    fn a_room_is_reused_and_each_value_dropped_once() {
        let v = std::rc::Rc::new(());
        let mut room = Room::new();
        let a = room.place(|| v.clone());
        let at = &*a as *const _ as usize;
        room.give_back(a);
        assert_eq!(std::rc::Rc::strong_count(&v), 1, "a value given back is dropped");
        let b = room.place(|| v.clone());
        assert_eq!(&*b as *const _ as usize, at, "the next value is built in the same room");
        // `b` kept (a pending future): the next value gets a room of its own.
        let c = room.place(|| v.clone());
        assert_ne!(&*c as *const _ as usize, at);
        drop((b, c));
        assert_eq!(std::rc::Rc::strong_count(&v), 1);
    }

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
