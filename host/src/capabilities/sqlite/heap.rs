//! A heap budget per instance, all its SQLite connections together, kept by
//! SQLite's own pluggable allocator (`SQLITE_CONFIG_MALLOC`): SQLite's limits
//! bound single values (`SQLITE_LIMIT_LENGTH`), but not what a statement
//! holds in all (sorters, page cache, intermediate blobs), and its heap
//! limits (`sqlite3_hard_heap_limit64`) are one for the whole process, which
//! one component could exhaust for every other. (A budget per connection, as
//! before, let a request holding 48 in-memory databases reach 8 GiB.)
//!
//! Each allocation carries a 16-byte header naming the [`Budget`] it was
//! charged to (the instance whose work was running on this thread when it
//! was made, see [`charged_to`]) and its size, so that a free on any thread
//! gives the bytes back to the right budget. An allocation past its budget
//! returns NULL, which SQLite reports as `SQLITE_NOMEM` for that statement
//! only; the connection stays usable. Allocations made outside any
//! connection's work (SQLite's own start-up) are charged to nobody.
//!
//! The allocator must be installed before SQLite initializes, so [`install`]
//! runs before the first connection opens; it fails (and nothing is opened)
//! if something else initialized SQLite first.

// The one place that needs `unsafe` for SQLite: the allocator callbacks SQLite
// calls through C. Sound because every pointer they receive was returned by
// `x_malloc`/`x_realloc` (SQLite's contract), which put a header in front of
// it, and every budget pointer in a header holds a strong count of its `Arc`.
#![allow(unsafe_code)]

use rusqlite::ffi;
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, OnceLock};

/// Bytes in front of each allocation: its budget and its size. Sixteen, so
/// the pointer SQLite gets keeps `malloc`'s 16-byte alignment.
const HEADER: usize = 16;

/// The heap budget of one instance: all its connections' allocations, and
/// what its key-value calls allocate on a shared connection.
pub use crate::capabilities::quota::Quota as Budget;

/// Bytes SQLite has allocated now, every connection together (SQLite's own
/// count, kept since it is built with memory statistics on).
pub fn allocated() -> usize {
    // SAFETY: a plain read of SQLite's counters.
    let used = unsafe { ffi::sqlite3_memory_used() };
    usize::try_from(used).unwrap_or(0)
}

/// Asks the C allocator to return its free pages to the kernel (glibc keeps
/// freed small blocks in its arenas; SQLite's pages are such blocks).
pub fn return_free_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

thread_local! {
    /// The budget new allocations on this thread are charged to.
    static CURRENT: Cell<*const Budget> = const { Cell::new(std::ptr::null()) };
}

/// Charges SQLite's allocations on this thread to `budget` until dropped.
pub struct Charging {
    previous: *const Budget,
    _budget: Arc<Budget>,
}

/// While the returned guard lives, SQLite allocations on this thread count
/// against `budget`.
pub fn charged_to(budget: &Arc<Budget>) -> Charging {
    let previous = CURRENT.with(|current| current.replace(Arc::as_ptr(budget)));
    Charging {
        previous,
        _budget: budget.clone(),
    }
}

impl Drop for Charging {
    fn drop(&mut self) {
        CURRENT.with(|current| current.set(self.previous));
    }
}

/// Installs the allocator, once per process, before SQLite's first use.
pub fn install() -> Result<(), String> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let methods = ffi::sqlite3_mem_methods {
                xMalloc: Some(x_malloc),
                xFree: Some(x_free),
                xRealloc: Some(x_realloc),
                xSize: Some(x_size),
                xRoundup: Some(x_roundup),
                xInit: Some(x_init),
                xShutdown: Some(x_shutdown),
                pAppData: std::ptr::null_mut(),
            };
            // SAFETY: SQLite copies `methods` before returning; the callbacks
            // are sound for any pointer SQLite's allocator contract gives them.
            let code =
                unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &raw const methods) };
            if code == ffi::SQLITE_OK {
                Ok(())
            } else {
                Err(format!(
                    "SQLite was initialized before spinbench could bound its memory (code {code})"
                ))
            }
        })
        .clone()
}

