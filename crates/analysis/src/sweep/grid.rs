//! The grid of a sweep: `--set KEY=VALUES` arguments, the value lists they
//! stand for, the points of several of them together, and shards.
//!
//! VALUES is a comma-separated list of items; an item is a number (`4`,
//! `0.5`), an arithmetic range `START..END` (step 1) or `START..END:STEP`,
//! or a geometric range `START..END:*FACTOR` (`1..64:*2` is 1, 2, 4, …, 64).
//! A range includes END when its step lands on it. Several `--set` form a
//! grid (a Cartesian product); the first one varies slowest.

use std::fmt;

/// At most this many values in one `--set`.
pub const MAX_VALUES: usize = 100_000;

/// A value of a swept key: an integer stays an integer (exact, written as
/// a TOML integer); a float is written as a TOML integer when it is whole,
/// so `0.5..4:0.5` works on integer keys at its whole values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
}

impl Value {
    /// The value as a float (for charts and sorting).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Int(i) => i as f64,
            Value::Float(x) => x,
        }
    }

    /// Reads a value as [`Value`]'s `Display` writes it (CSV cells).
    pub fn parse(text: &str) -> Option<Value> {
        let t = text.trim();
        if let Ok(i) = t.parse::<i64>() {
            return Some(Value::Int(i));
        }
        t.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .map(Value::Float)
    }

    /// The TOML value this stands for.
    pub fn to_toml(self) -> toml::Value {
        match self {
            Value::Int(i) => toml::Value::Integer(i),
            Value::Float(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => {
                toml::Value::Integer(x as i64)
            }
            Value::Float(x) => toml::Value::Float(x),
        }
    }
}

impl fmt::Display for Value {
    /// Integers as integers; floats in Rust's shortest round-trip form
    /// (`0.5`, `2` for 2.0): the same bytes on every machine.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
        }
    }
}

/// One `--set KEY=VALUES`: a key and the values it takes, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// The key as written (`group.work.throttle.limit`).
    pub key: String,
    /// VALUES as written.
    pub spec: String,
    pub values: Vec<Value>,
}

/// Parses `KEY=VALUES`. Errors name the key and say what is allowed.
pub fn parse_set(arg: &str) -> Result<Axis, String> {
    let Some((key, spec)) = arg.split_once('=') else {
        return Err(format!(
            "--set {arg}: expected KEY=VALUES, like pool.min_threads=1,2,4 or machine.cores=1..16 or pool.min_threads=1..64:*2"
        ));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(format!(
            "--set {arg}: the key is empty; write the TOML path of a number, like pool.min_threads"
        ));
    }
    let values = parse_values(spec).map_err(|e| format!("--set {key}={spec}: {e}"))?;
    Ok(Axis {
        key: key.to_string(),
        spec: spec.trim().to_string(),
        values,
    })
}

const VALUES_HELP: &str = "write a list (1,2,4), a range START..END or START..END:STEP (1..64:4), or a geometric range START..END:*FACTOR (1..64:*2)";

/// Parses VALUES (a list of numbers and ranges).
pub fn parse_values(spec: &str) -> Result<Vec<Value>, String> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(format!("no values: {VALUES_HELP}"));
    }
    let mut out = Vec::new();
    for item in spec.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!("an empty item in the list: {VALUES_HELP}"));
        }
        let values = if item.contains("..") {
            parse_range(item)?
        } else {
            vec![number(item)?]
        };
        out.extend(values);
        if out.len() > MAX_VALUES {
            return Err(format!(
                "more than {MAX_VALUES} values: use a larger step or a geometric range"
            ));
        }
    }
    Ok(out)
}

/// A number: an integer if it reads as one, else a finite float.
fn number(text: &str) -> Result<Value, String> {
    Value::parse(text).ok_or_else(|| format!("`{text}` is not a number: {VALUES_HELP}"))
}

/// Digits after the decimal point as written (`0.25` → 2); `None` for an
/// exponent form, which is left unrounded.
fn decimals(text: &str) -> Option<usize> {
    let t = text.trim();
    if t.contains(['e', 'E']) {
        return None;
    }
    Some(t.split_once('.').map_or(0, |(_, d)| d.len()))
}

fn round_to(x: f64, places: usize) -> f64 {
    format!("{x:.places$}").parse().unwrap_or(x)
}

fn round_significant(x: f64, digits: usize) -> f64 {
    format!("{x:.digits$e}").parse().unwrap_or(x)
}

