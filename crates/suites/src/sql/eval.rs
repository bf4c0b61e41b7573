//! pgbench's `\set` expressions, evaluated as pgbench evaluates them: integers are checked for
//! overflow, a double in an operation makes it a double one, NULL goes through everything but
//! `IS`, `AND`/`OR` are lazy, and every failure is an error message, never a panic.

use super::expr::{Expr, Func, Op};
use super::random::{self, Prng};

/// A value of a variable or an expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    /// Text from `\gset` or `-D`, read as a number, a boolean or NULL when used.
    Text(String),
}

impl std::fmt::Display for Value {
    /// As pgbench substitutes a value into SQL.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Double(d) => f.write_str(&g15(*d)),
            Value::Text(t) => f.write_str(t),
        }
    }
}

/// C's `%.15g`.
fn g15(d: f64) -> String {
    if !d.is_finite() {
        return if d.is_nan() {
            "nan".into()
        } else if d > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if d == 0.0 {
        return "0".into();
    }
    let exp = d.abs().log10().floor() as i32;
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if !(-4..15).contains(&exp) {
        let s = format!("{:.14e}", d);
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        format!(
            "{}e{}{:02}",
            trim(m.to_string()),
            if e < 0 { '-' } else { '+' },
            e.abs()
        )
    } else {
        trim(format!("{:.*}", (14 - exp).max(0) as usize, d))
    }
}

/// A client's variables by name. FxHash, not std's SipHash: the names are the script's own
/// and short, and a transaction looks them up a dozen times or more.
pub type Vars = rustc_hash::FxHashMap<String, Value>;

/// What an expression may read: the variables, the client's generator and the default seed
/// (when the variables have no `default_seed`); and where it is, for `debug()`: its script and
/// line.
pub struct Env<'a> {
    pub vars: &'a Vars,
    pub prng: &'a mut Prng,
    pub default_seed: i64,
    pub at: (&'a str, usize),
}

type R<T> = Result<T, String>;

/// A text variable's value, as pgbench reads one when it is used.
fn from_text(t: &str) -> R<Value> {
    let l = t.trim().to_ascii_lowercase();
    if l.is_empty() {
        return Err("empty value".into());
    }
    if l == "null" {
        return Ok(Value::Null);
    }
    if "true".starts_with(&l) || "yes".starts_with(&l) || l == "on" {
        return Ok(Value::Bool(true));
    }
    if "false".starts_with(&l) || "no".starts_with(&l) || l == "off" || l == "of" {
        return Ok(Value::Bool(false));
    }
    let digits = l.strip_prefix(['+', '-']).unwrap_or(&l);
    if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
        return l
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| format!("value {t:?} is out of range for type bigint"));
    }
    l.parse::<f64>()
        .map(Value::Double)
        .map_err(|_| format!("malformed variable value {t:?}"))
}

impl Value {
    fn settle(self) -> R<Value> {
        match self {
            Value::Text(t) => from_text(&t),
            v => Ok(v),
        }
    }
    /// As pgbench reads a `\sleep` variable: C's `atoi` of its text (the leading whole number:
    /// `1.5` and `2ms` are 1 and 2), refused when that is 0 and the text does not begin with a
    /// digit (`true`, `x`).
    pub fn atoi(&self) -> R<i64> {
        let text = self.to_string();
        let rest = text.trim_start();
        let (negative, digits) = match rest.as_bytes().first() {
            Some(b'-') => (true, &rest[1..]),
            Some(b'+') => (false, &rest[1..]),
            _ => (false, rest),
        };
        let n = (digits.bytes())
            .take_while(u8::is_ascii_digit)
            .fold(0i64, |n, d| {
                n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
            });
        if n == 0 && !text.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!("invalid sleep time {text:?}"));
        }
        Ok(if negative { -n } else { n })
    }
    /// As an integer: a double rounded half to even, text read; a boolean or NULL refused.
    pub fn int(&self) -> R<i64> {
        match self {
            Value::Int(i) => Ok(*i),
            Value::Double(d) => {
                let r = d.round_ties_even();
                if r.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&r)
                {
                    return Err("double to int overflow".into());
                }
                Ok(r as i64)
            }
            Value::Text(t) => from_text(t)?.int(),
            Value::Bool(_) => Err("cannot coerce boolean to int".into()),
            Value::Null => Err("cannot coerce NULL to int".into()),
        }
    }
    fn double(&self) -> R<f64> {
        match self {
            Value::Int(i) => Ok(*i as f64),
            Value::Double(d) => Ok(*d),
            Value::Text(t) => from_text(t)?.double(),
            Value::Bool(_) => Err("cannot coerce boolean to double".into()),
            Value::Null => Err("cannot coerce NULL to double".into()),
        }
    }
    fn boolean(&self) -> R<bool> {
        match self {
            Value::Bool(b) => Ok(*b),
            Value::Text(t) => from_text(t)?.boolean(),
            _ => Err(format!("cannot coerce {self} to boolean")),
        }
    }
    /// `\if`'s and `CASE`'s reading: NULL is false, a number is true when not zero.
    pub fn truthy(&self) -> R<bool> {
        Ok(match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Double(d) => *d != 0.0,
            Value::Text(t) => from_text(t)?.truthy()?,
        })
    }
}

