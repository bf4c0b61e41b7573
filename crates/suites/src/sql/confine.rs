//! A script stays in dyno's own schema (or database): the sessions run there, so a table's
//! name alone is dyno's table. What could reach past it is refused when the script is read, with
//! its place: a write to a name qualified by another schema or database (`UPDATE public.t`,
//! `INSERT INTO shop.orders`), and statements that move the session or change who it is
//! (`SET search_path`, `USE`, `SET ROLE`, `CREATE SCHEMA`, `GRANT`, `COPY`…). Reading a
//! qualified name is allowed: nothing outside is changed by it. This is a check of what the
//! script says, not a sandbox: a function the server already has may still write anywhere.

use super::script::lex::{close, dollar_tag, is_ident};

/// One word of SQL (a name, possibly qualified and quoted, or a keyword), and its byte offset.
struct Word<'a> {
    text: &'a str,
    at: usize,
}

/// The words of `sql`, skipping strings, comments and punctuation. A quoted name stays in its
/// word (`"public"."t"`), so a qualified name is one word with a `.` outside quotes. `mysql`
/// reads it as MySQL does: a backslash escapes the next character in a string, and `#` starts
/// a comment (PostgreSQL reads neither so).
fn words(sql: &str, mysql: bool) -> Vec<Word<'_>> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\'' {
            i = close(b, i, b'\'', mysql).unwrap_or(b.len());
        } else if (c == b'-' && b.get(i + 1) == Some(&b'-')) || (mysql && c == b'#') {
            i = (b[i..].iter().position(|&x| x == b'\n')).map_or(b.len(), |n| i + n);
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i = (sql[i + 2..].find("*/")).map_or(b.len(), |n| i + 2 + n + 2);
        } else if let Some(tag) = dollar_tag(b, i).filter(|_| i == 0 || !is_ident(b[i - 1])) {
            let body = i + tag.len();
            i = (sql[body..].find(&sql[i..i + tag.len()]))
                .map_or(b.len(), |n| body + n + tag.len());
        } else if is_word(c) {
            let start = i;
            while i < b.len() && (is_word(b[i]) || b[i] == b'.') {
                if matches!(b[i], b'"' | b'`') {
                    i = close(b, i, b[i], mysql && b[i] == b'"').unwrap_or(b.len());
                } else {
                    i += 1;
                }
            }
            out.push(Word {
                text: &sql[start..i],
                at: start,
            });
        } else {
            i += 1;
        }
    }
    out
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'"' | b'`' | b':') || c >= 0x80
}

/// Whether a word holds a `.` outside its quotes (a name qualified by a schema or database).
fn qualified(word: &str) -> bool {
    let mut quote = None;
    for c in word.bytes() {
        match (quote, c) {
            (None, b'"' | b'`') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, b'.') => return true,
            _ => {}
        }
    }
    false
}

/// Words after which the name written to comes (skipping the words of `SKIPPED`).
const WRITES_TO: [&str; 9] = [
    "INSERT", "INTO", "UPDATE", "TABLE", "TRUNCATE", "INDEX", "VIEW", "SEQUENCE", "FUNCTION",
];
/// `ONLY`, `IF [NOT] EXISTS`, `TABLE`, MySQL's modifiers (`LOW_PRIORITY`, `IGNORE`…).
const SKIPPED: [&str; 12] = [
    "ONLY",
    "IF",
    "NOT",
    "EXISTS",
    "TABLE",
    "INTO",
    "CONCURRENTLY",
    "LOW_PRIORITY",
    "HIGH_PRIORITY",
    "DELAYED",
    "IGNORE",
    "QUICK",
];