fn parse_range(item: &str) -> Result<Vec<Value>, String> {
    let (bounds, step) = match item.split_once(':') {
        Some((b, s)) => (b, Some(s.trim())),
        None => (item, None),
    };
    let (start_text, end_text) = bounds
        .split_once("..")
        .ok_or_else(|| format!("`{item}` is not a range: {VALUES_HELP}"))?;
    let end_text = end_text.strip_prefix('=').unwrap_or(end_text);
    let start = number(start_text.trim())?;
    let end = number(end_text.trim())?;
    if start.as_f64() > end.as_f64() {
        return Err(format!(
            "the range {item} is empty: its start {start} is above its end {end}; write START..END with START <= END"
        ));
    }
    match step {
        Some(s) if s.starts_with(['*', 'x']) => {
            let factor = number(s[1..].trim())?;
            geometric(item, start, end, factor)
        }
        Some(s) => {
            let step = number(s)?;
            let places = [start_text, s]
                .iter()
                .map(|t| decimals(t))
                .try_fold(0, |m, d| d.map(|d| m.max(d)));
            arithmetic(item, start, end, step, places)
        }
        None => arithmetic(item, start, end, Value::Int(1), Some(0)),
    }
}

fn arithmetic(
    item: &str,
    start: Value,
    end: Value,
    step: Value,
    places: Option<usize>,
) -> Result<Vec<Value>, String> {
    if step.as_f64() <= 0.0 {
        return Err(format!(
            "the step of {item} is {step}: a step must be above 0 (START..END:STEP, like 1..64:4)"
        ));
    }
    if let (Value::Int(a), Value::Int(b), Value::Int(s)) = (start, end, step) {
        let count = (i128::from(b) - i128::from(a)) / i128::from(s) + 1;
        if count > MAX_VALUES as i128 {
            return Err(too_many(item));
        }
        return Ok((0..count as i64).map(|k| Value::Int(a + k * s)).collect());
    }
    let (a, b, s) = (start.as_f64(), end.as_f64(), step.as_f64());
    let count = ((b - a) / s * (1.0 + 1e-12) + 1e-9).floor() + 1.0;
    if !count.is_finite() || count > MAX_VALUES as f64 {
        return Err(too_many(item));
    }
    Ok((0..count as u64)
        .map(|k| {
            let x = a + k as f64 * s;
            Value::Float(match places {
                Some(p) => round_to(x, p),
                None => round_significant(x, 12),
            })
        })
        .collect())
}

fn geometric(item: &str, start: Value, end: Value, factor: Value) -> Result<Vec<Value>, String> {
    if start.as_f64() <= 0.0 {
        return Err(format!(
            "the geometric range {item} starts at {start}: it must start above 0"
        ));
    }
    if factor.as_f64() <= 1.0 {
        return Err(format!(
            "the factor of {item} is {factor}: a geometric range needs a factor above 1 (START..END:*2)"
        ));
    }
    let mut out = Vec::new();
    if let (Value::Int(a), Value::Int(b), Value::Int(f)) = (start, end, factor) {
        let mut x = a;
        while x <= b {
            out.push(Value::Int(x));
            match x.checked_mul(f) {
                Some(next) => x = next,
                None => break,
            }
        }
        return Ok(out);
    }
    let (b, f) = (end.as_f64(), factor.as_f64());
    let mut x = start.as_f64();
    while x.is_finite() && x <= b * (1.0 + 1e-12) {
        out.push(Value::Float(round_significant(x, 12)));
        if out.len() > MAX_VALUES {
            return Err(too_many(item));
        }
        x *= f;
    }
    Ok(out)
}

fn too_many(item: &str) -> String {
    format!("the range {item} has more than {MAX_VALUES} values: use a larger step")
}

/// The points of several axes: their Cartesian product, the first axis
/// varying slowest. A point is the index of one value of each axis.
pub fn points(axes: &[Axis]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for axis in axes {
        let mut next = Vec::with_capacity(out.len() * axis.values.len());
        for p in &out {
            for i in 0..axis.values.len() {
                let mut q = p.clone();
                q.push(i);
                next.push(q);
            }
        }
        out = next;
    }
    out
}

/// Number of points of `axes`, `None` on overflow.
pub fn point_count(axes: &[Axis]) -> Option<usize> {
    axes.iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
}

/// `--shard K/N`: run `i` of the sweep belongs to shard K of N when
/// `i % N == K - 1` (striped, so slow and fast parts of the grid spread
/// over every shard).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// 1-based.
    pub k: usize,
    pub n: usize,
}

