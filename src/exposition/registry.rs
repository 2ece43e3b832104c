//! The registered collectors of every family but the per-scenario histograms in [`super::families`], made
//! from the list and looked up by family: registration and the removal of a target's
//! or scenario's series are loops over the list, never a hand-kept enumeration.

use prometheus::core::Collector;
use prometheus::{
    CounterVec, Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec,
    IntGauge, IntGaugeVec, Opts, Registry,
};

use super::buckets::Buckets;
use super::families::{FAMILIES, Family, Kind, Scope, Value};

/// The collector of one family, of the type its kind, value type and labels ask for.
#[derive(Clone)]
pub enum Handle {
    IntCounterVec(IntCounterVec),
    CounterVec(CounterVec),
    IntGaugeVec(IntGaugeVec),
    GaugeVec(GaugeVec),
    IntGauge(IntGauge),
    Gauge(Gauge),
    IntCounter(IntCounter),
    Histogram(Histogram),
    /// A labelled histogram with one bucket layout for all its series (a scenario
    /// kind's; the probes' own have a layout per series, `LatencyHistograms`).
    HistogramVec(HistogramVec),
}

impl Handle {
    fn new(f: &Family) -> prometheus::Result<Self> {
        let opts = Opts::new(f.name, f.help);
        let labels = f.labels();
        Ok(match (f.kind, f.value, labels.is_empty()) {
            (Kind::Counter, Value::Int, false) => {
                Handle::IntCounterVec(IntCounterVec::new(opts, &labels)?)
            }
            (Kind::Counter, Value::Float, false) => {
                Handle::CounterVec(CounterVec::new(opts, &labels)?)
            }
            (Kind::Gauge, Value::Int, false) => {
                Handle::IntGaugeVec(IntGaugeVec::new(opts, &labels)?)
            }
            (Kind::Gauge, Value::Float, false) => Handle::GaugeVec(GaugeVec::new(opts, &labels)?),
            (Kind::Gauge, Value::Int, true) => Handle::IntGauge(IntGauge::with_opts(opts)?),
            (Kind::Gauge, Value::Float, true) => Handle::Gauge(Gauge::with_opts(opts)?),
            (Kind::Counter, Value::Int, true) => Handle::IntCounter(IntCounter::with_opts(opts)?),
            (Kind::Histogram, _, unlabelled) => {
                let defaults = Buckets::vllm();
                let bounds = f.buckets.map_or(Vec::new(), |l| l.of(&defaults).to_vec());
                let opts = HistogramOpts::new(f.name, f.help).buckets(bounds);
                if unlabelled {
                    Handle::Histogram(Histogram::with_opts(opts)?)
                } else {
                    Handle::HistogramVec(HistogramVec::new(opts, &labels)?)
                }
            }
            _ => {
                return Err(prometheus::Error::Msg(format!(
                    "{}: no collector for this kind of family",
                    f.name
                )));
            }
        })
    }

    fn boxed(&self) -> Box<dyn Collector> {
        match self {
            Handle::IntCounterVec(v) => Box::new(v.clone()),
            Handle::CounterVec(v) => Box::new(v.clone()),
            Handle::IntGaugeVec(v) => Box::new(v.clone()),
            Handle::GaugeVec(v) => Box::new(v.clone()),
            Handle::IntGauge(v) => Box::new(v.clone()),
            Handle::Gauge(v) => Box::new(v.clone()),
            Handle::IntCounter(v) => Box::new(v.clone()),
            Handle::Histogram(v) => Box::new(v.clone()),
            Handle::HistogramVec(v) => Box::new(v.clone()),
        }
    }

    /// Removes one series. Removing a series that does not exist does nothing.
    fn remove(&self, labels: &[&str]) {
        // `remove_label_values` fails only when the series does not exist.
        let _ = match self {
            Handle::IntCounterVec(v) => v.remove_label_values(labels),
            Handle::CounterVec(v) => v.remove_label_values(labels),
            Handle::IntGaugeVec(v) => v.remove_label_values(labels),
            Handle::GaugeVec(v) => v.remove_label_values(labels),
            Handle::HistogramVec(v) => v.remove_label_values(labels),
            Handle::IntGauge(_)
            | Handle::Gauge(_)
            | Handle::IntCounter(_)
            | Handle::Histogram(_) => Ok(()),
        };
    }
}

/// Every non-histogram family of [`FAMILIES`], created and registered (clones share
/// the collectors).
#[derive(Clone)]
pub struct Registered {
    handles: Vec<(&'static Family, Handle)>,
}

impl Registered {
    /// Registers `families` (a scenario kind's own) in `registry`.
    pub fn of(registry: &Registry, families: &'static [Family]) -> prometheus::Result<Self> {
        let mut handles = Vec::with_capacity(families.len());
        for f in families {
            let h = Handle::new(f)?;
            registry.register(h.boxed())?;
            handles.push((f, h));
        }
        Ok(Registered { handles })
    }

