//! Binding Rune values to CQL values, guided by the column types of a prepared statement.
//!
//! Scripts produce only a few Rune types (integers, floats, strings, bytes, vectors, objects, tuples and
//! the `latte` wrappers); the prepared statement says what Cassandra expects, so the conversion is
//! driven by the column type and reports a mismatch by column name.

use std::net::IpAddr;

use rune::runtime::{Bytes, Object, OwnedTuple, TypeHash, Vec as RuneVec};
use rune::Value;
use scylla::cluster::metadata::{CollectionType, ColumnType, NativeType};
use scylla::value::{
    Counter, CqlDate, CqlDecimal, CqlDuration, CqlTime, CqlTimestamp, CqlTimeuuid, CqlValue, CqlVarint,
};

use crate::scripting::functions::{Float32, Int16, Int32, Int8, Uuid};

/// A Rune value taken apart into what binding needs (owned, so it outlives the borrow of the value).
#[derive(Debug, Clone, PartialEq)]
pub enum Plain {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
    Uuid(uuid::Uuid),
    List(Vec<Plain>),
    Map(Vec<(String, Plain)>),
}

impl Plain {
    /// Reads a Rune value. Unknown types are an error naming the type.
    pub fn from_value(v: &Value) -> Result<Plain, String> {
        let h = v.type_hash();
        let err = |e: rune::runtime::RuntimeError| e.to_string();
        Ok(if h == i64::HASH || h == u64::HASH {
            Plain::Int(v.as_integer::<i64>().map_err(err)?)
        } else if h == f64::HASH {
            Plain::Float(v.as_float().map_err(err)?)
        } else if h == bool::HASH {
            Plain::Bool(v.as_bool().map_err(err)?)
        } else if h == String::HASH {
            Plain::Text(v.borrow_string_ref().map_err(err)?.to_string())
        } else if h == char::HASH {
            Plain::Text(v.as_char().map_err(err)?.to_string())
        } else if h == Bytes::HASH {
            Plain::Bytes(v.borrow_ref::<Bytes>().map_err(err)?.as_slice().to_vec())
        } else if h == RuneVec::HASH {
            let vec = v.borrow_ref::<RuneVec>().map_err(err)?;
            Plain::List(vec.iter().map(Plain::from_value).collect::<Result<_, _>>()?)
        } else if h == OwnedTuple::HASH {
            let t = v.borrow_ref::<OwnedTuple>().map_err(err)?;
            Plain::List(t.iter().map(Plain::from_value).collect::<Result<_, _>>()?)
        } else if h == Object::HASH {
            let o = v.borrow_ref::<Object>().map_err(err)?;
            let mut fields = Vec::with_capacity(o.len());
            for (k, v) in o.iter() {
                fields.push((k.to_string(), Plain::from_value(v)?));
            }
            Plain::Map(fields)
        } else if h == Uuid::HASH {
            Plain::Uuid(v.borrow_ref::<Uuid>().map_err(err)?.0)
        } else if h == Int8::HASH {
            Plain::Int(v.borrow_ref::<Int8>().map_err(err)?.0 as i64)
        } else if h == Int16::HASH {
            Plain::Int(v.borrow_ref::<Int16>().map_err(err)?.0 as i64)
        } else if h == Int32::HASH {
            Plain::Int(v.borrow_ref::<Int32>().map_err(err)?.0 as i64)
        } else if h == Float32::HASH {
            Plain::Float(v.borrow_ref::<Float32>().map_err(err)?.0 as f64)
        } else if h == <Option<Value>>::HASH {
            match rune::from_value::<Option<Value>>(v.clone()).map_err(err)? {
                Some(inner) => Plain::from_value(&inner)?,
                None => Plain::Null,
            }
        } else if v.into_unit().is_ok() {
            Plain::Null
        } else {
            return Err(format!("cannot bind a value of type {}", v.type_info()));
        })
    }
}

impl Plain {
    /// Back to a Rune value (on another thread: how `ctx.data` reaches the workers).
    pub fn to_value(&self) -> Result<Value, String> {
        let e = |e: rune::alloc::Error| e.to_string();
        let r = |e: rune::runtime::RuntimeError| e.to_string();
        Ok(match self {
            Plain::Null => rune::to_value(()).map_err(r)?,
            Plain::Bool(b) => rune::to_value(*b).map_err(r)?,
            Plain::Int(i) => rune::to_value(*i).map_err(r)?,
            Plain::Float(f) => rune::to_value(*f).map_err(r)?,
            Plain::Text(s) => rune::to_value(s.clone()).map_err(r)?,
            Plain::Bytes(b) => rune::to_value(Bytes::try_from(b.clone()).map_err(e)?).map_err(r)?,
            Plain::Uuid(u) => rune::to_value(Uuid(*u)).map_err(r)?,
            Plain::List(xs) => {
                let vs = xs.iter().map(Plain::to_value).collect::<Result<Vec<_>, _>>()?;
                rune::to_value(vs).map_err(r)?
            }
            Plain::Map(kv) => {
                let mut o = Object::new();
                for (k, v) in kv {
                    o.insert(rune::alloc::String::try_from(k.as_str()).map_err(e)?, v.to_value()?).map_err(e)?;
                }
                rune::to_value(o).map_err(r)?
            }
        })
    }
}

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

fn required(v: &Plain, t: &ColumnType<'_>) -> Result<CqlValue, String> {
    to_cql(v, t)?.ok_or_else(|| "null is not allowed inside a collection".to_string())
}

fn elements(xs: &[Plain], t: &ColumnType<'_>) -> Result<Vec<CqlValue>, String> {
    xs.iter().map(|x| required(x, t)).collect()
}

fn narrow<T: TryFrom<i64>>(i: i64, name: &str) -> Result<T, String> {
    T::try_from(i).map_err(|_| format!("{i} does not fit in a CQL {name}"))
}

fn describe(v: &Plain) -> String {
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
}