impl Shard {
    /// Parses `K/N` with 1 <= K <= N.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let help = "write K/N with 1 <= K <= N, like --shard 3/8 (shard 3 of 8)";
        let (k, n) = text
            .split_once('/')
            .ok_or_else(|| format!("--shard {text}: {help}"))?;
        let k: usize = k
            .trim()
            .parse()
            .map_err(|_| format!("--shard {text}: K is not a whole number; {help}"))?;
        let n: usize = n
            .trim()
            .parse()
            .map_err(|_| format!("--shard {text}: N is not a whole number; {help}"))?;
        if n == 0 || k == 0 || k > n {
            return Err(format!("--shard {text}: {help}"));
        }
        Ok(Shard { k, n })
    }

    /// Whether run `run` is in this shard.
    pub fn contains(self, run: usize) -> bool {
        run % self.n == self.k - 1
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(spec: &str) -> Vec<i64> {
        parse_values(spec)
            .unwrap()
            .into_iter()
            .map(|v| match v {
                Value::Int(i) => i,
                Value::Float(x) => panic!("float {x} in {spec}"),
            })
            .collect()
    }

    fn floats(spec: &str) -> Vec<f64> {
        parse_values(spec)
            .unwrap()
            .into_iter()
            .map(Value::as_f64)
            .collect()
    }

    #[test]
    fn lists_ranges_and_geometric_ranges() {
        assert_eq!(ints("1,2,4"), vec![1, 2, 4]);
        assert_eq!(ints("1..5"), vec![1, 2, 3, 4, 5]);
        assert_eq!(ints("1..=3"), vec![1, 2, 3]);
        assert_eq!(ints("1..64:16"), vec![1, 17, 33, 49]);
        assert_eq!(ints("1..64:*2"), vec![1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(ints("1..100:x10"), vec![1, 10, 100]);
        assert_eq!(ints("0, 2..4, 10"), vec![0, 2, 3, 4, 10]);
        assert_eq!(ints("5..5"), vec![5]);
        assert_eq!(ints("-2..2:2"), vec![-2, 0, 2]);
    }

    #[test]
    fn float_ranges_are_rounded_to_the_written_precision() {
        assert_eq!(floats("0.1..0.5:0.1"), vec![0.1, 0.2, 0.3, 0.4, 0.5]);
        assert_eq!(floats("0..1:0.25"), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
        assert_eq!(floats("1..10:*1.5").len(), 6);
        let shown: Vec<String> = parse_values("0.5..2:0.5")
            .unwrap()
            .iter()
            .map(|v| v.to_string())
            .collect();
        assert_eq!(shown, ["0.5", "1", "1.5", "2"]);
    }

    #[test]
    fn bad_values_are_refused_with_the_form_to_write() {
        for (spec, needle) in [
            ("", "no values"),
            ("64..1", "is empty"),
            ("1..64:0", "must be above 0"),
            ("1..64:-2", "must be above 0"),
            ("0..64:*2", "start above 0"),
            ("1..64:*1", "factor above 1"),
            ("1,,2", "empty item"),
            ("abc", "not a number"),
            ("1..1000000000", "more than"),
            ("nan", "not a number"),
        ] {
            let e = parse_values(spec).unwrap_err();
            assert!(e.contains(needle), "{spec}: {e}");
        }
        let e = parse_set("pool.min_threads=9..3").unwrap_err();
        assert!(e.starts_with("--set pool.min_threads=9..3:"), "{e}");
        assert!(
            parse_set("pool.min_threads")
                .unwrap_err()
                .contains("KEY=VALUES")
        );
        assert!(parse_set("=1,2").unwrap_err().contains("key is empty"));
    }

    #[test]
    fn points_are_the_product_first_axis_slowest() {
        let a = parse_set("a=1,2").unwrap();
        let b = parse_set("b=10,20,30").unwrap();
        let p = points(&[a.clone(), b.clone()]);
        assert_eq!(p.len(), 6);
        assert_eq!(p[0], vec![0, 0]);
        assert_eq!(p[1], vec![0, 1]);
        assert_eq!(p[3], vec![1, 0]);
        assert_eq!(point_count(&[a, b]), Some(6));
        assert_eq!(points(&[]), vec![Vec::<usize>::new()]);
    }

    #[test]
    fn shards_stripe_the_runs() {
        let s = Shard::parse("2/3").unwrap();
        let mine: Vec<usize> = (0..10).filter(|&i| s.contains(i)).collect();
        assert_eq!(mine, vec![1, 4, 7]);
        for bad in ["0/3", "4/3", "1/0", "x/2", "3"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_round_trip_through_their_text() {
        for v in [Value::Int(-3), Value::Float(0.1), Value::Float(2.5e-7)] {
            let back = Value::parse(&v.to_string()).unwrap();
            assert_eq!(back.as_f64(), v.as_f64());
        }
        assert_eq!(Value::Float(2.0).to_toml(), toml::Value::Integer(2));
    }
}
