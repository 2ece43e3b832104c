//! Daemon configuration: one bad-YAML fixture per validation rule with the exact error
//! (file:line:column: field: message), the examples validate, the committed JSON Schema
//! is up to date, and secrets never reach the printed config.

use std::path::{Path, PathBuf};

use llmprobe::config::plan::{load, load_str};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// (fixture name, exact error). Error positions are 1-based line:column of the node.
/// A trailing `…` stands for a list owned by another module (valid preset names): the
/// error must start with the text before it.
const BAD: &[(&str, &str)] = &[
    (
        "check_bad_regex",
        "check_bad_regex.yaml:9:27: targets[0].scenarios[0].checks.expect_regex: invalid regex: unclosed group (at column 2 of the pattern)",
    ),
    (
        "check_bad_regex_block",
        "check_bad_regex_block.yaml:12:15: targets[0].scenarios[0].checks.expect_regex: invalid regex: unclosed group (at line 3, column 3 of the pattern)",
    ),
    (
        "nonce_off_without_prompt",
        "nonce_off_without_prompt.yaml:7:16: targets[0].scenarios[0].nonce: nonce: false needs a fixed question (prompt, prompt_file, messages or golden); synthetic prompts always carry the nonce",
    ),
    (
        "messages_ending_with_assistant",
        "messages_ending_with_assistant.yaml:8:11: targets[0].scenarios[0].messages: the last message must be the user's question",
    ),
    (
        "messages_system_not_first",
        "messages_system_not_first.yaml:9:20: targets[0].scenarios[0].messages[1].role: only the first message may be the system message",
    ),
    (
        "messages_on_completions",
        "messages_on_completions.yaml:9:11: targets[0].scenarios[0].messages: endpoint completions takes one text, not a message list (chat, responses and messages take one)",
    ),
    (
        "messages_and_prompt",
        "messages_and_prompt.yaml:9:11: targets[0].scenarios[0].messages: set prompt, prompt_file or messages, not two of them",
    ),
    (
        "check_bad_schema",
        "check_bad_schema.yaml:7:31: targets[0].scenarios[0].checks.expect_json_schema: invalid JSON Schema: 5 is not valid under any of the schemas listed in the 'anyOf' keyword",
    ),
    (
        "check_on_embeddings",
        "check_on_embeddings.yaml:9:27: targets[0].scenarios[0].checks.max_repetition: cannot check endpoint embeddings: it generates no text (only checks.expect_model can)",
    ),
    (
        "check_structured_output_on_messages",
        "check_structured_output_on_messages.yaml:9:30: targets[0].scenarios[0].checks.structured_output: endpoint messages has no structured-output field (chat and responses have one)",
    ),
    (
        "check_tool_call_on_completions",
        "check_tool_call_on_completions.yaml:9:29: targets[0].scenarios[0].checks.expect_tool_call: endpoint completions cannot offer tools (chat and responses can)",
    ),
    (
        "check_tool_call_bad_parameters",
        "check_tool_call_bad_parameters.yaml:9:25: targets[0].scenarios[0].checks.expect_tool_call.parameters: invalid JSON Schema: 5 is not valid under any of the schemas listed in the 'anyOf' keyword",
    ),
    (
        "check_tool_call_parameters_file_missing",
        "check_tool_call_parameters_file_missing.yaml:9:25: targets[0].scenarios[0].checks.expect_tool_call.parameters: cannot read /nonexistent/weather.json: No such file or directory (os error 2)",
    ),
    (
        "check_unknown",
        "check_unknown.yaml:7:11: targets[0].scenarios[0].checks: unknown field `expect_regexp`, expected one of `expect_regex`, `expect_not_regex`, `expect_json_schema`, `expect_model`, `expect_finish_reason`, `min_output_tokens`, `max_repetition`, `structured_output`, `expect_tool_call`, `expect_top_document`",
    ),
    (
        "prompt_too_short",
        "prompt_too_short.yaml:6:23: targets[0].scenarios[0].input_tokens: input length 40 is too short: the shared prefix (35) and the unique nonce (8) plus one token need 44",
    ),
    (
        "tls_ca_file_missing",
        "tls_ca_file_missing.yaml:5:10: targets[0].tls: cannot read certificate file /nonexistent/ca.pem: I/O error: No such file or directory (os error 2)",
    ),
    (
        "capacity_unknown_field",
        "capacity_unknown_field.yaml:5:38: targets[0].capacity: unknown field `gpus`, expected one of `preset`, `hf_config`, `gpu`, `tp`, `weight_bytes`, `kv_bytes`, `context`, `util`, `activation_gib`, `mbu`, `mfu`, `gpu_hourly`, `block_size`, `max_num_seqs`, `gpu_mem_gib`, `gpu_bandwidth_tbs`, `gpu_tflops`",
    ),
    (
        "capacity_unknown_preset",
        "capacity_unknown_preset.yaml:5:15: targets[0].capacity: unknown preset \"llama-9b\"; valid presets: llama-3.1-8b, …",
    ),
    (
        "api_key_env_unset",
        "api_key_env_unset.yaml:5:18: targets[0].api_key_env: environment variable LLMPROBE_TEST_UNSET_VARIABLE is not set or empty",
    ),
    (
        "api_key_file_missing",
        "api_key_file_missing.yaml:5:19: targets[0].api_key_file: reading secret file /nonexistent/llmprobe/key: No such file or directory (os error 2)",
    ),
    (
        "bad_base_url",
        "bad_base_url.yaml:3:15: targets[0].base_url: \"ftp://files.example\" must be an http:// or https:// URL with a host",
    ),
    (
        "bad_duration",
        "bad_duration.yaml:7:14: targets[0].scenarios[0].slo: invalid duration <value> (expected number at 0); use e.g. 500ms, 30s, 2m",
    ),
    (
        "bad_endpoint",
        "bad_endpoint.yaml:5:15: targets[0].endpoint: unknown variant <value>, expected one of `chat`, `completions`, `responses`, `messages`, `embeddings`, `rerank`, `score`",
    ),
    (
        "bad_engine_url",
        "bad_engine_url.yaml:5:25: targets[0].engine_metrics_url: \"not a url\" is not a URL: relative URL without a base",
    ),
    (
        "bad_router_url",
        "bad_router_url.yaml:5:25: targets[0].router_metrics_url: \"epp:9090/metrics\" must be an http:// or https:// URL with a host",
    ),
    (
        "llm_d_bad_objective",
        "llm_d_bad_objective.yaml:7:18: targets[0].llm_d.objective: \"premium chat\" cannot be a header value: only visible ASCII characters, no spaces",
    ),
    (
        "llm_d_empty_fairness_id",
        "llm_d_empty_fairness_id.yaml:5:26: targets[0].llm_d.fairness_id: must be 1 to 253 characters, got 0",
    ),
    (
        "llm_d_unknown_key",
        "llm_d_unknown_key.yaml:6:7: targets[0].llm_d: unknown field `slo_header`, expected one of `slo_headers`, `objective`, `fairness_id`",
    ),
    (
        "bad_header_name",
        "bad_header_name.yaml:6:16: targets[0].headers.X Bad: \"X Bad\" is not a valid HTTP header name",
    ),
    (
        "bad_listen",
        "bad_listen.yaml:1:9: listen: \"localhost\" is not an address such as 0.0.0.0:9464 or 127.0.0.1:0",
    ),
    (
        "bad_rate_unit",
        "bad_rate_unit.yaml:5:11: targets[0].rate: invalid rate <value>: unknown unit <value> (use /s, /min or /h)",
    ),
    (
        "both_api_keys",
        "both_api_keys.yaml:6:18: targets[0].api_key_env: set api_key_file or api_key_env, not both",
    ),
    (
        "buckets_empty",
        "buckets_empty.yaml:2:8: buckets.itl: needs at least one bucket",
    ),
    (
        "buckets_negative",
        "buckets_negative.yaml:2:8: buckets.e2e: bucket bounds must be positive seconds, got -1",
    ),
    (
        "buckets_not_increasing",
        "buckets_not_increasing.yaml:2:9: buckets.ttft: bucket bounds must be strictly increasing",
    ),
    (
        "budget_too_small",
        "budget_too_small.yaml:5:28: targets[0].token_budget_per_hour: 100 tokens cannot pay for one probe of scenario \"default\" (it needs 160: input_tokens + output_tokens); every scenario must fit",
    ),
    (
        "budget_too_small_for_one_scenario",
        "budget_too_small_for_one_scenario.yaml:5:28: targets[0].token_budget_per_hour: 1000 tokens cannot pay for one probe of scenario \"long\" (it needs 4200: input_tokens + output_tokens); every scenario must fit",
    ),
    (
        "budget_per_day_without_price",
        "budget_per_day_without_price.yaml:5:21: targets[0].budget_per_day: needs the target's price: (input_per_million, output_per_million) to count what its probes spend",
    ),
    (
        "budget_per_day_zero",
        "budget_per_day_zero.yaml:5:21: targets[0].budget_per_day: must be a number of dollars > 0, got 0",
    ),
    (
        "budget_per_day_too_small",
        "budget_per_day_too_small.yaml:7:21: targets[0].budget_per_day: the probes are expected to spend $9.85 per day at their rates, lengths and price, more than the budget of $5.00: lower the rate or the lengths, or raise the budget",
    ),
    (
        "default_max_inflight_zero",
        "default_max_inflight_zero.yaml:2:17: defaults.max_inflight: must be at least 1",
    ),
    (
        "default_zero_slo",
        "default_zero_slo.yaml:3:10: defaults.slo.e2e: must be greater than zero",
    ),
    (
        "duplicate_scenario",
        "duplicate_scenario.yaml:7:15: targets[0].scenarios[1].name: duplicate scenario name \"s\" in target \"prod\"",
    ),
    (
        "duplicate_target",
        "duplicate_target.yaml:5:11: targets[1].name: duplicate target name \"prod\" (names must be unique)",
    ),
    (
        "empty_model",
        "empty_model.yaml:4:12: targets[0].model: must not be empty",
    ),
    (
        "empty_name",
        "empty_name.yaml:2:11: targets[0].name: must not be empty",
    ),
    (
        "header_env_unset",
        "header_env_unset.yaml:6:16: targets[0].headers.X-Token: environment variable LLMPROBE_TEST_UNSET_VARIABLE is not set or empty",
    ),
    (
        "max_inflight_zero",
        "max_inflight_zero.yaml:5:19: targets[0].max_inflight: must be at least 1",
    ),
    (
        "missing_targets",
        "missing_targets.yaml:1:1: missing field `targets`",
    ),
    (
        "negative_price",
        "negative_price.yaml:5:32: targets[0].price.input_per_million: must be a number >= 0, got -1",
    ),
    (
        "no_scenarios",
        "no_scenarios.yaml:5:16: targets[0].scenarios: at least one scenario is required (omit the field for the default one)",
    ),
    (
        "no_targets",
        "no_targets.yaml:1:10: targets: at least one target is required",
    ),
    (
        "not_a_url",
        "not_a_url.yaml:3:15: targets[0].base_url: \"llm:8000\" must be an http:// or https:// URL with a host",
    ),
    (
        "prefix_too_long",
        "prefix_too_long.yaml:7:31: targets[0].scenarios[0].shared_prefix_tokens: must be smaller than input_tokens (100): every prompt needs a unique part",
    ),
    (
        "replicas_zero",
        "replicas_zero.yaml:5:15: targets[0].replicas: must be at least 1",
    ),
    (
        "syntax",
        "syntax.yaml:4:11: mapping values are not allowed in this context",
    ),
    (
        "tls_cert_without_key",
        "tls_cert_without_key.yaml:5:29: targets[0].tls.client_cert_file: is set but tls.client_key_file is not (mutual TLS needs both)",
    ),
    (
        "unknown_field",
        "unknown_field.yaml:5:5: targets[0]: unknown field `rat`, expected one of `name`, `base_url`, `model`, `endpoint`, `provider`, `api_version`, `aws`, `google`, `anthropic_version`, `api_key_file`, `api_key_env`, `headers`, `tls`, `timeouts`, `limits`, `rate`, `max_inflight`, `token_budget_per_hour`, `price`, `budget_per_day`, `continuous_usage_stats`, `include_usage`, `reuse_connections`, `traceparent`, `extra_body`, `scenarios`, `replicas`, `replicas_from`, `replica_rate`, `engine_metrics_path`, `replica_series`, `capacity`, `engine_metrics_url`, `router_metrics_url`, `llm_d`, `gpu_metrics`, `adapters`",
    ),
    (
        "zero_grace_period",
        "zero_grace_period.yaml:1:15: grace_period: must be greater than zero",
    ),
    (
        "zero_input_tokens",
        "zero_input_tokens.yaml:6:23: targets[0].scenarios[0].input_tokens: must be at least 1",
    ),
    (
        "zero_output_tokens",
        "zero_output_tokens.yaml:6:24: targets[0].scenarios[0].output_tokens: must be at least 1",
    ),
    (
        "zero_rate",
        "zero_rate.yaml:5:11: targets[0].rate: rate must be a positive number, got 0/min",
    ),
    (
        "slo_ttft_without_stream",
        "slo_ttft_without_stream.yaml:6:9: targets[0].scenarios[0]: slo.ttft: cannot be met: stream: false turns streaming off, so only the end-to-end latency exists (use slo.e2e) (it may come from defaults.slo; set it per scenario instead)",
    ),
    (
        "slo_tpot_on_embeddings",
        "slo_tpot_on_embeddings.yaml:4:5: targets[0].scenarios[0]: slo.tpot: cannot be met: endpoint embeddings is never streamed, so only the end-to-end latency exists (use slo.e2e) (it may come from defaults.slo; set it per scenario instead)",
    ),
    (
        "zero_scrape_interval",
        "zero_scrape_interval.yaml:1:25: engine_scrape_interval: must be greater than zero",
    ),
    (
        "zero_failure_summary_interval",
        "zero_failure_summary_interval.yaml:1:27: failure_summary_interval: must be greater than zero",
    ),
    (
        "zero_slo",
        "zero_slo.yaml:6:21: targets[0].scenarios[0].slo.tpot: must be greater than zero",
    ),
    (
        "turns_zero",
        "turns_zero.yaml:6:29: targets[0].scenarios[0].turns: must be at least 1",
    ),
    (
        "turns_on_embeddings",
        "turns_on_embeddings.yaml:7:32: targets[0].scenarios[0].turns: endpoint embeddings answers nothing to carry into a next turn",
    ),
    (
        "think_time_without_turns",
        "think_time_without_turns.yaml:6:34: targets[0].scenarios[0].think_time: shapes a conversation's later turns, and scenario \"talk\" has none: set turns to 2 or more",
    ),
    (
        "think_time_dist_without_turns",
        "think_time_dist_without_turns.yaml:6:39: targets[0].scenarios[0].think_time_dist: shapes a conversation's later turns, and scenario \"talk\" has none: set turns to 2 or more",
    ),
    (
        "think_time_dist_unknown",
        "think_time_dist_unknown.yaml:6:49: targets[0].scenarios[0].think_time_dist: unknown variant <value>, expected `exponential` or `constant`",
    ),
    (
        "think_time_negative",
        "think_time_negative.yaml:6:9: targets[0].scenarios[0]: invalid duration <value> (expected number at 0); use e.g. 500ms, 30s, 2m",
    ),
    (
        "turns_reserved_name",
        "turns_reserved_name.yaml:6:16: targets[0].scenarios[0].name: must not end in \":later\": the later turns of a conversation are observed under that name",
    ),
    (
        "engine_metrics_path_relative",
        "engine_metrics_path_relative.yaml:7:26: targets[0].engine_metrics_path: \"metrics\" must be a path starting with /",
    ),
    (
        "shard_index_too_big",
        "shard_index_too_big.yaml:1:8: shard: index 3 is not below count 3 (shards are 0..2)",
    ),
    (
        "location_empty",
        "location_empty.yaml:1:11: location: must be 1 to 128 characters",
    ),
    (
        "otlp_endpoint_scheme",
        "otlp_endpoint_scheme.yaml:2:13: otlp.endpoint: scheme \"grpc\": must be http or https",
    ),
    (
        "otlp_protocol_grpc",
        "otlp_protocol_grpc.yaml:3:13: otlp.protocol: unknown variant <value>, expected `http/protobuf`",
    ),
    (
        "otlp_interval_short",
        "otlp_interval_short.yaml:3:13: otlp.interval: must be at least 100ms (how often spans and metrics are sent)",
    ),
    (
        "otlp_header_name",
        "otlp_header_name.yaml:3:27: otlp.headers.bad header: \"bad header\" is not a valid HTTP header name",
    ),
    (
        "probe_pages_zero",
        "probe_pages_zero.yaml:1:14: probe_pages: must be between 1 and 1000000 (pages of the latest probes kept in all)",
    ),
    (
        "replica_series_without_replicas_from",
        "replica_series_without_replicas_from.yaml:5:21: targets[0].replica_series: applies to discovered replicas: it needs replicas_from",
    ),
    (
        "replica_series_unknown",
        "replica_series_unknown.yaml:6:21: targets[0].replica_series: unknown variant <value>, expected `slim` or `full`",
    ),
    (
        "replica_rate_without_replicas_from",
        "replica_rate_without_replicas_from.yaml:5:19: targets[0].replica_rate: applies to discovered replicas: it needs replicas_from",
    ),
    (
        "replicas_from_and_replicas",
        "replicas_from_and_replicas.yaml:5:15: targets[0].replicas: a target either counts its replicas (replicas: N) or discovers them (replicas_from), not both: remove one",
    ),
    (
        "replicas_from_bad_label",
        "replicas_from_bad_label.yaml:7:22: targets[0].replicas_from.labels[1]: labels: \"__meta_pod\": reserved: `__` names and llmprobe's own labels (target, model, scenario, replica) cannot come from SD",
    ),
    (
        "replicas_from_bad_resolver",
        "replicas_from_bad_resolver.yaml:7:17: targets[0].replicas_from.resolver: resolver: \"10.96.0.10\": must be IP:PORT (an IPv6 address in brackets)",
    ),
    (
        "replicas_from_dns_empty_name",
        "replicas_from_dns_empty_name.yaml:6:19: targets[0].replicas_from.dns.name: dns: \" \": empty name",
    ),
    (
        "replicas_from_dns_port_zero",
        "replicas_from_dns_port_zero.yaml:6:49: targets[0].replicas_from.dns.port: must be 1..65535",
    ),
    (
        "replicas_from_file_sd_wildcard_dir",
        "replicas_from_file_sd_wildcard_dir.yaml:6:16: targets[0].replicas_from.file_sd: file_sd: \"/etc/llmprobe/*/replicas.json\": a pattern may only be in the file name",
    ),
    (
        "replicas_from_http_sd_bad_url",
        "replicas_from_http_sd_bad_url.yaml:6:22: targets[0].replicas_from.http_sd.url: http_sd: \"ftp://discovery:8080/targets\": the scheme must be http or https",
    ),
    (
        "replicas_from_max_replicas_zero",
        "replicas_from_max_replicas_zero.yaml:7:21: targets[0].replicas_from.max_replicas: must be at least 1",
    ),
    (
        "replicas_from_no_source",
        "replicas_from_no_source.yaml:6:7: targets[0].replicas_from: needs one source: dns, srv, file_sd, http_sd or static",
    ),
    (
        "replicas_from_resolver_on_static",
        "replicas_from_resolver_on_static.yaml:7:17: targets[0].replicas_from.resolver: applies to dns and srv lookups, not to static",
    ),
    (
        "replicas_from_srv_bad_name",
        "replicas_from_srv_bad_name.yaml:6:19: targets[0].replicas_from.srv.name: srv: \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.svc\": decoding error: label bytes exceed 63: 64",
    ),
    (
        "replicas_from_srv_bad_shape",
        "replicas_from_srv_bad_shape.yaml:6:7: targets[0].replicas_from: srv: a DNS name or {name, interval}",
    ),
    (
        "replicas_from_static_empty",
        "replicas_from_static_empty.yaml:6:15: targets[0].replicas_from.static: needs at least one URL",
    ),
    (
        "replicas_from_static_with_path",
        "replicas_from_static_with_path.yaml:6:38: targets[0].replicas_from.static[1]: static: \"http://10.0.0.6:8000/v1\": a replica is scheme://host:port, with no path, query or user",
    ),
    (
        "replicas_from_two_sources",
        "replicas_from_two_sources.yaml:7:15: targets[0].replicas_from.static: one source per target, and dns is set too",
    ),
    (
        "replicas_from_zero_interval",
        "replicas_from_zero_interval.yaml:6:65: targets[0].replicas_from.dns.interval: must be greater than zero",
    ),
    (
        "provider_endpoint",
        "provider_endpoint.yaml:4:15: targets[0].endpoint: provider gemini serves endpoint chat, not embeddings",
    ),
    (
        "provider_aws_region",
        "provider_aws_region.yaml:7:15: targets[0].aws.region: aws.region \"US East\" must be a region such as us-east-1",
    ),
    (
        "provider_vertex_token",
        "provider_vertex_token.yaml:6:13: targets[0].google: google needs service_account_file or token_file (the access token's source)",
    ),
    (
        "provider_block_without_provider",
        "provider_block_without_provider.yaml:5:18: targets[0].api_version: api_version is set but provider is not (it belongs to provider: azure)",
    ),
    (
        "provider_images",
        "provider_images.yaml:8:17: targets[0].scenarios[0].images: provider gemini (chat) sends no image parts: no images",
    ),
    (
        "provider_adapters",
        "provider_adapters.yaml:7:15: targets[0].adapters: adapters are an engine's (vLLM, SGLang) beside its base model: not with provider: bedrock",
    ),
    (
        "zero_timeout",
        "zero_timeout.yaml:5:29: targets[0].timeouts.first_token: must be greater than zero",
    ),
];

