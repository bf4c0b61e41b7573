//! A script's text cut as pgbench's lexer cuts it: SQL commands ended by `;` outside
//! parentheses, over as many lines as they take, with quotes (`'…'`, `E'…'`, `"…"`,
//! `$tag$…$tag$`, and MySQL's `` `…` ``) and comments (`--`, nested `/* */`, and MySQL's `#`
//! where a statement would begin) read through, and
//! the body of a `CREATE [OR REPLACE] FUNCTION|PROCEDURE` read to its `END` (`BEGIN ATOMIC … END`
//! on PostgreSQL, `BEGIN … END` on MySQL: a `;` inside ends nothing, as psql and pgbench read
//! it, by the same rule of thumb: each `BEGIN`, and a `CASE` inside one, is closed by an `END`); `\;`
//! joins statements into one compound command (sent as one query), `\:` is a `:`; any other
//! `\` outside quotes begins a meta-command that runs to the line's end (a `\` there goes on
//! to the next line) and ends the SQL before it, so `SELECT … \gset` on one line is a query and
//! its `\gset`. A script may run on PostgreSQL and MySQL alike: a string whose end the two
//! read in different places (a `\'` inside, an escape to MySQL only) is refused.

use super::{ScriptError, err};

/// One piece of a script, in order.
#[derive(Debug, PartialEq)]
pub(super) enum Piece {
    /// SQL: its text (a `--` comment left out, a `/* */` one blanked, so columns hold), where
    /// its first character is, and the byte offset in `text` where each statement of a
    /// compound command begins (the first's is 0).
    Sql {
        text: String,
        line: usize,
        column: usize,
        starts: Vec<usize>,
    },
    /// A meta-command: the text after its `\`, continuation lines joined; where the `\` is.
    Meta {
        text: String,
        line: usize,
        column: usize,
    },
}

/// The pieces of `text`; an unterminated quote or comment is an error at its start.
pub(super) fn pieces(text: &str) -> Result<Vec<Piece>, ScriptError> {
    let mut l = Lexer {
        b: text.as_bytes(),
        text,
        i: 0,
        line: 1,
        line_start: 0,
        sql: String::new(),
        at: (0, 0),
        starts: vec![0],
        joined_at: (0, 0),
        depth: 0,
        routine: Routine::default(),
        out: Vec::new(),
    };
    while l.i < l.b.len() {
        l.step()?;
    }
    l.end_sql()?;
    Ok(l.out)
}

struct Lexer<'a> {
    b: &'a [u8],
    text: &'a str,
    i: usize,
    line: usize,
    /// Where the current line begins.
    line_start: usize,
    /// The SQL command being read, and where its first character is.
    sql: String,
    at: (usize, usize),
    starts: Vec<usize>,
    /// Where the last `\;` is.
    joined_at: (usize, usize),
    /// Parentheses open in the SQL being read: a `;` inside them ends nothing.
    depth: usize,
    routine: Routine,
    out: Vec<Piece>,
}

/// The words of the SQL being read, as far as they tell whether it makes a function or a
/// procedure, and the blocks of its body open at the moment: `BEGIN`, and a `CASE` inside one,
/// each closed by an `END`; MySQL's `END IF`, `END LOOP`, `END WHILE` and `END REPEAT` close
/// what is not counted, and `END CASE` the `CASE` that was.
#[derive(Default)]
struct Routine {
    /// Words read so far, of which the first four: `create`, `or`, `replace`, `function`
    /// or `procedure` by their first letter, any other word as a blank.
    words: usize,
    first: [u8; 4],
    blocks: usize,
    /// The last word was an `END` that closed a block.
    after_end: bool,
}

impl Routine {
    fn word(&mut self, w: &str, parens: usize) {
        let is = |k: &str| w.eq_ignore_ascii_case(k);
        let known = ["create", "or", "replace", "function", "procedure"];
        if self.words < self.first.len() {
            self.first[self.words] =
                (known.iter().find(|k| is(k))).map_or(b' ', |k| k.as_bytes()[0]);
        }
        self.words += 1;
        let routine = matches!(
            &self.first,
            [b'c', b'f' | b'p', ..] | [b'c', b'o', b'r', b'f' | b'p']
        );
        if !routine || parens > 0 {
            return;
        }
        if std::mem::take(&mut self.after_end) {
            if ["if", "loop", "while", "repeat"].iter().any(|k| is(k)) {
                self.blocks += 1;
                return;
            }
            if is("case") {
                return;
            }
        }
        if is("begin") || (self.blocks > 0 && is("case")) {
            self.blocks += 1;
        } else if is("end") && self.blocks > 0 {
            self.blocks -= 1;
            self.after_end = true;
        }
    }
}

