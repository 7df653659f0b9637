//! The `latte` Rune module: deterministic data generators and conversions, with the names and
//! semantics of Latte's so that Latte workloads run unchanged.

use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use rand_distr::{Distribution, Normal};
use rune::runtime::{Bytes, Function, Object, OwnedTuple, TypeHash, Vec as RuneVec, VmResult};
use rune::{ContextError, Module, Value};

use crate::scripting::cql_types::{self, Float32, Int16, Int32, Int8, Plain, Uuid};

/// A fast 64-bit mix (splitmix64 finaliser): the same input always gives the same output.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

/// Non-negative hash of an integer (so that `hash(i) % n` is a valid index).
#[rune::function]
pub fn hash(i: i64) -> i64 {
    (mix64(i as u64) & 0x7fff_ffff_ffff_ffff) as i64
}

/// Hash of two integers.
#[rune::function]
fn hash2(a: i64, b: i64) -> i64 {
    (mix64(mix64(a as u64) ^ b as u64) & 0x7fff_ffff_ffff_ffff) as i64
}

/// Hash of `i` in `0..max`. Latte divides by `max` unchecked (a Rust panic at 0); here a script error.
#[rune::function]
fn hash_range(i: i64, max: i64) -> VmResult<i64> {
    if max <= 0 {
        return VmResult::panic(format!("latte::hash_range: max must be positive, got {max}"));
    }
    VmResult::Ok((mix64(i as u64) % max as u64) as i64)
}

/// An element of `collection` picked by the hash of `i` (an empty one is a script error, not a crash).
#[rune::function]
fn hash_select(i: i64, collection: &RuneVec) -> VmResult<Value> {
    if collection.is_empty() {
        return VmResult::panic("latte::hash_select: the collection is empty");
    }
    let idx = (mix64(i as u64) % collection.len() as u64) as usize;
    VmResult::Ok(collection[idx].clone())
}

/// A UUID derived from `i` (version 4 layout, deterministic).
#[rune::function]
fn uuid(i: i64) -> Uuid {
    let (a, b) = (mix64(i as u64), mix64(!(i as u64)));
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_be_bytes());
    bytes[8..].copy_from_slice(&b.to_be_bytes());
    Uuid(uuid::Builder::from_random_bytes(bytes).into_uuid())
}

/// `len` pseudo-random bytes seeded by `seed`.
#[rune::function]
fn blob(seed: i64, len: usize) -> VmResult<Bytes> {
    let mut rng = SmallRng::seed_from_u64(seed as u64);
    let mut v = vec![0u8; len];
    rng.fill_bytes(&mut v);
    VmResult::Ok(rune::vm_try!(Bytes::try_from(v)))
}

/// A pseudo-random string of `len` characters seeded by `seed`, from Latte's character set (letters,
/// digits and ASCII punctuation).
#[rune::function]
fn text(seed: i64, len: usize) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!@#$%^&*()_+-=[]{}|;:',.<>?/";
    let mut rng = SmallRng::seed_from_u64(seed as u64);
    (0..len).map(|_| CHARS[rng.random_range(0..CHARS.len())] as char).collect()
}

/// The normal distribution, or Latte's error for a bad one (a NaN, a negative deviation). A zero
/// deviation gives the mean (Latte's statrs rejects it; rand_distr's is well defined).
fn normal_dist(mean: f64, std_dev: f64) -> Result<Normal<f64>, String> {
    Normal::new(mean, std_dev).map_err(|e| format!("normal distribution (mean {mean}, std_dev {std_dev}): {e}"))
}

/// `[min, max)` as Latte accepts it: min < max (min == max gives min here); NaN or min > max is an error.
fn uniform_range(min: f64, max: f64) -> Result<Option<std::ops::Range<f64>>, String> {
    if min.is_nan() || max.is_nan() || min > max {
        return Err(format!("uniform distribution: need min <= max, got [{min}, {max})"));
    }
    Ok(if min < max { Some(min..max) } else { None })
}

fn vm<T>(r: Result<T, String>) -> VmResult<T> {
    match r {
        Ok(v) => VmResult::Ok(v),
        Err(e) => VmResult::panic(e),
    }
}

/// A normally distributed float seeded by `i`.
#[rune::function]
fn normal(i: i64, mean: f64, std_dev: f64) -> VmResult<f64> {
    let d = rune::vm_try!(vm(normal_dist(mean, std_dev)));
    VmResult::Ok(d.sample(&mut SmallRng::seed_from_u64(i as u64)))
}

