//! One figure of a report ([`Metric`]): a function on a host, summarized over its
//! samples, or skipped with why, with the limit it hit and what it counted.

use crate::model::Measurement;
use crate::stats::Summary;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
}

/// One figure: a function on a host, summarized over its samples (or skipped).
#[derive(Debug, Clone, Serialize)]
pub struct Metric {
    pub measurement: Measurement,
    pub function: String,
    pub host: String,
    pub metric: &'static str,
    pub unit: &'static str,
    pub better: Better,
    pub k: Option<usize>,
    pub detail: Option<String>,
    pub summary: Option<Summary>,
    pub skipped: Option<String>,
    /// The host's limit this figure ran into, the host still serving afterwards
    /// (a finding about the host; a host that broke is `skipped` "failed: ...").
    pub limit: Option<String>,
    /// What the clients got, by status code ("200", "503") and by transport
    /// error (oha's message): load `errors`, and memory's held requests.
    pub clients_saw: Option<BTreeMap<String, u64>>,
    /// The processes this figure counts (a host's whole tree), each with its part.
    pub processes: Option<Vec<Counted>>,
    /// The raw samples, kept for the charts only.
    #[serde(skip)]
    pub samples: Vec<f64>,
}

impl Metric {
    pub fn new(
        measurement: Measurement,
        function: &str,
        host: &str,
        metric: &'static str,
        unit: &'static str,
        better: Better,
    ) -> Metric {
        Metric {
            measurement,
            function: function.to_string(),
            host: host.to_string(),
            metric,
            unit,
            better,
            k: None,
            detail: None,
            summary: None,
            skipped: None,
            limit: None,
            clients_saw: None,
            processes: None,
            samples: Vec::new(),
        }
    }

    pub fn limit(mut self, what: impl Into<String>) -> Metric {
        self.limit = Some(what.into());
        self
    }

    pub fn clients_saw(mut self, outcomes: BTreeMap<String, u64>) -> Metric {
        self.clients_saw = Some(outcomes);
        self
    }

    pub fn processes(mut self, processes: Vec<Counted>) -> Metric {
        self.processes = Some(processes);
        self
    }

    pub fn samples(mut self, samples: Vec<f64>) -> Metric {
        self.summary = Summary::of(&samples);
        if self.summary.is_none() {
            self.skipped = Some("no valid samples".into());
        }
        self.samples = samples;
        self
    }

    pub fn value(self, value: f64) -> Metric {
        self.samples(vec![value])
    }

    pub fn skipped(mut self, why: impl Into<String>) -> Metric {
        self.skipped = Some(why.into());
        self
    }

    pub fn k(mut self, k: usize) -> Metric {
        self.k = Some(k);
        self
    }

    pub fn detail(mut self, detail: impl Into<String>) -> Metric {
        self.detail = Some(detail.into());
        self
    }

    pub fn p50(&self) -> Option<f64> {
        self.summary.as_ref().map(|s| s.p50)
    }

    /// Same measurement, function and K (any metric): figures of one scenario.
    pub(super) fn same_scenario(&self, other: &Metric) -> bool {
        (self.measurement, &self.function, self.k) == (other.measurement, &other.function, other.k)
    }

    /// Same measurement, function, metric and K: the rows a table lines up.
    pub fn same_row(&self, other: &Metric) -> bool {
        (self.measurement, &self.function, self.metric, self.k)
            == (other.measurement, &other.function, other.metric, other.k)
    }
}

/// One process counted in a figure of a host's process tree.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Counted {
    pub pid: u32,
    /// Its command line (shortened).
    pub command: String,
    /// Its part of the figure (0 to 1; the parts sum to 1, but for a growth
    /// where one process shrank).
    pub share: f64,
}
