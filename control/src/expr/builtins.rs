//! The eager built-in functions: all arguments evaluated, then applied.

use super::functions::{name_of, Func};
use super::Value;

pub(super) fn apply(func: Func, args: Vec<Value>) -> Result<Value, String> {
    let name = name_of(func);
    let mut args = args.into_iter();
    let arg = args.next().unwrap_or(Value::Null);
    let wrong = |v: &Value, wanted: &str| format!("`{name}` needs {wanted}, got {}", v.describe());
    let number = |v: &Value| match v {
        Value::Number(n) => Ok(*n),
        other => Err(wrong(other, "a number")),
    };
    Ok(match func {
        Func::Len => Value::Number(match &arg {
            Value::List(items) => items.len(),
            Value::Map(fields) => fields.len(),
            Value::String(s) => s.chars().count(),
            other => return Err(wrong(other, "a list, map or string")),
        } as f64),
        Func::Abs => Value::Number(number(&arg)?.abs()),
        Func::Floor => Value::Number(number(&arg)?.floor()),
        Func::Ceil => Value::Number(number(&arg)?.ceil()),
        Func::Round => Value::Number(number(&arg)?.round()),
        Func::IsNaN => Value::Bool(number(&arg)?.is_nan()),
        Func::IsInf => Value::Bool(number(&arg)?.is_infinite()),
        Func::IsNil => Value::Bool(arg == Value::Null),
        Func::Min | Func::Max | Func::Sum => {
            // Variadic numbers, or a single list of them.
            let items = match arg {
                Value::List(items) if args.as_slice().is_empty() => items,
                first => std::iter::once(first).chain(args).collect(),
            };
            let numbers = items.iter().map(number).collect::<Result<Vec<_>, _>>()?;
            Value::Number(fold(func, &numbers).ok_or_else(|| format!("`{name}` of an empty list"))?)
        }
        Func::Float | Func::AsFloat => Value::Number(match &arg {
            Value::Number(n) => *n,
            Value::String(s) => {
                parse_float(s).ok_or_else(|| format!("`{name}`: {s:?} is not a number"))?
            }
            other => return Err(wrong(other, "a number or a numeric string")),
        }),
        Func::Int => Value::Number(match &arg {
            Value::Number(n) if n.is_finite() => n.trunc(),
            Value::String(s) => {
                parse_int(s).ok_or_else(|| format!("`{name}`: {s:?} is not an integer"))?
            }
            other => return Err(wrong(other, "a finite number or an integer string")),
        }),
        // Argo's asInt takes integer strings (and numbers that are already whole).
        Func::AsInt => Value::Number(match &arg {
            Value::Number(n) if n.is_finite() && n.fract() == 0.0 => *n,
            Value::String(s) => {
                parse_int(s).ok_or_else(|| format!("`{name}`: {s:?} is not an integer"))?
            }
            other => return Err(wrong(other, "an integer or an integer string")),
        }),
        Func::String => Value::String(arg.to_string()),
        // The lazy functions are evaluated in eval.rs and never reach here.
        _ => return Err(format!("`{name}` cannot be applied eagerly")),
    })
}

fn fold(func: Func, numbers: &[f64]) -> Option<f64> {
    if func == Func::Sum {
        return Some(numbers.iter().sum());
    }
    let (first, rest) = numbers.split_first()?;
    // NaN wins: a NaN sample must not be silently dropped by min/max.
    Some(rest.iter().fold(*first, |acc, &n| {
        if acc.is_nan() || n.is_nan() {
            f64::NAN
        } else if (func == Func::Min) == (n < acc) {
            n
        } else {
            acc
        }
    }))
}

fn parse_float(s: &str) -> Option<f64> {
    s.trim().parse().ok()
}

fn parse_int(s: &str) -> Option<f64> {
    // i64 first so "12" is exact; the value then lives on as f64 like every number.
    s.trim().parse::<i64>().ok().map(|i| i as f64)
}
