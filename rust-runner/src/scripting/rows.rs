//! CQL results back to scripts: what `ctx.execute` / `ctx.execute_prepared` return.
//!
//! A `Rows` value keeps the response frames as the driver received them (every page) and converts them
//! to Rune values only when the script first looks at them (`len` excepted, which the frames know), so
//! a workload that ignores its result pays one small allocation per request and no conversion.

use std::cell::OnceCell;
use std::net::IpAddr;

use rune::alloc::fmt::TryWrite;
use rune::runtime::{Bytes, Formatter, Object, OwnedTuple, Vec as RuneVec, VmResult};
use rune::{vm_try, vm_write, Any, ContextError, Module, Value};
use scylla::response::query_result::QueryRowsResult;
use scylla::value::{CqlDate, CqlDecimal, CqlDuration, CqlValue, CqlVarint, Row};

use crate::scripting::cql_types::Uuid;

/// The rows of one statement (all its pages), converted to a list of objects on first use.
#[derive(Any)]
#[rune(item = ::latte)]
pub struct Rows {
    pages: Vec<QueryRowsResult>,
    len: usize,
    converted: OnceCell<Value>,
}

impl Rows {
    pub fn new(pages: Vec<QueryRowsResult>) -> Rows {
        let len = pages.iter().map(QueryRowsResult::rows_num).sum();
        Rows { pages, len, converted: OnceCell::new() }
    }

    /// The rows as a Rune `Vec` of objects keyed by column name (converted once, then shared).
    fn list(&self) -> Result<Value, String> {
        if let Some(v) = self.converted.get() {
            return Ok(v.clone());
        }
        let mut out = Vec::with_capacity(self.len);
        for page in &self.pages {
            let names: Vec<&str> = page.column_specs().iter().map(|c| c.name()).collect();
            for row in page.rows::<Row>().map_err(|e| format!("reading rows: {e}"))? {
                let row = row.map_err(|e| format!("reading a row: {e}"))?;
                let mut obj = Object::new();
                for (name, col) in names.iter().zip(row.columns) {
                    let v = match col {
                        Some(c) => cql_to_value(c)?,
                        None => unit()?,
                    };
                    obj.insert(astr(name)?, v).map_err(|e| e.to_string())?;
                }
                out.push(rune::to_value(obj).map_err(|e| e.to_string())?);
            }
        }
        let v = rune::to_value(out).map_err(|e| e.to_string())?;
        Ok(self.converted.get_or_init(|| v).clone())
    }
}

fn astr(s: &str) -> Result<rune::alloc::String, String> {
    rune::alloc::String::try_from(s).map_err(|e| e.to_string())
}

/// CQL null: Rune's unit `()`, so that `row.col == ()` tests for it.
fn unit() -> Result<Value, String> {
    val(())
}

fn val<T: rune::ToValue>(v: T) -> Result<Value, String> {
    rune::to_value(v).map_err(|e| e.to_string())
}

/// One CQL value as a Rune value. Representations (README, "Rows"): integers → i64, float/double →
/// f64, text/ascii → String, blob → Bytes, uuid/timeuuid → latte::Uuid, inet → String, date →
/// "YYYY-MM-DD", time → i64 ns since midnight, timestamp → i64 ms since the epoch, duration → a CQL
/// duration literal ("1h30m"), decimal and varint → their exact decimal text, list/set/vector → Vec,
/// map → object when its keys are text, else a Vec of (key, value) tuples, tuple → tuple, UDT →
/// object, null (and the legacy empty value) → ().
pub fn cql_to_value(c: CqlValue) -> Result<Value, String> {
    match c {
        CqlValue::Ascii(s) | CqlValue::Text(s) => val(s),
        CqlValue::Boolean(b) => val(b),
        CqlValue::Blob(b) => val(Bytes::try_from(b).map_err(|e| e.to_string())?),
        CqlValue::Counter(c) => val(c.0),
        CqlValue::Decimal(d) => val(decimal_text(&d)),
        CqlValue::Date(d) => val(date_text(d)),
        CqlValue::Double(f) => val(f),
        CqlValue::Float(f) => val(f as f64),
        CqlValue::Duration(d) => val(duration_text(d)),
        CqlValue::Empty => unit(),
        CqlValue::Int(i) => val(i as i64),
        CqlValue::BigInt(i) => val(i),
        CqlValue::SmallInt(i) => val(i as i64),
        CqlValue::TinyInt(i) => val(i as i64),
        CqlValue::Timestamp(t) => val(t.0),
        CqlValue::Time(t) => val(t.0),
        CqlValue::Inet(ip) => val(inet_text(ip)),
        CqlValue::Uuid(u) => val(Uuid(u)),
        CqlValue::Timeuuid(u) => val(Uuid(*u.as_ref())),
        CqlValue::Varint(v) => val(varint_text(&v)),
        CqlValue::List(xs) | CqlValue::Set(xs) | CqlValue::Vector(xs) => {
            val(xs.into_iter().map(cql_to_value).collect::<Result<Vec<_>, _>>()?)
        }
        CqlValue::Map(kv) => {
            if kv.iter().all(|(k, _)| matches!(k, CqlValue::Text(_) | CqlValue::Ascii(_))) {
                let mut obj = Object::new();
                for (k, v) in kv {
                    let (CqlValue::Text(k) | CqlValue::Ascii(k)) = k else { unreachable!() };
                    obj.insert(astr(&k)?, cql_to_value(v)?).map_err(|e| e.to_string())?;
                }
                val(obj)
            } else {
                let mut pairs = Vec::with_capacity(kv.len());
                for (k, v) in kv {
                    let t = OwnedTuple::try_from(vec![cql_to_value(k)?, cql_to_value(v)?]).map_err(|e| e.to_string())?;
                    pairs.push(val(t)?);
                }
                val(pairs)
            }
        }
        CqlValue::Tuple(xs) => {
            let vs = xs.into_iter().map(opt_to_value).collect::<Result<Vec<_>, _>>()?;
            val(OwnedTuple::try_from(vs).map_err(|e| e.to_string())?)
        }
        CqlValue::UserDefinedType { fields, .. } => {
            let mut obj = Object::new();
            for (k, v) in fields {
                obj.insert(astr(&k)?, opt_to_value(v)?).map_err(|e| e.to_string())?;
            }
            val(obj)
        }
        other => Err(format!("no Rune form for the CQL value {other:?}")),
    }
}

