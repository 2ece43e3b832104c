//! The energy catalogue's gauges (`crate::energy`) of one scope: one family per figure,
//! set together from one window so no figure is older than the others.

use prometheus::GaugeVec;

use super::families::{Scope, energy_family_of};
use super::registry::{Registered, set_or_remove};
use crate::energy::{Figure, Figures};

/// The gauge of every figure for one scope (engine, replica or fleet).
pub struct EnergyVecs(Vec<(Figure, GaugeVec)>);

impl EnergyVecs {
    pub fn new(r: &Registered, scope: Scope) -> prometheus::Result<Self> {
        Figure::ALL
            .into_iter()
            .map(|fig| {
                let fam = energy_family_of(scope, fig).ok_or_else(|| {
                    prometheus::Error::Msg(format!("no {scope:?} family for {}", fig.suffix()))
                })?;
                Ok((fig, r.gauge_vec(fam)?))
            })
            .collect::<prometheus::Result<_>>()
            .map(EnergyVecs)
    }

    /// Publishes `figures` under `labels`; `None` (or a figure without a value) removes
    /// the series, so a stale figure never looks live.
    pub fn set(&self, labels: &[&str], figures: Option<&Figures>) {
        for (fig, g) in &self.0 {
            set_or_remove(g, labels, figures.and_then(|f| f.get(*fig)));
        }
    }
}