/// Evaluates `e`.
pub fn eval(e: &Expr, env: &mut Env<'_>) -> R<Value> {
    match e {
        Expr::Int(i) => Ok(Value::Int(*i)),
        Expr::Double(d) => Ok(Value::Double(*d)),
        Expr::Bool(b) => Ok(Value::Bool(*b)),
        Expr::Null => Ok(Value::Null),
        Expr::Var(name) => match env.vars.get(name) {
            Some(v) => v.clone().settle(),
            None => Err(format!("undefined variable \"{name}\"")),
        },
        Expr::Op(Op::And, l, r) => match eval(l, env)? {
            Value::Null => Ok(Value::Null),
            v if !v.boolean()? => Ok(Value::Bool(false)),
            _ => logical(eval(r, env)?),
        },
        Expr::Op(Op::Or, l, r) => match eval(l, env)? {
            Value::Null => Ok(Value::Null),
            v if v.boolean()? => Ok(Value::Bool(true)),
            _ => logical(eval(r, env)?),
        },
        Expr::Op(op, l, r) => {
            let (l, r) = (eval(l, env)?, eval(r, env)?);
            if l == Value::Null || r == Value::Null {
                return Ok(Value::Null);
            }
            binary(*op, &l, &r)
        }
        Expr::Not(x) => match eval(x, env)? {
            Value::Null => Ok(Value::Null),
            v => Ok(Value::Bool(!v.boolean()?)),
        },
        Expr::Is(x, what) => {
            let (x, what) = (eval(x, env)?, eval(what, env)?);
            Ok(Value::Bool(x == what))
        }
        Expr::Case(arms, otherwise) => {
            for (c, r) in arms {
                if eval(c, env)?.truthy()? {
                    return eval(r, env);
                }
            }
            eval(otherwise, env)
        }
        Expr::Call(f, args) => {
            let mut args = args.iter().map(|a| eval(a, env)).collect::<R<Vec<_>>>()?;
            // As pgbench writes a missing seed: `:default_seed`, read when the call runs (a
            // script may set it).
            let seeded = match f {
                Func::Hash | Func::HashMurmur2 | Func::HashFnv1a => 2,
                Func::Permute => 3,
                _ => 0,
            };
            if args.len() + 1 == seeded {
                let seed = env.vars.get("default_seed").cloned();
                args.push(seed.map_or(Ok(Value::Int(env.default_seed)), Value::settle)?);
            }
            if *f != Func::Debug && args.contains(&Value::Null) {
                return Ok(Value::Null);
            }
            call(*f, &args, env)
        }
    }
}

/// `debug()`'s line on stderr, as pgbench writes it but for where: the script's name and line
/// rather than its number and command's.
fn debug((script, line): (&str, usize), v: &Value) {
    let shown = match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Int(i) => format!("int {i}"),
        Value::Double(d) => format!("double {}", g15(*d)),
        Value::Text(t) => format!("string {t}"),
    };
    eprintln!("debug(script={script},line={line}): {shown}");
}

fn logical(v: Value) -> R<Value> {
    match v {
        Value::Null => Ok(Value::Null),
        v => Ok(Value::Bool(v.boolean()?)),
    }
}

fn checked(v: Option<i64>, what: &str) -> R<Value> {
    v.map(Value::Int)
        .ok_or_else(|| format!("bigint {what} out of range"))
}

fn binary(op: Op, l: &Value, r: &Value) -> R<Value> {
    let doubles = matches!((l, r), (Value::Double(_), _) | (_, Value::Double(_)));
    if doubles
        && matches!(
            op,
            Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Eq | Op::Ne | Op::Lt | Op::Le
        )
    {
        let (a, b) = (l.double()?, r.double()?);
        return Ok(match op {
            Op::Add => Value::Double(a + b),
            Op::Sub => Value::Double(a - b),
            Op::Mul => Value::Double(a * b),
            Op::Div => Value::Double(a / b),
            Op::Eq => Value::Bool(a == b),
            Op::Ne => Value::Bool(a != b),
            Op::Lt => Value::Bool(a < b),
            _ => Value::Bool(a <= b),
        });
    }
    let (a, b) = (l.int()?, r.int()?);
    match op {
        Op::Add => checked(a.checked_add(b), "add"),
        Op::Sub => checked(a.checked_sub(b), "sub"),
        Op::Mul => checked(a.checked_mul(b), "mul"),
        Op::Div if b == 0 => Err("division by zero".into()),
        Op::Div => checked(a.checked_div(b), "div"),
        Op::Mod => modulo(a, b),
        Op::Eq => Ok(Value::Bool(a == b)),
        Op::Ne => Ok(Value::Bool(a != b)),
        Op::Lt => Ok(Value::Bool(a < b)),
        Op::Le => Ok(Value::Bool(a <= b)),
        Op::BitAnd => Ok(Value::Int(a & b)),
        Op::BitOr => Ok(Value::Int(a | b)),
        Op::BitXor => Ok(Value::Int(a ^ b)),
        Op::Shl => Ok(Value::Int(a.wrapping_shl(b as u32))),
        Op::Shr => Ok(Value::Int(a.wrapping_shr(b as u32))),
        Op::And | Op::Or => unreachable!("evaluated lazily"),
    }
}

