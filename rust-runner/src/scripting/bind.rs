//! Binding Rune values to CQL values, guided by the column types of a prepared statement.
//!
//! Scripts produce only a few Rune types (integers, floats, strings, bytes, vectors, objects, tuples and
//! the `latte` wrappers); the prepared statement says what Cassandra expects, so the conversion is
//! driven by the column type and reports a mismatch by column name.

use std::cell::RefCell;
use std::net::IpAddr;

use rune::runtime::{Bytes, Object, OwnedTuple, TypeHash, Vec as RuneVec};
use rune::Value;
use scylla::cluster::metadata::{CollectionType, ColumnType, NativeType};
use scylla::serialize::row::{RowSerializationContext, SerializeRow};
use scylla::serialize::value::SerializeValue;
use scylla::serialize::writers::{CellWriter, RowWriter};
use scylla::serialize::SerializationError;
use scylla::value::{
    Counter, CqlDate, CqlDecimal, CqlDuration, CqlTime, CqlTimestamp, CqlTimeuuid, CqlValue, CqlVarint,
};

use crate::scripting::cql_types::Plain;

/// Converts one value to the CQL type of its column; `None` is CQL null.
pub fn to_cql(v: &Plain, t: &ColumnType<'_>) -> Result<Option<CqlValue>, String> {
    if *v == Plain::Null {
        return Ok(None);
    }
    let mismatch = || Err(format!("cannot bind {} to a column of type {}", describe(v), type_name(t)));
    let value = match t {
        ColumnType::Native(n) => match (n, v) {
            (NativeType::Text, Plain::Text(s)) => CqlValue::Text(s.clone()),
            (NativeType::Ascii, Plain::Text(s)) => CqlValue::Ascii(s.clone()),
            (NativeType::Text, Plain::Int(i)) => CqlValue::Text(i.to_string()),
            (NativeType::Text, Plain::Float(f)) => CqlValue::Text(f.to_string()),
            (NativeType::Text | NativeType::Ascii, Plain::Uuid(u)) => CqlValue::Text(u.to_string()),
            (NativeType::Boolean, Plain::Bool(b)) => CqlValue::Boolean(*b),
            (NativeType::Blob, Plain::Bytes(b)) => CqlValue::Blob(b.clone()),
            (NativeType::Blob, Plain::Text(s)) => CqlValue::Blob(s.as_bytes().to_vec()),
            (NativeType::BigInt, Plain::Int(i)) => CqlValue::BigInt(*i),
            (NativeType::Int, Plain::Int(i)) => CqlValue::Int(narrow(*i, "int")?),
            (NativeType::SmallInt, Plain::Int(i)) => CqlValue::SmallInt(narrow(*i, "smallint")?),
            (NativeType::TinyInt, Plain::Int(i)) => CqlValue::TinyInt(narrow(*i, "tinyint")?),
            (NativeType::Counter, Plain::Int(i)) => CqlValue::Counter(Counter(*i)),
            (NativeType::Double, Plain::Float(f)) => CqlValue::Double(*f),
            (NativeType::Double, Plain::Int(i)) => CqlValue::Double(*i as f64),
            (NativeType::Float, Plain::Float(f)) => CqlValue::Float(*f as f32),
            (NativeType::Float, Plain::Int(i)) => CqlValue::Float(*i as f32),
            (NativeType::Timestamp, Plain::Int(ms)) => CqlValue::Timestamp(CqlTimestamp(*ms)),
            (NativeType::Date, Plain::Int(days)) => CqlValue::Date(date_from_days(*days)?),
            (NativeType::Date, Plain::Text(s)) => CqlValue::Date(date_from_days(parse_date(s)?)?),
            (NativeType::Time, Plain::Int(ns)) => CqlValue::Time(CqlTime(*ns)),
            (NativeType::Time, Plain::Text(s)) => CqlValue::Time(CqlTime(parse_time(s)?)),
            (NativeType::Duration, Plain::Int(ns)) => {
                CqlValue::Duration(CqlDuration { months: 0, days: 0, nanoseconds: *ns })
            }
            (NativeType::Duration, Plain::Text(s)) => CqlValue::Duration(parse_cql_duration(s)?),
            (NativeType::Varint, Plain::Int(i)) => CqlValue::Varint(varint(*i as i128)),
            (NativeType::Varint, Plain::Text(s)) => {
                CqlValue::Varint(varint(s.trim().parse().map_err(|_| format!("bad varint '{s}'"))?))
            }
            (NativeType::Decimal, Plain::Int(i)) => CqlValue::Decimal(decimal(*i as i128, 0)),
            (NativeType::Decimal, Plain::Float(f)) => CqlValue::Decimal(parse_decimal(&f.to_string())?),
            (NativeType::Decimal, Plain::Text(s)) => CqlValue::Decimal(parse_decimal(s)?),
            (NativeType::Uuid, Plain::Uuid(u)) => CqlValue::Uuid(*u),
            (NativeType::Uuid, Plain::Text(s)) => CqlValue::Uuid(parse_uuid(s)?),
            (NativeType::Timeuuid, Plain::Uuid(u)) => CqlValue::Timeuuid(CqlTimeuuid::from(*u)),
            (NativeType::Timeuuid, Plain::Text(s)) => CqlValue::Timeuuid(CqlTimeuuid::from(parse_uuid(s)?)),
            (NativeType::Inet, Plain::Text(s)) => {
                CqlValue::Inet(s.parse::<IpAddr>().map_err(|_| format!("bad inet address '{s}'"))?)
            }
            _ => return mismatch(),
        },
        ColumnType::Collection { typ, .. } => match (typ, v) {
            (CollectionType::List(e), Plain::List(xs)) => CqlValue::List(elements(xs, e)?),
            (CollectionType::Set(e), Plain::List(xs)) => CqlValue::Set(elements(xs, e)?),
            (CollectionType::Map(kt, vt), Plain::Map(kvs)) => CqlValue::Map(
                kvs.iter()
                    .map(|(k, v)| Ok((required(&Plain::Text(k.clone()), kt)?, required(v, vt)?)))
                    .collect::<Result<_, String>>()?,
            ),
            // A map can also be written as a list of (key, value) pairs, for non-string keys.
            (CollectionType::Map(kt, vt), Plain::List(pairs)) => CqlValue::Map(
                pairs
                    .iter()
                    .map(|p| match p {
                        Plain::List(kv) if kv.len() == 2 => Ok((required(&kv[0], kt)?, required(&kv[1], vt)?)),
                        _ => Err("a map given as a list needs (key, value) pairs".to_string()),
                    })
                    .collect::<Result<_, String>>()?,
            ),
            _ => return mismatch(),
        },
        ColumnType::Vector { typ, dimensions } => match v {
            Plain::List(xs) if xs.len() == *dimensions as usize => CqlValue::Vector(elements(xs, typ)?),
            Plain::List(xs) => return Err(format!("vector needs {dimensions} elements, got {}", xs.len())),
            _ => return mismatch(),
        },
        ColumnType::Tuple(types) => match v {
            Plain::List(xs) if xs.len() == types.len() => CqlValue::Tuple(
                xs.iter().zip(types).map(|(x, t)| to_cql(x, t)).collect::<Result<_, _>>()?,
            ),
            Plain::List(xs) => return Err(format!("tuple needs {} elements, got {}", types.len(), xs.len())),
            _ => return mismatch(),
        },
        ColumnType::UserDefinedType { definition, .. } => match v {
            Plain::Map(fields) => CqlValue::UserDefinedType {
                keyspace: definition.keyspace.to_string(),
                name: definition.name.to_string(),
                fields: definition
                    .field_types
                    .iter()
                    .map(|(name, t)| {
                        let value = fields.iter().find(|(k, _)| k == name).map(|(_, v)| v);
                        Ok((name.to_string(), match value {
                            Some(v) => to_cql(v, t)?,
                            None => None,
                        }))
                    })
                    .collect::<Result<_, String>>()?,
            },
            _ => return mismatch(),
        },
        _ => return mismatch(),
    };
    Ok(Some(value))
}

