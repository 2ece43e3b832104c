//! `budget_per_day:` held to what the target's probes are expected to spend: each probe
//! scenario's rate × a day × one arrival's dollars at the target's `price:`. An arrival
//! of a conversation of N turns sends every earlier exchange again: turn k carries
//! k × input_tokens + (k − 1) × output_tokens of prompt. Lengths are the scenario's
//! configured ones (what the token budget also estimates by).

use super::ScenarioPlan;
use super::locate::Path;
use crate::exposition::TokenPrice;

const SECONDS_PER_DAY: f64 = 86_400.0;

/// The prompt and output tokens one arrival of `s` is expected to spend.
pub fn tokens_per_arrival(s: &ScenarioPlan) -> (f64, f64) {
    let (input, output) = (f64::from(s.input_tokens), f64::from(s.output_tokens));
    let n = f64::from(s.turns.map_or(1, |t| t.count));
    // Σ_{k=1..n} (k·input + (k−1)·output) of prompt, n·output of answers.
    let prompt = input * n * (n + 1.0) / 2.0 + output * n * (n - 1.0) / 2.0;
    (prompt, output * n)
}

/// Dollars per day the probe scenarios are expected to spend at `price`.
pub fn expected_per_day(scenarios: &[ScenarioPlan], price: &TokenPrice) -> f64 {
    scenarios
        .iter()
        .map(|s| {
            let (prompt, output) = tokens_per_arrival(s);
            let dollars =
                (prompt * price.input_per_million + output * price.output_per_million) / 1e6;
            s.rate_hz * SECONDS_PER_DAY * dollars
        })
        .sum()
}

/// The budget pays for the expected spend (checked after the scenarios are planned:
/// their rates are known then). `validate` already required a price with a budget.
pub fn check(
    budget: Option<f64>,
    price: Option<&TokenPrice>,
    scenarios: &[ScenarioPlan],
    path: &Path,
) -> Result<(), (Path, String)> {
    let (Some(budget), Some(price)) = (budget, price) else {
        return Ok(());
    };
    let expected = expected_per_day(scenarios, price);
    if expected > budget {
        return Err((
            path.key("budget_per_day"),
            format!(
                "the probes are expected to spend ${expected:.2} per day at their rates, \
                 lengths and price, more than the budget of ${budget:.2}: lower the rate or \
                 the lengths, or raise the budget"
            ),
        ));
    }
    Ok(())
}