fn opt_to_value(c: Option<CqlValue>) -> Result<Value, String> {
    c.map(cql_to_value).unwrap_or_else(unit)
}

fn inet_text(ip: IpAddr) -> String {
    ip.to_string()
}

/// Days since 1970-01-01 → proleptic Gregorian "YYYY-MM-DD" (CQL's date is 2^31 + days).
pub fn date_text(d: CqlDate) -> String {
    let (year, month, day) = civil_from_days(d.0 as i64 - (1i64 << 31));
    if year < 0 {
        format!("-{:04}-{month:02}-{day:02}", -year)
    } else {
        format!("{year:04}-{month:02}-{day:02}")
    }
}

/// (year, month, day) of a day count since 1970-01-01, proleptic Gregorian, by 400-year eras
/// (146097 days each). Also the report's timestamp.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// A CQL duration literal that the binder (and cqlsh) read back: "1y2mo3d4h5m6s7ms8us9ns", zero parts
/// left out, "0s" for zero, a leading '-' when negative (CQL's three parts share one sign).
pub fn duration_text(d: CqlDuration) -> String {
    let neg = d.months < 0 || d.days < 0 || d.nanoseconds < 0;
    let (months, days, mut ns) = (d.months.unsigned_abs() as u64, d.days.unsigned_abs() as u64, d.nanoseconds.unsigned_abs());
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let mut part = |n: u64, unit: &str| {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    };
    part(months / 12, "y");
    part(months % 12, "mo");
    part(days, "d");
    for (size, unit) in [(3_600_000_000_000u64, "h"), (60_000_000_000, "m"), (1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us"), (1, "ns")] {
        part(ns / size, unit);
        ns %= size;
    }
    if out.is_empty() || out == "-" {
        return "0s".into();
    }
    out
}

/// Two's-complement big-endian bytes → decimal digits (with '-' when negative).
fn signed_be_to_decimal(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "0".into();
    }
    let neg = bytes[0] & 0x80 != 0;
    // Magnitude: negate two's complement when negative.
    let mut mag: Vec<u8> = bytes.to_vec();
    if neg {
        for b in mag.iter_mut() {
            *b = !*b;
        }
        for b in mag.iter_mut().rev() {
            let (v, carry) = b.overflowing_add(1);
            *b = v;
            if !carry {
                break;
            }
        }
    }
    // Repeated division by 10^9 of the big-endian magnitude.
    let mut chunks = Vec::new();
    let mut num = mag;
    while num.iter().any(|&b| b != 0) {
        let mut rem = 0u64;
        for b in num.iter_mut() {
            let cur = (rem << 8) | *b as u64;
            *b = (cur / 1_000_000_000) as u8;
            rem = cur % 1_000_000_000;
        }
        chunks.push(rem);
    }
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    match chunks.split_last() {
        None => return "0".into(),
        Some((top, rest)) => {
            s.push_str(&top.to_string());
            for c in rest.iter().rev() {
                s.push_str(&format!("{c:09}"));
            }
        }
    }
    s
}

pub fn varint_text(v: &CqlVarint) -> String {
    signed_be_to_decimal(v.as_signed_bytes_be_slice())
}

