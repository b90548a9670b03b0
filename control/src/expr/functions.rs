//! The built-in functions: expr-lang's that real templates use, plus Argo's own helpers
//! (`asInt`, `asFloat`, `isNaN`, `isInf`, `isNil`, `default`).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Func {
    Len,
    Abs,
    Min,
    Max,
    Sum,
    Floor,
    Ceil,
    Round,
    IsNaN,
    IsInf,
    IsNil,
    Float,
    Int,
    String,
    AsInt,
    AsFloat,
    Default,
    All,
    Any,
    None,
    One,
    Count,
    Filter,
    Map,
}

pub(super) struct Spec {
    pub name: &'static str,
    pub func: Func,
    pub min_args: usize,
    /// `None`: variadic.
    pub max_args: Option<usize>,
    /// Takes `(list, predicate)`; the predicate sees each element as `#`.
    pub predicate: bool,
}

const fn spec(name: &'static str, func: Func, min: usize, max: Option<usize>) -> Spec {
    Spec {
        name,
        func,
        min_args: min,
        max_args: max,
        predicate: false,
    }
}

const fn pred(name: &'static str, func: Func) -> Spec {
    Spec {
        name,
        func,
        min_args: 2,
        max_args: Some(2),
        predicate: true,
    }
}

const SPECS: &[Spec] = &[
    spec("len", Func::Len, 1, Some(1)),
    spec("abs", Func::Abs, 1, Some(1)),
    spec("min", Func::Min, 1, None),
    spec("max", Func::Max, 1, None),
    spec("sum", Func::Sum, 1, Some(1)),
    spec("floor", Func::Floor, 1, Some(1)),
    spec("ceil", Func::Ceil, 1, Some(1)),
    spec("round", Func::Round, 1, Some(1)),
    spec("isNaN", Func::IsNaN, 1, Some(1)),
    spec("isInf", Func::IsInf, 1, Some(1)),
    spec("isNil", Func::IsNil, 1, Some(1)),
    spec("float", Func::Float, 1, Some(1)),
    spec("int", Func::Int, 1, Some(1)),
    spec("string", Func::String, 1, Some(1)),
    spec("asInt", Func::AsInt, 1, Some(1)),
    spec("asFloat", Func::AsFloat, 1, Some(1)),
    spec("default", Func::Default, 2, Some(2)),
    pred("all", Func::All),
    pred("any", Func::Any),
    pred("none", Func::None),
    pred("one", Func::One),
    pred("count", Func::Count),
    pred("filter", Func::Filter),
    pred("map", Func::Map),
];

pub(super) fn lookup(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.name == name)
}

pub(super) fn name_of(func: Func) -> &'static str {
    SPECS
        .iter()
        .find(|s| s.func == func)
        .map_or("?", |s| s.name)
}

/// "`len` takes 1 argument, got 2", for a call whose count is out of range.
pub(super) fn arity_error(spec: &Spec, got: usize) -> Option<String> {
    let ok = got >= spec.min_args && spec.max_args.is_none_or(|max| got <= max);
    if ok {
        return None;
    }
    let plural = |n: usize| if n == 1 { "argument" } else { "arguments" };
    let wanted = match spec.max_args {
        _ if spec.predicate => "2 arguments (a list and a predicate)".to_string(),
        Some(max) if max == spec.min_args => format!("{max} {}", plural(max)),
        Some(max) => format!("{} to {max} arguments", spec.min_args),
        None => format!("at least {} {}", spec.min_args, plural(spec.min_args)),
    };
    Some(format!("`{}` takes {wanted}, got {got}", spec.name))
}
