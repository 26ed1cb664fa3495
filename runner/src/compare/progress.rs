//! One live line for the whole run: which measurement, function and host run
//! now, how many of the run's steps are done, and the time left, estimated
//! from the steps' planned durations (scaled by how long the finished ones
//! really took on this machine). A terminal gets indicatif's line, redrawn in
//! place; anything else (a pipe, a CI log) gets a plain line per step.
//!
//! Each measurement plans its steps (`steps` beside its `measure`) and begins
//! them as it runs; a step begun that was not planned still shows, and the
//! planned steps a measurement did not begin count as done when it ends, so a
//! plan that drifts from the loop can only make the estimate rougher.

use crate::model::Measurement;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How the pace (actual over planned time) may correct the plan: a busy
/// machine runs slower than planned, an idle one faster, never by more.
const PACE: (f64, f64) = (0.25, 4.0);
/// Planned time that must be done before the pace is trusted.
const PACE_AFTER: Duration = Duration::from_secs(2);
/// How often the live line is redrawn (elapsed and time left move on their own).
const REDRAW: Duration = Duration::from_millis(250);

/// One step of the run: a measurement of one function on one host.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub measurement: Measurement,
    pub function: String,
    pub host: String,
    /// What tells this step apart from its neighbours (`10 users`, `K=100`), or empty.
    pub detail: String,
    pub planned: Duration,
}

impl Step {
    pub fn new(measurement: Measurement, function: &str, host: &str, planned: Duration) -> Step {
        Step {
            measurement,
            function: function.to_string(),
            host: host.to_string(),
            detail: String::new(),
            planned,
        }
    }

    #[must_use]
    pub fn detail(mut self, detail: impl Into<String>) -> Step {
        self.detail = detail.into();
        self
    }

    /// `load: hello on wasm (10 users)`.
    fn label(&self) -> String {
        let detail = if self.detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.detail)
        };
        format!(
            "{}: {} on {}{detail}",
            self.measurement.name().replace('_', " "),
            self.function,
            self.host
        )
    }

    fn same(&self, other: &Step) -> bool {
        self.measurement == other.measurement
            && self.function == other.function
            && self.host == other.host
            && self.detail == other.detail
    }
}

/// What the run has done so far, against its plan.
#[derive(Debug)]
struct Timing {
    steps: Vec<Step>,
    /// Per planned step: whether it has begun (or was given up).
    begun: Vec<bool>,
    /// The step running now, since when.
    current: Option<(Step, Instant)>,
    done: usize,
    /// Of the finished steps: their planned and their actual time.
    done_planned: Duration,
    done_actual: Duration,
}

impl Timing {
    fn new(steps: Vec<Step>) -> Timing {
        Timing {
            begun: vec![false; steps.len()],
            steps,
            current: None,
            done: 0,
            done_planned: Duration::ZERO,
            done_actual: Duration::ZERO,
        }
    }

    /// Steps in the run: the planned ones, and any begun beyond them.
    fn total(&self) -> usize {
        self.steps
            .len()
            .max(self.done + usize::from(self.current.is_some()))
    }

    fn finish_current(&mut self, now: Instant) {
        if let Some((step, since)) = self.current.take() {
            self.done += 1;
            self.done_planned += step.planned;
            self.done_actual += now.saturating_duration_since(since);
        }
    }

    /// Begins `step` (the first planned one like it), ending the one before.
    fn begin(&mut self, step: &Step, now: Instant) -> Step {
        self.finish_current(now);
        let planned = (0..self.steps.len()).find(|&i| !self.begun[i] && self.steps[i].same(step));
        let step = match planned {
            Some(i) => {
                self.begun[i] = true;
                self.steps[i].clone()
            }
            None => step.clone(),
        };
        self.current = Some((step.clone(), now));
        step
    }

    /// Ends `measurement`: its planned steps that did not run count as done.
    fn end(&mut self, measurement: Measurement, now: Instant) {
        self.finish_current(now);
        for i in 0..self.steps.len() {
            if self.steps[i].measurement == measurement && !self.begun[i] {
                self.begun[i] = true;
                self.done += 1;
            }
        }
    }

    /// Actual over planned time so far, within [`PACE`]; 1 until enough is done.
    fn pace(&self) -> f64 {
        if self.done_planned < PACE_AFTER {
            return 1.0;
        }
        (self.done_actual.as_secs_f64() / self.done_planned.as_secs_f64()).clamp(PACE.0, PACE.1)
    }

    /// The time left: the steps not begun, and what the current one has left
    /// of its plan, at the pace so far.
    fn left(&self, now: Instant) -> Duration {
        let pace = self.pace();
        let not_begun: Duration = self
            .steps
            .iter()
            .zip(&self.begun)
            .filter(|(_, begun)| !**begun)
            .map(|(step, _)| step.planned)
            .sum();
        let current = self
            .current
            .as_ref()
            .map_or(Duration::ZERO, |(step, since)| {
                step.planned
                    .mul_f64(pace)
                    .saturating_sub(now.saturating_duration_since(*since))
            });
        not_begun.mul_f64(pace) + current
    }
}

/// `1h02m`, `3m05s`, `42s`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s >= 3600 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

/// The run's progress line. Cheap to clone: clones show the same line.
#[derive(Clone)]
pub struct Progress {
    /// The live line on a terminal; `None`: plain lines on stdout.
    bar: Option<ProgressBar>,
    timing: Arc<Mutex<Timing>>,
    started: Instant,
}

impl Progress {
    /// The line for a run of `steps`, live when stdout is a terminal.
    pub fn new(steps: Vec<Step>) -> Progress {
        Progress::with_terminal(steps, std::io::stdout().is_terminal())
    }

