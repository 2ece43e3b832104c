//! `--plot FILE.svg`: the sweep curve. Three panels against the configured request rate:
//! TTFT percentiles, TPOT and per-token ITL percentiles, and offered/achieved rate with
//! goodput, so the knee where latency climbs and goodput falls away is visible. Rows of
//! one rate at several prefix hit ratios are drawn against the hit ratio instead, the
//! third panel then the cache-hit share the server reported. Drawn with `plotters` (SVG
//! backend). Infinite rates have no x position and are left out of a rate curve (they
//! stay in the table and JSON).

use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;

use crate::report::{LatencyStats, RateReport, hit_ratios_vary, percentile_key};

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

type Series = (String, Vec<(f64, f64)>);

/// What the x axis is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Axis {
    /// The configured request rate (a rate sweep).
    Rate,
    /// The prefix hit ratio (one rate at several `--prefix-hit-ratio` values).
    HitRatio,
}

impl Axis {
    /// The axis of these rows: the hit ratio when they differ in it and not in rate.
    fn of(reports: &[RateReport]) -> anyhow::Result<Axis> {
        if !hit_ratios_vary(reports) {
            return Ok(Axis::Rate);
        }
        if reports.windows(2).any(|w| w[0].rate != w[1].rate) {
            anyhow::bail!(
                "--plot: the rows differ in rate and in prefix hit ratio; one curve has one x axis"
            );
        }
        Ok(Axis::HitRatio)
    }

    fn x(self, r: &RateReport) -> Option<f64> {
        match self {
            Axis::Rate => Some(r.rate.per_second()).filter(|x| x.is_finite()),
            Axis::HitRatio => r.prefix_hit_ratio,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Axis::Rate => "request rate (req/s)",
            Axis::HitRatio => "prefix hit ratio (share of requests with the prefix)",
        }
    }
}

fn latency_series(
    reports: &[(f64, &RateReport)],
    name: &str,
    pick: impl Fn(&RateReport) -> &LatencyStats,
    percentiles: &[f64],
) -> Vec<Series> {
    percentiles
        .iter()
        .map(|&p| {
            let points = reports
                .iter()
                .filter_map(|&(x, r)| pick(r).percentile(p).map(|v| (x, v)))
                .collect();
            (format!("{name} {}", percentile_key(p)), points)
        })
        .collect()
}

/// One series of a figure each row has (or not).
fn series(
    name: &str,
    points: &[(f64, &RateReport)],
    y: impl Fn(&RateReport) -> Option<f64>,
) -> Series {
    let pts = points
        .iter()
        .filter_map(|&(x, r)| Some((x, y(r)?)))
        .collect();
    (name.into(), pts)
}

/// The third panel: offered, achieved and good requests per second against the rate;
/// the cache-hit share against the hit ratio.
fn third_panel(
    axis: Axis,
    points: &[(f64, &RateReport)],
) -> (&'static str, &'static str, Vec<Series>) {
    match axis {
        Axis::Rate => (
            "Offered, achieved and good req/s",
            "req/s",
            vec![
                series("offered", points, |r| {
                    Some(r.offered_rate.unwrap_or(r.rate.per_second()))
                }),
                series("achieved", points, |r| Some(r.achieved_rate)),
                series("goodput", points, |r| Some(r.goodput)),
            ],
        ),
        Axis::HitRatio => (
            "Cache-hit share the server reported",
            "%",
            vec![series("cache-hit share", points, |r| {
                r.cache_hit_share.map(|s| s * 100.0)
            })],
        ),
    }
}

