//! The parsed form of a condition.

use super::functions::Func;
use super::Value;

#[derive(Clone, Debug)]
pub(super) struct Expr {
    pub kind: Kind,
    /// 1-based column of the token that made this node (the operator, for operations).
    pub column: usize,
    /// Height of this subtree; bounded at parse time so evaluation cannot overflow the stack.
    pub depth: usize,
}

#[derive(Clone, Debug)]
pub(super) enum Kind {
    Literal(Value),
    /// The measurement, bound by the caller.
    Result,
    /// `#`: the current element inside a predicate of `all`, `any`, `filter`, ...
    Element,
    List(Vec<Expr>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `a[i]`, `a.key`, and `a?.key` (`optional`: nil instead of an error when `a` is nil).
    Member {
        target: Box<Expr>,
        key: Box<Expr>,
        optional: bool,
    },
    Call(Func, Vec<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum UnOp {
    Not,
    Neg,
    Plus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
    Contains,
    StartsWith,
    EndsWith,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    /// `a ?? b`: `b` when `a` is nil.
    Coalesce,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::In => "in",
            BinOp::NotIn => "not in",
            BinOp::Contains => "contains",
            BinOp::StartsWith => "startsWith",
            BinOp::EndsWith => "endsWith",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::Coalesce => "??",
        }
    }
}

impl Kind {
    /// The tallest child's depth (0 for leaves).
    pub fn children_depth(&self) -> usize {
        let max = |items: &[Expr]| items.iter().map(|e| e.depth).max().unwrap_or(0);
        match self {
            Kind::Literal(_) | Kind::Result | Kind::Element => 0,
            Kind::List(items) | Kind::Call(_, items) => max(items),
            Kind::Unary(_, e) => e.depth,
            Kind::Binary(_, a, b) => a.depth.max(b.depth),
            Kind::Member { target, key, .. } => target.depth.max(key.depth),
            Kind::Ternary(c, a, b) => c.depth.max(a.depth).max(b.depth),
        }
    }
}
