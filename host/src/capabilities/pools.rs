//! One component's database connection pools, by address: what the
//! PostgreSQL and MySQL clients share. At most [`CAPACITY`] addresses are
//! kept; past it the cache is emptied, as Spin's evicts (a pool still in use
//! lives on in its clients). Clones share the cache, so an `open` can make
//! its pool after the awaits that resolve its address.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The most addresses a component keeps a pool for (Spin's cache capacity).
const CAPACITY: usize = 16;

pub struct PoolsByAddress<P>(Arc<Mutex<HashMap<String, P>>>);

impl<P> Default for PoolsByAddress<P> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<P> Clone for PoolsByAddress<P> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<P> std::fmt::Debug for PoolsByAddress<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.0.lock().map_or(0, |pools| pools.len());
        write!(f, "Pools({count} addresses)")
    }
}

impl<P: Clone> PoolsByAddress<P> {
    /// The pool for `address`, made by `make` the first time it is asked for.
    pub fn get_or_make(&self, address: &str, make: impl FnOnce() -> P) -> P {
        let mut pools = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(pool) = pools.get(address) {
            return pool.clone();
        }
        if pools.len() >= CAPACITY {
            pools.clear();
        }
        let pool = make();
        pools.insert(address.to_string(), pool.clone());
        pool
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_is_made_once_per_address_and_the_cache_is_bounded() {
        let pools = PoolsByAddress::<usize>::default();
        let mut made = 0;
        let mut get = |address: &str| {
            pools.get_or_make(address, || {
                made += 1;
                made
            })
        };
        assert_eq!(get("a"), 1);
        assert_eq!(get("a"), 1, "the same address gets the same pool");
        // "a" and 15 more fill the cache; the 17th address empties it first.
        for i in 0..CAPACITY {
            assert_eq!(get(&format!("other{i}")), i + 2);
        }
        // So "a" is gone, and gets a new pool.
        assert_eq!(get("a"), CAPACITY + 2);
    }
}
