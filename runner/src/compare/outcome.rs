//! Why a measurement has no figure for a host: the one error type the measurements
//! return, and the report's `skipped` text for it. A figure that ran into a host's
//! limit is not an error: it is a figure with its `limit` set.

use super::hosts::NeverServed;
use std::fmt;

#[derive(Debug)]
pub enum MeasureError {
    /// The measurement does not apply or could not be made here (a host not
    /// installed, no native command, a scenario for full runs only, a server that
    /// did not start): `skipped` is the reason as it is.
    Skipped(String),
    /// The host broke while it was measured: `skipped` is `failed: <error>`.
    Failed(anyhow::Error),
}

impl MeasureError {
    /// A `Skipped` for an error whose text (with its causes) is the reason.
    pub fn skipped(error: &anyhow::Error) -> MeasureError {
        MeasureError::Skipped(format!("{error:#}"))
    }

    /// What the report's `skipped` says.
    pub fn reason(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for MeasureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MeasureError::Skipped(why) => f.write_str(why),
            MeasureError::Failed(error) => write!(f, "failed: {error:#}"),
        }
    }
}

/// The reasons the hosts module gives (a missing program, a missing build).
impl From<String> for MeasureError {
    fn from(why: String) -> MeasureError {
        MeasureError::Skipped(why)
    }
}

/// An error while measuring: the host (or our side of it) failed, unless the
/// host never served at all (it refused the component at start).
impl From<anyhow::Error> for MeasureError {
    fn from(error: anyhow::Error) -> MeasureError {
        if error.downcast_ref::<NeverServed>().is_some() {
            return MeasureError::skipped(&error);
        }
        MeasureError::Failed(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_says_skipped_reasons_as_they_are_and_failures_as_failed() {
        let skipped = MeasureError::from("`spin` not on PATH".to_string());
        assert_eq!(skipped.reason(), "`spin` not on PATH");
        let cause = anyhow::anyhow!("connection refused").context("warm-up");
        assert_eq!(
            MeasureError::from(cause).reason(),
            "failed: warm-up: connection refused"
        );
        let cause = anyhow::anyhow!("exit status: 1").context("starting the server");
        assert_eq!(
            MeasureError::skipped(&cause).reason(),
            "starting the server: exit status: 1"
        );
    }

    /// A host that refused the component at start never served: skipped with
    /// what it said, not "failed".
    #[test]
    fn a_host_that_never_served_is_skipped_with_what_it_said() {
        let refused = anyhow::Error::new(NeverServed::for_test(
            "exit status: 1",
            "Error: component imports instance `fermyon:spin/variables@2.0.0`",
        ))
        .context("load-x did not become ready");
        assert_eq!(
            MeasureError::from(refused).reason(),
            "load-x did not become ready: exited (exit status: 1) before answering: \
             Error: component imports instance `fermyon:spin/variables@2.0.0`"
        );
    }
}
