//! Decode roofline: the time of one decode step at batch B is the larger of the time
//! to read the bytes it needs and the time to do its FLOPs (Williams et al.,
//! "Roofline", CACM 2009), with MoE weights read only for the experts the batch touches.

use serde::Serialize;

/// Expected number of distinct experts a batch of `batch` tokens touches when each
/// picks `top_k` of `experts` uniformly: E × (1 − (1 − k/E)^B).
pub fn experts_touched(experts: u64, top_k: u64, batch: u64) -> f64 {
    if experts == 0 {
        return 0.0;
    }
    let e = experts as f64;
    let miss = 1.0 - (top_k as f64 / e).min(1.0);
    e * (1.0 - miss.powf(batch as f64))
}

/// Everything one decode step costs on one GPU, split into what scales with the batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepModel {
    /// Weight bytes read every step regardless of routing (attention, dense MLPs,
    /// shared experts, head, norms), per GPU.
    pub fixed_weight_bytes: f64,
    /// Bytes of all routed experts on this GPU.
    pub expert_weight_bytes: f64,
    pub num_experts: u64,
    pub top_k: u64,
    /// KV (and recurrent state) bytes one sequence reads per step, per GPU.
    pub kv_bytes_per_sequence: f64,
    /// FLOPs to produce one token, per GPU.
    pub flops_per_token: f64,
    /// bandwidth × MBU, bytes per second.
    pub effective_bandwidth: f64,
    /// peak × MFU, FLOP per second.
    pub effective_flops: f64,
}

/// One row of the roofline table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RooflinePoint {
    /// Sequences decoding together.
    pub batch: u64,
    /// Bytes read per step per GPU (weights touched + KV of every sequence).
    pub bytes_read_per_gpu: f64,
    /// Time to read those bytes at bandwidth × MBU, ms.
    pub memory_ms: f64,
    /// Time for the step's FLOPs at peak × MFU, ms.
    pub compute_ms: f64,
    /// max(memory_ms, compute_ms).
    pub step_ms: f64,
    /// "memory" or "compute": which bound sets the step time.
    pub bound: &'static str,
    /// 1 / step time.
    pub tokens_per_second_per_sequence: f64,
    /// batch / step time.
    pub tokens_per_second_aggregate: f64,
    /// $/GPU-hour × GPUs / (3600 × aggregate tok/s) × 1e6.
    pub cost_per_million_output_tokens: f64,
}

impl StepModel {
    pub fn bytes_read(&self, batch: u64) -> f64 {
        let experts = if self.num_experts > 0 {
            self.expert_weight_bytes * experts_touched(self.num_experts, self.top_k, batch)
                / self.num_experts as f64
        } else {
            self.expert_weight_bytes
        };
        self.fixed_weight_bytes + experts + batch as f64 * self.kv_bytes_per_sequence
    }

    pub fn memory_seconds(&self, batch: u64) -> f64 {
        self.bytes_read(batch) / self.effective_bandwidth
    }

    pub fn compute_seconds(&self, batch: u64) -> f64 {
        batch as f64 * self.flops_per_token / self.effective_flops
    }

    pub fn point(&self, batch: u64, gpus: u64, hourly_usd: f64) -> RooflinePoint {
        let memory = self.memory_seconds(batch);
        let compute = self.compute_seconds(batch);
        let step = memory.max(compute);
        let aggregate = batch as f64 / step;
        RooflinePoint {
            batch,
            bytes_read_per_gpu: self.bytes_read(batch),
            memory_ms: memory * 1e3,
            compute_ms: compute * 1e3,
            step_ms: step * 1e3,
            bound: if compute > memory {
                "compute"
            } else {
                "memory"
            },
            tokens_per_second_per_sequence: 1.0 / step,
            tokens_per_second_aggregate: aggregate,
            cost_per_million_output_tokens: cost_per_million(hourly_usd, gpus, aggregate),
        }
    }

