//! Source text → tokens, each with its 1-based column (in characters, as an editor counts).

use super::ExprError;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Number(f64),
    Str(String),
    /// Names and the word operators (`and`, `or`, `not`, `in`, `true`, `false`, `nil`).
    Ident(String),
    /// One of the punctuation operators, spelled as in the source.
    Punct(&'static str),
    End,
}

#[derive(Clone, Debug)]
pub(super) struct Token {
    pub tok: Tok,
    pub column: usize,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Number(n) => write!(f, "number {}", super::Value::Number(*n)),
            Tok::Str(s) => write!(f, "string {s:?}"),
            Tok::Ident(name) => write!(f, "`{name}`"),
            Tok::Punct(p) => write!(f, "`{p}`"),
            Tok::End => f.write_str("end of input"),
        }
    }
}

/// Longest first, so `**` wins over `*` and `?.` over `?`.
const PUNCTS: &[&str] = &[
    "**", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "(", ")", "[", "]", "{", "}", ",", ".",
    "?", ":", "+", "-", "*", "/", "%", "!", "<", ">", "#",
];

pub(super) fn tokenize(source: &str) -> Result<Vec<Token>, ExprError> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let tok = if c.is_ascii_digit() {
            let (n, next) = number(&chars, i)?;
            i = next;
            Tok::Number(n)
        } else if c == '"' || c == '\'' || c == '`' {
            let (s, next) = string(&chars, i)?;
            i = next;
            Tok::Str(s)
        } else if is_ident_start(c) {
            let start = i;
            while i < chars.len() && is_ident_continue(chars[i]) {
                i += 1;
            }
            Tok::Ident(chars[start..i].iter().collect())
        } else if let Some(p) = PUNCTS.iter().find(|p| starts_with(&chars[i..], p)) {
            i += p.chars().count();
            Tok::Punct(p)
        } else {
            let hint = match c {
                '=' => "; did you mean `==`?",
                '&' => "; did you mean `&&`?",
                '|' => "; did you mean `||`?",
                _ => "",
            };
            return Err(error(column, format!("unexpected character `{c}`{hint}")));
        };
        tokens.push(Token { tok, column });
    }
    tokens.push(Token {
        tok: Tok::End,
        column: chars.len() + 1,
    });
    Ok(tokens)
}

fn starts_with(chars: &[char], p: &str) -> bool {
    let mut rest = chars.iter();
    p.chars().all(|pc| rest.next() == Some(&pc))
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$'
}

fn is_ident_continue(c: char) -> bool {
    is_ident_start(c) || c.is_ascii_digit()
}

/// `12`, `0.95`, `1e3`, `2.5E-4`, `1_000`. A `.` is part of the number only when a digit
/// follows, so `result[0].x` and ranges stay separate tokens.
fn number(chars: &[char], start: usize) -> Result<(f64, usize), ExprError> {
    let digit_at = |i: usize| chars.get(i).is_some_and(|c| c.is_ascii_digit());
    let skip_digits = |mut i: usize| {
        while chars
            .get(i)
            .is_some_and(|c| c.is_ascii_digit() || *c == '_')
        {
            i += 1;
        }
        i
    };
    let mut i = skip_digits(start);
    if chars.get(i) == Some(&'.') && digit_at(i + 1) {
        i = skip_digits(i + 1);
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let sign = usize::from(matches!(chars.get(i + 1), Some('+' | '-')));
        if !digit_at(i + 1 + sign) {
            return Err(error(i + 1, "expected digits after the exponent `e`"));
        }
        i = skip_digits(i + 1 + sign);
    }
    if chars.get(i).is_some_and(|c| is_ident_start(*c)) {
        return Err(error(
            i + 1,
            format!("unexpected `{}` after a number", chars[i]),
        ));
    }
    let text: String = chars[start..i].iter().filter(|c| **c != '_').collect();
    text.parse::<f64>()
        .map(|n| (n, i))
        .map_err(|_| error(start + 1, format!("invalid number `{text}`")))
}

/// Single, double or back quotes; backquoted strings are raw, the others take escapes.
fn string(chars: &[char], start: usize) -> Result<(String, usize), ExprError> {
    let quote = chars[start];
    let mut out = String::new();
    let mut i = start + 1;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(error(start + 1, "unterminated string"));
        };
        i += 1;
        if c == quote {
            return Ok((out, i));
        }
        if c != '\\' || quote == '`' {
            out.push(c);
            continue;
        }
        let Some(&e) = chars.get(i) else {
            return Err(error(start + 1, "unterminated string"));
        };
        i += 1;
        out.push(match e {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            '0' => '\0',
            '\\' | '\'' | '"' => e,
            'u' => {
                let hex: String = chars.iter().skip(i).take(4).collect();
                let valid = hex.len() == 4 && hex.chars().all(|h| h.is_ascii_hexdigit());
                let code = u32::from_str_radix(&hex, 16).ok().filter(|_| valid);
                match code.and_then(char::from_u32) {
                    Some(ch) => {
                        i += 4;
                        ch
                    }
                    None => {
                        return Err(error(i - 1, "invalid `\\u` escape: expected 4 hex digits"))
                    }
                }
            }
            other => return Err(error(i - 1, format!("unknown escape `\\{other}`"))),
        });
    }
}

fn error(column: usize, message: impl Into<String>) -> ExprError {
    ExprError {
        column,
        message: message.into(),
    }
}