/// unscaled × 10^-scale as plain decimal text ("12.345", "-0.05", "1200" for a negative scale).
pub fn decimal_text(d: &CqlDecimal) -> String {
    let (bytes, scale) = d.as_signed_be_bytes_slice_and_exponent();
    let digits = signed_be_to_decimal(bytes);
    let (sign, digits) = match digits.strip_prefix('-') {
        Some(rest) => ("-", rest.to_string()),
        None => ("", digits),
    };
    if scale <= 0 {
        let zeros = if digits == "0" { 0 } else { (-scale) as usize };
        return format!("{sign}{digits}{}", "0".repeat(zeros));
    }
    let scale = scale as usize;
    let padded = if digits.len() <= scale { format!("{}{digits}", "0".repeat(scale - digits.len() + 1)) } else { digits };
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

#[rune::function(instance)]
fn len(rows: &Rows) -> usize {
    rows.len
}

#[rune::function(instance)]
fn is_empty(rows: &Rows) -> bool {
    rows.len == 0
}

fn list_of(rows: &Rows) -> VmResult<Value> {
    match rows.list() {
        Ok(v) => VmResult::Ok(v),
        Err(e) => VmResult::panic(e),
    }
}

/// `rows[i]`: the i-th row (an index out of range is a script error, as for a Vec).
#[rune::function(instance, protocol = INDEX_GET)]
fn index_get(rows: &Rows, i: usize) -> VmResult<Value> {
    let list = vm_try!(list_of(rows));
    let v = vm_try!(list.borrow_ref::<RuneVec>());
    match v.get(i) {
        Some(row) => VmResult::Ok(row.clone()),
        None => VmResult::panic(format!("row index {i} out of range: {} rows", rows.len)),
    }
}

/// `rows.get(i)`: `Some(row)` or `None`.
#[rune::function(instance)]
fn get(rows: &Rows, i: usize) -> VmResult<Option<Value>> {
    let list = vm_try!(list_of(rows));
    let v = vm_try!(list.borrow_ref::<RuneVec>());
    VmResult::Ok(v.get(i).cloned())
}

/// `rows.to_vec()`: the rows as a plain Vec (every Vec method then applies).
#[rune::function(instance)]
fn to_vec(rows: &Rows) -> VmResult<Value> {
    list_of(rows)
}

/// `for row in rows` and `rows.iter()`.
#[rune::function(instance, protocol = INTO_ITER)]
fn into_iter(rows: &Rows) -> VmResult<Value> {
    iter_of(rows)
}

#[rune::function(instance)]
fn iter(rows: &Rows) -> VmResult<Value> {
    iter_of(rows)
}

/// The Vec's own iterator (its type is private to rune, so it travels as a `Value`).
fn iter_of(rows: &Rows) -> VmResult<Value> {
    let list = vm_try!(list_of(rows));
    VmResult::Ok(vm_try!(rune::to_value(RuneVec::rune_iter(vm_try!(list.into_ref::<RuneVec>())))))
}

#[rune::function(instance, protocol = DEBUG_FMT)]
fn debug(rows: &Rows, f: &mut Formatter) -> VmResult<()> {
    let list = vm_try!(list_of(rows));
    vm_write!(f, "{:?}", list)
}

pub fn install(m: &mut Module) -> Result<(), ContextError> {
    m.ty::<Rows>()?;
    for f in [len, is_empty, index_get, get, to_vec, into_iter, iter, debug] {
        m.function_meta(f)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_durations_and_numbers_as_text() {
        assert_eq!(date_text(CqlDate((1u32 << 31) + 19782)), "2024-02-29");
        assert_eq!(date_text(CqlDate(1u32 << 31)), "1970-01-01");
        assert_eq!(date_text(CqlDate((1u32 << 31) - 1)), "1969-12-31");
        assert_eq!(duration_text(CqlDuration { months: 0, days: 0, nanoseconds: 5_400_000_000_000 }), "1h30m");
        assert_eq!(duration_text(CqlDuration { months: 14, days: 3, nanoseconds: 1_000_001 }), "1y2mo3d1ms1ns");
        assert_eq!(duration_text(CqlDuration { months: 0, days: -1, nanoseconds: 0 }), "-1d");
        assert_eq!(duration_text(CqlDuration { months: 0, days: 0, nanoseconds: 0 }), "0s");
        assert_eq!(signed_be_to_decimal(&[0x30, 0x39]), "12345");
        assert_eq!(signed_be_to_decimal(&[0xff]), "-1");
        assert_eq!(signed_be_to_decimal(&[0x80]), "-128");
        assert_eq!(signed_be_to_decimal(&[0x00]), "0");
        let big = CqlVarint::from_signed_bytes_be_slice(&[0x01, 0x8e, 0xe9, 0x0f, 0xf6, 0xc3, 0x73, 0xe0, 0xee, 0x4e, 0x3f, 0x0a, 0xd2]);
        assert_eq!(varint_text(&big), "123456789012345678901234567890");
        let d = CqlDecimal::from_signed_be_bytes_and_exponent(vec![0x30, 0x39], 3);
        assert_eq!(decimal_text(&d), "12.345");
        assert_eq!(decimal_text(&CqlDecimal::from_signed_be_bytes_and_exponent(vec![0xfb], 2)), "-0.05");
        assert_eq!(decimal_text(&CqlDecimal::from_signed_be_bytes_and_exponent(vec![12], -2)), "1200");
    }
}