/// One statement's bound values, already in CQL wire form (`[i32 length][bytes]` per cell, length -1 for
/// null), written straight from the script's values: no `Plain` tree, no `CqlValue`s, no per-call
/// `Vec`. The driver copies the cells into its request frame (`SerializeRow`). Buffers are reused
/// through a `RowPool`, so the steady state allocates nothing here.
#[derive(Default)]
pub struct BoundRow {
    bytes: Vec<u8>,
    count: usize,
}

impl BoundRow {
    fn clear(&mut self) {
        self.bytes.clear();
        self.count = 0;
    }

    /// The general path's values (`to_cql` per bind marker), serialized by the driver's own code.
    pub fn fill(&mut self, values: &[Option<CqlValue>], columns: &[(String, ColumnType<'static>)]) -> Result<(), String> {
        self.clear();
        for (v, (name, t)) in values.iter().zip(columns) {
            self.count += 1;
            v.serialize(t, CellWriter::new(&mut self.bytes)).map_err(|e| format!("{name}: {e}"))?;
        }
        Ok(())
    }
}

/// The driver and our bind disagree on the bind markers (should not happen: both read the statement).
#[derive(Debug)]
struct ColumnCountMismatch(usize, usize);

impl std::fmt::Display for ColumnCountMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bound {} values for {} bind markers", self.0, self.1)
    }
}

