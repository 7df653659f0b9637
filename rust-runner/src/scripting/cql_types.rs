//! The CQL value types of the `latte` module (`x.to_i32()`, `latte::uuid(i)`, …) and `Plain`, a
//! script value taken apart: what the generators (functions.rs) make and binding (bind.rs) reads.

use rune::runtime::{Bytes, Formatter, Object, OwnedTuple, TypeHash, Vec as RuneVec, VmResult};
use rune::alloc::fmt::TryWrite;
use rune::{vm_write, Any, ContextError, Module, Value};

/// A 32-bit integer for binding to `int` columns (Latte: `x.to_i32()`).
#[derive(Any, Clone, Copy, Debug)]
#[rune(item = ::latte)]
pub struct Int32(pub i32);
/// A 16-bit integer for `smallint` columns.
#[derive(Any, Clone, Copy, Debug)]
#[rune(item = ::latte)]
pub struct Int16(pub i16);
/// An 8-bit integer for `tinyint` columns.
#[derive(Any, Clone, Copy, Debug)]
#[rune(item = ::latte)]
pub struct Int8(pub i8);
/// A 32-bit float for `float` columns.
#[derive(Any, Clone, Copy, Debug)]
#[rune(item = ::latte)]
pub struct Float32(pub f32);
/// A UUID for `uuid` / `timeuuid` columns.
#[derive(Any, Clone, Copy, Debug)]
#[rune(item = ::latte)]
pub struct Uuid(pub uuid::Uuid);

macro_rules! display {
    ($name:ident, $t:ty) => {
        #[rune::function(instance, protocol = DISPLAY_FMT)]
        fn $name(v: &$t, f: &mut Formatter) -> VmResult<()> {
            vm_write!(f, "{}", v.0)
        }
    };
}
display!(display_i32, Int32);
display!(display_i16, Int16);
display!(display_i8, Int8);
display!(display_f32, Float32);
display!(display_uuid, Uuid);

#[rune::function(instance, protocol = PARTIAL_EQ)]
fn uuid_eq(a: &Uuid, b: &Uuid) -> bool {
    a.0 == b.0
}

#[rune::function(instance, protocol = DEBUG_FMT)]
fn uuid_debug(v: &Uuid, f: &mut Formatter) -> VmResult<()> {
    vm_write!(f, "{}", v.0)
}

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
        } else if v.into_unit().is_ok() {
            // `()` has the empty tuple's type hash but is no `OwnedTuple` (its borrow error read
            // "expected Tuple, found Tuple").
            Plain::Null
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
            // Borrowed: `from_value` would take the option out of the script's variable, which then
            // reads as moved (binding must leave the script's values as they were).
            match &*v.borrow_ref::<Option<Value>>().map_err(err)? {
                Some(inner) => Plain::from_value(inner)?,
                None => Plain::Null,
            }
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

/// Registers the types and their protocols in the `latte` module.
pub fn install(m: &mut Module) -> Result<(), ContextError> {
    m.ty::<Int32>()?;
    m.ty::<Int16>()?;
    m.ty::<Int8>()?;
    m.ty::<Float32>()?;
    m.ty::<Uuid>()?;
    m.function_meta(display_i32)?;
    m.function_meta(display_i16)?;
    m.function_meta(display_i8)?;
    m.function_meta(display_f32)?;
    m.function_meta(display_uuid)?;
    m.function_meta(uuid_eq)?;
    m.function_meta(uuid_debug)?;
    Ok(())
}
