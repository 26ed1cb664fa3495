//! A count of something one instance holds on the host (bytes, connections,
//! sockets) under the operator's ceiling, taken in shares that give their
//! amount back when dropped: what the instance holds is what its live shares
//! hold, however it ends (a call that fails, a request dropped mid-way, a
//! store dropped whole).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug)]
pub struct Quota {
    used: AtomicUsize,
    limit: usize,
}

impl Quota {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            used: AtomicUsize::new(0),
            limit,
        })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// What is held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Counts `amount` more if that stays within the limit.
    pub fn reserve(&self, amount: usize) -> bool {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(amount)
                    .filter(|&total| total <= self.limit)
            })
            .is_ok()
    }

    /// Gives back `amount` counted by [`Quota::reserve`] (never below zero).
    pub fn release(&self, amount: usize) {
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                Some(used.saturating_sub(amount))
            });
    }

    /// A share of `amount`, or `None` past the limit.
    pub fn take(self: &Arc<Self>, amount: usize) -> Option<Share> {
        self.reserve(amount).then(|| Share {
            quota: self.clone(),
            amount,
        })
    }
}

/// Part of a [`Quota`], given back when dropped.
#[derive(Debug)]
pub struct Share {
    quota: Arc<Quota>,
    amount: usize,
}

impl Share {
    /// Takes `more` into this share, or leaves it as it was past the limit.
    pub fn grow(&mut self, more: usize) -> bool {
        let grown = self.quota.reserve(more);
        if grown {
            self.amount += more;
        }
        grown
    }

    /// Gives `less` back early (at most what the share holds).
    pub fn shrink(&mut self, less: usize) {
        let less = less.min(self.amount);
        self.quota.release(less);
        self.amount -= less;
    }

    pub fn quota(&self) -> &Quota {
        &self.quota
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        self.quota.release(self.amount);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_count_until_dropped_and_never_past_the_limit() {
        let quota = Quota::new(10);
        let mut a = quota.take(4).unwrap();
        assert!(quota.take(7).is_none());
        assert!(a.grow(6));
        assert!(!a.grow(1));
        assert_eq!(quota.used(), 10);
        a.shrink(3);
        assert_eq!(quota.used(), 7);
        let b = quota.take(3).unwrap();
        drop(a);
        assert_eq!(quota.used(), 3);
        drop(b);
        assert_eq!(quota.used(), 0);
    }
}
