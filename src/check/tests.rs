use super::*;
use crate::record::CheckKind;

fn compile(spec: CheckSpec) -> Checks {
    spec.compile().unwrap()
}

fn answer(text: &str) -> Answer<'_> {
    Answer {
        text,
        truncated: false,
        model: Some("m"),
        finish_reason: Some("stop"),
        output_tokens: 5,
        tool_calls: &[],
        top_document: None,
    }
}

fn verdicts(c: &Checks, a: &Answer<'_>) -> Vec<(CheckKind, bool)> {
    c.judge(a, []).iter().map(|r| (r.check, r.passed)).collect()
}

#[test]
fn regexes_pass_and_fail() {
    let c = compile(CheckSpec {
        expect_regex: Some(r"\b4\b".into()),
        expect_not_regex: Some(r"<\|im_start\|>".into()),
        ..CheckSpec::default()
    });
    assert_eq!(
        verdicts(&c, &answer("2 + 2 = 4")),
        [
            (CheckKind::ExpectRegex, true),
            (CheckKind::ExpectNotRegex, true)
        ]
    );
    let r = c.judge(&answer("five<|im_start|>user"), []);
    assert!(!r[0].passed && !r[1].passed);
    assert_eq!(
        r[1].reason.as_deref(),
        Some(r"the answer matches /<\|im_start\|>/ at byte 4")
    );
    assert_eq!(r[1].excerpt.as_deref(), Some("five<|im_start|>user"));
    assert!(c.needs_text());
}

