//! Evaluation of a parsed condition against a measurement.

use super::ast::{BinOp, Expr, Kind, UnOp};
use super::functions::Func;
use super::value::equal;
use super::Value;
use std::cmp::Ordering;

/// Why evaluation stopped. `Missing` (an index past the end, a field of nil) is kept apart
/// so that `default(result[0], 0)` can turn it into the fallback.
pub(super) enum Fail {
    Missing(String),
    Error(String),
}

impl Fail {
    fn at(self, column: usize) -> Fail {
        match self {
            Fail::Missing(m) => Fail::Missing(format!("column {column}: {m}")),
            Fail::Error(m) => Fail::Error(format!("column {column}: {m}")),
        }
    }

    pub fn into_message(self) -> String {
        match self {
            Fail::Missing(m) | Fail::Error(m) => m,
        }
    }
}

type Eval = Result<Value, Fail>;

fn error<T>(message: String) -> Result<T, Fail> {
    Err(Fail::Error(message))
}

/// `element` is what `#` stands for in the innermost enclosing predicate.
pub(super) fn eval(expr: &Expr, result: &Value, element: Option<&Value>) -> Eval {
    let ev = |e: &Expr| eval(e, result, element);
    // Errors of this node's own operation carry its column; children locate their own.
    let at = |fail: Fail| fail.at(expr.column);
    match &expr.kind {
        Kind::Literal(v) => Ok(v.clone()),
        Kind::Result => Ok(result.clone()),
        // The parser admits `#` only inside predicates, so None cannot happen; nil is harmless.
        Kind::Element => Ok(element.cloned().unwrap_or(Value::Null)),
        Kind::List(items) => items
            .iter()
            .map(ev)
            .collect::<Result<_, _>>()
            .map(Value::List),
        Kind::Unary(op, operand) => unary(*op, ev(operand)?).map_err(at),
        Kind::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
            // Short-circuit: the right side runs only when it decides the answer.
            let left = truth(*op, ev(a)?).map_err(at)?;
            if left == (*op == BinOp::Or) {
                return Ok(Value::Bool(left));
            }
            truth(*op, ev(b)?).map_err(at).map(Value::Bool)
        }
        Kind::Binary(BinOp::Coalesce, a, b) => match ev(a)? {
            Value::Null => ev(b),
            v => Ok(v),
        },
        Kind::Binary(op, a, b) => binary(*op, ev(a)?, ev(b)?).map_err(at),
        Kind::Ternary(cond, then, otherwise) => match ev(cond)? {
            Value::Bool(true) => ev(then),
            Value::Bool(false) => ev(otherwise),
            v => Err(at(Fail::Error(format!(
                "`? :` needs a bool condition, got {}",
                v.describe()
            )))),
        },
        Kind::Member {
            target,
            key,
            optional,
        } => match ev(target)? {
            Value::Null if *optional => Ok(Value::Null),
            t => member(t, ev(key)?).map_err(at),
        },
        Kind::Call(func, args) => call(*func, args, result, element, expr.column),
    }
}