    fn with_terminal(steps: Vec<Step>, terminal: bool) -> Progress {
        let timing = Arc::new(Mutex::new(Timing::new(steps)));
        let started = Instant::now();
        let bar = terminal.then(|| live_line(&timing, started));
        Progress {
            bar,
            timing,
            started,
        }
    }

    fn timing(&self) -> MutexGuard<'_, Timing> {
        self.timing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The run is at `step` now (the one before it is done).
    pub fn begin(&self, step: &Step) {
        let now = Instant::now();
        let (step, done, total, left) = {
            let mut timing = self.timing();
            let step = timing.begin(step, now);
            (step, timing.done, timing.total(), timing.left(now))
        };
        match &self.bar {
            Some(bar) => {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(step.label());
            }
            None => write_line(&format!(
                "[{done:>3}/{total}] {} elapsed, ~{} left: {}",
                clock(now - self.started),
                clock(left),
                step.label()
            )),
        }
    }

    /// `measurement` has ended; what it planned and did not run is done too.
    pub fn end(&self, measurement: Measurement) {
        let (done, total) = {
            let mut timing = self.timing();
            timing.end(measurement, Instant::now());
            (timing.done, timing.total())
        };
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    }

    /// A whole line above the live one (or among the plain ones).
    pub fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => write_line(text),
        }
    }

    /// Clears the live line: the run is over.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// indicatif's line: steps done of all, elapsed, time left, and what runs now.
fn live_line(timing: &Arc<Mutex<Timing>>, started: Instant) -> ProgressBar {
    let total = timing
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .total();
    let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stdout());
    let timing = Arc::clone(timing);
    let style = ProgressStyle::with_template(
        "{elapsed:>5} [{bar:20}] {pos}/{len} steps, ~{left} left: {wide_msg}",
    )
    .expect("a valid template")
    .progress_chars("=> ")
    .with_key(
        "left",
        move |_: &ProgressState, out: &mut dyn std::fmt::Write| {
            let left = timing
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .left(Instant::now());
            let _ = out.write_str(&clock(left));
        },
    )
    .with_key(
        "elapsed",
        move |_: &ProgressState, out: &mut dyn std::fmt::Write| {
            let _ = out.write_str(&clock(started.elapsed()));
        },
    );
    bar.set_style(style);
    bar.enable_steady_tick(REDRAW);
    bar
}

/// One line on stdout in one write, so that no other writer splits it.
fn write_line(text: &str) {
    // A closed stdout must not stop the run: the report is still written.
    let _ = spinbench_host::lines::stdout(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(function: &str, host: &str, secs: u64) -> Step {
        Step::new(Measurement::Load, function, host, Duration::from_secs(secs))
    }

    /// The time left is the plan's rest, at the pace the finished steps ran.
    #[test]
    fn time_left_follows_the_plan_at_the_pace_so_far() {
        let t0 = Instant::now();
        let mut timing = Timing::new(vec![
            step("hello", "native", 4),
            step("hello", "wasm", 4),
            step("echo", "wasm", 8),
        ]);
        assert_eq!(timing.left(t0), Duration::from_secs(16));
        timing.begin(&step("hello", "native", 0), t0);
        // One second into a 4 s step: 3 s of it left, and the 12 s not begun.
        assert_eq!(
            timing.left(t0 + Duration::from_secs(1)),
            Duration::from_secs(15)
        );
        // It took 8 s, twice its plan: what is left takes twice as long.
        let t1 = t0 + Duration::from_secs(8);
        timing.begin(&step("hello", "wasm", 0), t1);
        assert_eq!(timing.done, 1);
        assert_eq!(timing.left(t1), Duration::from_secs(24));
        // A step that overran its plan has nothing left of it, not less than nothing.
        assert_eq!(
            timing.left(t1 + Duration::from_secs(100)),
            Duration::from_secs(16)
        );
    }

    /// A step the plan did not have still counts; planned steps a measurement
    /// did not run count as done when it ends.
    #[test]
    fn steps_off_the_plan_still_add_up() {
        let t0 = Instant::now();
        let mut timing = Timing::new(vec![step("hello", "wasm", 1), step("echo", "wasm", 1)]);
        timing.begin(&step("sha1", "wasm", 0), t0);
        assert_eq!((timing.done, timing.total()), (0, 2));
        timing.begin(&step("hello", "wasm", 0), t0);
        timing.begin(&step("io", "wasm", 0), t0);
        assert_eq!((timing.done, timing.total()), (2, 3));
        timing.end(Measurement::Load, t0);
        // sha1, hello, io ran; echo did not but is over too.
        assert_eq!((timing.done, timing.total()), (4, 4));
        assert_eq!(timing.left(t0), Duration::ZERO);
    }

    /// The pace is bounded: one step that hung does not make the estimate absurd.
    #[test]
    fn the_pace_is_bounded() {
        let t0 = Instant::now();
        let mut timing = Timing::new(vec![step("hello", "wasm", 2), step("echo", "wasm", 10)]);
        timing.begin(&step("hello", "wasm", 0), t0);
        timing.begin(&step("echo", "wasm", 0), t0 + Duration::from_mins(10));
        assert_eq!(timing.pace(), PACE.1);
    }

    #[test]
    fn clocks_read_at_a_glance() {
        assert_eq!(clock(Duration::from_secs(42)), "42s");
        assert_eq!(clock(Duration::from_secs(185)), "3m05s");
        assert_eq!(clock(Duration::from_mins(62)), "1h02m");
    }

    #[test]
    fn a_step_says_what_runs_where() {
        let step = Step::new(
            Measurement::ProcessColdStart,
            "hello",
            "wasm",
            Duration::ZERO,
        )
        .detail("5 starts");
        assert_eq!(step.label(), "process cold start: hello on wasm (5 starts)");
    }
}
