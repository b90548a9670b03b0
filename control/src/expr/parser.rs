//! Tokens → AST by recursive descent, with expr-lang's precedence (lowest first):
//!
//! ```text
//! ternary     a ? b : c                  (right-associative)
//! or          ||  or
//! and         &&  and
//! compare     == != < <= > >=  in  not in  contains startsWith endsWith
//! additive    + -
//! multiply    * / %
//! unary       ! not - +
//! power       ** ^                       (right-associative)
//! coalesce    ??
//! postfix     a[i]  a.key  a?.key
//! primary     literal  result  #  .key  (e)  [list]  f(args)
//! ```
//!
//! Names are resolved here, so a typo fails at load time rather than mid-rollout.

use super::ast::{BinOp, Expr, Kind, UnOp};
use super::functions::{self, Spec};
use super::lexer::{tokenize, Tok, Token};
use super::{ExprError, Value};

/// Bounds both parser recursion and tree height: deep enough for any real condition,
/// shallow enough that recursion can never exhaust the stack.
pub(super) const MAX_DEPTH: usize = 64;

pub(super) fn parse(source: &str) -> Result<Expr, ExprError> {
    let mut parser = Parser {
        tokens: tokenize(source)?,
        pos: 0,
        nesting: 0,
        predicates: 0,
    };
    let expr = parser.expr()?;
    match parser.peek() {
        Tok::End => Ok(expr),
        tok => Err(parser.error(format!("expected an operator or end of input, found {tok}"))),
    }
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    /// Current recursion depth, checked against MAX_DEPTH.
    nesting: usize,
    /// How many predicates enclose the current position; `#` is valid only inside one.
    predicates: usize,
}

type Parsed = Result<Expr, ExprError>;

impl Parser {
    fn peek(&self) -> &Tok {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> &Tok {
        // The token list always ends with End, and we never advance past it.
        let last = self.tokens.len().saturating_sub(1);
        self.tokens
            .get((self.pos + ahead).min(last))
            .map_or(&Tok::End, |t| &t.tok)
    }

    fn column(&self) -> usize {
        self.tokens.get(self.pos).map_or(1, |t| t.column)
    }

    fn advance(&mut self) -> (Tok, usize) {
        let token = (self.peek().clone(), self.column());
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        token
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Tok::Ident(name) if name == w)
    }

    /// Consumes the punctuation `p` if it is next; returns its column.
    fn eat_punct(&mut self, p: &str) -> Option<usize> {
        self.is_punct(p).then(|| self.advance().1)
    }

    fn expect_punct(&mut self, p: &str) -> Result<usize, ExprError> {
        match self.eat_punct(p) {
            Some(column) => Ok(column),
            None => Err(self.error(format!("expected `{p}`, found {}", self.peek()))),
        }
    }

    fn error(&self, message: String) -> ExprError {
        ExprError {
            column: self.column(),
            message,
        }
    }

    fn node(&self, kind: Kind, column: usize) -> Parsed {
        let depth = kind.children_depth() + 1;
        if depth > MAX_DEPTH {
            return Err(ExprError {
                column,
                message: format!("expression is nested too deeply (more than {MAX_DEPTH} levels)"),
            });
        }
        Ok(Expr {
            kind,
            column,
            depth,
        })
    }

    fn binary(&self, op: BinOp, left: Expr, right: Expr, column: usize) -> Parsed {
        self.node(Kind::Binary(op, Box::new(left), Box::new(right)), column)
    }

    /// Runs `f` one level deeper, refusing to go past MAX_DEPTH.
    fn nested(&mut self, f: impl FnOnce(&mut Self) -> Parsed) -> Parsed {
        if self.nesting >= MAX_DEPTH {
            return Err(self.error(format!(
                "expression is nested too deeply (more than {MAX_DEPTH} levels)"
            )));
        }
        self.nesting += 1;
        let result = f(self);
        self.nesting -= 1;
        result
    }

    fn expr(&mut self) -> Parsed {
        self.nested(Self::ternary)
    }

    fn ternary(&mut self) -> Parsed {
        let cond = self.or()?;
        let Some(column) = self.eat_punct("?") else {
            return Ok(cond);
        };
        let then = self.expr()?;
        self.expect_punct(":")?;
        let otherwise = self.expr()?;
        self.node(
            Kind::Ternary(Box::new(cond), Box::new(then), Box::new(otherwise)),
            column,
        )
    }