/// A character an identifier may hold (`$` too, after its first).
pub(in crate::sql) fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

impl Lexer<'_> {
    fn column(&self, i: usize) -> usize {
        i - self.line_start + 1
    }

    /// Appends `text[from..to]` to the SQL (blanks before its first character are dropped),
    /// counting the lines it crosses.
    fn take(&mut self, from: usize, to: usize) {
        for (k, c) in self.text[from..to].char_indices() {
            let at = from + k;
            if self.sql.is_empty() && c.is_whitespace() {
                // Not part of a command yet.
            } else {
                if self.sql.is_empty() {
                    self.at = (self.line, self.column(at));
                }
                self.sql.push(c);
            }
            if c == '\n' {
                self.line += 1;
                self.line_start = at + 1;
            }
        }
    }

    /// Appends a blank for each byte of `text[from..to]` (a comment), keeping its lines (and
    /// so the columns after it, which count bytes).
    fn blank(&mut self, from: usize, to: usize) {
        for (k, &c) in self.b[from..to].iter().enumerate() {
            if c == b'\n' {
                self.line += 1;
                self.line_start = from + k + 1;
                if !self.sql.is_empty() {
                    self.sql.push('\n');
                }
            } else if !self.sql.is_empty() {
                self.sql.push(' ');
            }
        }
    }

    fn step(&mut self) -> Result<(), ScriptError> {
        let (b, i) = (self.b, self.i);
        let next = b.get(i + 1).copied();
        let tag = dollar_tag(b, i).filter(|_| i == 0 || !is_ident(b[i - 1]));
        let end = match b[i] {
            b'\'' => self.string(i)?,
            b'"' | b'`' => {
                close(b, i, b[i], false).ok_or_else(|| self.unterminated(i, "quoted name"))?
            }
            b'$' if let Some(tag) = tag => {
                let from = i + tag.len();
                let Some(n) = self.text[from..].find(std::str::from_utf8(tag).unwrap_or("$$"))
                else {
                    return Err(self.unterminated(i, "dollar-quoted string"));
                };
                from + n + tag.len()
            }
            b'(' => {
                self.depth += 1;
                i + 1
            }
            b')' => {
                self.depth = self.depth.saturating_sub(1);
                i + 1
            }
            // A comment to the line's end: `--`, and MySQL's `#` where a statement would begin
            // (inside one, PostgreSQL reads `#` as an operator, exclusive or).
            c if (c == b'-' && next == Some(b'-')) || (c == b'#' && self.sql.is_empty()) => {
                self.i = (b[i..].iter().position(|&c| c == b'\n')).map_or(b.len(), |n| i + n);
                return Ok(());
            }
            b'/' if next == Some(b'*') => {
                let to = self.block_comment(i)?;
                self.blank(i, to);
                self.i = to;
                return Ok(());
            }
            c if (c.is_ascii_alphabetic() || c == b'_' || c >= 0x80)
                && (i == 0 || !is_ident(b[i - 1])) =>
            {
                let end = (b[i..].iter().position(|&c| !is_ident(c))).map_or(b.len(), |n| i + n);
                self.routine.word(&self.text[i..end], self.depth);
                end
            }
            b';' if self.depth == 0 && self.routine.blocks == 0 => {
                self.take(i, i + 1);
                self.i = i + 1;
                return self.end_sql();
            }
            b'\\' if next == Some(b';') => {
                self.i = i + 2;
                return self.join(i);
            }
            b'\\' if next == Some(b':') => {
                // The `\` a blank, so the columns after it hold.
                self.take(i, i + 2);
                let at = self.sql.len() - 2;
                self.sql.replace_range(at..at + 1, " ");
                self.i = i + 2;
                return Ok(());
            }
            b'\\' => {
                self.end_sql()?;
                self.meta(i);
                return Ok(());
            }
            _ => i + self.text[i..].chars().next().map_or(1, char::len_utf8),
        };
        self.take(i, end);
        self.i = end;
        Ok(())
    }

    /// Past the string beginning at `i`. `E'…'` (the E a word of its own) reads a backslash
    /// as an escape; a plain one ends where PostgreSQL ends it, which must be where MySQL, for
    /// which a backslash escapes, ends it too.
    fn string(&self, i: usize) -> Result<usize, ScriptError> {
        let b = self.b;
        let e = i > 0 && matches!(b[i - 1], b'e' | b'E') && (i < 2 || !is_ident(b[i - 2]));
        let end = close(b, i, b'\'', e).ok_or_else(|| self.unterminated(i, "quoted string"))?;
        if !e && close(b, i, b'\'', true) != Some(end) {
            return Err(err(
                self.line,
                self.column(i),
                "PostgreSQL and MySQL end this string in different places (a backslash escapes a quote for MySQL only): write a quote inside a string as ''",
            ));
        }
        Ok(end)
    }

    /// Past the end of the (nested) comment beginning at `i`.
    fn block_comment(&self, i: usize) -> Result<usize, ScriptError> {
        let (b, mut k, mut depth) = (self.b, i + 2, 1);
        while k < b.len() {
            match (b[k], b.get(k + 1)) {
                (b'/', Some(b'*')) => (depth, k) = (depth + 1, k + 2),
                (b'*', Some(b'/')) if depth == 1 => return Ok(k + 2),
                (b'*', Some(b'/')) => (depth, k) = (depth - 1, k + 2),
                _ => k += 1,
            }
        }
        Err(self.unterminated(i, "/* comment"))
    }

    /// An error at `i`, on the line being read, for what begins there and never ends.
    fn unterminated(&self, i: usize, what: &str) -> ScriptError {
        err(self.line, self.column(i), format!("unterminated {what}"))
    }

    /// `\;` at `i`: the statement before it ends, and the command goes on with the next.
    fn join(&mut self, i: usize) -> Result<(), ScriptError> {
        let from = *self.starts.last().expect("a first statement");
        if self.sql[from..].trim().is_empty() {
            return Err(err(
                self.line,
                self.column(i),
                "an empty statement before \\; (a compound command joins statements)",
            ));
        }
        // The `\` a blank, so the columns after it hold.
        self.sql.push_str(" ;");
        self.starts.push(self.sql.len());
        self.joined_at = (self.line, self.column(i));
        Ok(())
    }

    /// Ends the SQL command read so far (nothing when it is only blanks).
    fn end_sql(&mut self) -> Result<(), ScriptError> {
        let text = self.sql.trim_end().to_string();
        self.sql.clear();
        self.depth = 0;
        self.routine = Routine::default();
        let starts = std::mem::replace(&mut self.starts, vec![0]);
        if text.is_empty() {
            return Ok(());
        }
        let last = *starts.last().expect("a first statement");
        let blank = |c: char| c.is_whitespace() || c == ';';
        if starts.len() > 1 && text[last..].trim_matches(blank).is_empty() {
            let (line, column) = self.joined_at;
            return Err(err(
                line,
                column,
                "an empty statement after \\; (a compound command joins statements)",
            ));
        }
        let (line, column) = self.at;
        self.out.push(Piece::Sql {
            text,
            line,
            column,
            starts,
        });
        Ok(())
    }

    /// The meta-command whose `\` is at `i`: to the line's end, and on while a line ends in `\`.
    fn meta(&mut self, i: usize) {
        let (line, column) = (self.line, self.column(i));
        let b = self.b;
        let line_end = |from: usize| {
            (b[from..].iter().position(|&c| c == b'\n')).map_or(b.len(), |n| from + n)
        };
        let mut to = line_end(i);
        let mut text = self.text[i + 1..to].trim_end_matches('\r').to_string();
        while text.ends_with('\\') && to < b.len() {
            text.pop();
            text.push(' ');
            self.line += 1;
            self.line_start = to + 1;
            let next = line_end(to + 1);
            text.push_str(self.text[to + 1..next].trim_end_matches('\r'));
            to = next;
        }
        self.i = to;
        self.out.push(Piece::Meta { text, line, column });
    }
}

/// A dollar quote's tag at `i` (`$$` or `$name$`, the name not beginning with a digit), as
/// PostgreSQL reads one; `None` where `i` holds no `$` or no tag.
pub(in crate::sql) fn dollar_tag(b: &[u8], i: usize) -> Option<&[u8]> {
    if b.get(i) != Some(&b'$') {
        return None;
    }
    let tag_char = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_' || *c >= 0x80;
    let len = (b[i + 1..].iter()).position(|c| !tag_char(c))?;
    let ok = b.get(i + 1 + len) == Some(&b'$') && !b.get(i + 1).is_some_and(u8::is_ascii_digit);
    ok.then(|| &b[i..i + len + 2])
}

/// Past the quote `q` that closes the one at `i` (a doubled quote is inside it; with
/// `backslash`, so is any character after a backslash); `None` when none does.
pub(in crate::sql) fn close(b: &[u8], i: usize, q: u8, backslash: bool) -> Option<usize> {
    let mut k = i + 1;
    while k < b.len() {
        let doubled = b[k] == q && b.get(k + 1) == Some(&q);
        if doubled || (backslash && b[k] == b'\\') {
            k += 2;
        } else if b[k] == q {
            return Some(k + 1);
        } else {
            k += 1;
        }
    }
    None
}
