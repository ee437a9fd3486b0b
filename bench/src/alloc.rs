//! A counting global allocator: the heap bytes live in this process, for the `memory` scenario.
//!
//! The resident set size (RSS) only says how much memory the process has taken from the OS,
//! and it rarely goes down when memory is freed: the allocator keeps freed pages for reuse.
//! So "what agents hold after their actors stopped" cannot be read from RSS, and neither can
//! growth that reuses pages freed earlier. Counting the bytes the program asks for and gives
//! back can. The count is only kept while [`counting`] is on; off, each allocation costs one
//! relaxed load more than [`System`]'s, so the timing scenarios are not disturbed.
//!
//! The one module of the workspace with `unsafe` code: `GlobalAlloc` is an unsafe trait.

#![allow(
    unsafe_code,
    reason = "a global allocator implements the unsafe GlobalAlloc trait"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// Whether allocations are being counted.
static COUNTING: AtomicBool = AtomicBool::new(false);
/// Bytes allocated minus bytes freed while counting was on.
static LIVE: AtomicI64 = AtomicI64::new(0);

/// [`System`], counting the bytes allocated and freed while [`counting`] is on.
pub(crate) struct Counting;

/// Turns counting on or off. Bytes allocated while off and freed while on count as negative,
/// so a figure is a difference of two [`live_bytes`] readings taken while on.
pub(crate) fn counting(on: bool) {
    COUNTING.store(on, Ordering::Relaxed);
}

/// Heap bytes allocated minus freed while counting was on.
pub(crate) fn live_bytes() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

fn add(bytes: usize) {
    LIVE.fetch_add(i64::try_from(bytes).unwrap_or(i64::MAX), Ordering::Relaxed);
}

fn sub(bytes: usize) {
    LIVE.fetch_sub(i64::try_from(bytes).unwrap_or(i64::MAX), Ordering::Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged; the counting touches only atomics and
// never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let ptr = unsafe { System.alloc(layout) };
        if COUNTING.load(Ordering::Relaxed) && !ptr.is_null() {
            add(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if COUNTING.load(Ordering::Relaxed) && !ptr.is_null() {
            add(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) };
        if COUNTING.load(Ordering::Relaxed) {
            sub(layout.size());
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc`, passed on.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if COUNTING.load(Ordering::Relaxed) && !new.is_null() {
            if new_size >= layout.size() {
                add(new_size - layout.size());
            } else {
                sub(layout.size() - new_size);
            }
        }
        new
    }
}
