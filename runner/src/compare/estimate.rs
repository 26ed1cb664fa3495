//! What the run's steps are planned to take, for the progress line's time
//! left: rough costs measured on a 2-core machine (docs/results/20261204-145955:
//! `hello`'s 147 KiB compile in 79 ms and load from the cache in 0.5 ms, a
//! 22.5 MiB Python component's in 5.7 s and 44 ms, a start with cached code in
//! 7.6 and 362 ms). The progress line scales them by the pace the run keeps,
//! so they need to be right in proportion, not in absolute terms.

use super::Function;
use std::time::Duration;

/// A component's size in MiB (0 when it is not built: its steps will be skipped).
fn mib(f: &Function) -> f64 {
    std::fs::metadata(&f.wasm).map_or(0.0, |m| m.len() as f64 / f64::from(1 << 20))
}

fn ms(ms: f64) -> Duration {
    Duration::from_secs_f64(ms / 1e3)
}

/// Compiling `f` to machine code (with an empty cache).
pub fn compile(f: &Function) -> Duration {
    ms(40.0 + 250.0 * mib(f))
}

/// Loading `f`'s compiled code from the cache.
pub fn cache_load(f: &Function) -> Duration {
    ms(0.5 + 2.0 * mib(f))
}

/// A wasm host's process start to its first answer, with cached code.
pub fn warm_start(f: &Function) -> Duration {
    ms(10.0 + 15.0 * mib(f))
}

/// A native server's process start to its first answer.
pub const NATIVE_START: Duration = Duration::from_millis(3);

/// One fresh instance of `f` handling its probe, in process.
pub fn instance(f: &Function) -> Duration {
    Duration::from_secs_f64((20.0 + 10.0 * mib(f)) / 1e6)
}

/// A host's start, by whether it is wasm (cached code) or native.
pub fn start(f: &Function, wasm: bool) -> Duration {
    if wasm { warm_start(f) } else { NATIVE_START }
}