impl std::error::Error for ColumnCountMismatch {}

impl SerializeRow for BoundRow {
    fn serialize(&self, ctx: &RowSerializationContext<'_>, writer: &mut RowWriter) -> Result<(), SerializationError> {
        if ctx.columns().len() != self.count {
            return Err(SerializationError::new(ColumnCountMismatch(self.count, ctx.columns().len())));
        }
        let mut rest = self.bytes.as_slice();
        for _ in 0..self.count {
            let len = i32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
            rest = &rest[4..];
            let cell = writer.make_cell_writer();
            if len < 0 {
                cell.set_null();
            } else {
                let (value, tail) = rest.split_at(len as usize);
                cell.set_value(value).map_err(SerializationError::new)?;
                rest = tail;
            }
        }
        Ok(())
    }

    fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Spare `BoundRow`s of one worker: a call takes one, and gives it back when its request is done.
#[derive(Default)]
pub struct RowPool(RefCell<Vec<BoundRow>>);

/// Rows kept for reuse (about the calls in flight) and the largest buffer kept (a huge blob's is freed).
const POOL_ROWS: usize = 1024;
const POOL_ROW_BYTES: usize = 64 * 1024;

impl RowPool {
    pub fn take(&self) -> BoundRow {
        self.0.borrow_mut().pop().unwrap_or_default()
    }

