//! The latency histogram families of one scope (the front door's or the discovered
//! replicas') as one collector. Each series keeps its own bucket layout, so a new SLO threshold on one scenario resets nothing else: the
//! collector emits one MetricFamily per name made of per-series histograms with
//! different `le` sets, which the text format and Prometheus accept (every series is a
//! histogram of its own; `promtool check metrics` agrees, see tests/it/daemon_mock.rs).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Histogram, HistogramOpts};

use super::buckets::Buckets;
use super::exemplars::BucketExemplars;
use super::families::{self, Family, Scope};

/// One series' histogram of one family and the exemplars of its buckets.
#[derive(Clone)]
pub struct LatencyHistogram {
    pub histogram: Histogram,
    pub exemplars: Arc<BucketExemplars>,
}

/// The latency histograms of one series, all built with its own bucket layout (vLLM's
/// ∪ configured extras ∪ the scenario's own SLO thresholds), in the order of
/// [`families::histograms`] of the scope; a family the series does not export is
/// `None` (a replica's slim set).
#[derive(Clone)]
pub struct SeriesHistograms {
    buckets: Buckets,
    /// The families the series exports, by name.
    kept: Vec<&'static str>,
    h: Vec<Option<LatencyHistogram>>,
}

impl SeriesHistograms {
    fn new(
        scope: Scope,
        labels: &[&str],
        buckets: Buckets,
        kept: Vec<&'static str>,
    ) -> prometheus::Result<Self> {
        let mut h = Vec::new();
        for f in families::histograms(scope) {
            if !kept.contains(&f.name) {
                h.push(None);
                continue;
            }
            let bounds = f.buckets.map_or(&[][..], |l| l.of(&buckets));
            let mut opts = HistogramOpts::new(f.name, f.help).buckets(bounds.to_vec());
            for (k, v) in f.labels().iter().zip(labels) {
                opts = opts.const_label(*k, *v);
            }
            h.push(Some(LatencyHistogram {
                histogram: Histogram::with_opts(opts)?,
                exemplars: Arc::new(BucketExemplars::new(bounds)),
            }));
        }
        Ok(SeriesHistograms { buckets, kept, h })
    }

    /// The histogram of family `f`.
    pub fn get(&self, f: &Family) -> prometheus::Result<LatencyHistogram> {
        families::histograms(f.scope)
            .position(|g| g.name == f.name)
            .and_then(|i| self.h.get(i).cloned().flatten())
            .ok_or_else(|| prometheus::Error::Msg(format!("{} is not exported here", f.name)))
    }
}

type SeriesMap = BTreeMap<Vec<String>, SeriesHistograms>;

/// Every series' latency histograms of one scope, collected family by family.
pub struct LatencyHistograms {
    scope: Scope,
    descs: Vec<Desc>,
    series: Mutex<SeriesMap>,
}

impl LatencyHistograms {
    pub fn new(scope: Scope) -> prometheus::Result<Self> {
        let descs = families::histograms(scope)
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
            scope,
            descs,
            series: Mutex::new(BTreeMap::new()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, SeriesMap> {
        // Every change under the lock is one map operation: a poisoned map is consistent.
        self.series.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The histograms of one series with `buckets`, of the families named in `kept`:
    /// the existing ones when their layout and families are the same (they continue),
    /// fresh ones otherwise (they restart from zero).
    pub fn resolve(
        &self,
        labels: &[&str],
        buckets: &Buckets,
        kept: Vec<&'static str>,
    ) -> prometheus::Result<SeriesHistograms> {
        let key: Vec<String> = labels.iter().map(|l| (*l).to_string()).collect();
        let mut map = self.lock();
        if let Some(existing) = map.get(&key)
            && existing.buckets == *buckets
            && existing.kept == kept
        {
            return Ok(existing.clone());
        }
        let fresh = SeriesHistograms::new(self.scope, labels, buckets.clone(), kept)?;
        map.insert(key, fresh.clone());
        Ok(fresh)
    }

    pub fn remove(&self, labels: &[&str]) {
        let key: Vec<String> = labels.iter().map(|l| (*l).to_string()).collect();
        self.lock().remove(&key);
    }

    /// The bucket exemplars of every series, by family name and label values (in the
    /// order of the family's labels).
    pub fn exemplars(&self) -> Vec<(&'static str, Vec<String>, Arc<BucketExemplars>)> {
        let map = self.lock();
        let mut out = Vec::new();
        for (labels, s) in map.iter() {
            for (f, h) in families::histograms(self.scope).zip(&s.h) {
                if let Some(h) = h {
                    out.push((f.name, labels.clone(), h.exemplars.clone()));
                }
            }
        }
        out
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
                let Some(h) = s.h.get(i).and_then(Option::as_ref) else {
                    continue;
                };
                for mut mf in h.histogram.collect() {
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
