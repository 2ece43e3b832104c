//! The model-list kind's config: a scenario's `model_list:` block (its type is the
//! schema's) planned.

use std::time::Duration;

use crate::config::schema::Scenario;
use crate::yaml_locate::Path;

/// A model-list scenario, checked: its name and its interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelListPlan {
    pub scenario: String,
    pub every: Duration,
}

/// Plans model-list scenario `s` at `sp`.
pub fn plan(s: &Scenario, sp: &Path) -> Result<ModelListPlan, (Path, String)> {
    let at = sp.key("model_list");
    let Some(m) = &s.model_list else {
        return Err((at, "kind: model_list needs a model_list: block".into()));
    };
    let only = Scenario {
        name: s.name.clone(),
        kind: s.kind,
        model_list: s.model_list.clone(),
        ..Scenario::default()
    };
    if *s != only {
        return Err((
            at,
            "a model_list scenario reads the endpoint's model list: it takes only name, kind and model_list".into(),
        ));
    }
    if m.every.is_zero() {
        return Err((at.key("every"), "every must be greater than 0".into()));
    }
    Ok(ModelListPlan {
        scenario: s.name.clone(),
        every: m.every,
    })
}
