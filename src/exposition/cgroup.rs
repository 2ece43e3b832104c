//! CPU throttling of the process' cgroup, read from `cpu.stat` at each scrape: a
//! throttled prober timestamps late, so its latencies grow for reasons of its own.
//! cgroup v2 (`nr_periods`, `nr_throttled`, `throttled_usec`) and v1 (`throttled_time`
//! in nanoseconds). Where the file cannot be read, or the cgroup has no CPU limit (no
//! `nr_periods`), the series are absent: never an error.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Counter, IntCounter, Opts};

use super::families::{self as f, Family};

/// What `cpu.stat` says about throttling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throttling {
    pub periods: u64,
    pub throttled_periods: u64,
    pub throttled_seconds: f64,
}

/// Parses a `cpu.stat` file of either cgroup version; `None` without the CFS counters.
pub fn parse_cpu_stat(text: &str) -> Option<Throttling> {
    let fields: HashMap<&str, u64> = text
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k, v.trim().parse().ok()?))
        })
        .collect();
    let throttled_seconds = match (fields.get("throttled_usec"), fields.get("throttled_time")) {
        (Some(us), _) => *us as f64 / 1e6,
        (None, Some(ns)) => *ns as f64 / 1e9,
        (None, None) => return None,
    };
    Some(Throttling {
        periods: *fields.get("nr_periods")?,
        throttled_periods: *fields.get("nr_throttled")?,
        throttled_seconds,
    })
}

/// Where the `cpu.stat` of the cgroup named in `/proc/self/cgroup` (`proc_cgroup`'s
/// text) may be, under the cgroup mount `root`, most likely first: v2's unified line
/// `0::/path` (at the root, or under `unified/` on hybrid hosts), then v1's `cpu`
/// controller. Inside a cgroup namespace the path is `/`, the mount's root.
pub fn cpu_stat_candidates(proc_cgroup: &str, root: &Path) -> Vec<PathBuf> {
    let mut v2 = Vec::new();
    let mut v1 = Vec::new();
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        if id == "0" && controllers.is_empty() {
            v2.push(root.join(rel).join("cpu.stat"));
            v2.push(root.join("unified").join(rel).join("cpu.stat"));
        } else if controllers.split(',').any(|c| c == "cpu") {
            v1.push(root.join(controllers).join(rel).join("cpu.stat"));
        }
    }
    v2.extend(v1);
    v2
}

/// This process' throttling now: the first candidate file with CFS counters. The
/// cgroup is looked up at each read, since a process can be moved to another.
fn read_self() -> Option<Throttling> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    cpu_stat_candidates(&cgroups, Path::new("/sys/fs/cgroup"))
        .into_iter()
        .find_map(|p| parse_cpu_stat(&std::fs::read_to_string(p).ok()?))
}

/// Collects the throttling families at each scrape.
pub struct CgroupCollector {
    /// A fixed file (tests); `None`: this process' cgroup.
    path: Option<PathBuf>,
    descs: Vec<Desc>,
}

const FAMILIES: [Family; 3] = [
    f::CGROUP_THROTTLED_SECONDS,
    f::CGROUP_THROTTLED_PERIODS,
    f::CGROUP_PERIODS,
];

impl CgroupCollector {
    /// The collector of this process' cgroup.
    pub fn for_self() -> prometheus::Result<Self> {
        Self::new(None)
    }

    fn new(path: Option<PathBuf>) -> prometheus::Result<Self> {
        let descs = FAMILIES
            .iter()
            .map(|f| Desc::new(f.name.into(), f.help.into(), Vec::new(), HashMap::new()))
            .collect::<prometheus::Result<_>>()?;
        Ok(CgroupCollector { path, descs })
    }

    fn read(&self) -> Option<Throttling> {
        match &self.path {
            Some(p) => parse_cpu_stat(&std::fs::read_to_string(p).ok()?),
            None => read_self(),
        }
    }
}

impl Collector for CgroupCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let Some(t) = self.read() else {
            return Vec::new();
        };
        let opts = |f: &Family| Opts::new(f.name, f.help);
        let mut out = Vec::new();
        if let Ok(c) = Counter::with_opts(opts(&FAMILIES[0])) {
            c.inc_by(t.throttled_seconds);
            out.extend(c.collect());
        }
        for (family, v) in [
            (&FAMILIES[1], t.throttled_periods),
            (&FAMILIES[2], t.periods),
        ] {
            if let Ok(c) = IntCounter::with_opts(opts(family)) {
                c.inc_by(v);
                out.extend(c.collect());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_cgroup_versions() {
        let v2 = "usage_usec 100\nnr_periods 40\nnr_throttled 7\nthrottled_usec 1500000\n";
        assert_eq!(
            parse_cpu_stat(v2),
            Some(Throttling {
                periods: 40,
                throttled_periods: 7,
                throttled_seconds: 1.5
            })
        );
        let v1 = "nr_periods 10\nnr_throttled 2\nthrottled_time 250000000\n";
        assert_eq!(parse_cpu_stat(v1).map(|t| t.throttled_seconds), Some(0.25));
        // The root cgroup (no CPU limit) has no CFS counters.
        assert_eq!(parse_cpu_stat("usage_usec 1\nuser_usec 1\n"), None);
        assert_eq!(parse_cpu_stat(""), None);
    }

    #[test]
    fn finds_the_cgroup_file() {
        let root = Path::new("/sys/fs/cgroup");
        assert_eq!(
            cpu_stat_candidates("0::/kubepods/pod1/c1\n", root),
            [
                root.join("kubepods/pod1/c1/cpu.stat"),
                root.join("unified/kubepods/pod1/c1/cpu.stat")
            ]
        );
        // A hybrid host: the unified line comes first, the v1 cpu controller after.
        assert_eq!(
            cpu_stat_candidates("4:memory:/x\n3:cpu,cpuacct:/docker/abc\n0::/\n", root),
            [
                root.join("cpu.stat"),
                root.join("unified/cpu.stat"),
                root.join("cpu,cpuacct/docker/abc/cpu.stat")
            ]
        );
        assert!(cpu_stat_candidates("garbage", root).is_empty());
    }

    #[test]
    fn exports_what_the_file_says_and_nothing_when_it_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cpu.stat");
        std::fs::write(&path, "nr_periods 9\nnr_throttled 3\nthrottled_usec 20\n").unwrap();
        let c = CgroupCollector::new(Some(path.clone())).unwrap();
        let families = c.collect();
        assert_eq!(families.len(), 3);
        assert_eq!(families[1].get_metric()[0].get_counter().value(), 3.0);
        std::fs::remove_file(&path).unwrap();
        assert!(c.collect().is_empty());
    }
}
