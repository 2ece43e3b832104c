//! A scenario's `golden:` resolved: the set loaded and checked (an error names the
//! set's file and line, at `golden.file`), the window and baseline in range. What may
//! go beside it is the probe's rule (`probe::PromptSource`).

use std::sync::Arc;

use super::schema::Scenario;
use crate::check::GoldenSet;
use crate::yaml_locate::Path;

/// Most answers a rolling window covers: a day of one probe a second is far more than
/// an interval needs, and the window is kept in memory.
pub const MAX_GOLDEN_WINDOW: u32 = 100_000;

/// A golden set ready to ask, with what its figures need.
#[derive(Debug, Clone)]
pub struct PlannedGolden {
    pub set: Arc<GoldenSet>,
    /// Judged answers the rolling accuracy covers.
    pub window: u32,
    /// The validated model's accuracy, when configured.
    pub baseline: Option<f64>,
}

impl PartialEq for PlannedGolden {
    /// Equal when the questions and rules are (a changed file restarts the scenario).
    fn eq(&self, other: &Self) -> bool {
        self.set.same_as(&other.set)
            && self.window == other.window
            && self.baseline == other.baseline
    }
}

/// The golden set of scenario `s` (at `path`), if it asks one.
pub fn plan_golden(s: &Scenario, path: &Path) -> Result<Option<PlannedGolden>, (Path, String)> {
    let Some(g) = &s.golden else {
        return Ok(None);
    };
    let at = path.key("golden");
    if !(1..=MAX_GOLDEN_WINDOW).contains(&g.window) {
        return Err((
            at.key("window"),
            format!("must be between 1 and {MAX_GOLDEN_WINDOW}"),
        ));
    }
    if let Some(b) = g.baseline
        && !(b.is_finite() && b > 0.0 && b <= 1.0)
    {
        return Err((
            at.key("baseline"),
            format!("must be an accuracy above 0 and at most 1, not {b}"),
        ));
    }
    let set = GoldenSet::load(&g.file).map_err(|e| (at.key("file"), e.to_string()))?;
    Ok(Some(PlannedGolden {
        set: Arc::new(set),
        window: g.window,
        baseline: g.baseline,
    }))
}

#[cfg(test)]
mod tests {
    use crate::config::plan::load_str;

    fn scenario(golden: &str) -> String {
        format!(
            "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    scenarios:\n      - name: qa\n        golden: {golden}\n"
        )
    }

    fn refused(golden: &str) -> String {
        load_str(&scenario(golden), "c.yaml")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_bad_golden_set_names_the_config_field_and_the_sets_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("qa.jsonl");
        std::fs::write(
            &file,
            "{\"question\": \"2+2?\", \"number\": 4}\n{\"question\": \"pi?\", \"number\": 3.14, \"tolerance\": -1}\n",
        )
        .unwrap();
        let err = refused(&format!("{{file: {}}}", file.display()));
        assert_eq!(
            err,
            format!(
                "c.yaml:7:24: targets[0].scenarios[0].golden.file: {}:2: tolerance must be 0 or more, not -1",
                file.display()
            )
        );
        assert!(
            refused("{file: builtin, window: 0}")
                .ends_with("golden.window: must be between 1 and 100000"),
        );
        assert!(
            refused("{file: builtin, baseline: 1.5}")
                .ends_with("golden.baseline: must be an accuracy above 0 and at most 1, not 1.5"),
        );
        let both = scenario("{file: builtin}") + "        prompt: hi\n";
        let err = load_str(&both, "c.yaml").unwrap_err().to_string();
        assert!(
            err.ends_with("golden: golden asks the golden set's questions: drop prompt"),
            "{err}"
        );
        let prefixed = scenario("{file: builtin}") + "        shared_prefix_tokens: 64\n";
        let err = load_str(&prefixed, "c.yaml").unwrap_err().to_string();
        assert!(
            err.ends_with(
                "golden: golden asks the golden set's questions: drop shared_prefix_tokens"
            ),
            "{err}"
        );
        let plan = load_str(&scenario("{file: builtin, baseline: 0.9}"), "c.yaml").unwrap();
        let g = plan.targets[0].scenarios[0].golden.as_ref().unwrap();
        assert_eq!((g.window, g.baseline), (200, Some(0.9)));
    }
}