    fn or(&mut self) -> Parsed {
        let mut left = self.and()?;
        while self.is_punct("||") || self.is_word("or") {
            let column = self.advance().1;
            let right = self.and()?;
            left = self.binary(BinOp::Or, left, right, column)?;
        }
        Ok(left)
    }

    fn and(&mut self) -> Parsed {
        let mut left = self.compare()?;
        while self.is_punct("&&") || self.is_word("and") {
            let column = self.advance().1;
            let right = self.compare()?;
            left = self.binary(BinOp::And, left, right, column)?;
        }
        Ok(left)
    }

    fn compare(&mut self) -> Parsed {
        let mut left = self.additive()?;
        loop {
            let op = match self.peek() {
                Tok::Punct("==") => BinOp::Eq,
                Tok::Punct("!=") => BinOp::Ne,
                Tok::Punct("<") => BinOp::Lt,
                Tok::Punct("<=") => BinOp::Le,
                Tok::Punct(">") => BinOp::Gt,
                Tok::Punct(">=") => BinOp::Ge,
                Tok::Ident(w) if w == "in" => BinOp::In,
                Tok::Ident(w) if w == "contains" => BinOp::Contains,
                Tok::Ident(w) if w == "startsWith" => BinOp::StartsWith,
                Tok::Ident(w) if w == "endsWith" => BinOp::EndsWith,
                Tok::Ident(w)
                    if w == "not" && matches!(self.peek_at(1), Tok::Ident(n) if n == "in") =>
                {
                    self.advance();
                    BinOp::NotIn
                }
                _ => return Ok(left),
            };
            let column = self.advance().1;
            let right = self.additive()?;
            left = self.binary(op, left, right, column)?;
        }
    }

    fn additive(&mut self) -> Parsed {
        let mut left = self.multiply()?;
        loop {
            let op = match self.peek() {
                Tok::Punct("+") => BinOp::Add,
                Tok::Punct("-") => BinOp::Sub,
                _ => return Ok(left),
            };
            let column = self.advance().1;
            let right = self.multiply()?;
            left = self.binary(op, left, right, column)?;
        }
    }

    fn multiply(&mut self) -> Parsed {
        let mut left = self.unary()?;
        loop {
            let op = match self.peek() {
                Tok::Punct("*") => BinOp::Mul,
                Tok::Punct("/") => BinOp::Div,
                Tok::Punct("%") => BinOp::Mod,
                _ => return Ok(left),
            };
            let column = self.advance().1;
            let right = self.unary()?;
            left = self.binary(op, left, right, column)?;
        }
    }

    fn unary_op(&self) -> Option<UnOp> {
        match self.peek() {
            Tok::Punct("!") => Some(UnOp::Not),
            Tok::Ident(w) if w == "not" => Some(UnOp::Not),
            Tok::Punct("-") => Some(UnOp::Neg),
            Tok::Punct("+") => Some(UnOp::Plus),
            _ => None,
        }
    }

    fn unary(&mut self) -> Parsed {
        let Some(op) = self.unary_op() else {
            return self.power();
        };
        let column = self.advance().1;
        let operand = self.nested(Self::unary)?;
        self.node(Kind::Unary(op, Box::new(operand)), column)
    }

    fn power(&mut self) -> Parsed {
        let base = self.coalesce()?;
        let Some(column) = self.eat_punct("**").or_else(|| self.eat_punct("^")) else {
            return Ok(base);
        };
        // Right-associative, and the exponent may carry a sign: `2 ** -1`.
        let exponent = self.nested(Self::unary)?;
        self.binary(BinOp::Pow, base, exponent, column)
    }

    fn coalesce(&mut self) -> Parsed {
        let mut left = self.postfix()?;
        while let Some(column) = self.eat_punct("??") {
            let right = self.nested(Self::signed_postfix)?;
            left = self.binary(BinOp::Coalesce, left, right, column)?;
        }
        Ok(left)
    }

    /// The right side of `??`: a postfix expression, optionally negated (`x ?? -1`).
    fn signed_postfix(&mut self) -> Parsed {
        let Some(op) = self.unary_op() else {
            return self.postfix();
        };
        let column = self.advance().1;
        let operand = self.nested(Self::signed_postfix)?;
        self.node(Kind::Unary(op, Box::new(operand)), column)
    }

