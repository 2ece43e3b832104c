//! The latency histogram families as one collector. Each target × scenario keeps its
//! own bucket layout, so a new SLO threshold on one scenario resets nothing else: the
//! collector emits one MetricFamily per name made of per-series histograms with
//! different `le` sets, which the text format and Prometheus accept (every series is a
//! histogram of its own; `promtool check metrics` agrees, see tests/it/daemon_mock.rs).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Histogram, HistogramOpts};

use super::buckets::Buckets;
use super::families::{self, Family, PROBE_LABELS};

/// The latency histograms of one target × scenario, all built with this series' own
/// bucket layout (vLLM's ∪ configured extras ∪ the scenario's own SLO thresholds), in
/// the order of [`families::histograms`].
#[derive(Clone)]
pub struct SeriesHistograms {
    buckets: Buckets,
    h: Vec<Histogram>,
}

impl SeriesHistograms {
    fn new(labels: [&str; 3], buckets: Buckets) -> prometheus::Result<Self> {
        let mut h = Vec::new();
        for f in families::histograms() {
            let bounds = f.buckets.map_or(&[][..], |l| l.of(&buckets));
            let mut opts = HistogramOpts::new(f.name, f.help).buckets(bounds.to_vec());
            for (k, v) in PROBE_LABELS.iter().zip(labels) {
                opts = opts.const_label(*k, v);
            }
            h.push(Histogram::with_opts(opts)?);
        }
        Ok(SeriesHistograms { buckets, h })
    }

    /// The histogram of family `f`.
    pub fn get(&self, f: &Family) -> prometheus::Result<Histogram> {
        families::histograms()
            .position(|g| g.name == f.name)
            .and_then(|i| self.h.get(i).cloned())
            .ok_or_else(|| prometheus::Error::Msg(format!("{} is no histogram family", f.name)))
    }
}

type SeriesMap = BTreeMap<[String; 3], SeriesHistograms>;

/// Every series' latency histograms, collected family by family.
pub struct LatencyHistograms {
    descs: Vec<Desc>,
    series: Mutex<SeriesMap>,
}

impl LatencyHistograms {
    pub fn new() -> prometheus::Result<Self> {
        let descs = families::histograms()
            .map(|f| {
                Desc::new(
                    f.name.to_string(),
                    f.help.to_string(),
                    f.labels().iter().map(|l| (*l).to_string()).collect(),
                    HashMap::new(),
                )
            })
            .collect::<prometheus::Result<Vec<_>>>()?;
        Ok(LatencyHistograms {
            descs,
            series: Mutex::new(BTreeMap::new()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, SeriesMap> {
        // Every change under the lock is one map operation: a poisoned map is consistent.
        self.series.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The histograms of one series with `buckets`: the existing ones when their layout
    /// is the same (they continue), fresh ones otherwise (they restart from zero).
    pub fn resolve(
        &self,
        labels: [&str; 3],
        buckets: &Buckets,
    ) -> prometheus::Result<SeriesHistograms> {
        let key = labels.map(str::to_string);
        let mut map = self.lock();
        if let Some(existing) = map.get(&key)
            && existing.buckets == *buckets
        {
            return Ok(existing.clone());
        }
        let fresh = SeriesHistograms::new(labels, buckets.clone())?;
        map.insert(key, fresh.clone());
        Ok(fresh)
    }

    pub fn remove(&self, labels: [&str; 3]) {
        self.lock().remove(&labels.map(str::to_string));
    }
}

impl Collector for LatencyHistograms {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let map = self.lock();
        let mut out = Vec::with_capacity(self.descs.len());
        for i in 0..self.descs.len() {
            let mut family: Option<MetricFamily> = None;
            for s in map.values() {
                for mut mf in s.h[i].collect() {
                    match &mut family {
                        None => family = Some(mf),
                        Some(f) => f.mut_metric().extend(mf.take_metric()),
                    }
                }
            }
            out.extend(family);
        }
        out
    }
}

/// Registers an `Arc`-shared collector (the registry wants to own a box).
pub struct SharedCollector<C>(pub Arc<C>);

impl<C: Collector> Collector for SharedCollector<C> {
    fn desc(&self) -> Vec<&Desc> {
        self.0.desc()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.0.collect()
    }
}
