//! `--plot FILE.svg`: the sweep curve. Three panels against offered request rate: TTFT
//! percentiles, TPOT and per-token ITL percentiles, and offered/achieved rate with
//! goodput, so the knee where latency climbs and goodput falls away is visible.
//! Drawn with `plotters` (SVG backend). Infinite rates have no x position and are left
//! out of the plot (they stay in the table and JSON).

use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;

use crate::report::{LatencyStats, RateReport, percentile_key};

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

type Series = (String, Vec<(f64, f64)>);

fn latency_series(
    reports: &[&RateReport],
    name: &str,
    pick: impl Fn(&RateReport) -> &LatencyStats,
    percentiles: &[f64],
) -> Vec<Series> {
    percentiles
        .iter()
        .map(|&p| {
            let points = reports
                .iter()
                .filter_map(|r| pick(r).percentile(p).map(|v| (r.rate.per_second(), v)))
                .collect();
            (format!("{name} {}", percentile_key(p)), points)
        })
        .collect()
}

/// Writes the sweep plot. Needs at least one finite rate.
pub fn write_svg(path: &Path, reports: &[RateReport], percentiles: &[f64]) -> anyhow::Result<()> {
    let finite: Vec<&RateReport> = reports
        .iter()
        .filter(|r| r.rate.per_second().is_finite())
        .collect();
    if finite.is_empty() {
        anyhow::bail!("--plot: no finite rate to plot (an `inf` rate has no x position)");
    }
    let ttft = latency_series(&finite, "TTFT", |r| &r.ttft_ms, percentiles);
    let mut decode = latency_series(&finite, "TPOT", |r| &r.tpot_ms, percentiles);
    decode.extend(latency_series(&finite, "ITL", |r| &r.itl_ms, percentiles));
    let rates: Vec<Series> = vec![
        (
            "offered".into(),
            finite
                .iter()
                .map(|r| {
                    (
                        r.rate.per_second(),
                        r.offered_rate.unwrap_or(r.rate.per_second()),
                    )
                })
                .collect(),
        ),
        (
            "achieved".into(),
            finite
                .iter()
                .map(|r| (r.rate.per_second(), r.achieved_rate))
                .collect(),
        ),
        (
            "goodput".into(),
            finite
                .iter()
                .map(|r| (r.rate.per_second(), r.goodput))
                .collect(),
        ),
    ];
    let x_max = finite
        .iter()
        .map(|r| r.rate.per_second())
        .fold(0.0_f64, f64::max)
        * 1.05;

    let root = SVGBackend::new(path, (1500, 500)).into_drawing_area();
    let draw = || -> Result<(), Box<dyn std::error::Error + '_>> {
        root.fill(&WHITE)?;
        let panels = root.split_evenly((1, 3));
        let specs: [(&str, &str, &Vec<Series>); 3] = [
            ("Time to first token", "ms", &ttft),
            ("Time per output token / ITL", "ms", &decode),
            ("Offered, achieved and good req/s", "req/s", &rates),
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
                .x_desc("request rate (req/s)")
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
    fn only_infinite_rates_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.svg");
        let err = write_svg(&path, &[sample_report(f64::INFINITY)], &[50.0]).unwrap_err();
        assert!(err.to_string().contains("no finite rate"));
    }
}