    /// Smallest batch at which compute time reaches memory time, if any. Memory time
    /// minus compute time is concave in B (the expert term saturates), so once compute
    /// wins it keeps winning; the search doubles, then bisects.
    pub fn crossover_batch(&self) -> Option<u64> {
        const LIMIT: u64 = 1 << 24;
        let compute_wins = |b: u64| self.compute_seconds(b) >= self.memory_seconds(b);
        let mut hi = 1u64;
        while !compute_wins(hi) {
            if hi >= LIMIT {
                return None;
            }
            hi *= 2;
        }
        let mut lo = hi / 2; // compute does not win at lo (or lo == 0)
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if compute_wins(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    }
}

/// $ per 1M output tokens: price/h × GPUs / (3600 × aggregate tok/s) × 1e6.
pub fn cost_per_million(hourly_usd: f64, gpus: u64, aggregate_tokens_per_second: f64) -> f64 {
    hourly_usd * gpus as f64 / (3600.0 * aggregate_tokens_per_second) * 1e6
}

/// Batch sizes for the table: 1, 8, 32, 64, … below the largest that fits, then it.
pub fn table_batches(max_running: u64) -> Vec<u64> {
    let mut out: Vec<u64> = [1u64, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096]
        .into_iter()
        .filter(|b| *b < max_running)
        .collect();
    if max_running >= 1 {
        out.push(max_running);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense(weight: f64, kv: f64, flops: f64) -> StepModel {
        StepModel {
            fixed_weight_bytes: weight,
            expert_weight_bytes: 0.0,
            num_experts: 0,
            top_k: 0,
            kv_bytes_per_sequence: kv,
            flops_per_token: flops,
            effective_bandwidth: 1.0,
            effective_flops: 1.0,
        }
    }

    #[test]
    fn experts_touched_matches_the_closed_form() {
        assert_eq!(experts_touched(8, 2, 1), 2.0);
        // Two tokens: 8 × (1 − 0.75²) = 3.5.
        assert!((experts_touched(8, 2, 2) - 3.5).abs() < 1e-12);
        // A big batch touches nearly all experts, never more.
        let many = experts_touched(256, 8, 4096);
        assert!(many > 255.99 && many <= 256.0, "{many}");
        assert_eq!(experts_touched(0, 0, 5), 0.0);
    }

    #[test]
    fn step_time_is_the_larger_bound() {
        let m = dense(100.0, 10.0, 20.0);
        // B=1: memory 110, compute 20 → memory-bound.
        let p = m.point(1, 1, 3.6);
        assert_eq!(p.memory_ms, 110_000.0);
        assert_eq!(p.compute_ms, 20_000.0);
        assert_eq!(p.step_ms, 110_000.0);
        assert_eq!(p.bound, "memory");
        // B=20: memory 300, compute 400 → compute-bound.
        assert_eq!(m.point(20, 1, 3.6).bound, "compute");
    }

    #[test]
    fn crossover_is_the_first_compute_bound_batch() {
        // memory = 100 + 10B, compute = 20B → equal at B = 10.
        assert_eq!(dense(100.0, 10.0, 20.0).crossover_batch(), Some(10));
        // KV per sequence costs more time than its FLOPs: never compute-bound.
        assert_eq!(dense(100.0, 30.0, 20.0).crossover_batch(), None);
    }

    #[test]
    fn moe_reads_only_touched_experts() {
        let m = StepModel {
            fixed_weight_bytes: 0.0,
            expert_weight_bytes: 800.0,
            num_experts: 8,
            top_k: 2,
            kv_bytes_per_sequence: 0.0,
            flops_per_token: 1.0,
            effective_bandwidth: 1.0,
            effective_flops: 1.0,
        };
        assert_eq!(m.bytes_read(1), 200.0);
        assert!((m.bytes_read(2) - 350.0).abs() < 1e-9);
    }

    #[test]
    fn cost_formula() {
        // $3.60/h on 2 GPUs at 1000 tok/s: 7.2 / 3.6e6 × 1e6 = $2 per 1M tokens.
        assert!((cost_per_million(3.6, 2, 1000.0) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn table_ends_at_the_largest_batch_that_fits() {
        assert_eq!(table_batches(100), vec![1, 8, 32, 64, 100]);
        assert_eq!(table_batches(1), vec![1]);
        assert_eq!(table_batches(256), vec![1, 8, 32, 64, 128, 256]);
    }
}