#[test]
fn every_bad_fixture_fails_with_its_exact_error() {
    let dir = root().join("tests/fixtures/config/bad");
    let mut seen = Vec::new();
    for (name, want) in BAD {
        let file = format!("{name}.yaml");
        let text = std::fs::read_to_string(dir.join(&file)).unwrap();
        let err = load_str(&text, &file).expect_err(name);
        match want.strip_suffix('…') {
            Some(prefix) => assert!(
                err.to_string().starts_with(prefix),
                "fixture {file}: {err} does not start with {prefix}"
            ),
            None => assert_eq!(err.to_string(), *want, "fixture {file}"),
        }
        seen.push(file);
    }
    // Every fixture on disk is in the table (a new rule needs its expected error).
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    seen.sort();
    assert_eq!(on_disk, seen);
}

#[test]
fn a_missing_file_is_named() {
    let err = load(Path::new("/nonexistent/llmprobe.yaml")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "/nonexistent/llmprobe.yaml: cannot read the config file: No such file or directory (os error 2)"
    );
}

#[test]
fn examples_parse_and_validate() {
    for name in ["daemon.yaml", "daemon-minimal.yaml", "providers.yaml"] {
        let path = root().join("examples").join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        let cfg = llmprobe::config::plan::parse(&text, name).unwrap();
        llmprobe::config::validate::validate(&cfg).unwrap();
    }
    // The minimal example needs no secrets: it resolves completely.
    let plan = load(&root().join("examples/daemon-minimal.yaml")).unwrap();
    assert_eq!(plan.targets.len(), 1);
    let s = &plan.targets[0].scenarios[0];
    assert_eq!(s.name, "default");
    assert!((s.rate_hz - 1.0 / 60.0).abs() < 1e-12);
    assert_eq!(
        s.slo.limit(llmprobe::latency::Latency::Ttft),
        Some(std::time::Duration::from_millis(500))
    );
    assert!(plan.buckets.ttft.contains(&0.5));
}

