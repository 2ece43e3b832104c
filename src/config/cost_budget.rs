//! `budget_per_day:` held to what the target's probes are expected to spend: each probe
//! scenario's rate × a day × one arrival's dollars at the target's `price:`. An arrival
//! of a conversation of N turns sends every earlier exchange again: turn k carries
//! k × input_tokens + (k − 1) × output_tokens of prompt. Lengths are the scenario's
//! configured ones (what the token budget also estimates by).

use super::ScenarioPlan;
use crate::exposition::TokenPrice;
use crate::yaml_locate::Path;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Turns;
    use crate::schedule::{ThinkDist, ThinkTime};

    fn scenario(rate_hz: f64, input: u32, output: u32, turns: u32) -> ScenarioPlan {
        let plan = crate::config::plan::load_str(
            "targets: [{name: t, base_url: 'http://127.0.0.1:1', model: m}]",
            "t.yaml",
        )
        .unwrap();
        ScenarioPlan {
            rate_hz,
            input_tokens: input,
            output_tokens: output,
            turns: (turns > 1).then_some(Turns {
                count: turns,
                think: ThinkTime {
                    mean: std::time::Duration::from_secs(1),
                    dist: ThinkDist::Exponential,
                },
            }),
            ..plan.targets[0].scenarios[0].clone()
        }
    }

    #[test]
    fn a_conversation_resends_its_history() {
        // Turns 1..3 send 100, 210 and 320 prompt tokens; 10 output tokens each.
        assert_eq!(
            tokens_per_arrival(&scenario(1.0, 100, 10, 3)),
            (630.0, 30.0)
        );
        assert_eq!(
            tokens_per_arrival(&scenario(1.0, 100, 10, 1)),
            (100.0, 10.0)
        );
    }

    #[test]
    fn a_day_of_probes_at_their_price() {
        let price = TokenPrice {
            input_per_million: 3.0,
            output_per_million: 15.0,
        };
        // One probe a minute of 1000 + 100 tokens: 1440 × $0.0045.
        let s = [scenario(1.0 / 60.0, 1000, 100, 1)];
        assert!((expected_per_day(&s, &price) - 6.48).abs() < 1e-9);
        let path = Path::root().key("targets").index(0);
        assert!(check(Some(6.48 + 1e-6), Some(&price), &s, &path).is_ok());
        let (at, msg) = check(Some(6.0), Some(&price), &s, &path).unwrap_err();
        assert_eq!(at, path.key("budget_per_day"));
        assert!(
            msg.starts_with("the probes are expected to spend $6.48 per day"),
            "{msg}"
        );
        assert!(check(None, Some(&price), &s, &path).is_ok());
    }
}
