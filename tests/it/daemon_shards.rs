//! Many probers: `--shard I/N` splits the targets (and discovered replicas) so that
//! each is probed by exactly one shard for any N and after a reload, and `location`
//! labels every series.

use crate::support::daemon as daemon_support;

use std::collections::BTreeMap;
use std::time::Duration;

use daemon_support::*;
use llmprobe::config::{Overrides, Shard};

/// `n` targets on a closed port (nothing is answered: only who probes what matters),
/// the first with five static replicas.
fn config(n: usize) -> String {
    let mut text = String::from("targets:\n");
    for i in 0..n {
        text.push_str(&format!(
            "  - {{name: t{i}, base_url: 'http://127.0.0.1:9', model: m, rate: 1/h}}\n"
        ));
    }
    text.push_str(
        "  - name: fleet\n    base_url: http://127.0.0.1:9\n    model: m\n    rate: 1/h\n    replica_rate: 1/h\n    replicas_from:\n      static: [http://127.0.0.2:9, http://127.0.0.3:9, http://127.0.0.4:9, http://127.0.0.5:9, http://127.0.0.6:9]\n",
    );
    text
}

/// The front doors and replicas a daemon probes, from its series.
fn probed(s: &[Sample]) -> (Vec<String>, Vec<String>) {
    let fronts = s
        .iter()
        .filter(|x| x.name == "llmprobe_probe_rate_per_second")
        .filter_map(|x| x.labels.get("target").cloned())
        .collect();
    let replicas = s
        .iter()
        .filter(|x| x.name == "llmprobe_replica_info")
        .filter_map(|x| x.labels.get("replica").cloned())
        .collect();
    (fronts, replicas)
}

/// Every front door and replica counted once per shard that probes it.
async fn owners(config: &str, count: u32, want_replicas: usize) -> BTreeMap<String, usize> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut daemons = Vec::new();
    for index in 0..count {
        let shard = Shard::new(index, count).unwrap();
        let d = TestDaemon::start_full(
            config,
            Overrides {
                shard: Some(shard),
                ..Overrides::default()
            },
        )
        .await;
        daemons.push(d);
    }
    // Replicas appear after the first look; wait until all shards together show them.
    let scrapes = wait_for(Duration::from_secs(30), || async {
        let mut all = Vec::new();
        for d in &daemons {
            all.push(scrape(d.addr()).await);
        }
        let replicas: usize = all.iter().map(|s| probed(s).1.len()).sum();
        (replicas >= want_replicas).then_some(all)
    })
    .await;
    for (index, s) in scrapes.iter().enumerate() {
        let i = index.to_string();
        let c = count.to_string();
        assert_eq!(
            value(s, "llmprobe_shard_info", &[("index", &i), ("count", &c)]),
            Some(1.0)
        );
        let (fronts, replicas) = probed(s);
        for name in fronts.into_iter().chain(replicas) {
            *seen.entry(name).or_default() += 1;
        }
    }
    for d in daemons {
        d.shutdown().await.unwrap();
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_target_and_replica_is_probed_by_exactly_one_shard() {
    let text = config(12);
    let everything = |n: usize| -> Vec<String> {
        (0..n)
            .map(|i| format!("t{i}"))
            .chain(["fleet".to_string()])
            .chain((2..=6).map(|i| format!("127.0.0.{i}:9")))
            .collect()
    };
    for count in 1..=5 {
        let seen = owners(&text, count, 5).await;
        let mut want = everything(12);
        want.sort();
        assert_eq!(
            seen.keys().cloned().collect::<Vec<_>>(),
            want,
            "{count} shards"
        );
        assert!(seen.values().all(|&n| n == 1), "{count} shards: {seen:?}");
    }
    // After a reload that adds targets, still exactly once.
    let d0 = TestDaemon::start_full(
        &text,
        Overrides {
            shard: Some(Shard::new(0, 3).unwrap()),
            ..Overrides::default()
        },
    )
    .await;
    let d1 = TestDaemon::start_full(
        &text,
        Overrides {
            shard: Some(Shard::new(1, 3).unwrap()),
            ..Overrides::default()
        },
    )
    .await;
    let d2 = TestDaemon::start_full(
        &text,
        Overrides {
            shard: Some(Shard::new(2, 3).unwrap()),
            ..Overrides::default()
        },
    )
    .await;
    for d in [&d0, &d1, &d2] {
        std::fs::write(d.path(), config(20)).unwrap();
        d.reload().await.unwrap();
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let all = wait_for(Duration::from_secs(30), || async {
        let mut all = Vec::new();
        for d in [&d0, &d1, &d2] {
            all.push(scrape(d.addr()).await);
        }
        let fronts: usize = all.iter().map(|s| probed(s).0.len()).sum();
        let replicas: usize = all.iter().map(|s| probed(s).1.len()).sum();
        (fronts == 21 && replicas == 5).then_some(all)
    })
    .await;
    for s in &all {
        let (fronts, replicas) = probed(s);
        for name in fronts.into_iter().chain(replicas) {
            *seen.entry(name).or_default() += 1;
        }
    }
    let mut want = everything(20);
    want.sort();
    assert_eq!(seen.keys().cloned().collect::<Vec<_>>(), want);
    assert!(seen.values().all(|&n| n == 1), "{seen:?}");
    for d in [d0, d1, d2] {
        d.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_location_labels_every_series_and_shows_in_the_config() {
    let text = format!("location: eu-west-1\n{}", config(2));
    let d = TestDaemon::start(&text).await;
    let s = scrape(d.addr()).await;
    let ours: Vec<&Sample> = s
        .iter()
        .filter(|x| x.name.starts_with("llmprobe_"))
        .collect();
    assert!(ours.len() > 50, "{}", ours.len());
    for x in &ours {
        assert_eq!(
            x.labels.get("location").map(String::as_str),
            Some("eu-west-1"),
            "{}",
            x.name
        );
    }
    let (_, shown) = get(&format!("http://{}/config", d.addr())).await;
    assert!(shown.contains("location: eu-west-1"), "{shown}");
    d.shutdown().await.unwrap();

    // --location wins over the file's, in the series and in /config.
    let over = Overrides {
        location: Some("us-east-2".into()),
        ..Overrides::default()
    };
    let d = TestDaemon::start_full(&text, over).await;
    let s = scrape(d.addr()).await;
    assert!(
        s.iter()
            .filter(|x| x.name.starts_with("llmprobe_"))
            .all(|x| x.labels.get("location").map(String::as_str) == Some("us-east-2"))
    );
    let (_, shown) = get(&format!("http://{}/config", d.addr())).await;
    assert!(shown.contains("location: us-east-2"), "{shown}");
    d.shutdown().await.unwrap();

    // Without one, no label at all.
    let d = TestDaemon::start(&config(1)).await;
    let s = scrape(d.addr()).await;
    assert!(s.iter().all(|x| !x.labels.contains_key("location")));
    d.shutdown().await.unwrap();
}