/// A conversation scenario's think times: exponential unless it says constant, the
/// names `bench --think-time-dist` takes.
#[test]
fn a_scenario_chooses_its_think_time_distribution() {
    use llmprobe::schedule::{ThinkDist, ThinkTime};
    let text = "targets:\n  - name: a\n    base_url: http://127.0.0.1:8000/v1\n    model: m\n    \
                scenarios:\n      - {name: steady, turns: 3, think_time: 2s, think_time_dist: constant}\n      \
                - {name: usual, turns: 2}\n";
    let plan = load_str(text, "c.yaml").unwrap();
    let think: Vec<Option<ThinkTime>> = plan.targets[0]
        .scenarios
        .iter()
        .map(|s| s.turns.map(|t| t.think))
        .collect();
    let secs = std::time::Duration::from_secs;
    assert_eq!(
        think,
        [
            Some(ThinkTime {
                mean: secs(2),
                dist: ThinkDist::Constant
            }),
            Some(ThinkTime {
                mean: secs(1),
                dist: ThinkDist::Exponential
            })
        ]
    );
    // The printed config keeps the setting, spelled as in the file.
    assert!(
        plan.redacted_yaml.contains("think_time_dist: constant"),
        "{}",
        plan.redacted_yaml
    );
}

#[test]
fn the_full_example_resolves_with_its_secrets_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("examples/daemon.yaml")).unwrap();
    let key = dir.path().join("prod");
    let gw = dir.path().join("gateway");
    std::fs::write(&key, "sk-example-prod\n").unwrap();
    std::fs::write(&gw, "gw-token\n").unwrap();
    let text = text
        .replace("/etc/llmprobe/keys/prod", key.to_str().unwrap())
        .replace("/etc/llmprobe/keys/gateway", gw.to_str().unwrap())
        .replace("      ca_file: /etc/llmprobe/ca.pem\n", "")
        .replace(
            "api_key_env: STAGING_API_KEY",
            &format!("api_key_file: {}", key.display()),
        );
    let plan = load_str(&text, "daemon.yaml").unwrap();
    let prod = &plan.targets[0];
    assert_eq!(prod.scenarios.len(), 2);
    // 6/min shared by two scenarios.
    assert!((prod.scenarios[0].rate_hz - 0.05).abs() < 1e-12);
    // Scenario SLOs fall back field by field to the defaults.
    assert_eq!(
        prod.scenarios[0]
            .slo
            .limit(llmprobe::latency::Latency::Ttft),
        Some(std::time::Duration::from_millis(300))
    );
    assert_eq!(
        prod.scenarios[0]
            .slo
            .limit(llmprobe::latency::Latency::Tpot),
        Some(std::time::Duration::from_millis(50))
    );
    assert_eq!(
        prod.scenarios[1].slo.limit(llmprobe::latency::Latency::E2e),
        Some(std::time::Duration::from_secs(20))
    );
    assert_ne!(prod.scenarios[0].seed, prod.scenarios[1].seed);
    assert_eq!(
        prod.client.api_key.as_ref().unwrap().expose(),
        "sk-example-prod"
    );
    assert!(prod.capacity.is_some());
    // Every SLO threshold is a bucket boundary of its own scenario's series.
    let ttft: Vec<f64> = plan
        .targets
        .iter()
        .flat_map(|t| &t.scenarios)
        .flat_map(|s| s.buckets.ttft.iter().copied())
        .collect();
    for v in [0.3, 1.5, 0.5] {
        assert!(ttft.contains(&v), "{v}");
    }
    assert!(prod.scenarios[1].buckets.e2e.contains(&20.0));
    // The base layout carries no threshold that is not vLLM's.
    assert!(!plan.buckets.ttft.contains(&0.3));
}