/// A uniformly distributed float in `[min, max)` seeded by `i`.
#[rune::function]
fn uniform(i: i64, min: f64, max: f64) -> VmResult<f64> {
    let mut rng = SmallRng::seed_from_u64(i as u64);
    VmResult::Ok(match rune::vm_try!(vm(uniform_range(min, max))) {
        Some(r) => rng.random_range(r),
        None => min,
    })
}

/// `len` normally distributed floats seeded by `i`.
#[rune::function]
fn normal_vec(i: i64, len: usize, mean: f64, std_dev: f64) -> VmResult<Vec<f64>> {
    let d = rune::vm_try!(vm(normal_dist(mean, std_dev)));
    let mut rng = SmallRng::seed_from_u64(i as u64);
    VmResult::Ok((0..len).map(|_| d.sample(&mut rng)).collect())
}

/// `len` uniformly distributed floats in `[min, max)` seeded by `i`. Latte's `gen_range` panics the
/// process when min >= max; here min == max gives min and min > max is a script error.
#[rune::function]
fn uniform_vec(i: i64, len: usize, min: f64, max: f64) -> VmResult<Vec<f64>> {
    let range = rune::vm_try!(vm(uniform_range(min, max)));
    let mut rng = SmallRng::seed_from_u64(i as u64);
    VmResult::Ok((0..len).map(|_| range.clone().map(|r| rng.random_range(r)).unwrap_or(min)).collect())
}

/// A vector of `len` elements made by calling `generator(index)`.
#[rune::function]
fn vector(len: usize, generator: Function) -> VmResult<Vec<Value>> {
    let mut out = Vec::with_capacity(len);
    for i in 0..len {
        out.push(rune::vm_try!(generator.call::<Value>((i as i64,))));
    }
    VmResult::Ok(out)
}

/// Joins the elements of a vector (strings or numbers) with `separator`.
#[rune::function]
fn join(collection: &RuneVec, separator: &str) -> VmResult<String> {
    let mut out = String::new();
    for (n, v) in collection.iter().enumerate() {
        if n > 0 {
            out.push_str(separator);
        }
        match Plain::from_value(v) {
            Ok(Plain::Text(s)) => out.push_str(&s),
            Ok(Plain::Int(i)) => out.push_str(&i.to_string()),
            Ok(Plain::Float(f)) => out.push_str(&f.to_string()),
            Ok(Plain::Uuid(u)) => out.push_str(&u.to_string()),
            Ok(Plain::Bool(b)) => out.push_str(&b.to_string()),
            _ => return VmResult::panic(format!("join: cannot join a {}", v.type_info())),
        }
    }
    VmResult::Ok(out)
}

/// Seconds since the Unix epoch, as Latte's (`Utc::now().timestamp()`). A CQL `timestamp` binds
/// milliseconds: multiply by 1000 for one.
#[rune::function]
fn now_timestamp() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Clamps an integer or a float into `[min, max]`.
#[rune::function]
fn clamp(v: Value, min: Value, max: Value) -> VmResult<Value> {
    if v.type_hash() == i64::HASH {
        let (v, lo, hi) = (
            rune::vm_try!(v.as_integer::<i64>()),
            rune::vm_try!(min.as_integer::<i64>()),
            rune::vm_try!(max.as_integer::<i64>()),
        );
        VmResult::Ok(rune::vm_try!(rune::to_value(v.clamp(lo, hi.max(lo)))))
    } else {
        let f = |x: &Value| x.as_float().or_else(|_| x.as_integer::<i64>().map(|i| i as f64));
        let (v, lo, hi) = (rune::vm_try!(f(&v)), rune::vm_try!(f(&min)), rune::vm_try!(f(&max)));
        VmResult::Ok(rune::vm_try!(rune::to_value(v.clamp(lo, hi.max(lo)))))
    }
}