fn unary(op: UnOp, v: Value) -> Eval {
    match (op, v) {
        (UnOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
        (UnOp::Neg, Value::Number(n)) => Ok(Value::Number(-n)),
        (UnOp::Plus, Value::Number(n)) => Ok(Value::Number(n)),
        (UnOp::Not, v) => error(format!("`!` needs a bool, got {}", v.describe())),
        (_, v) => error(format!(
            "unary minus/plus needs a number, got {}",
            v.describe()
        )),
    }
}

/// An operand of `&&` / `||`, which must be a bool (no truthiness, as in expr-lang).
fn truth(op: BinOp, v: Value) -> Result<bool, Fail> {
    match v {
        Value::Bool(b) => Ok(b),
        v => error(format!(
            "`{}` needs bools, got {}",
            op.symbol(),
            v.describe()
        )),
    }
}

fn binary(op: BinOp, a: Value, b: Value) -> Eval {
    use Value::{List, Map, Number as N, String as S};
    let mismatch = |a: &Value, b: &Value| {
        error(format!(
            "cannot apply `{}` to {} and {}",
            op.symbol(),
            a.describe(),
            b.describe()
        ))
    };
    Ok(match (op, &a, &b) {
        (BinOp::Eq, _, _) => Value::Bool(equal(&a, &b)),
        (BinOp::Ne, _, _) => Value::Bool(!equal(&a, &b)),
        (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, _, _) => {
            let ord = match (&a, &b) {
                (N(x), N(y)) => x.partial_cmp(y),
                (S(x), S(y)) => Some(x.cmp(y)),
                _ => return mismatch(&a, &b),
            };
            // NaN compares as None: every ordering test is false, as in IEEE 754.
            Value::Bool(ord.is_some_and(|o| match op {
                BinOp::Lt => o == Ordering::Less,
                BinOp::Le => o != Ordering::Greater,
                BinOp::Gt => o == Ordering::Greater,
                _ => o != Ordering::Less,
            }))
        }
        (BinOp::In | BinOp::NotIn, _, _) => {
            let found = match (&a, &b) {
                (_, List(items)) => items.iter().any(|item| equal(&a, item)),
                (S(key), Map(fields)) => fields.contains_key(key),
                _ => return mismatch(&a, &b),
            };
            Value::Bool(found == (op == BinOp::In))
        }
        (BinOp::Contains, S(x), S(y)) => Value::Bool(x.contains(y.as_str())),
        (BinOp::StartsWith, S(x), S(y)) => Value::Bool(x.starts_with(y.as_str())),
        (BinOp::EndsWith, S(x), S(y)) => Value::Bool(x.ends_with(y.as_str())),
        (BinOp::Add, N(x), N(y)) => N(x + y),
        (BinOp::Add, S(x), S(y)) => S(format!("{x}{y}")),
        (BinOp::Add, List(x), List(y)) => List(x.iter().chain(y).cloned().collect()),
        (BinOp::Sub, N(x), N(y)) => N(x - y),
        (BinOp::Mul, N(x), N(y)) => N(x * y),
        // Float division, as expr-lang: 1/0 is +Inf, 0/0 is NaN.
        (BinOp::Div, N(x), N(y)) => N(x / y),
        (BinOp::Mod, N(x), N(y)) => N(modulo(*x, *y)?),
        (BinOp::Pow, N(x), N(y)) => N(x.powf(*y)),
        _ => return mismatch(&a, &b),
    })
}

/// expr-lang's `%` is integer-only; a fractional operand or zero divisor is an error.
fn modulo(x: f64, y: f64) -> Result<f64, Fail> {
    if !is_integer(x) || !is_integer(y) {
        return error(format!(
            "`%` needs integers, got {} and {}",
            Value::Number(x),
            Value::Number(y)
        ));
    }
    if y == 0.0 {
        return error("integer divide by zero in `%`".to_string());
    }
    Ok(x % y)
}

fn is_integer(n: f64) -> bool {
    n.is_finite() && n.fract() == 0.0
}

/// `list[i]`, `map[key]`, `map.key`. A missing map key is nil (expr-lang's rule); an index
/// past the end, or a field of nil, is `Missing`.
fn member(target: Value, key: Value) -> Eval {
    match (target, key) {
        (Value::List(mut items), Value::Number(n)) => {
            if !is_integer(n) || n < 0.0 {
                return error(format!(
                    "list index must be a non-negative integer, got {}",
                    Value::Number(n)
                ));
            }
            let len = items.len();
            // `n` is a non-negative integer here, so the cast only saturates huge values.
            let index = n as usize;
            if index >= len {
                return Err(Fail::Missing(format!(
                    "index {index} out of range (list has {len} elements)"
                )));
            }
            Ok(items.swap_remove(index))
        }
        (Value::Map(mut fields), Value::String(k)) => Ok(fields.remove(&k).unwrap_or(Value::Null)),
        (Value::Null, key) => Err(Fail::Missing(format!(
            "cannot get {} of nil",
            key.describe()
        ))),
        (target, key) => error(format!(
            "cannot index {} with {}",
            target.describe(),
            key.describe()
        )),
    }
}

fn call(func: Func, args: &[Expr], result: &Value, element: Option<&Value>, column: usize) -> Eval {
    let ev = |e: &Expr| eval(e, result, element);
    match func {
        Func::Default => {
            // `default(x, y)`: y when x is nil, NaN, or missing (`result[0]` of an empty vector).
            let x = match args.first().map(ev) {
                Some(Ok(v)) => v,
                Some(Err(Fail::Missing(_))) | None => Value::Null,
                Some(Err(e)) => return Err(e),
            };
            match x {
                Value::Null => args.get(1).map_or(Ok(Value::Null), ev),
                Value::Number(n) if n.is_nan() => args.get(1).map_or(Ok(Value::Null), ev),
                v => Ok(v),
            }
        }
        Func::All | Func::Any | Func::None | Func::One | Func::Count | Func::Filter | Func::Map => {
            let (Some(list), Some(body)) = (args.first(), args.get(1)) else {
                return error("predicate function needs a list and a predicate".to_string());
            };
            let items = match ev(list)? {
                Value::List(items) => items,
                v => {
                    let message = format!("{} needs a list, got {}", name(func), v.describe());
                    return Err(Fail::Error(message).at(column));
                }
            };
            over_list(func, items, body, result)
        }
        _ => {
            let values = args.iter().map(ev).collect::<Result<Vec<_>, _>>()?;
            super::builtins::apply(func, values).map_err(|m| Fail::Error(m).at(column))
        }
    }
}

/// Runs `body` once per element with `#` bound to it; `all`/`any`/`none` stop early.
fn over_list(func: Func, items: Vec<Value>, body: &Expr, result: &Value) -> Eval {
    let test = |item: &Value| match eval(body, result, Some(item))? {
        Value::Bool(b) => Ok(b),
        v => error(format!(
            "the predicate of {} must give a bool, got {}",
            name(func),
            v.describe()
        )),
    };
    Ok(match func {
        Func::Map => Value::List(
            items
                .iter()
                .map(|item| eval(body, result, Some(item)))
                .collect::<Result<_, _>>()?,
        ),
        Func::Filter => {
            let mut kept = Vec::new();
            for item in items {
                if test(&item)? {
                    kept.push(item);
                }
            }
            Value::List(kept)
        }
        Func::All => Value::Bool(try_all(&items, |i| test(i))?),
        Func::Any => Value::Bool(!try_all(&items, |i| test(i).map(|b| !b))?),
        Func::None => Value::Bool(try_all(&items, |i| test(i).map(|b| !b))?),
        _ => {
            let mut hits = 0usize;
            for item in &items {
                hits += usize::from(test(item)?);
            }
            match func {
                Func::One => Value::Bool(hits == 1),
                _ => Value::Number(hits as f64),
            }
        }
    })
}

/// True when `f` holds for every item; stops at the first false or error.
fn try_all(items: &[Value], mut f: impl FnMut(&Value) -> Result<bool, Fail>) -> Result<bool, Fail> {
    for item in items {
        if !f(item)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn name(func: Func) -> String {
    format!("`{}`", super::functions::name_of(func))
}