#[test]
fn printed_config_shows_secrets_as_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    let canary = "sk-canary-config-7d1c0";
    std::fs::write(&key, canary).unwrap();
    let text = format!(
        "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    api_key_file: {}\n    headers:\n      X-Literal: {canary}\n",
        key.display()
    );
    let plan = load_str(&text, "c.yaml").unwrap();
    assert!(
        !plan.redacted_yaml.contains(canary),
        "{}",
        plan.redacted_yaml
    );
    assert!(plan.redacted_yaml.contains("X-Literal: <secret>"));
    assert!(!format!("{plan:?}").contains(canary));
    assert_eq!(plan.targets[0].secrets.len(), 2);
}

#[test]
fn committed_schema_is_up_to_date() {
    let path = root().join("docs/config.schema.json");
    let want = llmprobe::config::json_schema();
    if std::env::var_os("LLMPROBE_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/config.schema.json is stale: run LLMPROBE_UPDATE_SCHEMA=1 cargo test --test it daemon_config::"
    );
}

/// Configured buckets extend vLLM's (the rules rely on le="0.5" for TTFT).
#[test]
fn configured_buckets_extend_vllms() {
    let text = "buckets:\n  ttft: [0.05, 0.1, 0.25, 1, 3.3]\n  e2e: [0.7]\ntargets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    scenarios:\n      - {input_tokens: 40, output_tokens: 4, slo: {ttft: 123ms}}\n";
    let plan = load_str(text, "c.yaml").unwrap();
    let vllm = llmprobe::exposition::Buckets::vllm();
    for v in vllm.ttft.iter().chain([&3.3]) {
        assert!(
            plan.buckets.ttft.contains(v),
            "{v} missing: {:?}",
            plan.buckets.ttft
        );
    }
    let own = &plan.targets[0].scenarios[0].buckets;
    for v in plan.buckets.ttft.iter().chain([&0.123]) {
        assert!(own.ttft.contains(v), "{v} missing: {:?}", own.ttft);
    }
    for v in vllm.e2e.iter().chain([&0.7]) {
        assert!(plan.buckets.e2e.contains(v), "{v} missing");
    }
    assert!(plan.buckets.ttft.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(plan.buckets.tpot, vllm.tpot);
}

/// Credentials inside URLs are masked in `/config`.
#[test]
fn printed_config_masks_url_credentials() {
    let text = "targets:\n  - name: t\n    base_url: http://bob:sk-url-canary@127.0.0.1:1/v1\n    model: m\n    engine_metrics_url: http://127.0.0.1:2/metrics?token=sk-engine-canary\n";
    let plan = load_str(text, "c.yaml").unwrap();
    let y = &plan.redacted_yaml;
    for canary in ["sk-url-canary", "sk-engine-canary"] {
        assert!(!y.contains(canary), "{canary} in\n{y}");
    }
    assert!(
        y.contains("base_url: http://bob:<secret>@127.0.0.1:1/v1\n"),
        "{y}"
    );
    assert!(
        y.contains("engine_metrics_url: http://127.0.0.1:2/metrics?<secret>"),
        "{y}"
    );
    // The probes still use the real URL.
    assert!(plan.targets[0].client.base_url.contains("sk-url-canary"));
    // A rejected base_url is not echoed with its password either.
    let bad = text.replace("/v1\n", "/v1?q=1\n");
    let e = load_str(&bad, "c.yaml").unwrap_err().to_string();
    assert!(
        !e.contains("sk-url-canary") && e.contains("<secret>"),
        "{e}"
    );
}

/// `gpu_metrics:` mistakes, each at its key.
#[test]
fn gpu_metrics_errors_name_their_key() {
    let target = "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n";
    let engine = "    engine_metrics_url: http://127.0.0.1:2/metrics\n";
    for (block, want) in [
        (
            "    gpu_metrics: {url: http://127.0.0.1:3/metrics}\n".to_string(),
            "g.yaml:5:18: targets[0].gpu_metrics: needs engine_metrics_url or replicas_from",
        ),
        (
            format!("{engine}    gpu_metrics: {{url: [http://127.0.0.1:3/metrics, nope]}}\n"),
            "targets[0].gpu_metrics.url[1]: \"nope\" is not a URL",
        ),
        (
            format!("{engine}    gpu_metrics: {{url: http://127.0.0.1:3/metrics, replica_match: {{pod: pod}}}}\n"),
            "targets[0].gpu_metrics.replica_match: applies to discovered replicas: it needs replicas_from",
        ),
        (
            "    replicas_from: {static: [\"http://127.0.0.1:4\"]}\n    gpu_metrics: {url: http://127.0.0.1:3/metrics, replica_match: {pod: zone}}\n".to_string(),
            "targets[0].gpu_metrics.replica_match.pod: \"zone\" is no label of the replicas",
        ),
        (
            "    replicas_from: {static: [\"http://127.0.0.1:4\"]}\n    gpu_metrics: {url: http://127.0.0.1:3/metrics}\n".to_string(),
            "targets[0].gpu_metrics.replica_match: with replicas_from, say which GPUs are each replica's",
        ),
        (
            format!("{engine}    gpu_metrics: {{url: http://127.0.0.1:3/metrics, energy_price_per_kwh: -1}}\n"),
            "targets[0].gpu_metrics.energy_price_per_kwh: -1 must be a number of at least 0",
        ),
        (
            format!("{engine}    gpu_metrics: {{url: http://127.0.0.1:3/metrics, matches: {{}}}}\n"),
            "targets[0].gpu_metrics: unknown field `matches`",
        ),
    ] {
        let e = load_str(&format!("{target}{block}"), "g.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "want {want:?} in\n{e}");
    }
    // A replica's own address and a kept SD label both match; credentials in the URL
    // are masked in /config.
    let ok = format!(
        "{target}    replicas_from: {{static: [\"http://127.0.0.1:4\"], labels: [zone]}}\n    \
         gpu_metrics: {{url: \"http://u:sk-gpu-canary@127.0.0.1:3/metrics\", replica_match: {{pod: replica, zone: zone}}}}\n"
    );
    let plan = load_str(&ok, "g.yaml").unwrap();
    assert!(
        !plan.redacted_yaml.contains("sk-gpu-canary"),
        "{}",
        plan.redacted_yaml
    );
    let gpu = plan.targets[0].gpu.as_ref().unwrap();
    let labels = std::collections::BTreeMap::from([("zone".to_string(), "a".to_string())]);
    let m = gpu.replica("127.0.0.1:4", &labels).unwrap();
    assert_eq!(
        m.0,
        vec![
            ("pod".to_string(), "127.0.0.1:4".to_string()),
            ("zone".to_string(), "a".to_string())
        ]
    );
    assert!(gpu.replica("127.0.0.1:4", &Default::default()).is_none());
}
