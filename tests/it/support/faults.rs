//! Holds a test's per-fault table to the mock's fault table (`llmprobe::mock::FAULT_NAMES`):
//! a table that says it covers every fault must have a row for each, and each row must
//! name one.

#![allow(dead_code)]

use llmprobe::mock::{FAULT_NAMES, FaultSpec};

/// What is wrong with `rows` (each as `--fault` takes it: `KIND[=PARAM][:P]`) against the
/// fault table: rows that name no fault, and faults without a row, one line each.
pub fn gaps(rows: &[&str]) -> Vec<String> {
    let mut covered = Vec::new();
    let mut out = Vec::new();
    for row in rows {
        match row.parse::<FaultSpec>() {
            Ok(spec) => covered.push(spec.kind.name()),
            Err(e) => out.push(format!("row {row:?} names no fault of the table: {e}")),
        }
    }
    for name in FAULT_NAMES {
        if !covered.contains(name) {
            out.push(format!("fault {name:?} has no row"));
        }
    }
    out
}

#[test]
fn gaps_name_a_missing_fault_and_a_row_of_no_fault() {
    let mut rows: Vec<&str> = FAULT_NAMES.to_vec();
    assert_eq!(gaps(&rows), Vec::<String>::new());
    // A parameter and a probability still name their fault.
    rows[0] = "stall_after_tokens=0:0.5";
    let first = FAULT_NAMES[0];
    rows.push("http_599");
    let g = gaps(&rows);
    assert_eq!(g.len(), 2, "{g:?}");
    assert!(g[0].starts_with("row \"http_599\" names no fault"), "{g:?}");
    assert_eq!(g[1], format!("fault {first:?} has no row"));
}
