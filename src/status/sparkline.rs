//! Inline SVG sparklines for the status page: a polyline per run of known values,
//! scaled from zero to the series' maximum. No script, no external asset.

use std::fmt::Write as _;

const WIDTH: f64 = 180.0;
const HEIGHT: f64 = 18.0;

/// One sparkline of `values` (oldest first; `None` leaves a gap). `label` names it for
/// screen readers and as the hover title, with the last known value.
pub fn sparkline(values: &[Option<f64>], label: &str, class: &str) -> String {
    let max = values
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let step = WIDTH / (values.len().max(2) - 1) as f64;
    let mut runs: Vec<String> = Vec::new();
    let mut run = String::new();
    for (i, v) in values.iter().enumerate() {
        match v.filter(|v| v.is_finite()) {
            Some(v) => {
                let y = if max > 0.0 {
                    HEIGHT - 1.0 - (v / max) * (HEIGHT - 2.0)
                } else {
                    HEIGHT - 1.0
                };
                let _ = write!(run, "{:.1},{:.1} ", i as f64 * step, y);
            }
            None if !run.is_empty() => runs.push(std::mem::take(&mut run)),
            None => {}
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    let mut svg = format!(
        "<svg class=\"spark {class}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" \
         height=\"{HEIGHT}\" role=\"img\" aria-label=\"{label}\"><title>{label}</title>\
         <line x1=\"0\" y1=\"{b}\" x2=\"{WIDTH}\" y2=\"{b}\" class=\"base\"/>",
        b = HEIGHT - 0.5
    );
    for r in runs {
        // A single point still shows as a dot.
        let points = if r.trim().contains(' ') {
            r.trim().to_string()
        } else {
            let (x, y) = r.trim().split_once(',').unwrap_or(("0", "0"));
            format!("{x},{y} {x},{y}")
        };
        let _ = write!(
            svg,
            "<polyline points=\"{points}\" fill=\"none\" stroke=\"currentColor\" \
             stroke-width=\"1.5\" stroke-linecap=\"round\"/>"
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_split_the_line_and_values_scale_to_the_box() {
        let svg = sparkline(&[Some(1.0), Some(2.0), None, Some(4.0)], "TTFT p99", "ttft");
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("aria-label=\"TTFT p99\""));
        // The maximum touches the top (y = 1), zero would sit on the base line.
        assert!(svg.contains("180.0,1.0"), "{svg}");
        assert!(svg.contains("0.0,13.0"), "a quarter of the maximum: {svg}");
        let empty = sparkline(&[None; 60], "x", "x");
        assert_eq!(empty.matches("<polyline").count(), 0);
        assert!(empty.starts_with("<svg") && empty.ends_with("</svg>"));
    }
}
