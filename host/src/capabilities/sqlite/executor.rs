//! The threads SQLite work runs on: a pool of its own, sized to the machine
//! (`--sqlite-threads`, one per CPU by default), with a bounded queue.
//! SQLite calls block, and ran on tokio's blocking pool before: 512 threads
//! shared with every component's file reads and name lookups, so a flood of
//! runaway statements (each bounded only by its request's deadline) took
//! them all. Here they take at most these threads, the rest of the host's
//! work goes on beside them, and work past the queue is refused at once.
//!
//! A piece of work whose caller gave up while it was queued finds out when
//! it starts (`connection`'s flag) and returns at once.
//!
//! The threads start with the first piece of work: an app that never calls
//! SQLite (most of a node's pods) keeps no idle threads, their stacks and
//! allocator arenas.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

type Job = Box<dyn FnOnce() + Send>;

/// Jobs that may wait for a thread: a few per live instance at the
/// admission cap's default; past it, SQLite calls fail at once.
const QUEUE: usize = 4_096;

pub struct Executor {
    jobs: OnceLock<std::io::Result<SyncSender<Job>>>,
    threads: usize,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Executor({} threads)", self.threads)
    }
}

impl Executor {
    /// One thread per CPU this process may use.
    pub fn default_threads() -> usize {
        std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
    }

    /// An executor of `threads` threads (at least one), started by the first
    /// job; they end when the executor is dropped and the queue is empty.
    pub fn new(threads: usize) -> Arc<Self> {
        Arc::new(Self {
            jobs: OnceLock::new(),
            threads: threads.max(1),
        })
    }

    /// Whether its threads have started.
    pub fn started(&self) -> bool {
        self.jobs.get().is_some()
    }

    /// The queue, its threads started on first use.
    fn jobs(&self) -> Result<&SyncSender<Job>, String> {
        self.jobs
            .get_or_init(|| start(self.threads))
            .as_ref()
            .map_err(|error| format!("the host's SQLite threads could not start: {error}"))
    }

    /// Runs `job` on one of the threads; `Err` if the queue is full or the
    /// job panicked.
    pub async fn run<R: Send + 'static>(
        &self,
        job: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, String> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = answer.send(job());
        });
        self.jobs()?.try_send(job).map_err(|error| match error {
            TrySendError::Full(_) => format!(
                "the host's SQLite threads are busy: {QUEUE} calls are waiting already; retry later"
            ),
            TrySendError::Disconnected(_) => "the host's SQLite threads are gone".to_string(),
        })?;
        answered.await.map_err(|_| "SQLite work failed".to_string())
    }
}

/// Starts `threads` threads on one queue.
fn start(threads: usize) -> std::io::Result<SyncSender<Job>> {
    let (jobs, queue) = mpsc::sync_channel::<Job>(QUEUE);
    let queue = Arc::new(Mutex::new(queue));
    for index in 0..threads {
        let queue = queue.clone();
        std::thread::Builder::new()
            .name(format!("sqlite-{index}"))
            .spawn(move || work(&queue))?;
    }
    Ok(jobs)
}

/// One thread's loop: the next job, until the queue is closed. A job that
/// panics is dropped (its caller sees it failed); the thread goes on.
fn work(queue: &Mutex<Receiver<Job>>) {
    loop {
        let next = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(job) = next else {
            return;
        };
        let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn jobs_run_on_at_most_its_threads_and_a_panic_fails_only_its_job() {
        let executor = Executor::new(2);
        assert!(!executor.started(), "no thread before the first job");
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let jobs = (0..8).map(|_| {
            let (running, most) = (running.clone(), most.clone());
            executor.run(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
                running.fetch_sub(1, Ordering::SeqCst);
                std::thread::current().name().map(str::to_string)
            })
        });
        for name in futures::future::join_all(jobs).await {
            assert!(name.unwrap().unwrap().starts_with("sqlite-"));
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
        assert!(executor.run(|| panic!("on purpose")).await.is_err());
        assert_eq!(executor.run(|| 7).await, Ok(7));
    }
}