/// Statements that move the session, change who it is, or reach the server's files.
const REFUSED_FIRST: [&str; 8] = [
    "USE", "GRANT", "REVOKE", "COPY", "LOAD", "DO", "ATTACH", "DISCARD",
];
/// What `SET` or `RESET` may not change (after `SESSION` or `LOCAL`, which are skipped).
const REFUSED_SET: [&str; 7] = [
    "SEARCH_PATH",
    "SCHEMA",
    "ROLE",
    "AUTHORIZATION",
    "GLOBAL",
    "PERSIST",
    "ALL",
];
const REFUSED_OBJECTS: [&str; 7] = [
    "DATABASE",
    "SCHEMA",
    "ROLE",
    "USER",
    "TABLESPACE",
    "EXTENSION",
    "SERVER",
];
/// Words that write a file on the server (MySQL's `SELECT … INTO OUTFILE`).
const FILES: [&str; 2] = ["OUTFILE", "DUMPFILE"];

/// Checks one SQL command: `Err((byte offset, why))` when it could reach past dyno's schema.
pub fn check(sql: &str) -> Result<(), (usize, String)> {
    // A script may run on either server: it must pass read as each reads it.
    check_as(sql, false)?;
    check_as(sql, true)
}

fn check_as(sql: &str, mysql: bool) -> Result<(), (usize, String)> {
    let w = words(sql, mysql);
    let up = |i: usize| w.get(i).map(|x| x.text.to_ascii_uppercase());
    let Some(first) = up(0) else { return Ok(()) };
    let refuse = |i: usize, why: String| Err((w[i.min(w.len() - 1)].at, why));
    if REFUSED_FIRST.contains(&first.as_str()) {
        return refuse(
            0,
            format!("{first} is not run by dyno: it could reach past dyno's own schema"),
        );
    }
    // `SET [SESSION|LOCAL] x`: what x is.
    let mut k = 1;
    while up(k).is_some_and(|x| x == "SESSION" || x == "LOCAL") {
        k += 1;
    }
    let set = up(k).unwrap_or_default();
    if (first == "SET" || first == "RESET") && REFUSED_SET.contains(&set.as_str()) {
        return refuse(
            k,
            format!(
                "{first} {set} would move the session out of dyno's own schema, or change who it is"
            ),
        );
    }
    let second = up(1).unwrap_or_default();
    if matches!(first.as_str(), "CREATE" | "DROP" | "ALTER")
        && REFUSED_OBJECTS.contains(&second.as_str())
    {
        return refuse(
            1,
            format!("{first} {second} changes more than dyno's own schema"),
        );
    }
    // `CREATE [UNIQUE] INDEX name ON table`: the table follows ON.
    let creates_index =
        first == "CREATE" && (second == "INDEX" || up(2).as_deref() == Some("INDEX"));
    for i in 0..w.len() {
        let word = w[i].text.to_ascii_uppercase();
        if FILES.contains(&word.as_str())
            || (word == "SCHEMA" && i > 0 && w[i - 1].text.eq_ignore_ascii_case("SET"))
        {
            return refuse(i, format!("{word} reaches past dyno's own schema"));
        }
        // The word before this one, past MySQL's modifiers (`DELETE QUICK FROM`).
        let before = (w[..i].iter().rev())
            .map(|x| x.text.to_ascii_uppercase())
            .find(|x| !SKIPPED.contains(&x.as_str()))
            .unwrap_or_default();
        let from_of_delete = word == "FROM" && before == "DELETE";
        let index_on = word == "ON" && creates_index;
        // `FOR UPDATE`, `ON DUPLICATE KEY UPDATE` and `DO UPDATE` name columns, not a table.
        let not_a_write = word == "UPDATE" && matches!(before.as_str(), "FOR" | "KEY" | "DO");
        if !(WRITES_TO.contains(&word.as_str()) || from_of_delete || index_on) || not_a_write {
            continue;
        }
        let mut j = i + 1;
        while up(j).is_some_and(|x| SKIPPED.contains(&x.as_str())) {
            j += 1;
        }
        if let Some(target) = w.get(j).filter(|t| qualified(t.text)) {
            return Err((
                target.at,
                format!(
                    "{} writes outside dyno's own schema: the script runs in dyno's schema (or database), where a table's name alone is dyno's table; write it without the schema",
                    target.text
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
