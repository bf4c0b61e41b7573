//! pgbench's `\set` expressions, parsed: integers, doubles, booleans and NULL, `:variables`,
//! arithmetic, comparisons, logic, bit operations, `CASE`, `IS [NOT] NULL|TRUE|FALSE` and the
//! built-in functions, with pgbench's precedence and its desugaring (`-x` is `0 - x`, `a > b`
//! is `b < a`, `~x` is `x # -1`). A mistake is a [`ParseError`] at a column of the expression.

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Int(i64),
    Double(f64),
    Bool(bool),
    Null,
    Var(String),
    Op(Op, Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    /// `a IS b`, b being NULL, TRUE or FALSE.
    Is(Box<Expr>, Box<Expr>),
    /// `CASE WHEN c THEN r … ELSE e END`.
    Case(Vec<(Expr, Expr)>, Box<Expr>),
    Call(Func, Vec<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    Ne,
    Lt,
    Le,
    And,
    Or,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

/// The built-in functions, with their argument counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Abs,
    Debug,
    Double,
    Exp,
    Greatest,
    Hash,
    HashFnv1a,
    HashMurmur2,
    Int,
    Least,
    Ln,
    Mod,
    Permute,
    Pi,
    Pow,
    Random,
    RandomExponential,
    RandomGaussian,
    RandomZipfian,
    /// dyno's: sysbench's `#`-template strings, and its `--rand-type` distributions.
    RandomDigits,
    SbGaussian,
    SbPareto,
    SbSpecial,
    SbUniform,
    SbZipfian,
    Sqrt,
}

/// Each function's name, and its least and most arguments (`usize::MAX`: any number).
const FUNCS: [(&str, Func, usize, usize); 27] = [
    ("abs", Func::Abs, 1, 1),
    ("debug", Func::Debug, 1, 1),
    ("double", Func::Double, 1, 1),
    ("exp", Func::Exp, 1, 1),
    ("greatest", Func::Greatest, 1, usize::MAX),
    ("hash", Func::Hash, 1, 2),
    ("hash_fnv1a", Func::HashFnv1a, 1, 2),
    ("hash_murmur2", Func::HashMurmur2, 1, 2),
    ("int", Func::Int, 1, 1),
    ("least", Func::Least, 1, usize::MAX),
    ("ln", Func::Ln, 1, 1),
    ("mod", Func::Mod, 2, 2),
    ("permute", Func::Permute, 2, 3),
    ("pi", Func::Pi, 0, 0),
    ("pow", Func::Pow, 2, 2),
    ("power", Func::Pow, 2, 2),
    ("random", Func::Random, 2, 2),
    ("random_exponential", Func::RandomExponential, 3, 3),
    ("random_gaussian", Func::RandomGaussian, 3, 3),
    ("random_zipfian", Func::RandomZipfian, 3, 3),
    ("random_digits", Func::RandomDigits, 2, 2),
    ("sb_gaussian", Func::SbGaussian, 2, 3),
    ("sb_pareto", Func::SbPareto, 2, 3),
    ("sb_special", Func::SbSpecial, 2, 5),
    ("sb_uniform", Func::SbUniform, 2, 2),
    ("sb_zipfian", Func::SbZipfian, 2, 3),
    ("sqrt", Func::Sqrt, 1, 1),
];

/// The most arguments a function takes, as pgbench's `MAX_FARGS`.
const MAX_ARGS: usize = 16;

/// A mistake in an expression: where (a 0-based byte offset) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub at: usize,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// An integer literal, unsigned (`9223372036854775808` is allowed only after `-`).
    Int(u64),
    Double(f64),
    Var(String),
    Word(String),
    Sym(&'static str),
}

const SYMS: [&str; 20] = [
    "<>", "!=", "<=", ">=", "<<", ">>", "+", "-", "*", "/", "%", "=", "<", ">", "|", "&", "#", "~",
    "(", ")",
];

fn is_ident(c: u8, first: bool) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 || (!first && c.is_ascii_digit())
}