#[test]
fn json_schema_validates_and_is_bounded() {
    let schema = serde_json::json!({"type": "object", "required": ["answer"],
        "properties": {"answer": {"type": "integer"}}});
    let c = compile(CheckSpec {
        expect_json_schema: Some(SchemaSource::Inline(schema)),
        ..CheckSpec::default()
    });
    let judge = |text: &str| c.judge(&answer(text), []).remove(0);
    assert!(judge(r#" {"answer": 4} "#).passed);
    let r = judge(r#"{"answer": "four"}"#);
    assert!(r.reason.unwrap().contains("at /answer"));
    assert!(
        judge(r#"{"answer": 4"#)
            .reason
            .unwrap()
            .contains("not JSON")
    );
    let deep = "[".repeat(100_000);
    assert!(judge(&deep).reason.unwrap().contains("deeper than 64"));
    let mut long = answer(r#"{"answer": 4}"#);
    long.truncated = true;
    assert!(
        c.judge(&long, [])[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("not validated")
    );
}

#[test]
fn json_depth_skips_strings() {
    assert!(json_depth_ok(r#"{"a": "[[[[[[[[\"[[[["}"#, 2));
    assert!(!json_depth_ok("[[[", 2));
    assert!(json_depth_ok("[[]][[]]", 2));
}

#[test]
fn model_finish_reason_and_tokens() {
    let c = compile(CheckSpec {
        expect_model: Some(ModelMatch::Exact("m".into())),
        expect_finish_reason: Some("stop".into()),
        min_output_tokens: Some(5),
        ..CheckSpec::default()
    });
    assert!(c.judge(&answer("x"), []).iter().all(|r| r.passed));
    assert!(!c.needs_text());
    let wrong = Answer {
        model: Some("other"),
        finish_reason: Some("length"),
        output_tokens: 4,
        ..answer("x")
    };
    let reasons: Vec<String> = c
        .judge(&wrong, [])
        .into_iter()
        .map(|r| r.reason.unwrap())
        .collect();
    assert_eq!(
        reasons,
        [
            r#"model "other" is not "m""#,
            r#"finish reason "length" is not "stop""#,
            "4 output tokens, fewer than 5"
        ]
    );
    let re = compile(CheckSpec {
        expect_model: Some(ModelMatch::Regex {
            regex: "^gemma-3".into(),
        }),
        ..CheckSpec::default()
    });
    let g = Answer {
        model: Some("gemma-3-270m"),
        ..answer("")
    };
    assert!(re.judge(&g, [])[0].passed);
    assert!(!re.judge(&Answer { model: None, ..g }, [])[0].passed);
}

#[test]
fn repetition_scores_loops_high_and_prose_low() {
    assert_eq!(repetition(" tok0 tok1 tok2 tok3 tok4 tok5"), 0.0);
    assert_eq!(repetition(" tok0 tok0 tok0 tok0 tok0 tok0"), 0.75);
    assert_eq!(repetition("a a a"), 0.0);
    let sentence_loop = "the cat sat on the mat. ".repeat(20);
    assert!(repetition(&sentence_loop) > 0.9);
    let prose = "A prober measures latency, but a fast wrong answer still pages nobody unless its content is checked too.";
    assert_eq!(repetition(prose), 0.0);
}

#[test]
fn excerpts_are_short_escaped_and_scrubbed() {
    let c = compile(CheckSpec {
        expect_regex: Some("never".into()),
        ..CheckSpec::default()
    });
    let text = format!("key sk-SECRET1234\n\u{1b}[31m{}", "x".repeat(1000));
    let r = c.judge(&answer(&text), ["sk-SECRET1234"]).remove(0);
    let e = r.excerpt.unwrap();
    assert!(
        !e.contains("SECRET") && !e.contains('\n') && !e.contains('\u{1b}'),
        "{e}"
    );
    assert!(
        e.contains("\\n") && e.ends_with('…') && e.chars().count() <= 200,
        "{e}"
    );
}

#[test]
fn bad_specs_are_clear_errors() {
    let e = CheckSpec {
        expect_regex: Some("(".into()),
        ..CheckSpec::default()
    }
    .compile()
    .unwrap_err();
    assert_eq!(e.field, "expect_regex");
    assert!(e.message.contains("invalid regex"), "{e}");
    let e = CheckSpec {
        expect_json_schema: Some(SchemaSource::Inline(serde_json::json!({"type": 5}))),
        ..CheckSpec::default()
    }
    .compile()
    .unwrap_err();
    assert!(e.message.contains("invalid JSON Schema"), "{e}");
    let e = CheckSpec {
        max_repetition: Some(1.5),
        ..CheckSpec::default()
    }
    .compile()
    .unwrap_err();
    assert!(
        e.to_string().contains("max_repetition: must be in [0, 1]"),
        "{e}"
    );
    let e = CheckSpec {
        expect_json_schema: Some(SchemaSource::File {
            file: "/nonexistent/s.json".into(),
        }),
        ..CheckSpec::default()
    }
    .compile()
    .unwrap_err();
    assert!(e.message.contains("cannot read /nonexistent/s.json"), "{e}");
}

#[test]
fn yaml_forms_parse() {
    let s: CheckSpec = serde_yaml_ng::from_str(
        "expect_model: {regex: '^m'}\nexpect_json_schema: {file: s.json}\n",
    )
    .unwrap();
    assert_eq!(
        s.expect_model,
        Some(ModelMatch::Regex { regex: "^m".into() })
    );
    assert_eq!(
        s.expect_json_schema,
        Some(SchemaSource::File {
            file: "s.json".into()
        })
    );
    let s: CheckSpec =
        serde_yaml_ng::from_str("expect_model: m\nexpect_json_schema: {type: object}\n").unwrap();
    assert_eq!(s.expect_model, Some(ModelMatch::Exact("m".into())));
    assert!(matches!(
        s.expect_json_schema,
        Some(SchemaSource::Inline(_))
    ));
}

mod hostile {
    use super::*;
    use proptest::prelude::*;

    fn every_text_check() -> Checks {
        compile(CheckSpec {
            expect_regex: Some(r"\d+".into()),
            expect_not_regex: Some(r"<\|im_start\|>".into()),
            expect_json_schema: Some(SchemaSource::Inline(serde_json::json!({"type": "array"}))),
            max_repetition: Some(0.5),
            ..CheckSpec::default()
        })
    }

    proptest! {
        #[test]
        fn no_answer_panics_a_check(text in any::<String>(), truncated in any::<bool>()) {
            let c = every_text_check();
            let a = Answer { text: &text, truncated, ..answer("") };
            for r in c.judge(&a, ["secret"]) {
                let e = r.excerpt.unwrap_or_default();
                prop_assert!(e.chars().count() <= EXCERPT_CHARS + 1);
                prop_assert!(!e.chars().any(char::is_control));
            }
            let rep = repetition(&text);
            prop_assert!((0.0..=1.0).contains(&rep));
        }

        #[test]
        fn nested_json_of_any_shape_is_judged_without_overflow(
            depth in 0usize..5000,
            open in prop::sample::select(vec!["[", "{\"a\":"]),
        ) {
            let text = open.repeat(depth);
            let c = every_text_check();
            let r = c.judge(&answer(&text), []);
            prop_assert!(!r[2].passed || depth == 0);
        }
    }
}

#[test]
fn an_excerpt_of_control_characters_stays_short() {
    let e = excerpt(&"\u{1b}".repeat(1000));
    assert_eq!(
        e.chars().count(),
        EXCERPT_CHARS - EXCERPT_CHARS % 6 + 1,
        "{e}"
    );
    assert!(e.starts_with(r"\u{1b}") && e.ends_with('…'));
}

#[test]
fn tool_call_arguments_are_validated_and_bounded() {
    let c = compile(CheckSpec {
        expect_tool_call: Some(ToolCallSpec {
            name: "f".into(),
            description: None,
            parameters: Some(SchemaSource::Inline(serde_json::json!({
                "type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}
            }))),
            tool_choice: None,
        }),
        ..CheckSpec::default()
    });
    assert!(c.needs_tool_calls() && c.needs_text());
    let call = |arguments: &str, truncated| ToolCall {
        name: "f".into(),
        arguments: arguments.into(),
        truncated,
    };
    let judge = |calls: &[ToolCall]| {
        let a = Answer {
            tool_calls: calls,
            ..answer("plain text")
        };
        c.judge(&a, []).remove(0)
    };
    // One valid call among invalid ones passes.
    assert!(judge(&[call("{}", false), call(r#"{"a": 1}"#, false)]).passed);
    let r = judge(&[call(r#"{"a": "x"}"#, false)]);
    assert!(
        r.reason
            .unwrap()
            .contains("do not match its parameters at /a")
    );
    assert_eq!(r.excerpt.as_deref(), Some(r#"{"a": "x"}"#));
    let deep = "[".repeat(100_000);
    assert!(
        judge(&[call(&deep, false)])
            .reason
            .unwrap()
            .contains("deeper than 64")
    );
    let cut = judge(&[call(r#"{"a": 1}"#, true)]);
    assert!(cut.reason.unwrap().contains("not validated"));
    let none = judge(&[]);
    assert_eq!(
        none.reason.as_deref(),
        Some("the answer called no tool (expected f)")
    );
    assert_eq!(none.excerpt.as_deref(), Some("plain text"));
    let bad = CheckSpec {
        expect_tool_call: Some(ToolCallSpec {
            name: " ".into(),
            description: None,
            parameters: None,
            tool_choice: None,
        }),
        ..CheckSpec::default()
    };
    assert_eq!(bad.compile().unwrap_err().field, "expect_tool_call");
}