fn modulo(a: i64, b: i64) -> R<Value> {
    match b {
        0 => Err("division by zero".into()),
        -1 => Ok(Value::Int(0)),
        b => Ok(Value::Int(a % b)),
    }
}

fn call(f: Func, a: &[Value], env: &mut Env<'_>) -> R<Value> {
    let seed = |i: usize| a[i].int();
    let refused = |m: &str| m.to_string();
    Ok(match f {
        Func::Abs => match &a[0] {
            Value::Double(d) => Value::Double(d.abs()),
            v => Value::Int(v.int()?.wrapping_abs()),
        },
        Func::Debug => {
            debug(env.at, &a[0]);
            a[0].clone()
        }
        Func::Double => Value::Double(a[0].double()?),
        Func::Exp => Value::Double(a[0].double()?.exp()),
        Func::Ln => Value::Double(a[0].double()?.ln()),
        Func::Sqrt => Value::Double(a[0].double()?.sqrt()),
        Func::Pi => Value::Double(std::f64::consts::PI),
        Func::Pow => Value::Double(a[0].double()?.powf(a[1].double()?)),
        Func::Int => Value::Int(a[0].int()?),
        Func::Mod => modulo(a[0].int()?, a[1].int()?)?,
        Func::Least | Func::Greatest => extreme(f == Func::Greatest, a)?,
        Func::Hash | Func::HashMurmur2 => Value::Int(random::hash_murmur2(a[0].int()?, seed(1)?)),
        Func::HashFnv1a => Value::Int(random::hash_fnv1a(a[0].int()?, seed(1)?)),
        Func::Permute => {
            Value::Int(random::permute(a[0].int()?, a[1].int()?, seed(2)?).map_err(refused)?)
        }
        Func::Random => {
            Value::Int(random::uniform(env.prng, a[0].int()?, a[1].int()?).map_err(refused)?)
        }
        Func::RandomExponential | Func::RandomGaussian | Func::RandomZipfian => {
            let (lb, ub, p) = (a[0].int()?, a[1].int()?, a[2].double()?);
            let draw = match f {
                Func::RandomExponential => random::exponential(env.prng, lb, ub, p),
                Func::RandomGaussian => random::gaussian(env.prng, lb, ub, p),
                _ => random::zipfian(env.prng, lb, ub, p),
            };
            Value::Int(draw.map_err(refused)?)
        }
        Func::RandomDigits => Value::Text(
            random::sysbench::digits(env.prng, a[0].int()?, a[1].int()?).map_err(refused)?,
        ),
        Func::SbUniform | Func::SbGaussian | Func::SbSpecial | Func::SbPareto | Func::SbZipfian => {
            Value::Int(sysbench(f, a, env.prng)?)
        }
    })
}

/// sysbench's distributions, their optional parameters at sysbench's defaults.
fn sysbench(f: Func, a: &[Value], p: &mut random::Prng) -> R<i64> {
    use random::sysbench as sb;
    let (lb, ub) = (a[0].int()?, a[1].int()?);
    let int = |i: usize, default: i64| a.get(i).map_or(Ok(default), Value::int);
    let num = |i: usize, default: f64| a.get(i).map_or(Ok(default), Value::double);
    let draw = match f {
        Func::SbUniform => sb::uniform(p, lb, ub),
        Func::SbGaussian => sb::gaussian(p, lb, ub, int(2, sb::SPEC_ITER)?),
        Func::SbSpecial => sb::special(
            p,
            lb,
            ub,
            int(2, sb::SPEC_ITER)?,
            num(3, sb::SPEC_PCT)?,
            num(4, sb::SPEC_RES)?,
        ),
        Func::SbPareto => sb::pareto(p, lb, ub, num(2, sb::PARETO_H)?),
        _ => sb::zipfian(p, lb, ub, num(2, sb::ZIPFIAN_EXP)?),
    };
    draw.map_err(str::to_string)
}

/// `least` / `greatest`: a double when any argument is one.
fn extreme(greatest: bool, a: &[Value]) -> R<Value> {
    let better = |x: f64, y: f64| if greatest { x > y } else { x < y };
    if a.iter().any(|v| matches!(v, Value::Double(_))) {
        let mut best = a[0].double()?;
        for v in &a[1..] {
            let d = v.double()?;
            if better(d, best) {
                best = d;
            }
        }
        return Ok(Value::Double(best));
    }
    let mut best = a[0].int()?;
    for v in &a[1..] {
        let i = v.int()?;
        if (greatest && i > best) || (!greatest && i < best) {
            best = i;
        }
    }
    Ok(Value::Int(best))
}

#[cfg(test)]
mod tests;