/// Splits an expression into tokens, each with its offset.
fn lex(text: &str) -> Result<Vec<(usize, Tok)>, ParseError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |at: usize, m: &str| ParseError {
        at,
        message: m.to_string(),
    };
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() || (c == b'\\' && matches!(b.get(i + 1), Some(b'\n' | b'\r'))) {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let mut double = false;
            if b.get(i) == Some(&b'.') {
                double = true;
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if matches!(b.get(i), Some(b'e' | b'E')) {
                let mut j = i + 1;
                if matches!(b.get(j), Some(b'+' | b'-')) {
                    j += 1;
                }
                if b.get(j).is_some_and(u8::is_ascii_digit) {
                    double = true;
                    i = j;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let s = &text[start..i];
            let tok = if double {
                let v: f64 = s.parse().map_err(|_| err(start, "not a number"))?;
                if v.is_infinite() {
                    return Err(err(start, "double constant overflow"));
                }
                Tok::Double(v)
            } else {
                match s.parse::<u64>() {
                    Ok(v) if v <= 1 << 63 => Tok::Int(v),
                    _ => return Err(err(start, "bigint constant overflow")),
                }
            };
            out.push((start, tok));
        } else if c == b':' {
            i += 1;
            while i < b.len() && is_ident(b[i], false) {
                i += 1;
            }
            if i == start + 1 {
                return Err(err(start, "a ':' not followed by a variable's name"));
            }
            out.push((start, Tok::Var(text[start + 1..i].to_string())));
        } else if is_ident(c, true) {
            while i < b.len() && is_ident(b[i], false) {
                i += 1;
            }
            out.push((start, Tok::Word(text[start..i].to_ascii_lowercase())));
        } else if let Some(s) = SYMS.iter().find(|s| text[i..].starts_with(**s)) {
            i += s.len();
            out.push((start, Tok::Sym(s)));
        } else if c == b',' {
            i += 1;
            out.push((start, Tok::Sym(",")));
        } else {
            return Err(err(
                start,
                &format!(
                    "unexpected character {:?}",
                    text[i..].chars().next().unwrap_or('?')
                ),
            ));
        }
    }
    Ok(out)
}

/// Parses a whole expression.
pub fn parse(text: &str) -> Result<Expr, ParseError> {
    let toks = lex(text)?;
    let mut p = Parser {
        toks,
        at: 0,
        end: text.len(),
    };
    let e = p.or()?;
    match p.toks.get(p.at) {
        None => Ok(e),
        Some((at, _)) => Err(ParseError {
            at: *at,
            message: "syntax error: more after the expression".into(),
        }),
    }
}

struct Parser {
    toks: Vec<(usize, Tok)>,
    at: usize,
    end: usize,
}

fn bin(op: Op, l: Expr, r: Expr) -> Expr {
    Expr::Op(op, Box::new(l), Box::new(r))
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at).map(|(_, t)| t)
    }
    fn offset(&self) -> usize {
        self.toks.get(self.at).map_or(self.end, |(a, _)| *a)
    }
    fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            at: self.offset(),
            message: message.into(),
        }
    }
    fn word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Word(x)) if x == w) {
            self.at += 1;
            return true;
        }
        false
    }
    fn sym(&mut self, s: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Sym(x)) if *x == s) {
            self.at += 1;
            return true;
        }
        false
    }
    fn expect_sym(&mut self, s: &str) -> Result<(), ParseError> {
        if self.sym(s) {
            Ok(())
        } else {
            Err(self.error(format!("syntax error: expected {s:?}")))
        }
    }

    fn or(&mut self) -> Result<Expr, ParseError> {
        let mut l = self.and()?;
        while self.word("or") {
            l = bin(Op::Or, l, self.and()?);
        }
        Ok(l)
    }
    fn and(&mut self) -> Result<Expr, ParseError> {
        let mut l = self.not()?;
        while self.word("and") {
            l = bin(Op::And, l, self.not()?);
        }
        Ok(l)
    }
    fn not(&mut self) -> Result<Expr, ParseError> {
        if self.word("not") {
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.is()
    }
    fn is(&mut self) -> Result<Expr, ParseError> {
        let e = self.cmp()?;
        let is_null = |e: Expr| Expr::Is(Box::new(e), Box::new(Expr::Null));
        if self.word("isnull") {
            return Ok(is_null(e));
        }
        if self.word("notnull") {
            return Ok(Expr::Not(Box::new(is_null(e))));
        }
        if !self.word("is") {
            return Ok(e);
        }
        let negated = self.word("not");
        let what = if self.word("null") {
            Expr::Null
        } else if self.word("true") {
            Expr::Bool(true)
        } else if self.word("false") {
            Expr::Bool(false)
        } else {
            return Err(self.error("syntax error: IS takes NULL, TRUE or FALSE"));
        };
        let e = Expr::Is(Box::new(e), Box::new(what));
        Ok(if negated { Expr::Not(Box::new(e)) } else { e })
    }
    fn cmp(&mut self) -> Result<Expr, ParseError> {
        let l = self.bit()?;
        let ops: [(&str, Op, bool); 7] = [
            ("=", Op::Eq, false),
            ("<>", Op::Ne, false),
            ("!=", Op::Ne, false),
            ("<=", Op::Le, false),
            ("<", Op::Lt, false),
            (">=", Op::Le, true),
            (">", Op::Lt, true),
        ];
        for (s, op, swap) in ops {
            if self.sym(s) {
                let r = self.bit()?;
                if matches!(
                    self.peek(),
                    Some(Tok::Sym("=" | "<>" | "!=" | "<=" | "<" | ">=" | ">"))
                ) {
                    return Err(self.error("syntax error: comparisons do not chain (a < b < c)"));
                }
                return Ok(if swap { bin(op, r, l) } else { bin(op, l, r) });
            }
        }
        Ok(l)
    }
    fn bit(&mut self) -> Result<Expr, ParseError> {
        let mut l = self.add()?;
        loop {
            let op = if self.sym("|") {
                Op::BitOr
            } else if self.sym("#") {
                Op::BitXor
            } else if self.sym("&") {
                Op::BitAnd
            } else if self.sym("<<") {
                Op::Shl
            } else if self.sym(">>") {
                Op::Shr
            } else {
                return Ok(l);
            };
            l = bin(op, l, self.add()?);
        }
    }
    fn add(&mut self) -> Result<Expr, ParseError> {
        let mut l = self.mul()?;
        loop {
            let op = if self.sym("+") {
                Op::Add
            } else if self.sym("-") {
                Op::Sub
            } else {
                return Ok(l);
            };
            l = bin(op, l, self.mul()?);
        }
    }
    fn mul(&mut self) -> Result<Expr, ParseError> {
        let mut l = self.unary()?;
        loop {
            let op = if self.sym("*") {
                Op::Mul
            } else if self.sym("/") {
                Op::Div
            } else if self.sym("%") {
                Op::Mod
            } else {
                return Ok(l);
            };
            l = bin(op, l, self.unary()?);
        }
    }
    fn unary(&mut self) -> Result<Expr, ParseError> {
        if self.sym("-") {
            // The one integer that needs its sign: -9223372036854775808.
            if let Some(Tok::Int(v)) = self.peek()
                && *v == 1 << 63
            {
                self.at += 1;
                return Ok(Expr::Int(i64::MIN));
            }
            return Ok(bin(Op::Sub, Expr::Int(0), self.unary()?));
        }
        if self.sym("+") {
            return self.unary();
        }
        self.primary()
    }
    fn primary(&mut self) -> Result<Expr, ParseError> {
        let at = self.offset();
        let Some((_, tok)) = self.toks.get(self.at).cloned() else {
            return Err(self.error("syntax error: the expression ends early"));
        };
        self.at += 1;
        match tok {
            Tok::Int(v) if v == 1 << 63 => Err(ParseError {
                at,
                message: "bigint constant overflow".into(),
            }),
            Tok::Int(v) => Ok(Expr::Int(v as i64)),
            Tok::Double(v) => Ok(Expr::Double(v)),
            Tok::Var(name) => Ok(Expr::Var(name)),
            Tok::Sym("(") => {
                let e = self.or()?;
                self.expect_sym(")")?;
                Ok(e)
            }
            // `~x` and `NOT x` wherever an operand may be, as in pgbench's grammar, each
            // taking what binds tighter than itself: `~1 + 2` is `~(1 + 2)`, `1 + ~2 | 3` is
            // `(1 + ~2) | 3`, and `1 = NOT b AND c` is `(1 = (NOT b)) AND c`.
            Tok::Sym("~") => Ok(bin(Op::BitXor, self.add()?, Expr::Int(-1))),
            Tok::Word(w) if w == "not" => Ok(Expr::Not(Box::new(self.not()?))),
            Tok::Word(w) => self.word_expr(&w, at),
            Tok::Sym(s) => Err(ParseError {
                at,
                message: format!("syntax error at {s:?}"),
            }),
        }
    }
    fn word_expr(&mut self, w: &str, at: usize) -> Result<Expr, ParseError> {
        match w {
            "true" => return Ok(Expr::Bool(true)),
            "false" => return Ok(Expr::Bool(false)),
            "null" => return Ok(Expr::Null),
            "case" => return self.case(),
            _ => {}
        }
        let Some(&(name, f, min, max)) = FUNCS.iter().find(|(n, ..)| *n == w) else {
            return Err(ParseError {
                at,
                message: format!("unexpected function name {w:?}"),
            });
        };
        self.expect_sym("(")?;
        let mut args = Vec::new();
        if !self.sym(")") {
            loop {
                args.push(self.or()?);
                if self.sym(")") {
                    break;
                }
                if !self.sym(",") {
                    return Err(
                        self.error("syntax error: expected \",\" or \")\" after an argument")
                    );
                }
            }
        }
        if args.len() > MAX_ARGS {
            return Err(ParseError {
                at,
                message: format!(
                    "too many function arguments, maximum is {MAX_ARGS} ({name} has {})",
                    args.len()
                ),
            });
        }
        if args.len() < min || args.len() > max {
            return Err(ParseError {
                at,
                message: format!("wrong number of arguments to {name}: {}", args.len()),
            });
        }
        Ok(Expr::Call(f, args))
    }
    fn case(&mut self) -> Result<Expr, ParseError> {
        let mut arms = Vec::new();
        while self.word("when") {
            let c = self.or()?;
            if !self.word("then") {
                return Err(self.error("syntax error: WHEN without THEN"));
            }
            arms.push((c, self.or()?));
        }
        if arms.is_empty() {
            return Err(self.error("syntax error: CASE without WHEN"));
        }
        let otherwise = if self.word("else") {
            self.or()?
        } else {
            Expr::Null
        };
        if !self.word("end") {
            return Err(self.error("syntax error: CASE without END"));
        }
        Ok(Expr::Case(arms, Box::new(otherwise)))
    }
}
