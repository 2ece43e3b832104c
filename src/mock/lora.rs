//! The mock's LoRA adapters, as vLLM with `--enable-lora` serves them: the adapters
//! loaded (`--lora-adapters`, then `/v1/load_lora_adapter` and `/v1/unload_lora_adapter`
//! with vLLM's bodies), listed in `/v1/models` with the base model as `parent`, and
//! `vllm:lora_requests_info`: one sample per label set it has had, valued at the Unix
//! time it was set, the newest being the state now. An adapter counts as running from
//! its request's arrival to the answer's end (the mock's queue is per engine, so no
//! adapter is ever shown waiting).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// The most label sets kept: vLLM keeps every one it ever set; a bounded mock keeps the
/// newest ones (the state is the newest in any case).
const MAX_SAMPLES: usize = 16;

/// The mock's adapters and what its requests do with them.
#[derive(Debug, Default)]
pub struct Lora {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Loaded adapters and the path each was loaded from.
    loaded: BTreeMap<String, String>,
    /// Requests in flight per adapter.
    in_flight: BTreeMap<String, u64>,
    /// `(running, waiting)` label values → the Unix time they were last set.
    samples: BTreeMap<(String, String), f64>,
    /// Whether the mock serves adapters at all (`--lora-adapters`, or one loaded).
    enabled: bool,
    /// `max_lora`: the adapters given at start (at least 1), as `--max-loras`.
    max: usize,
}

/// What a load or unload answers: the HTTP status and vLLM's body.
pub struct Reply {
    pub status: u16,
    pub body: String,
}

impl Lora {
    /// The adapters of `--lora-adapters` (names; their path is `/mock/NAME`).
    pub fn new(names: &[String]) -> Self {
        let lora = Lora::default();
        {
            let mut s = lora.lock();
            s.enabled = !names.is_empty();
            s.max = names.len().max(1);
            for n in names {
                s.loaded.insert(n.clone(), format!("/mock/{n}"));
            }
            if s.enabled {
                s.note();
            }
        }
        lora
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `/v1/models` entries of the loaded adapters, children of `base`.
    pub fn models(&self, base: &str) -> Vec<Value> {
        self.lock()
            .loaded
            .iter()
            .map(|(name, path)| {
                json!({"id": name, "object": "model", "created": 0,
                       "owned_by": "llmprobe-mock", "root": path, "parent": base})
            })
            .collect()
    }

    /// A request for `model` starts; the guard ends it. Only loaded adapters count.
    pub fn begin(self: &Arc<Self>, model: &str) -> Option<InFlight> {
        let mut s = self.lock();
        if !s.loaded.contains_key(model) {
            return None;
        }
        *s.in_flight.entry(model.to_string()).or_default() += 1;
        s.note();
        Some(InFlight {
            lora: self.clone(),
            model: model.to_string(),
        })
    }

    /// `POST /v1/load_lora_adapter` with `{lora_name, lora_path}`.
    pub fn load(&self, body: &[u8]) -> Reply {
        let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let (Some(name), Some(path)) = (
            v.get("lora_name").and_then(Value::as_str),
            v.get("lora_path").and_then(Value::as_str),
        ) else {
            return error(400, "Both 'lora_name' and 'lora_path' must be provided.");
        };
        let mut s = self.lock();
        if s.loaded.contains_key(name) {
            return error(
                400,
                &format!("The lora adapter '{name}' has already been loaded."),
            );
        }
        s.loaded.insert(name.to_string(), path.to_string());
        s.enabled = true;
        s.note();
        Reply {
            status: 200,
            body: format!("Success: LoRA adapter '{name}' added successfully."),
        }
    }

    /// `POST /v1/unload_lora_adapter` with `{lora_name}`.
    pub fn unload(&self, body: &[u8]) -> Reply {
        let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let Some(name) = v.get("lora_name").and_then(Value::as_str) else {
            return error(400, "'lora_name' must be provided.");
        };
        let mut s = self.lock();
        if s.loaded.remove(name).is_none() {
            return error(404, &format!("The lora adapter '{name}' cannot be found."));
        }
        Reply {
            status: 200,
            body: format!("Success: LoRA adapter '{name}' removed successfully."),
        }
    }

    /// The `vllm:lora_requests_info` family (nothing when the mock serves no adapters).
    pub fn render(&self, out: &mut String) {
        let s = self.lock();
        if !s.enabled {
            return;
        }
        let name = "vllm:lora_requests_info";
        let _ = writeln!(out, "# HELP {name} Running stats on lora requests.");
        let _ = writeln!(out, "# TYPE {name} gauge");
        for ((running, waiting), at) in &s.samples {
            let _ = writeln!(
                out,
                "{name}{{max_lora=\"{}\",running_lora_adapters=\"{running}\",waiting_lora_adapters=\"{waiting}\"}} {at:?}",
                s.max
            );
        }
    }
}

impl State {
    /// Sets the label set of the adapters in flight now to the current time.
    fn note(&mut self) {
        let running: Vec<&str> = self
            .in_flight
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, _)| k.as_str())
            .collect();
        let key = (running.join(","), String::new());
        let now = crate::clock::unix_now();
        // Never older than a sample already there: the newest by value is the state.
        let newest = self.samples.values().copied().fold(now, f64::max);
        self.samples.insert(key, newest.max(now));
        while self.samples.len() > MAX_SAMPLES {
            let oldest = self
                .samples
                .iter()
                .min_by(|a, b| a.1.total_cmp(b.1))
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.samples.remove(&k);
            }
        }
    }
}

fn error(status: u16, message: &str) -> Reply {
    let kind = if status == 404 {
        "NotFoundError"
    } else {
        "InvalidUserInput"
    };
    Reply {
        status,
        body: json!({"error": {"message": message, "type": kind, "param": null, "code": status}})
            .to_string(),
    }
}

/// One request of an adapter in flight; dropped when its answer ends (or is cut off).
pub struct InFlight {
    lora: Arc<Lora>,
    model: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut s = self.lora.lock();
        if let Some(n) = s.in_flight.get_mut(&self.model) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                s.in_flight.remove(&self.model);
            }
        }
        s.note();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_sample_names_the_adapters_in_flight() {
        let lora = Arc::new(Lora::new(&["ad1".to_string()]));
        assert!(lora.begin("base").is_none());
        let a = lora.begin("ad1").unwrap();
        let mut page = String::new();
        lora.render(&mut page);
        let snap = crate::engine_metrics::parse(&page).unwrap();
        assert_eq!(snap.lora.unwrap().running, ["ad1"]);
        drop(a);
        let mut page = String::new();
        lora.render(&mut page);
        assert_eq!(page.matches("vllm:lora_requests_info{").count(), 2);
        let snap = crate::engine_metrics::parse(&page).unwrap();
        assert!(snap.lora.unwrap().running.is_empty());
    }

    #[test]
    fn load_and_unload_answer_as_vllm_does() {
        let lora = Lora::new(&[]);
        let mut page = String::new();
        lora.render(&mut page);
        assert!(page.is_empty(), "no adapters, no family");
        let load = br#"{"lora_name":"ad2","lora_path":"/x"}"#;
        assert_eq!(lora.load(load).status, 200);
        assert_eq!(lora.load(load).status, 400);
        assert_eq!(lora.models("base")[0]["parent"], "base");
        assert_eq!(lora.unload(br#"{"lora_name":"ad2"}"#).status, 200);
        assert_eq!(lora.unload(br#"{"lora_name":"ad2"}"#).status, 404);
        assert!(lora.models("base").is_empty());
    }
}