    pub fn new(registry: &Registry) -> prometheus::Result<Self> {
        let mut handles = Vec::with_capacity(FAMILIES.len());
        // Per-series histograms live in `LatencyHistograms` (a layout per series);
        // process families and the replica info have collectors of their own.
        let elsewhere = |f: &Family| {
            let per_series = f.kind == Kind::Histogram;
            match f.scope {
                Scope::Scenario | Scope::Replica => per_series,
                Scope::Process | Scope::ReplicaInfo => true,
                _ => false,
            }
        };
        let own = |f: &&Family| !elsewhere(f);
        for f in FAMILIES.iter().filter(own) {
            let h = Handle::new(f)?;
            registry.register(h.boxed())?;
            handles.push((f, h));
        }
        Ok(Registered { handles })
    }

    fn get(&self, f: &Family) -> prometheus::Result<&Handle> {
        self.handles
            .iter()
            .find(|(g, _)| g.name == f.name)
            .map(|(_, h)| h)
            .ok_or_else(|| prometheus::Error::Msg(format!("{} is not registered here", f.name)))
    }

    fn mismatch(f: &Family) -> prometheus::Error {
        prometheus::Error::Msg(format!("{}: another collector type was asked for", f.name))
    }

    pub fn int_counter_vec(&self, f: &Family) -> prometheus::Result<IntCounterVec> {
        match self.get(f)? {
            Handle::IntCounterVec(v) => Ok(v.clone()),
            _ => Err(Self::mismatch(f)),
        }
    }

    pub fn counter_vec(&self, f: &Family) -> prometheus::Result<CounterVec> {
        match self.get(f)? {
            Handle::CounterVec(v) => Ok(v.clone()),
            _ => Err(Self::mismatch(f)),
        }
    }

    pub fn int_gauge_vec(&self, f: &Family) -> prometheus::Result<IntGaugeVec> {
        match self.get(f)? {
            Handle::IntGaugeVec(v) => Ok(v.clone()),
            _ => Err(Self::mismatch(f)),
        }
    }

    pub fn gauge_vec(&self, f: &Family) -> prometheus::Result<GaugeVec> {
        match self.get(f)? {
            Handle::GaugeVec(v) => Ok(v.clone()),
            _ => Err(Self::mismatch(f)),
        }
    }

    pub fn int_gauge(&self, f: &Family) -> prometheus::Result<IntGauge> {
        match self.get(f)? {
            Handle::IntGauge(v) => Ok(v.clone()),
            _ => Err(Self::mismatch(f)),
        }
    }

    pub fn gauge(&self, f: &Family) -> prometheus::Result<Gauge> {
        match self.get(f)? {
            Handle::Gauge(v) => Ok(v.clone()),
            _ => Err(Self::mismatch(f)),
        }
    }

    pub fn int_counter(&self, f: &Family) -> prometheus::Result<IntCounter> {
        match self.get(f)? {
            Handle::IntCounter(v) => Ok(v.clone()),
            _ => Err(Self::mismatch(f)),
        }
    }

    pub fn histogram(&self, f: &Family) -> prometheus::Result<Histogram> {
        match self.get(f)? {
            Handle::Histogram(v) => Ok(v.clone()),
            _ => Err(Self::mismatch(f)),
        }
    }

    pub fn histogram_vec(&self, f: &Family) -> prometheus::Result<HistogramVec> {
        match self.get(f)? {
            Handle::HistogramVec(v) => Ok(v.clone()),
            _ => Err(Self::mismatch(f)),
        }
    }

    /// Removes every series with the scope labels `base` of every family of `scope`.
    pub fn remove(&self, scope: Scope, base: &[&str]) {
        for (f, h) in self.handles.iter().filter(|(f, _)| f.scope == scope) {
            for labels in f.series_of(base) {
                h.remove(&labels);
            }
        }
    }
}

/// The children of a family with an extra label (`reason`), one per value, keyed by it.
pub fn children(
    vec: &IntCounterVec,
    family: &Family,
    l: &[&str],
) -> Vec<(&'static str, IntCounter)> {
    let values = family.extra.map(|e| (e.values)()).unwrap_or_default();
    values
        .into_iter()
        .map(|v| {
            let labels: Vec<&str> = l.iter().copied().chain([v]).collect();
            (v, vec.with_label_values(&labels))
        })
        .collect()
}

pub fn set_or_remove(g: &GaugeVec, labels: &[&str], v: Option<f64>) {
    match v {
        Some(v) if v.is_finite() => g.with_label_values(labels).set(v),
        _ => {
            let _ = g.remove_label_values(labels);
        }
    }
}