    fn postfix(&mut self) -> Parsed {
        let mut target = self.primary()?;
        loop {
            if let Some(column) = self.eat_punct("[") {
                let key = self.expr()?;
                self.expect_punct("]")?;
                target = self.member(target, key, false, column)?;
            } else if let Some(column) = self.eat_punct(".") {
                let key = self.field_name()?;
                target = self.member(target, key, false, column)?;
            } else if let Some(column) = self.eat_punct("?.") {
                let key = self.field_name()?;
                target = self.member(target, key, true, column)?;
            } else {
                return Ok(target);
            }
        }
    }

    fn member(&self, target: Expr, key: Expr, optional: bool, column: usize) -> Parsed {
        let kind = Kind::Member {
            target: Box::new(target),
            key: Box::new(key),
            optional,
        };
        self.node(kind, column)
    }

    /// The name after `.`, as a string key.
    fn field_name(&mut self) -> Parsed {
        match self.advance() {
            (Tok::Ident(name), column) => self.node(Kind::Literal(Value::String(name)), column),
            (tok, column) => Err(ExprError {
                column,
                message: format!("expected a field name after `.`, found {tok}"),
            }),
        }
    }

    fn primary(&mut self) -> Parsed {
        let start = self.pos;
        let (tok, column) = self.advance();
        match tok {
            Tok::Number(n) => self.node(Kind::Literal(Value::Number(n)), column),
            Tok::Str(s) => self.node(Kind::Literal(Value::String(s)), column),
            Tok::Punct("(") => {
                let inner = self.expr()?;
                self.expect_punct(")")?;
                Ok(inner)
            }
            Tok::Punct("[") => self.list(column),
            Tok::Punct("#") if self.predicates > 0 => self.node(Kind::Element, column),
            Tok::Punct("#") => Err(ExprError {
                column,
                message: "`#` is only valid inside a predicate, as in `all(result, # > 0)`"
                    .to_string(),
            }),
            // `.field` inside a predicate is shorthand for `#.field`.
            Tok::Punct(".") if self.predicates > 0 => {
                let element = self.node(Kind::Element, column)?;
                let key = self.field_name()?;
                self.member(element, key, false, column)
            }
            Tok::Ident(name) => self.name(name, column),
            tok => {
                self.pos = start;
                Err(self.error(format!("expected an expression, found {tok}")))
            }
        }
    }

    fn list(&mut self, column: usize) -> Parsed {
        let mut items = Vec::new();
        while !self.is_punct("]") {
            items.push(self.expr()?);
            if self.eat_punct(",").is_none() {
                break;
            }
        }
        self.expect_punct("]")?;
        self.node(Kind::List(items), column)
    }

    fn name(&mut self, name: String, column: usize) -> Parsed {
        let literal = match name.as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            "nil" => Some(Value::Null),
            _ => None,
        };
        if let Some(value) = literal {
            return self.node(Kind::Literal(value), column);
        }
        if name == "result" {
            return self.node(Kind::Result, column);
        }
        let error = |message: String| Err(ExprError { column, message });
        let called = self.is_punct("(");
        match functions::lookup(&name) {
            Some(spec) if called => {
                self.advance();
                self.call(spec, column)
            }
            Some(_) => error(format!("`{name}` is a function: call it as `{name}(...)`")),
            None if called => error(format!("unknown function `{name}`")),
            None if matches!(name.as_str(), "and" | "or" | "in" | "not") => {
                error(format!("expected an expression, found `{name}`"))
            }
            None => error(format!(
                "unknown name `{name}`: the only variable is `result`"
            )),
        }
    }

    /// Arguments after `name(`; a predicate function's second argument sees `#`.
    fn call(&mut self, spec: &'static Spec, column: usize) -> Parsed {
        let mut args = Vec::new();
        while !self.is_punct(")") {
            let is_predicate = spec.predicate && args.len() == 1;
            args.push(if is_predicate {
                self.predicate()?
            } else {
                self.expr()?
            });
            if self.eat_punct(",").is_none() {
                break;
            }
        }
        self.expect_punct(")")?;
        if let Some(message) = functions::arity_error(spec, args.len()) {
            return Err(ExprError { column, message });
        }
        self.node(Kind::Call(spec.func, args), column)
    }

    /// `# < 1000`, or the same in braces: `{# < 1000}`.
    fn predicate(&mut self) -> Parsed {
        self.predicates += 1;
        let braced = self.eat_punct("{").is_some();
        let body = self.expr();
        let closed = if braced && body.is_ok() {
            self.expect_punct("}").map(|_| ())
        } else {
            Ok(())
        };
        self.predicates -= 1;
        closed.and(body)
    }
}
