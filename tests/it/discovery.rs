//! Replica discovery against real sources on loopback: an HTTP SD server on 127.0.0.1,
//! file_sd files replaced by rename while a refresher runs, and DNS A and SRV records
//! served by Debian's `dnsmasq` (skipped when it is not installed), reloaded with a
//! record removed and one added.

use std::net::UdpSocket;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use llmprobe::discovery::{
    Discoverer, DnsName, FileSd, HttpSd, LabelAllowList, Refresh, Refresher, ReplicaSet, Resolver,
    SetRules, SrvName,
};
use tokio::sync::mpsc;

use crate::support::dnsmasq::Dnsmasq;

/// A plain-HTTP client; reqwest needs a crypto provider installed even so.
fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

fn rules(allow: &[&str]) -> SetRules {
    SetRules::new(
        "http",
        LabelAllowList::new(allow.iter().copied()).unwrap(),
        64,
    )
    .unwrap()
}

fn hosts(set: &ReplicaSet) -> Vec<&str> {
    set.replicas.iter().map(|r| r.host_port.as_str()).collect()
}

/// An HTTP SD server whose answer (status, body) the test changes.
async fn sd_server(answer: Arc<Mutex<(u16, String)>>) -> String {
    let app = axum::Router::new().route(
        "/targets",
        axum::routing::get(move || {
            let (status, body) = answer.lock().unwrap().clone();
            async move { (axum::http::StatusCode::from_u16(status).unwrap(), body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/targets")
}

#[tokio::test]
async fn http_sd_reads_groups_and_keeps_the_last_good_set_on_a_bad_answer() {
    let body = r#"[{"targets": ["127.0.0.2:8000", "127.0.0.3:8000"], "labels": {"zone": "a", "pod": "x"}}]"#;
    let answer = Arc::new(Mutex::new((200, body.to_string())));
    let url = sd_server(answer.clone()).await;
    let sd = HttpSd::new(&url, http_client()).unwrap();
    let mut r = Refresher::new(Box::new(sd), rules(&["zone"]), Duration::from_secs(30));

    let Refresh::Changed(set) = r.refresh().await else {
        panic!("first look")
    };
    assert_eq!(hosts(&set), ["127.0.0.2:8000", "127.0.0.3:8000"]);
    assert_eq!(set.replicas[0].labels.len(), 1, "only the allowed label");
    assert_eq!(set.replicas[0].labels["zone"], "a");

    *answer.lock().unwrap() = (503, body.to_string());
    let Refresh::Failed(e) = r.refresh().await else {
        panic!("a 503")
    };
    assert_eq!(e.reason(), "http");
    assert!(e.to_string().contains("503"), "{e}");

    *answer.lock().unwrap() = (200, r#"{"targets": []}"#.to_string());
    let Refresh::Failed(e) = r.refresh().await else {
        panic!("bad JSON")
    };
    assert_eq!(e.reason(), "format", "{e}");
    assert_eq!(r.errors(), 2);
    assert_eq!(
        hosts(r.current().unwrap()),
        ["127.0.0.2:8000", "127.0.0.3:8000"]
    );

    *answer.lock().unwrap() = (200, r#"[{"targets": ["127.0.0.4:8000"]}]"#.to_string());
    let Refresh::Changed(set) = r.refresh().await else {
        panic!("recovered")
    };
    assert_eq!(hosts(&set), ["127.0.0.4:8000"]);
}

#[tokio::test]
async fn http_sd_refused_connection_is_an_error_not_a_panic() {
    // A port that was free a moment ago: nothing listens there.
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sd = HttpSd::new(&format!("http://127.0.0.1:{port}/targets"), http_client()).unwrap();
    let e = sd.find(Duration::from_secs(30)).await.unwrap_err();
    assert_eq!(e.reason(), "http", "{e}");
}

/// One version of the file_sd file: `n` targets on 127.0.0.`tag`, padded so that a
/// torn read would be likely if writes were not atomic.
fn version(tag: u8, n: u16) -> String {
    let targets: Vec<String> = (1..=n).map(|p| format!("\"127.0.0.{tag}:{p}\"")).collect();
    format!(
        "[{{\"targets\": [{}], \"labels\": {{\"pad\": \"{}\"}}}}]",
        targets.join(", "),
        "x".repeat(64 * 1024)
    )
}

fn replace_atomically(dir: &Path, text: &str) {
    let tmp = dir.join(".replicas.json.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, dir.join("replicas.json")).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_sd_sees_whole_versions_of_a_file_renamed_over_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    replace_atomically(dir.path(), &version(2, 40));
    let sd = FileSd::new(&format!("{}/*.json", dir.path().display())).unwrap();
    let refresher = Refresher::new(Box::new(sd), rules(&[]), Duration::from_secs(30));
    let (tx, mut rx) = mpsc::channel(16);
    let task = tokio::spawn(refresher.run(Duration::from_millis(2), tx));

    let writer_dir = dir.path().to_path_buf();
    let writer = std::thread::spawn(move || {
        for i in 0..300 {
            let (tag, n) = if i % 2 == 0 { (3, 50) } else { (2, 40) };
            replace_atomically(&writer_dir, &version(tag, n));
        }
        replace_atomically(&writer_dir, &version(4, 7));
    });

    // Every set handed on is one whole version; poll until the last one arrives.
    let mut changes = 0;
    loop {
        match rx.recv().await.expect("the refresher runs") {
            Refresh::Changed(set) => {
                changes += 1;
                assert!(!set.is_empty(), "a replaced file was missed while listed");
                let first = set.replicas[0].host_port.clone();
                let tag = first.split(':').next().unwrap().to_string();
                let want = match tag.as_str() {
                    "127.0.0.2" => 40,
                    "127.0.0.3" => 50,
                    "127.0.0.4" => 7,
                    other => panic!("unknown version {other}"),
                };
                assert_eq!(set.len(), want, "a torn read of version {tag}");
                assert_eq!(set.refused, 0);
                assert!(set.replicas.iter().all(|r| r.host_port.starts_with(&tag)));
                if tag == "127.0.0.4" {
                    break;
                }
            }
            Refresh::Failed(e) => panic!("a read of an atomically replaced file failed: {e}"),
            Refresh::Unchanged => {}
        }
    }
    writer.join().unwrap();
    eprintln!("file_sd: {changes} sets seen while the file was replaced 301 times");
    drop(rx);
    task.await.unwrap();
}

/// How many looks a DNS test waits for dnsmasq to start or reload: counted in looks, not
/// seconds, so a slow machine only makes each look slower. Far more than it ever needs.
const LOOKS: usize = 1200;

/// Refreshes until the set is `want`, while dnsmasq runs (it starts and reloads on its
/// own time): failures and other sets on the way are only waited out.
async fn until_set(r: &mut Refresher, dns: &mut Dnsmasq, want: &[&str]) {
    let mut last = String::new();
    for _ in 0..LOOKS {
        dns.assert_running();
        if let Refresh::Failed(e) = r.refresh().await {
            last = e.to_string();
        }
        if r.current().is_some_and(|set| hosts(set) == want) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "never saw {want:?}; have {:?}, last error {last:?}",
        r.current()
    );
}

const HOSTS: &str = "127.0.0.2 replicas.test\n127.0.0.3 replicas.test\n127.0.0.4 replicas.test\n\
                     127.0.0.2 r1.test\n127.0.0.3 r2.test\n";
const SRV: &[&str] = &[
    "_http._tcp.replicas.test,r1.test,8001",
    "_http._tcp.replicas.test,r2.test,8002",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_finds_every_a_record_and_follows_a_reload() {
    let Some(bin) = Dnsmasq::binary() else { return };
    let mut dns = Dnsmasq::start(&bin, HOSTS, SRV);
    let resolver = Resolver::new(Some(&dns.server())).unwrap();
    let name = DnsName::new("replicas.test.", 8000, resolver).unwrap();
    let mut r = Refresher::new(Box::new(name), rules(&[]), Duration::from_secs(30));

    until_set(
        &mut r,
        &mut dns,
        &["127.0.0.2:8000", "127.0.0.3:8000", "127.0.0.4:8000"],
    )
    .await;
    let errors_before = r.errors();

    // 127.0.0.3 leaves, 127.0.0.5 joins.
    dns.reload("127.0.0.2 replicas.test\n127.0.0.4 replicas.test\n127.0.0.5 replicas.test\n");
    until_set(
        &mut r,
        &mut dns,
        &["127.0.0.2:8000", "127.0.0.4:8000", "127.0.0.5:8000"],
    )
    .await;
    assert!(matches!(r.refresh().await, Refresh::Unchanged));
    assert_eq!(r.errors(), errors_before, "a reload is not an error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn srv_pairs_each_target_address_with_its_record_port() {
    let Some(bin) = Dnsmasq::binary() else { return };
    let mut dns = Dnsmasq::start(&bin, HOSTS, SRV);
    let resolver = Resolver::new(Some(&dns.server())).unwrap();
    let name = SrvName::new("_http._tcp.replicas.test.", resolver).unwrap();
    let mut r = Refresher::new(Box::new(name), rules(&[]), Duration::from_secs(30));

    until_set(&mut r, &mut dns, &["127.0.0.2:8001", "127.0.0.3:8002"]).await;

    // r2.test moves to 127.0.0.6: the old address leaves, the new one joins.
    dns.reload("127.0.0.2 r1.test\n127.0.0.6 r2.test\n");
    until_set(&mut r, &mut dns, &["127.0.0.2:8001", "127.0.0.6:8002"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_failure_keeps_the_last_good_set() {
    let Some(bin) = Dnsmasq::binary() else { return };
    let mut dns = Dnsmasq::start(&bin, HOSTS, SRV);
    let resolver = Resolver::new(Some(&dns.server())).unwrap();
    let name = DnsName::new("replicas.test.", 8000, resolver).unwrap();
    let mut r = Refresher::new(Box::new(name), rules(&[]), Duration::from_secs(30));
    until_set(
        &mut r,
        &mut dns,
        &["127.0.0.2:8000", "127.0.0.3:8000", "127.0.0.4:8000"],
    )
    .await;

    // The name is gone: the lookup fails, the set stays.
    dns.reload("127.0.0.2 other.test\n");
    let mut failure = None;
    for _ in 0..LOOKS {
        dns.assert_running();
        if let Refresh::Failed(e) = r.refresh().await {
            failure = Some(e);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let e = failure.expect("the lookup never failed after the name was removed");
    assert_eq!(e.reason(), "dns", "{e}");
    assert!(e.to_string().contains("replicas.test"), "{e}");
    assert!(r.errors() >= 1);
    assert_eq!(
        hosts(r.current().unwrap()),
        ["127.0.0.2:8000", "127.0.0.3:8000", "127.0.0.4:8000"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_takes_ipv6_for_an_ipv6_only_name_and_ipv4_for_a_dual_stack_one() {
    let Some(bin) = Dnsmasq::binary() else { return };
    let hosts_text = "::1 v6.test\n127.0.0.2 both.test\n::1 both.test\n";
    let mut dns = Dnsmasq::start(&bin, hosts_text, &[]);
    let resolver = Resolver::new(Some(&dns.server())).unwrap();
    let v6 = DnsName::new("v6.test.", 8000, resolver.clone()).unwrap();
    let mut r = Refresher::new(Box::new(v6), rules(&[]), Duration::from_secs(30));
    until_set(&mut r, &mut dns, &["[::1]:8000"]).await;
    let set = r.current().unwrap();
    assert_eq!(set.url(&set.replicas[0]), "http://[::1]:8000");

    // One pod with both families is one replica.
    let both = DnsName::new("both.test.", 8000, resolver).unwrap();
    let mut r = Refresher::new(Box::new(both), rules(&[]), Duration::from_secs(30));
    until_set(&mut r, &mut dns, &["127.0.0.2:8000"]).await;
}