/// Writes the sweep plot. Needs at least one point on the x axis.
pub fn write_svg(path: &Path, reports: &[RateReport], percentiles: &[f64]) -> anyhow::Result<()> {
    let axis = Axis::of(reports)?;
    let mut points: Vec<(f64, &RateReport)> = reports
        .iter()
        .filter_map(|r| Some((axis.x(r)?, r)))
        .collect();
    // Lines join the points along the axis, whatever order the rows ran in.
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    if points.is_empty() {
        anyhow::bail!("--plot: no finite rate to plot (an `inf` rate has no x position)");
    }
    let ttft = latency_series(&points, "TTFT", |r| &r.ttft_ms, percentiles);
    let mut decode = latency_series(&points, "TPOT", |r| &r.tpot_ms, percentiles);
    decode.extend(latency_series(&points, "ITL", |r| &r.itl_ms, percentiles));
    let (third_title, third_unit, third) = third_panel(axis, &points);
    let x_max = points.iter().map(|p| p.0).fold(0.0_f64, f64::max).max(1e-3) * 1.05;

    let root = SVGBackend::new(path, (1500, 500)).into_drawing_area();
    let draw = || -> Result<(), Box<dyn std::error::Error + '_>> {
        root.fill(&WHITE)?;
        let panels = root.split_evenly((1, 3));
        let specs: [(&str, &str, &Vec<Series>); 3] = [
            ("Time to first token", "ms", &ttft),
            ("Time per output token / ITL", "ms", &decode),
            (third_title, third_unit, &third),
        ];
        for (area, (title, unit, series)) in panels.iter().zip(specs) {
            let y_max = series
                .iter()
                .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
                .fold(0.0_f64, f64::max)
                .max(1e-3)
                * 1.1;
            let mut chart = ChartBuilder::on(area)
                .caption(title, ("sans-serif", 20))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
            chart
                .configure_mesh()
                .light_line_style(WHITE)
                .x_desc(axis.label())
                .y_desc(unit)
                .draw()?;
            for (i, (name, pts)) in series.iter().enumerate() {
                let color = COLORS[i % COLORS.len()];
                let dashed = name == "offered";
                let style = if dashed {
                    color.mix(0.4).stroke_width(1)
                } else {
                    color.stroke_width(2)
                };
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), style))?
                    .label(name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                    });
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK.mix(0.3))
                .draw()?;
        }
        root.present()?;
        Ok(())
    };
    draw()
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("cannot draw the plot to {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_support::sample_report;

    #[test]
    fn draws_an_svg_with_every_series() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sweep.svg");
        let reports: Vec<RateReport> = [2.0, 8.0, 32.0].into_iter().map(sample_report).collect();
        write_svg(&path, &reports, &[50.0, 99.0]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"));
        for label in [
            "TTFT p50", "TTFT p99", "TPOT p99", "ITL p50", "goodput", "achieved", "offered",
        ] {
            assert!(svg.contains(label), "missing {label}");
        }
    }

    #[test]
    fn one_rate_at_several_hit_ratios_is_drawn_against_the_ratio() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hits.svg");
        let at = |h: f64| {
            let mut r = sample_report(8.0);
            r.prefix_hit_ratio = Some(h);
            r.cache_hit_share = Some(h * 0.75);
            r
        };
        let reports = [at(0.0), at(0.5), at(1.0)];
        assert_eq!(Axis::of(&reports).unwrap(), Axis::HitRatio);
        write_svg(&path, &reports, &[50.0, 99.0]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        for label in ["TTFT p99", "prefix hit ratio", "cache-hit share"] {
            assert!(svg.contains(label), "missing {label}");
        }
        // One ratio is a rate curve, as without it.
        assert_eq!(Axis::of(&reports[..1]).unwrap(), Axis::Rate);
        let mut mixed = reports.to_vec();
        mixed[1].rate = crate::rate::Rate::new(16.0).unwrap();
        assert!(
            write_svg(&path, &mixed, &[50.0])
                .unwrap_err()
                .to_string()
                .contains("one curve has one x axis")
        );
    }

    #[test]
    fn only_infinite_rates_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.svg");
        let err = write_svg(&path, &[sample_report(f64::INFINITY)], &[50.0]).unwrap_err();
        assert!(err.to_string().contains("no finite rate"));
    }
}