// Latte registers these as instance functions of i64 and f64 (`x.to_i32()`, `x.clamp(a, b)`). As in
// Latte, an integer out of the target's range gives `None` (an `Option`, which binds as its content),
// a float is cast (saturating). The free forms `latte::to_i32(x)` … are this runner's addition.
macro_rules! int_conversions {
    ($( $int_fn:ident, $float_fn:ident, $free:ident, $path:ident, $wrap:ident, $t:ty; )*) => {$(
        #[rune::function(instance, path = $path)]
        fn $int_fn(v: i64) -> Option<$wrap> { <$t>::try_from(v).ok().map($wrap) }
        #[rune::function(instance, path = $path)]
        fn $float_fn(v: f64) -> $wrap { $wrap(v as $t) }
        #[rune::function(path = $path)]
        fn $free(v: Value) -> VmResult<Option<$wrap>> {
            if v.type_hash() == i64::HASH {
                VmResult::Ok(<$t>::try_from(rune::vm_try!(v.as_integer::<i64>())).ok().map($wrap))
            } else {
                VmResult::Ok(Some($wrap(rune::vm_try!(v.as_float()) as $t)))
            }
        }
    )*};
}
int_conversions! {
    int_to_i32, float_to_i32, free_to_i32, to_i32, Int32, i32;
    int_to_i16, float_to_i16, free_to_i16, to_i16, Int16, i16;
    int_to_i8, float_to_i8, free_to_i8, to_i8, Int8, i8;
}

#[rune::function(instance, path = to_f32)]
fn int_to_f32(v: i64) -> Float32 {
    Float32(v as f32)
}
#[rune::function(instance, path = to_f32)]
fn float_to_f32(v: f64) -> Float32 {
    Float32(v as f32)
}
#[rune::function(path = to_f32)]
fn free_to_f32(v: Value) -> VmResult<Float32> {
    let x = match v.as_integer::<i64>() {
        Ok(i) => i as f64,
        Err(_) => rune::vm_try!(v.as_float()),
    };
    VmResult::Ok(Float32(x as f32))
}

/// `x.clamp(min, max)` on integers. Rust's (and so Latte's) panics the process when min > max: here
/// it is a script error.
#[rune::function(instance, path = clamp)]
fn int_clamp(v: i64, min: i64, max: i64) -> VmResult<i64> {
    if min > max {
        return VmResult::panic(format!("clamp: min {min} > max {max}"));
    }
    VmResult::Ok(v.clamp(min, max))
}

/// `x.clamp(min, max)` on floats (NaN stays NaN); min > max or a NaN bound is a script error.
#[rune::function(instance, path = clamp)]
fn float_clamp(v: f64, min: f64, max: f64) -> VmResult<f64> {
    if !(min <= max) {
        return VmResult::panic(format!("clamp: need min <= max, got {min}, {max}"));
    }
    VmResult::Ok(v.clamp(min, max))
}

#[rune::function(instance, path = to_i64)]
fn float_to_i64(v: f64) -> i64 {
    v as i64
}
#[rune::function(instance, path = to_i64)]
fn int_to_i64(v: i64) -> i64 {
    v
}
#[rune::function(instance, path = to_f64)]
fn int_to_f64(v: i64) -> f64 {
    v as f64
}
#[rune::function(instance, path = to_f64)]
fn float_to_f64(v: f64) -> f64 {
    v
}

/// The `latte` module without `param!` (that macro needs the run's parameters; see `script.rs`).
pub fn latte_module() -> Result<Module, ContextError> {
    let mut m = Module::with_crate("latte")?;
    cql_types::install(&mut m)?;
    m.function_meta(hash)?;
    m.function_meta(hash2)?;
    m.function_meta(hash_range)?;
    m.function_meta(hash_select)?;
    m.function_meta(uuid)?;
    m.function_meta(blob)?;
    m.function_meta(text)?;
    m.function_meta(normal)?;
    m.function_meta(uniform)?;
    m.function_meta(normal_vec)?;
    m.function_meta(uniform_vec)?;
    m.function_meta(vector)?;
    m.function_meta(join)?;
    m.function_meta(now_timestamp)?;
    m.function_meta(clamp)?;
    for f in [int_to_i32, float_to_i32, free_to_i32, int_to_i16, float_to_i16, free_to_i16] {
        m.function_meta(f)?;
    }
    for f in [int_to_i8, float_to_i8, free_to_i8, int_to_f32, float_to_f32, free_to_f32] {
        m.function_meta(f)?;
    }
    for f in [float_to_i64, int_to_i64, int_to_f64, float_to_f64, int_clamp, float_clamp] {
        m.function_meta(f)?;
    }
    Ok(m)
}

// Keep the object/tuple types referenced (used by callers through `Plain`).
#[allow(dead_code)]
fn _types(_: &Object, _: &OwnedTuple) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_deterministic_and_non_negative() {
        for i in -1000..1000 {
            let h = mix64(i as u64) & 0x7fff_ffff_ffff_ffff;
            assert!(h as i64 >= 0);
            assert_eq!(h, mix64(i as u64) & 0x7fff_ffff_ffff_ffff);
        }
        assert_ne!(mix64(1), mix64(2));
    }
}
