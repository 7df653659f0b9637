//! The report's encoding of latency histograms: HdrHistogram V2 + deflate, in base64.

use anyhow::{Context as _, Result};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    if V2DeflateSerializer::new().serialize(h, &mut buf).is_err() {
        return String::new();
    }
    base64_encode(&buf)
}

pub fn decode_histogram(s: &str) -> Result<Histogram<u64>> {
    let bytes = base64_decode(s).context("bad base64 in report")?;
    Deserializer::new().deserialize(&mut bytes.as_slice()).map_err(|e| anyhow::anyhow!("bad histogram: {e:?}"))
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|c| !c.is_ascii_whitespace()) {
        if c == b'=' {
            break;
        }
        let v = B64.iter().position(|&x| x == c)? as u32;
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip() {
        for data in [&b""[..], b"f", b"fo", b"foo", b"foob", b"fooba", b"foobar"] {
            assert_eq!(base64_decode(&base64_encode(data)).unwrap(), data);
        }
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
    }

    #[test]
    fn histogram_round_trip() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in [1000, 2000, 3000, 1_000_000] {
            h.record(v).unwrap();
        }
        let back = decode_histogram(&encode_histogram(&h)).unwrap();
        assert_eq!(back.len(), 4);
        assert_eq!(back.max(), h.max());
    }
}
