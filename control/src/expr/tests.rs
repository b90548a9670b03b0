use super::*;
use std::collections::BTreeMap;

fn num(n: f64) -> Value {
    Value::Number(n)
}

fn list(items: &[f64]) -> Value {
    Value::List(items.iter().copied().map(Value::Number).collect())
}

fn json(text: &str) -> Value {
    let parsed: serde_json::Value = serde_json::from_str(text).unwrap();
    Value::from(&parsed)
}

fn check(src: &str, result: &Value) -> Result<bool, String> {
    Condition::parse(src)
        .unwrap_or_else(|e| panic!("{src}: {e}"))
        .evaluate(result)
}

fn truth(src: &str, result: &Value) -> bool {
    check(src, result).unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn value(src: &str, result: &Value) -> Value {
    Condition::parse(src).unwrap().eval(result).unwrap()
}

fn parse_err(src: &str) -> ExprError {
    match Condition::parse(src) {
        Ok(_) => panic!("{src}: parsed, expected an error"),
        Err(e) => e,
    }
}

#[test]
fn prometheus_vector_conditions_from_argo_docs() {
    let good = list(&[0.99]);
    let bad = list(&[0.42]);
    assert!(truth("result[0] >= 0.95", &good));
    assert!(!truth("result[0] >= 0.95", &bad));
    assert!(truth("result[0] < 0.5", &bad));
    assert!(truth("result[0] <= 0.95", &bad));
    assert!(truth("result[0] * 100 >= 99.5", &list(&[0.996])));
    assert!(!truth("result[0] * 100 >= 99.5", &list(&[0.99])));
}

#[test]
fn scalar_and_string_results() {
    assert!(truth("result >= 10", &num(12.0)));
    assert!(truth("result == 'It worked!'", &Value::from("It worked!")));
    assert!(!truth("result == \"It worked!\"", &Value::from("nope")));
    assert!(truth("result == true", &Value::Bool(true)));
    // Argo's web docs: a JSON string "true" is not the bool true.
    assert!(truth("result == 'true'", &Value::from("true")));
    assert!(!truth("result == true", &Value::from("true")));
}

#[test]
fn empty_vector_guard_and_short_circuit() {
    let cond = "len(result) == 0 || result[0] >= 0.99";
    assert!(truth(cond, &list(&[])));
    assert!(truth(cond, &list(&[0.995])));
    assert!(!truth(cond, &list(&[0.5])));
    // Without the guard, an empty vector is an error, not false.
    let err = check("result[0] >= 0.99", &list(&[])).unwrap_err();
    assert!(err.contains("index 0 out of range"), "{err}");
    // The right side of a decided `||` / `&&` is never evaluated.
    assert!(truth("true || (1 < \"a\")", &Value::Null));
    assert!(!truth("false && (1 < \"a\")", &Value::Null));
    assert!(!truth("false and result[5] > 0", &list(&[])));
}

#[test]
fn predicates_all_any_none_filter_map() {
    let latencies = list(&[120.0, 450.0, 990.0]);
    assert!(truth("all(result, # < 1000)", &latencies));
    assert!(!truth("all(result, # < 500)", &latencies));
    assert!(truth("any(result, # > 5)", &list(&[1.0, 6.0])));
    assert!(!truth("any(result, # > 5)", &list(&[])));
    assert!(truth("all(result, # > 5)", &list(&[])));
    assert!(truth("none(result, # > 1000)", &latencies));
    assert!(truth("one(result, # > 900)", &latencies));
    assert!(truth("count(result, # > 100) == 3", &latencies));
    assert!(truth("len(filter(result, # > 200)) == 2", &latencies));
    assert!(truth("map(result, # / 10) == [12, 45, 99]", &latencies));
    assert!(truth("all(result, {# < 1000})", &latencies));
    // Nested predicates: the inner `#` shadows the outer.
    let nested = json("[[1, 2], [3]]");
    assert!(truth("all(result, any(#, # >= 2))", &nested));
    // `.field` in a predicate means `#.field`.
    let items = json(r#"[{"ok": true, "ms": 3}, {"ok": true, "ms": 7}]"#);
    assert!(truth("all(result, .ok) && all(result, #.ms < 10)", &items));
    // A predicate must give a bool.
    assert!(check("all(result, # + 1)", &latencies)
        .unwrap_err()
        .contains("must give a bool"));
}

#[test]
fn nan_semantics() {
    let nan = list(&[f64::NAN]);
    assert!(!truth("result[0] >= 0.99", &nan));
    assert!(!truth("result[0] < 0.99", &nan));
    assert!(!truth("result[0] == result[0]", &nan));
    assert!(truth("result[0] != result[0]", &nan));
    assert!(truth("isNaN(result[0])", &nan));
    assert!(truth("isNaN(result[0]) || result[0] > 0.9", &nan));
    assert!(truth("isNaN(result[0]) || result[0] > 0.9", &list(&[0.95])));
    assert!(!truth("isNaN(result[0]) || result[0] > 0.9", &list(&[0.5])));
    assert!(truth("isInf(result[0])", &list(&[f64::INFINITY])));
    assert!(truth("isInf(1 / 0) && isNaN(0 / 0)", &Value::Null));
    assert!(truth("isNaN(max(result[0], 1))", &nan));
}

#[test]
fn default_covers_nil_missing_and_nan() {
    let cond = "default(result[0], 0) >= 0.99";
    assert!(!truth(cond, &list(&[])));
    assert!(!truth(cond, &list(&[f64::NAN])));
    assert!(truth(cond, &list(&[0.999])));
    assert!(truth("default(result, 1) == 1", &Value::Null));
    assert!(truth("default(result.missing, 'x') == 'x'", &json("{}")));
    assert!(truth("default(result.a.b, 5) == 5", &json("{}")));
    // Real type errors are not swallowed.
    assert!(check("default(result[0] + 'a', 0) > 1", &list(&[1.0])).is_err());
    assert!(truth("result.missing ?? 3 == 3", &json("{}")));
    assert!(truth(
        "isNil(result.missing) && !isNil(result.a)",
        &json(r#"{"a": 1}"#)
    ));
}

#[test]
fn maps_from_web_provider_json() {
    let body = json(r#"{"ok": true, "successPercent": 0.95, "count": 5, "errors": 0}"#);
    assert!(truth("result.ok == true", &body));
    assert!(truth("result.ok && result.successPercent >= 0.90", &body));
    assert!(truth(
        "result[\"count\"] > 3 and not (result[\"errors\"] > 0)",
        &body
    ));
    assert!(truth("'ok' in result && !('nope' in result)", &body));
    assert!(truth("'nope' not in result", &body));
    assert!(truth("len(result) == 4", &body));
    assert!(truth("result.missing == nil", &body));
    assert!(truth("result?.x?.y == nil", &Value::Null));
}

#[test]
fn argo_as_int_and_as_float() {
    assert!(truth("asInt(result) > 0", &Value::from("42")));
    assert!(truth("asFloat(result) >= 0.9", &Value::from("0.95")));
    assert!(truth("asFloat(result[0]) > 1", &json(r#"["1.5"]"#)));
    assert!(truth("asInt(result) == 3", &num(3.0)));
    assert!(check("asInt(result) > 0", &Value::from("1.5"))
        .unwrap_err()
        .contains("not an integer"));
    assert!(check("asFloat(result) > 0", &Value::from("abc")).is_err());
}

#[test]
fn conversions_and_math_functions() {
    let r = Value::Null;
    assert!(truth(
        "float('2.5') == 2.5 && int(2.9) == 2 && int('-7') == -7",
        &r
    ));
    assert!(truth("string(3) == '3' && string(0.5) == '0.5'", &r));
    assert!(truth(
        "abs(-2) == 2 && min(3, 1, 2) == 1 && max([4, 9, 2]) == 9",
        &r
    ));
    assert!(truth(
        "sum([1, 2, 3]) == 6 && floor(1.5) == 1 && ceil(1.2) == 2",
        &r
    ));
    assert!(truth(
        "round(2.5) == 3 && 2 ** 10 == 1024 && -2 ** 2 == -4",
        &r
    ));
    assert!(truth("7 % 3 == 1 && 1e3 == 1000 && 2.5E-1 == 0.25", &r));
    assert!(truth("len('héllo') == 5 && len([]) == 0", &r));
    assert!(truth("'a' + \"b\" == 'ab' && [1] + [2] == [1, 2]", &r));
    assert!(truth(
        "'canary-v2' startsWith 'canary' && 'abc' contains 'b'",
        &r
    ));
    assert!(truth(
        "2 in [1, 2, 3] && 'b' in ['a', 'b'] && 4 not in [1]",
        &r
    ));
    assert!(truth("(1 < 2 ? 'yes' : 'no') == 'yes'", &r));
    assert!(check("min([]) > 0", &r).is_err());
    assert!(check("1.5 % 1 == 0", &r).is_err());
    assert!(check("1 % 0 == 0", &r).is_err());
}

#[test]
fn precedence_follows_expr_lang() {
    let r = Value::Null;
    assert_eq!(value("1 + 2 * 3", &r), num(7.0));
    assert_eq!(value("(1 + 2) * 3", &r), num(9.0));
    assert_eq!(value("10 - 4 - 3", &r), num(3.0));
    assert_eq!(value("2 ** 3 ** 2", &r), num(512.0));
    assert_eq!(value("-3 * 2", &r), num(-6.0));
    assert!(truth("true || false && false", &r));
    assert!(truth("!false == true", &r));
    assert!(truth("1 + 1 == 2 && 3 > 2", &r));
    assert_eq!(value("true ? 1 : false ? 2 : 3", &r), num(1.0));
}

#[test]
fn type_errors_are_errors_not_false() {
    let r = list(&[0.5]);
    let err = check("result[0] < 'a'", &r).unwrap_err();
    assert_eq!(
        err,
        "column 11: cannot apply `<` to number 0.5 and string \"a\""
    );
    assert!(check("result >= 0.95", &r).is_err());
    assert!(check("result[0] && true", &r).is_err());
    assert!(check("!result[0]", &r).is_err());
    assert!(check("result[-1] > 0", &r)
        .unwrap_err()
        .contains("non-negative"));
    assert!(check("result[0.5] > 0", &r).is_err());
    assert!(check("result.x > 0", &r).is_err());
    assert!(check("isNaN('x')", &r).is_err());
    assert!(check("len(3) > 0", &r).is_err());
    assert!(check("all(result[0], # > 1)", &r).is_err());
    // Different types are never equal, and that is not an error.
    assert!(truth("result[0] != '0.5' && nil != 0", &r));
}

#[test]
fn final_value_must_be_bool() {
    let c = Condition::parse("result[0]").unwrap();
    let err = c.evaluate(&list(&[0.5])).unwrap_err();
    assert_eq!(err, "condition must be a boolean, got number 0.5");
    assert_eq!(c.eval(&list(&[0.5])), Ok(num(0.5)));
    let err = Condition::parse("result")
        .unwrap()
        .evaluate(&Value::Null)
        .unwrap_err();
    assert_eq!(err, "condition must be a boolean, got nil");
}

#[test]
fn syntax_errors_have_columns() {
    let e = parse_err("len(result[0]");
    assert_eq!(e.to_string(), "column 14: expected `)`, found end of input");
    let e = parse_err("result[0] >= ");
    assert_eq!(
        (e.column, e.message.as_str()),
        (14, "expected an expression, found end of input")
    );
    let e = parse_err("result[0] >= 0.95 0.5");
    assert_eq!(e.column, 19);
    assert!(e.message.contains("found number 0.5"), "{}", e.message);
    let e = parse_err("result[0] = 1");
    assert_eq!(e.column, 11);
    assert!(e.message.contains("did you mean `==`"));
    assert_eq!(parse_err("result == 'abc").column, 11);
    assert_eq!(parse_err("").column, 1);
    assert_eq!(parse_err("result[0] >= 1e").column, 15);
    assert_eq!(parse_err("(result[0] > 1").column, 15);
    assert_eq!(parse_err("result[0] ? 1").column, 14);
    assert!(parse_err("'\\q'").message.contains("unknown escape"));
}

#[test]
fn names_and_arity_are_checked_at_parse_time() {
    let e = parse_err("reslt[0] > 1");
    assert_eq!(e.column, 1);
    assert!(e.message.contains("unknown name `reslt`"), "{}", e.message);
    let e = parse_err("result[0] > 1 && lenn(result) > 0");
    assert_eq!(e.column, 18);
    assert_eq!(e.message, "unknown function `lenn`");
    let e = parse_err("len(result, 1) > 0");
    assert_eq!(e.message, "`len` takes 1 argument, got 2");
    assert_eq!(
        parse_err("default(result) > 0").message,
        "`default` takes 2 arguments, got 1"
    );
    assert!(parse_err("all(result)")
        .message
        .contains("a list and a predicate"));
    assert!(parse_err("min() > 0").message.contains("at least 1"));
    assert!(parse_err("# > 1")
        .message
        .contains("only valid inside a predicate"));
    assert!(parse_err("len > 1").message.contains("is a function"));
    assert!(parse_err("result and")
        .message
        .contains("expected an expression"));
}

#[test]
fn depth_is_limited_without_overflow() {
    let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(parse_err(&deep).message.contains("nested too deeply"));
    let nots = format!("{}true", "!".repeat(10_000));
    assert!(parse_err(&nots).message.contains("nested too deeply"));
    let chain = vec!["1"; 10_000].join(" + ");
    assert!(parse_err(&chain).message.contains("nested too deeply"));
    let index = format!("result{}", "[0]".repeat(10_000));
    assert!(parse_err(&index).message.contains("nested too deeply"));
    // Realistic nesting is fine.
    let ok = format!("{}true{}", "(".repeat(30), ")".repeat(30));
    assert!(truth(&ok, &Value::Null));
}

#[test]
fn garbage_never_panics() {
    // A small deterministic fuzz: random strings built from the language's own alphabet.
    let alphabet: Vec<char> = "result[0]()#.,?:!<>=&|+-*/%^'\"\\ `{}e1.5 aninotrlsfu_$é\u{0}"
        .chars()
        .collect();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let data = json(r#"[1, "2", null, [3], {"a": 1}, true]"#);
    for _ in 0..20_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = (seed % 24) as usize;
        let src: String = (0..len)
            .map(|i| alphabet[((seed >> (i % 8 * 8)) as usize + i * 7) % alphabet.len()])
            .collect();
        if let Ok(cond) = Condition::parse(&src) {
            let _ = cond.evaluate(&data);
            let _ = cond.evaluate(&Value::Null);
        }
    }
    for src in [
        "result[",
        "result.",
        "[",
        "(",
        "all(",
        "all(result,",
        "'",
        "\"\\u12",
        "1e+",
        "?",
        "#",
    ] {
        assert!(Condition::parse(src).is_err(), "{src}");
    }
}

#[test]
fn json_conversion_keeps_numeric_strings_as_strings() {
    let v = json(r#"{"n": 3, "s": "3", "f": 0.5, "l": [null, false]}"#);
    let mut expected = BTreeMap::new();
    expected.insert("n".to_string(), num(3.0));
    expected.insert("s".to_string(), Value::from("3"));
    expected.insert("f".to_string(), num(0.5));
    expected.insert(
        "l".to_string(),
        Value::List(vec![Value::Null, Value::Bool(false)]),
    );
    assert_eq!(v, Value::Map(expected));
    assert!(check("result.s > 2", &v).is_err());
    assert!(truth("asInt(result.s) > 2 && result.n > 2", &v));
}

#[test]
fn display_prints_numbers_plainly() {
    assert_eq!(num(3.0).to_string(), "3");
    assert_eq!(num(0.25).to_string(), "0.25");
    assert_eq!(num(-0.0).to_string(), "0");
    assert_eq!(num(1e21).to_string(), "1000000000000000000000");
    assert_eq!(num(f64::NAN).to_string(), "NaN");
    assert_eq!(num(f64::NEG_INFINITY).to_string(), "-Inf");
    assert_eq!(Value::from("ok").to_string(), "ok");
    assert_eq!(
        json(r#"[1, 0.5, "a", null]"#).to_string(),
        r#"[1, 0.5, "a", nil]"#
    );
    assert_eq!(json(r#"{"a": true}"#).to_string(), r#"{"a": true}"#);
    let long = Value::List(vec![num(1.5); 100]);
    assert!(long.describe().chars().count() < 100);
}

#[test]
fn source_is_kept() {
    let c = Condition::parse("result[0] >= 0.95").unwrap();
    assert_eq!(c.source(), "result[0] >= 0.95");
    assert_eq!(c.to_string(), "result[0] >= 0.95");
}
