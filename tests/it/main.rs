//! The integration tests, one module per area, in one test binary: linking the crate
//! once instead of once per file keeps `cargo test` quick on a small machine. Run one
//! area with `cargo test --test it bench_mock::`. The tests share this process: one that
//! needs the process to itself (counting its file descriptors) runs in a child process
//! of its own (`support::alone`).

mod support;

mod answer_checks;
mod bench_cache;
mod bench_checks;
mod bench_energy;
mod bench_golden;
mod bench_lora;
mod bench_max_error_rate;
mod bench_mock;
mod bench_repeat;
mod bench_retry_after;
mod bench_trace;
mod bench_trace_turns;
mod bench_turns;
mod capacity_cli;
mod client_images;
mod client_protocol_streams;
mod client_protocols;
mod client_providers;
mod client_rerank;
mod client_stale_connection;
mod client_stream;
mod client_tls;
mod daemon_checks;
mod daemon_cli;
mod daemon_config;
mod daemon_config_replicas;
mod daemon_engine;
mod daemon_fingerprint;
mod daemon_fleet;
mod daemon_images;
mod daemon_limits;
mod daemon_logs;
mod daemon_lora;
mod daemon_mock;
mod daemon_model_list;
mod daemon_otlp;
mod daemon_prefix_cache;
mod daemon_providers;
mod daemon_reload;
mod daemon_requests;
mod daemon_rerank;
mod daemon_self_check;
mod daemon_shards;
mod daemon_turns;
mod daemon_web;
mod discovery;
mod docs_commands;
mod energy_truth;
mod exemplars;
mod faults_bench;
mod faults_client;
mod faults_daemon;
mod fingerprint;
mod golden_accuracy;
mod golden_behaviour;
mod llm_d;
mod mock_cli;
mod mock_faults;
mod mock_http;
mod mock_precise_timer;
mod mock_timing;
mod runner_paused;
mod runner_pipeline;
mod runner_precise;
mod secrets_canary;
mod sigv4_vectors;
mod tool_call_checks;
mod trace_context;
