//! `--lora-split`: a [`Collector`] per model, fed each request of its model (the
//! adapter it named, else the run's model), from which the rate's per-model rows are
//! built as its own row is. Skipped arrivals named no model yet: only the rate's row
//! counts them.

use std::collections::BTreeMap;

use crate::aggregate::Collector;
use crate::latency::Slo;
use crate::record::RequestRecord;
use crate::sink::{RecordSink, Skip, Verdict};

pub struct ByModel {
    /// The run's own model, for records that name none.
    pub base: String,
    pub slo: Slo,
    pub warmup: u64,
    pub models: BTreeMap<String, Collector>,
}

impl ByModel {
    /// Every model of the split, the base first, so a model no request went to still
    /// has its (empty) row.
    pub fn new(split: &crate::workload::lora::ModelSplit, slo: Slo, warmup: u64) -> Self {
        let models = split
            .shares()
            .iter()
            .map(|(m, _)| ((*m).to_string(), Collector::new(slo, warmup)))
            .collect();
        ByModel {
            base: split.base.clone(),
            slo,
            warmup,
            models,
        }
    }

    /// The collectors, the base model's first.
    pub fn into_rows(mut self) -> Vec<(String, Collector)> {
        let mut rows = Vec::new();
        if let Some(c) = self.models.remove(&self.base) {
            rows.push((self.base, c));
        }
        rows.extend(self.models);
        rows
    }
}

impl RecordSink for ByModel {
    fn record(&mut self, r: &RequestRecord, _verdict: Verdict) -> anyhow::Result<()> {
        let model = r.model.as_deref().unwrap_or(&self.base);
        let (slo, warmup) = (self.slo, self.warmup);
        self.models
            .entry(model.to_string())
            .or_insert_with(|| Collector::new(slo, warmup))
            .push(r);
        Ok(())
    }

    fn skipped(&mut self, _skip: Skip) -> anyhow::Result<()> {
        Ok(())
    }
}
