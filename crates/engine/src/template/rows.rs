//! A data file's rows for `{{data.COLUMN}}`: CSV with a header line (`.csv`), or JSON lines,
//! one object per line (`.jsonl`, `.ndjson`), read whole when the plan is resolved. Each
//! request takes a row in order (wrapping round), at random, or its client's (k6's
//! SharedArray, Gatling's feeders): see [`Order`].

use std::path::Path;

/// Which row a request takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The next row, over every thread (the first request row 0, then 1…), round again after
    /// the last.
    InOrder,
    /// A row drawn uniformly, from the thread's seeded stream.
    Random,
    /// Its client's row: client `c` always takes row `c` (modulo the rows).
    PerClient,
}

impl Order {
    pub const NAMES: [&'static str; 3] = ["in-order", "random", "per-client"];

    pub fn parse(s: &str) -> Option<Order> {
        match s {
            "in-order" => Some(Order::InOrder),
            "random" => Some(Order::Random),
            "per-client" => Some(Order::PerClient),
            _ => None,
        }
    }
}

/// The most cells a data file may hold (its text stays in memory for the run).
pub const MAX_CELLS: usize = 50_000_000;

/// A data file's columns and rows.
#[derive(Debug, Clone)]
pub struct Rows {
    columns: Vec<String>,
    /// Row-major: row `r`'s cell `c` is `cells[r * columns + c]`.
    cells: Vec<Box<[u8]>>,
    order: Order,
}

impl Rows {
    /// Reads `path`; an error names the file and, where it can, the line.
    pub fn read(path: &Path, order: Order) -> Result<Rows, String> {
        let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let json = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("jsonl" | "ndjson")
        );
        let rows = match json {
            true => json_lines(&text, order),
            false => csv(&text, order),
        };
        rows.map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    pub fn len(&self) -> usize {
        self.cells.len() / self.columns.len().max(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn order(&self) -> Order {
        self.order
    }

    pub fn cell(&self, row: usize, column: usize) -> &[u8] {
        &self.cells[row * self.columns.len() + column]
    }

    fn checked(self) -> Result<Rows, String> {
        if self.is_empty() {
            return Err("no rows under the header".into());
        }
        if self.cells.len() > MAX_CELLS {
            return Err(format!("more than {MAX_CELLS} cells"));
        }
        Ok(self)
    }
}

fn csv(text: &[u8], order: Order) -> Result<Rows, String> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(text);
    let columns: Vec<String> = (r.headers().map_err(|e| format!("its header line: {e}"))?)
        .iter()
        .map(|c| c.trim().to_string())
        .collect();
    if columns.iter().any(String::is_empty) {
        return Err("line 1: a column without a name (the first line names the columns)".into());
    }
    let mut cells = Vec::new();
    for rec in r.byte_records() {
        let rec = rec.map_err(|e| match e.position() {
            Some(p) => format!("line {}: {e}", p.line()),
            None => e.to_string(),
        })?;
        cells.extend(rec.iter().map(Box::<[u8]>::from));
    }
    Rows {
        columns,
        cells,
        order,
    }
    .checked()
}

fn json_lines(text: &[u8], order: Order) -> Result<Rows, String> {
    let text = std::str::from_utf8(text).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut columns: Vec<String> = Vec::new();
    let mut objects = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let at = |why: String| format!("line {}: {why}", n + 1);
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
        let serde_json::Value::Object(o) = v else {
            return Err(at(
                "not a JSON object (a row is an object of its columns)".into()
            ));
        };
        for k in o.keys() {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
        objects.push((n + 1, o));
    }
    let mut cells = Vec::with_capacity(objects.len() * columns.len());
    for (line, o) in &objects {
        for c in &columns {
            let cell = match o.get(c) {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(serde_json::Value::Null) | None => {
                    return Err(format!(
                        "line {line}: no {c:?} (every row needs every column)"
                    ));
                }
                Some(other) => other.to_string(),
            };
            cells.push(cell.into_bytes().into_boxed_slice());
        }
    }
    Rows {
        columns,
        cells,
        order,
    }
    .checked()
}