    pub fn give(&self, mut row: BoundRow) {
        let mut spare = self.0.borrow_mut();
        if spare.len() < POOL_ROWS && row.bytes.capacity() <= POOL_ROW_BYTES {
            row.clear();
            spare.push(row);
        }
    }
}

/// Binds a script's arguments (a list/tuple by position, an object by bind-marker name) into `row`.
/// `Err(())` means "not bound": the caller then takes the general path (`Plain` and `to_cql`), which
/// also words the error exactly as before.
pub fn bind_row(args: &Value, columns: &[(String, ColumnType<'static>)], row: &mut BoundRow) -> Result<(), ()> {
    row.clear();
    let h = args.type_hash();
    if h == RuneVec::HASH {
        let vec = args.borrow_ref::<RuneVec>().map_err(|_| ())?;
        bind_positional(vec.iter(), vec.len(), columns, row)
    } else if args.into_unit().is_ok() {
        bind_positional(std::iter::empty(), 0, columns, row)
    } else if h == OwnedTuple::HASH {
        let t = args.borrow_ref::<OwnedTuple>().map_err(|_| ())?;
        bind_positional(t.iter(), t.len(), columns, row)
    } else if h == Object::HASH {
        let o = args.borrow_ref::<Object>().map_err(|_| ())?;
        for (name, t) in columns {
            bind_value(o.get(name.as_str()).ok_or(())?, t, row)?;
        }
        Ok(())
    } else {
        Err(())
    }
}

fn bind_positional<'a>(
    values: impl Iterator<Item = &'a Value>,
    len: usize,
    columns: &[(String, ColumnType<'static>)],
    row: &mut BoundRow,
) -> Result<(), ()> {
    if len != columns.len() {
        return Err(());
    }
    for (v, (_, t)) in values.zip(columns) {
        bind_value(v, t, row)?;
    }
    Ok(())
}

/// Appends one cell. The common scalars are written directly (the same bytes the driver writes for the
/// `CqlValue` that `to_cql` makes, checked by a test); every other value goes through `to_cql`
/// and the driver's own serialization, so each type binds exactly as the general path binds it.
fn bind_value(v: &Value, t: &ColumnType<'_>, row: &mut BoundRow) -> Result<(), ()> {
    row.count += 1;
    let buf = &mut row.bytes;
    if let ColumnType::Native(n) = t {
        let h = v.type_hash();
        if h == i64::HASH {
            let i = v.as_integer::<i64>().map_err(|_| ())?;
            match n {
                NativeType::BigInt | NativeType::Counter => return Ok(cell(buf, &i.to_be_bytes())),
                NativeType::Int => return Ok(cell(buf, &i32::try_from(i).map_err(|_| ())?.to_be_bytes())),
                NativeType::SmallInt => return Ok(cell(buf, &i16::try_from(i).map_err(|_| ())?.to_be_bytes())),
                NativeType::TinyInt => return Ok(cell(buf, &i8::try_from(i).map_err(|_| ())?.to_be_bytes())),
                NativeType::Double => return Ok(cell(buf, &(i as f64).to_be_bytes())),
                NativeType::Float => return Ok(cell(buf, &(i as f32).to_be_bytes())),
                _ => {}
            }
        } else if h == String::HASH && *n == NativeType::Text {
            let s = v.borrow_string_ref().map_err(|_| ())?;
            return cell_checked(buf, s.as_bytes());
        } else if h == f64::HASH {
            let f = v.as_float().map_err(|_| ())?;
            match n {
                NativeType::Double => return Ok(cell(buf, &f.to_be_bytes())),
                NativeType::Float => return Ok(cell(buf, &(f as f32).to_be_bytes())),
                _ => {}
            }
        } else if h == bool::HASH && *n == NativeType::Boolean {
            return Ok(cell(buf, &[v.as_bool().map_err(|_| ())? as u8]));
        } else if h == Bytes::HASH && *n == NativeType::Blob {
            let b = v.borrow_ref::<Bytes>().map_err(|_| ())?;
            return cell_checked(buf, b.as_slice());
        }
    }
    let plain = Plain::from_value(v).map_err(|_| ())?;
    let value = to_cql(&plain, t).map_err(|_| ())?;
    value.serialize(t, CellWriter::new(buf)).map(|_| ()).map_err(|_| ())
}

fn cell(buf: &mut Vec<u8>, contents: &[u8]) {
    buf.extend_from_slice(&(contents.len() as i32).to_be_bytes());
    buf.extend_from_slice(contents);
}

/// A cell of variable length: over `i32::MAX` bytes is the driver's overflow error, via the general path.
fn cell_checked(buf: &mut Vec<u8>, contents: &[u8]) -> Result<(), ()> {
    CellWriter::new(buf).set_value(contents).map(|_| ()).map_err(|_| ())
}

fn required(v: &Plain, t: &ColumnType<'_>) -> Result<CqlValue, String> {
    to_cql(v, t)?.ok_or_else(|| "null is not allowed inside a collection".to_string())
}

fn elements(xs: &[Plain], t: &ColumnType<'_>) -> Result<Vec<CqlValue>, String> {
    xs.iter().map(|x| required(x, t)).collect()
}

fn narrow<T: TryFrom<i64>>(i: i64, name: &str) -> Result<T, String> {
    T::try_from(i).map_err(|_| format!("{i} does not fit in a CQL {name}"))
}

pub fn describe(v: &Plain) -> String {
    match v {
        Plain::Null => "null".into(),
        Plain::Bool(b) => format!("bool {b}"),
        Plain::Int(i) => format!("integer {i}"),
        Plain::Float(f) => format!("float {f}"),
        // (str::floor_char_boundary would do, but is newer than the crate's rust-version, 1.88)
        Plain::Text(s) if s.len() > 40 => format!("string \"{}…\"", &s[..(0..=40).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)]),
        Plain::Text(s) => format!("string \"{s}\""),
        Plain::Bytes(b) => format!("{} bytes", b.len()),
        Plain::Uuid(u) => format!("uuid {u}"),
        Plain::List(xs) => format!("a list of {}", xs.len()),
        Plain::Map(kv) => format!("an object with {} fields", kv.len()),
    }
}

fn type_name(t: &ColumnType<'_>) -> String {
    match t {
        ColumnType::Native(n) => format!("{n:?}").to_lowercase(),
        other => format!("{other:?}"),
    }
}

/// Minimal big-endian two's complement bytes, as CQL varint wants them.
fn varint_bytes(v: i128) -> Vec<u8> {
    let b = v.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (cur, next) = (b[start], b[start + 1]);
        if (cur == 0x00 && next & 0x80 == 0) || (cur == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    b[start..].to_vec()
}

fn varint(v: i128) -> CqlVarint {
    CqlVarint::from_signed_bytes_be(varint_bytes(v))
}

fn decimal(unscaled: i128, scale: i32) -> CqlDecimal {
    CqlDecimal::from_signed_be_bytes_and_exponent(varint_bytes(unscaled), scale)
}

/// "-12.345" → unscaled -12345, scale 3. Exponents ("1e3") are accepted too.
pub fn parse_decimal(s: &str) -> Result<CqlDecimal, String> {
    let bad = || format!("bad decimal '{s}'");
    let s = s.trim();
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().map_err(|_| bad())?),
        None => (s, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{int}{frac}");
    let unscaled: i128 = digits.parse().map_err(|_| bad())?;
    Ok(decimal(unscaled, frac.len() as i32 - exp))
}

fn date_from_days(days: i64) -> Result<CqlDate, String> {
    let v = days + (1i64 << 31);
    u32::try_from(v).map(CqlDate).map_err(|_| format!("date {days} days from epoch is out of range"))
}

/// Days since 1970-01-01 of a proleptic Gregorian "YYYY-MM-DD" (Howard Hinnant's days_from_civil).
pub fn parse_date(s: &str) -> Result<i64, String> {
    let bad = || format!("bad date '{s}' (want YYYY-MM-DD)");
    let mut it = s.trim().splitn(3, '-');
    let (y, m, d): (i64, i64, i64) = (
        it.next().ok_or_else(bad)?.parse().map_err(|_| bad())?,
        it.next().ok_or_else(bad)?.parse().map_err(|_| bad())?,
        it.next().ok_or_else(bad)?.parse().map_err(|_| bad())?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(bad());
    }
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Ok(era * 146097 + doe - 719468)
}

/// "HH:MM:SS[.fraction]" → nanoseconds since midnight.
pub fn parse_time(s: &str) -> Result<i64, String> {
    let bad = || format!("bad time '{s}' (want HH:MM:SS[.fff])");
    let (hms, frac) = s.trim().split_once('.').unwrap_or((s.trim(), ""));
    let parts: Vec<i64> = hms.split(':').map(|p| p.parse().map_err(|_| bad())).collect::<Result<_, _>>()?;
    if parts.len() != 3 || parts[0] > 23 || parts[1] > 59 || parts[2] > 59 || frac.len() > 9 {
        return Err(bad());
    }
    let frac_ns = if frac.is_empty() { 0 } else { format!("{frac:0<9}").parse::<i64>().map_err(|_| bad())? };
    Ok(((parts[0] * 60 + parts[1]) * 60 + parts[2]) * 1_000_000_000 + frac_ns)
}

/// CQL duration literal: "1y2mo3w4d5h6m7s8ms9us10ns" (any subset, optional leading '-').
pub fn parse_cql_duration(s: &str) -> Result<CqlDuration, String> {
    let bad = || format!("bad duration '{s}' (want e.g. 1h30m or 2mo3d)");
    let t = s.trim();
    let (neg, mut rest) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    if rest.is_empty() {
        return Err(bad());
    }
    let (mut months, mut days, mut nanos) = (0i64, 0i64, 0i64);
    while !rest.is_empty() {
        let n_end = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let n: i64 = rest[..n_end].parse().map_err(|_| bad())?;
        rest = &rest[n_end..];
        let u_end = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        match rest[..u_end].to_ascii_lowercase().as_str() {
            "y" => months += 12 * n,
            "mo" => months += n,
            "w" => days += 7 * n,
            "d" => days += n,
            "h" => nanos += n * 3_600_000_000_000,
            "m" => nanos += n * 60_000_000_000,
            "s" => nanos += n * 1_000_000_000,
            "ms" => nanos += n * 1_000_000,
            "us" | "µs" => nanos += n * 1_000,
            "ns" => nanos += n,
            _ => return Err(bad()),
        }
        rest = &rest[u_end..];
    }
    let sign = if neg { -1 } else { 1 };
    Ok(CqlDuration {
        months: i32::try_from(sign * months).map_err(|_| bad())?,
        days: i32::try_from(sign * days).map_err(|_| bad())?,
        nanoseconds: sign * nanos,
    })
}

fn parse_uuid(s: &str) -> Result<uuid::Uuid, String> {
    uuid::Uuid::parse_str(s.trim()).map_err(|_| format!("bad uuid '{s}'"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use scylla::cluster::metadata::UserDefinedType;

    #[test]
    fn long_text_in_an_error_is_cut_on_a_char_boundary() {
        let d = describe(&Plain::Text("é".repeat(30))); // 2 bytes each: byte 40 ends the 20th
        assert_eq!(d, format!("string \"{}…\"", "é".repeat(20)));
        let d = describe(&Plain::Text(format!("a{}", "é".repeat(30)))); // byte 40 splits an é
        assert_eq!(d, format!("string \"a{}…\"", "é".repeat(19)));
    }

    fn native(n: NativeType) -> ColumnType<'static> {
        ColumnType::Native(n)
    }

    #[test]
    fn integers_narrow_with_range_checks() {
        assert_eq!(to_cql(&Plain::Int(7), &native(NativeType::Int)).unwrap(), Some(CqlValue::Int(7)));
        assert_eq!(to_cql(&Plain::Int(-3), &native(NativeType::TinyInt)).unwrap(), Some(CqlValue::TinyInt(-3)));
        assert!(to_cql(&Plain::Int(1 << 40), &native(NativeType::Int)).is_err());
        assert_eq!(to_cql(&Plain::Int(5), &native(NativeType::Counter)).unwrap(), Some(CqlValue::Counter(Counter(5))));
        assert_eq!(to_cql(&Plain::Null, &native(NativeType::Int)).unwrap(), None);
    }

    #[test]
    fn mismatch_is_reported() {
        let e = to_cql(&Plain::Text("x".into()), &native(NativeType::BigInt)).unwrap_err();
        assert!(e.contains("bigint"), "{e}");
    }

    #[test]
    fn varints_are_minimal_twos_complement() {
        assert_eq!(varint_bytes(0), vec![0]);
        assert_eq!(varint_bytes(127), vec![0x7f]);
        assert_eq!(varint_bytes(128), vec![0x00, 0x80]);
        assert_eq!(varint_bytes(-1), vec![0xff]);
        assert_eq!(varint_bytes(-129), vec![0xff, 0x7f]);
    }

    #[test]
    fn decimals_keep_their_scale() {
        assert_eq!(parse_decimal("-12.345").unwrap(), decimal(-12345, 3));
        assert_eq!(parse_decimal("1e3").unwrap(), decimal(1, -3));
        assert!(parse_decimal("abc").is_err());
    }

    #[test]
    fn dates_times_durations() {
        assert_eq!(parse_date("1970-01-01").unwrap(), 0);
        assert_eq!(parse_date("2000-03-01").unwrap(), 11017);
        assert_eq!(parse_date("1969-12-31").unwrap(), -1);
        assert_eq!(parse_time("01:02:03.5").unwrap(), 3_723_500_000_000);
        assert!(parse_time("25:00:00").is_err());
        let d = parse_cql_duration("1y2mo3d4h").unwrap();
        assert_eq!((d.months, d.days, d.nanoseconds), (14, 3, 4 * 3_600_000_000_000));
        assert!(parse_cql_duration("3x").is_err());
        let v = to_cql(&Plain::Text("2024-02-29".into()), &native(NativeType::Date)).unwrap().unwrap();
        assert_eq!(v, CqlValue::Date(CqlDate((1u32 << 31) + 19782)));
    }

    #[test]
    fn collections_tuples_vectors_udts() {
        let list = ColumnType::Collection { frozen: false, typ: CollectionType::List(Box::new(native(NativeType::Int))) };
        let v = to_cql(&Plain::List(vec![Plain::Int(1), Plain::Int(2)]), &list).unwrap().unwrap();
        assert_eq!(v, CqlValue::List(vec![CqlValue::Int(1), CqlValue::Int(2)]));

        let map = ColumnType::Collection {
            frozen: false,
            typ: CollectionType::Map(Box::new(native(NativeType::Text)), Box::new(native(NativeType::Double))),
        };
        let v = to_cql(&Plain::Map(vec![("a".into(), Plain::Float(1.5))]), &map).unwrap().unwrap();
        assert_eq!(v, CqlValue::Map(vec![(CqlValue::Text("a".into()), CqlValue::Double(1.5))]));

        let tuple = ColumnType::Tuple(vec![native(NativeType::Int), native(NativeType::Text)]);
        let v = to_cql(&Plain::List(vec![Plain::Int(1), Plain::Null]), &tuple).unwrap().unwrap();
        assert_eq!(v, CqlValue::Tuple(vec![Some(CqlValue::Int(1)), None]));

        let vector = ColumnType::Vector { typ: Box::new(native(NativeType::Float)), dimensions: 2 };
        assert!(to_cql(&Plain::List(vec![Plain::Float(1.0)]), &vector).is_err());
        let v = to_cql(&Plain::List(vec![Plain::Float(1.0), Plain::Int(2)]), &vector).unwrap().unwrap();
        assert_eq!(v, CqlValue::Vector(vec![CqlValue::Float(1.0), CqlValue::Float(2.0)]));

        let udt = ColumnType::UserDefinedType {
            frozen: true,
            definition: Arc::new(UserDefinedType {
                name: "addr".into(),
                keyspace: "ks".into(),
                field_types: vec![("street".into(), native(NativeType::Text)), ("no".into(), native(NativeType::Int))],
            }),
        };
        let v = to_cql(&Plain::Map(vec![("no".into(), Plain::Int(4))]), &udt).unwrap().unwrap();
        assert_eq!(v, CqlValue::UserDefinedType {
            keyspace: "ks".into(),
            name: "addr".into(),
            fields: vec![("street".into(), None), ("no".into(), Some(CqlValue::Int(4)))],
        });
    }

    fn cols(types: &[ColumnType<'static>]) -> Vec<(String, ColumnType<'static>)> {
        types.iter().enumerate().map(|(i, t)| (format!("c{i}"), t.clone())).collect()
    }

    /// What the driver sends for a row: our `BoundRow`, or the general path's `Vec<Option<CqlValue>>`.
    fn wire(row: &impl SerializeRow, columns: &[(String, ColumnType<'static>)]) -> Vec<u8> {
        use scylla::frame::response::result::{ColumnSpec, TableSpec};
        let specs: Vec<ColumnSpec<'_>> = columns
            .iter()
            .map(|(n, t)| ColumnSpec::borrowed(n, t.clone(), TableSpec::borrowed("ks", "t")))
            .collect();
        let mut buf = Vec::new();
        row.serialize(&RowSerializationContext::from_specs(&specs), &mut RowWriter::new(&mut buf)).unwrap();
        buf
    }

    fn general(args: &Value, columns: &[(String, ColumnType<'static>)]) -> Result<Vec<Option<CqlValue>>, String> {
        let plain = Plain::from_value(args)?;
        let xs = match plain {
            Plain::List(xs) => xs,
            other => panic!("test args must be a list, got {other:?}"),
        };
        xs.iter().zip(columns).map(|(x, (_, t))| to_cql(x, t)).collect()
    }

    #[test]
    fn binding_an_option_leaves_the_scripts_value_in_place() {
        // A script's variable and the bound argument share one value; binding must only read it.
        let some = rune::to_value(Some(rune::to_value(42i64).unwrap())).unwrap();
        let script_var = some.clone();
        let cols = vec![("id".to_string(), native(NativeType::BigInt))];
        let args = rune::to_value(rune::runtime::Vec::try_from(vec![some]).unwrap()).unwrap();
        for _ in 0..2 {
            let mut row = BoundRow::default();
            bind_row(&args, &cols, &mut row).unwrap();
            assert_eq!(Plain::from_value(&args).unwrap(), Plain::List(vec![Plain::Int(42)]));
        }
        let still = script_var.borrow_ref::<Option<Value>>().expect("the script's option is still there");
        assert_eq!(Option::as_ref(&*still).map(|v| v.as_integer::<i64>().unwrap()), Some(42));
    }

    #[test]
    fn unit_binds_as_no_values() {
        let unit = rune::to_value(()).unwrap();
        assert_eq!(Plain::from_value(&unit).unwrap(), Plain::Null);
        let mut row = BoundRow::default();
        assert!(bind_row(&unit, &[], &mut row).is_ok(), "no markers, no values");
        assert!(bind_row(&unit, &[("id".to_string(), native(NativeType::BigInt))], &mut row).is_err());
    }

    #[test]
    fn direct_binding_writes_the_bytes_of_the_general_path() {
        use NativeType::*;
        let v = |x: Value| x;
        let s = |x: &str| rune::to_value(String::from(x)).unwrap();
        let i = |x: i64| rune::to_value(x).unwrap();
        let f = |x: f64| rune::to_value(x).unwrap();
        let bytes = rune::to_value(Bytes::from_vec(rune::alloc::Vec::try_from(vec![1u8, 2, 255]).unwrap())).unwrap();
        let list = ColumnType::Collection { frozen: false, typ: CollectionType::List(Box::new(native(Int))) };
        let cases: Vec<(Value, ColumnType<'static>)> = vec![
            (i(-5), native(BigInt)),
            (i(i64::MAX), native(Counter)),
            (i(123_456), native(Int)),
            (i(-300), native(SmallInt)),
            (i(-7), native(TinyInt)),
            (i(3), native(Double)),
            (i(3), native(Float)),
            (f(1.25), native(Double)),
            (f(0.1), native(Float)),
            (v(rune::to_value(true).unwrap()), native(Boolean)),
            (s("héllo"), native(Text)),
            (s(""), native(Text)),
            (bytes, native(Blob)),
            // general path inside the direct one: text of a number, ascii, timestamp, date, a list
            (i(42), native(Text)),
            (s("abc"), native(Ascii)),
            (i(1_700_000_000_000), native(Timestamp)),
            (s("2024-02-29"), native(Date)),
            (rune::to_value(vec![i(1), i(2)]).unwrap(), list),
                    ];
        let types: Vec<_> = cases.iter().map(|(_, t)| t.clone()).collect();
        let columns = cols(&types);
        let args = rune::to_value(cases.iter().map(|(x, _)| x.clone()).collect::<Vec<_>>()).unwrap();
        let mut row = BoundRow::default();
        bind_row(&args, &columns, &mut row).expect("direct bind");
        let expected = general(&args, &columns).unwrap();
        assert_eq!(wire(&row, &columns), wire(&expected, &columns));
        assert_eq!(row.count, cases.len());

        // By name: the same bytes, whatever the object's order; extra fields are not bound.
        let mut obj = Object::new();
        for (k, (x, _)) in columns.iter().zip(&cases).rev() {
            obj.insert(rune::alloc::String::try_from(k.0.as_str()).unwrap(), x.clone()).unwrap();
        }
        obj.insert(rune::alloc::String::try_from("unused").unwrap(), i(1)).unwrap();
        let mut named = BoundRow::default();
        bind_row(&rune::to_value(obj).unwrap(), &columns, &mut named).expect("named bind");
        assert_eq!(named.bytes, row.bytes);
    }

    #[test]
    fn direct_binding_leaves_errors_to_the_general_path() {
        let columns = cols(&[native(NativeType::Int)]);
        let mut row = BoundRow::default();
        let too_big = rune::to_value(vec![rune::to_value(1i64 << 40).unwrap()]).unwrap();
        assert!(bind_row(&too_big, &columns, &mut row).is_err());
        let wrong_count = rune::to_value(vec![rune::to_value(1i64).unwrap(); 2]).unwrap();
        assert!(bind_row(&wrong_count, &columns, &mut row).is_err());
        let missing = rune::to_value(Object::new()).unwrap();
        assert!(bind_row(&missing, &columns, &mut row).is_err());
        assert!(bind_row(&rune::to_value(7i64).unwrap(), &columns, &mut row).is_err());
    }

    #[test]
    fn pooled_rows_are_reused_empty() {
        let pool = RowPool::default();
        let columns = cols(&[native(NativeType::BigInt)]);
        let mut row = pool.take();
        bind_row(&rune::to_value(vec![rune::to_value(9i64).unwrap()]).unwrap(), &columns, &mut row).unwrap();
        let cap = row.bytes.capacity();
        pool.give(row);
        let again = pool.take();
        assert_eq!((again.count, again.bytes.len(), again.bytes.capacity()), (0, 0, cap));
    }

}