/// The header in front of `user`, a pointer this allocator returned.
unsafe fn header(user: *mut c_void) -> (*mut c_void, *const Budget, usize) {
    // SAFETY: `user` is HEADER bytes into a block of ours (caller's contract).
    unsafe {
        let raw = user.cast::<u8>().sub(HEADER).cast::<c_void>();
        let budget = raw.cast::<*const Budget>().read();
        let size = raw.cast::<usize>().add(1).read();
        (raw, budget, size)
    }
}

unsafe fn write_header(raw: *mut c_void, budget: *const Budget, size: usize) -> *mut c_void {
    // SAFETY: `raw` is a fresh block of at least HEADER bytes, 16-aligned.
    unsafe {
        raw.cast::<*const Budget>().write(budget);
        raw.cast::<usize>().add(1).write(size);
        raw.cast::<u8>().add(HEADER).cast()
    }
}

unsafe extern "C" fn x_malloc(bytes: c_int) -> *mut c_void {
    let Ok(size) = usize::try_from(bytes) else {
        return std::ptr::null_mut();
    };
    let budget = CURRENT.try_with(Cell::get).unwrap_or(std::ptr::null());
    // SAFETY: a non-null CURRENT points into an `Arc` its `Charging` holds.
    if let Some(owner) = unsafe { budget.as_ref() }
        && !owner.reserve(size)
    {
        return std::ptr::null_mut();
    }
    // SAFETY: plain malloc; null is handled.
    let raw = unsafe { libc::malloc(size + HEADER) };
    if raw.is_null() {
        // SAFETY: as above.
        if let Some(owner) = unsafe { budget.as_ref() } {
            owner.release(size);
        }
        return std::ptr::null_mut();
    }
    if !budget.is_null() {
        // SAFETY: `budget` came from `Arc::as_ptr` of a live Arc; the header
        // now holds one strong count, given back in `x_free`.
        unsafe { Arc::increment_strong_count(budget) };
    }
    // SAFETY: `raw` has size + HEADER bytes.
    unsafe { write_header(raw, budget, size) }
}

unsafe extern "C" fn x_free(user: *mut c_void) {
    if user.is_null() {
        return;
    }
    // SAFETY: SQLite frees only what this allocator returned.
    let (raw, budget, size) = unsafe { header(user) };
    // SAFETY: the block is ours; the budget pointer holds a strong count.
    unsafe {
        libc::free(raw);
        if let Some(owner) = budget.as_ref() {
            owner.release(size);
            Arc::decrement_strong_count(budget);
        }
    }
}

unsafe extern "C" fn x_realloc(user: *mut c_void, bytes: c_int) -> *mut c_void {
    let Ok(new_size) = usize::try_from(bytes) else {
        return std::ptr::null_mut();
    };
    // SAFETY: SQLite reallocates only what this allocator returned.
    let (raw, budget, old_size) = unsafe { header(user) };
    // SAFETY: the header's budget holds a strong count while the block lives.
    let owner = unsafe { budget.as_ref() };
    if let Some(owner) = owner
        && new_size > old_size
        && !owner.reserve(new_size - old_size)
    {
        return std::ptr::null_mut();
    }
    // SAFETY: `raw` is our block; on failure it is left as it was.
    let moved = unsafe { libc::realloc(raw, new_size + HEADER) };
    if moved.is_null() {
        if let Some(owner) = owner
            && new_size > old_size
        {
            owner.release(new_size - old_size);
        }
        return std::ptr::null_mut();
    }
    if let Some(owner) = owner
        && new_size < old_size
    {
        owner.release(old_size - new_size);
    }
    // SAFETY: `moved` has new_size + HEADER bytes; the strong count moves with it.
    unsafe { write_header(moved, budget, new_size) }
}

unsafe extern "C" fn x_size(user: *mut c_void) -> c_int {
    if user.is_null() {
        return 0;
    }
    // SAFETY: SQLite asks only about blocks this allocator returned.
    let (_, _, size) = unsafe { header(user) };
    c_int::try_from(size).unwrap_or(c_int::MAX)
}

unsafe extern "C" fn x_roundup(bytes: c_int) -> c_int {
    bytes.saturating_add(7) & !7
}

unsafe extern "C" fn x_init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_shutdown(_: *mut c_void) {}
