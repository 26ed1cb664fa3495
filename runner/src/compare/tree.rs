//! A host's figures are those of its whole process tree (`procfs::tree`):
//! `spin up` serves from a child, so reading its own process alone describes
//! the wrong one. Memory is summed over the tree (PSS fairly; RSS as an upper
//! bound, shared pages counting once per process), CPU too, with the CPU of
//! children reaped meanwhile; each figure lists the processes it counted.

use crate::procfs::{Memory, Reading};
use crate::report::Counted;

/// Which memory figure.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Pss,
    Rss,
}

impl Kind {
    fn of(self, m: &Memory) -> f64 {
        match self {
            Kind::Pss => m.pss_bytes as f64,
            Kind::Rss => m.rss_bytes as f64,
        }
    }
}

/// Memory summed over a tree's reading, with each process's part.
pub fn memory(reading: &[Reading<Memory>], kind: Kind) -> (f64, Vec<Counted>) {
    parts(reading.iter().map(|r| (r, kind.of(&r.value))))
}

/// How much a tree's memory grew from `before` to `during` (0 if it shrank),
/// with each process's part of the growth (a process new in `during` grew
/// from nothing).
pub fn memory_growth(
    before: &[Reading<Memory>],
    during: &[Reading<Memory>],
    kind: Kind,
) -> (f64, Vec<Counted>) {
    let (growth, counted) = parts(during.iter().map(|r| {
        let was = before
            .iter()
            .find(|b| b.pid == r.pid)
            .map_or(0.0, |b| kind.of(&b.value));
        (r, kind.of(&r.value) - was)
    }));
    // Processes gone since `before` gave their memory back.
    let gone: f64 = before
        .iter()
        .filter(|b| !during.iter().any(|r| r.pid == b.pid))
        .map(|b| kind.of(&b.value))
        .sum();
    ((growth - gone).max(0.0), counted)
}

/// CPU seconds a tree used from `before` to `after`, with each live
/// process's part. A process that exited meanwhile is counted in its parent's
/// reaped-children time (and its part with the parent's); only one whose
/// parent left the tree too is lost.
pub fn cpu_between(before: &[Reading<f64>], after: &[Reading<f64>]) -> (f64, Vec<Counted>) {
    let total = |readings: &[Reading<f64>]| readings.iter().map(|r| r.value).sum::<f64>();
    let used = (total(after) - total(before)).max(0.0);
    let (_, counted) = parts(after.iter().map(|r| {
        let was = before
            .iter()
            .find(|b| b.pid == r.pid)
            .map_or(0.0, |b| b.value);
        (r, r.value - was)
    }));
    (used, counted)
}

/// The sum of `values`, and each one's share of it.
fn parts<'a, T: 'a>(values: impl Iterator<Item = (&'a Reading<T>, f64)>) -> (f64, Vec<Counted>) {
    let values: Vec<(&Reading<T>, f64)> = values.collect();
    let total: f64 = values.iter().map(|(_, v)| v).sum();
    let counted = values
        .iter()
        .map(|(r, v)| Counted {
            pid: r.pid,
            command: r.command.clone(),
            share: if total > 0.0 { v / total } else { 0.0 },
        })
        .collect();
    (total, counted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading<T>(pid: u32, value: T) -> Reading<T> {
        Reading {
            pid,
            command: format!("p{pid}"),
            value,
        }
    }

    fn mem(pss_kib: u64) -> Memory {
        Memory {
            rss_bytes: 2 * pss_kib * 1024,
            pss_bytes: pss_kib * 1024,
        }
    }

    #[test]
    fn memory_is_summed_over_the_tree() {
        let (pss, counted) = memory(&[reading(1, mem(30)), reading(2, mem(90))], Kind::Pss);
        assert_eq!(pss, 120.0 * 1024.0);
        assert_eq!(
            counted.iter().map(|c| (c.pid, c.share)).collect::<Vec<_>>(),
            [(1, 0.25), (2, 0.75)]
        );
        assert_eq!(memory(&[reading(1, mem(30))], Kind::Rss).0, 60.0 * 1024.0);
    }

    /// The wrapper stays put, the child grows: the growth is the child's.
    #[test]
    fn growth_is_the_growing_process() {
        let before = [reading(1, mem(30)), reading(2, mem(60))];
        let during = [
            reading(1, mem(30)),
            reading(2, mem(160)),
            reading(3, mem(20)),
        ];
        let (growth, counted) = memory_growth(&before, &during, Kind::Pss);
        assert_eq!(growth, 120.0 * 1024.0);
        let shares: Vec<_> = counted.iter().map(|c| (c.pid, c.share)).collect();
        assert_eq!(shares, [(1, 0.0), (2, 100.0 / 120.0), (3, 20.0 / 120.0)]);
        // A process that exited gave its memory back.
        let (growth, _) = memory_growth(&before, &during[..1], Kind::Pss);
        assert_eq!(growth, 0.0);
    }

    /// A child that exited during the window is in its parent's reaped time.
    #[test]
    fn cpu_counts_reaped_children_in_their_parent() {
        let before = [reading(1, 0.1), reading(2, 5.0), reading(3, 1.0)];
        // 3 ran 0.5 s more, exited, and was reaped by 2 (its 1.5 s now in 2's);
        // 2 itself ran 2 s; 4 is new.
        let after = [
            reading(1, 0.1),
            reading(2, 5.0 + 2.0 + 1.5),
            reading(4, 0.5),
        ];
        let (used, counted) = cpu_between(&before, &after);
        assert!((used - 3.0).abs() < 1e-9, "{used}");
        let shares: Vec<_> = counted.iter().map(|c| (c.pid, c.share)).collect();
        assert_eq!(shares, [(1, 0.0), (2, 0.875), (4, 0.125)]);
        assert_eq!(cpu_between(&after, &before).0, 0.0);
    }
}
