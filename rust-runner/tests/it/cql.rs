//! Reads rows back from Cassandra for the Cassandra test with nothing of the runner's: CQL's native
//! protocol v4 over a plain TCP socket (STARTUP, then one QUERY), each cell as the bytes the node
//! sends. The test compares those bytes with CQL's serialization of the values it expects, so a value
//! the runner bound wrongly cannot be read back "right" by the same code. This replaces the scylla
//! driver, which made this test binary a link of its own over the driver and tokio (issue 25: the
//! suite's CPU).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A row: each column's bytes, `None` for a null.
pub type Row = Vec<Option<Vec<u8>>>;

const VERSION: u8 = 0x04;
const ERROR: u8 = 0x00;
const STARTUP: u8 = 0x01;
const READY: u8 = 0x02;
const QUERY: u8 = 0x07;
const RESULT: u8 = 0x08;
const ROWS: i32 = 0x0002;

fn frame(s: &mut TcpStream, opcode: u8, body: &[u8]) -> (u8, Vec<u8>) {
    let mut head = vec![VERSION, 0, 0, 0, opcode];
    head.extend_from_slice(&(body.len() as u32).to_be_bytes());
    s.write_all(&head).and_then(|_| s.write_all(body)).expect("send a CQL frame");
    let mut h = [0u8; 9];
    s.read_exact(&mut h).expect("read a CQL frame header");
    let mut b = vec![0u8; u32::from_be_bytes([h[5], h[6], h[7], h[8]]) as usize];
    s.read_exact(&mut b).expect("read a CQL frame body");
    let mut r = Reader(&b);
    if h[1] & 0x02 != 0 {
        r.take(16); // a tracing session id
    }
    if h[1] & 0x08 != 0 {
        for _ in 0..r.short() {
            r.string(); // a warning (an aggregate without a partition key draws one)
        }
    }
    if h[4] == ERROR {
        let code = r.int();
        panic!("Cassandra error 0x{code:04x}: {}", r.string());
    }
    (h[4], r.0.to_vec())
}

/// The rows `cql` selects, from a fresh connection to 127.0.0.1:`port` (consistency ONE).
pub fn query(port: u16, cql: &str) -> Vec<Row> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to Cassandra");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut startup = 1u16.to_be_bytes().to_vec();
    for w in ["CQL_VERSION", "3.0.0"] {
        startup.extend_from_slice(&(w.len() as u16).to_be_bytes());
        startup.extend_from_slice(w.as_bytes());
    }
    assert_eq!(frame(&mut s, STARTUP, &startup).0, READY, "STARTUP");
    let mut q = (cql.len() as i32).to_be_bytes().to_vec();
    q.extend_from_slice(cql.as_bytes());
    q.extend_from_slice(&[0x00, 0x01, 0x00]); // consistency ONE; no flags, so no page size: one result
    let (op, body) = frame(&mut s, QUERY, &q);
    assert_eq!(op, RESULT, "QUERY answered with opcode {op}");
    let mut r = Reader(&body);
    assert_eq!(r.int(), ROWS, "not a Rows result: {cql}");
    let (flags, columns) = (r.int(), r.int());
    assert_eq!(flags & 0x0002, 0, "more than one page: {cql}");
    if flags & 0x0004 == 0 {
        // metadata: the columns' names and types, read past (the test knows what it selected)
        if flags & 0x0001 != 0 {
            r.string();
            r.string();
        }
        for _ in 0..columns {
            if flags & 0x0001 == 0 {
                r.string();
                r.string();
            }
            r.string();
            r.option();
        }
    }
    (0..r.int()).map(|_| (0..columns).map(|_| r.bytes()).collect()).collect()
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    fn short(&mut self) -> u16 {
        u16::from_be_bytes(self.take(2).try_into().unwrap())
    }
    fn int(&mut self) -> i32 {
        i32::from_be_bytes(self.take(4).try_into().unwrap())
    }
    fn string(&mut self) -> String {
        let n = self.short() as usize;
        String::from_utf8_lossy(self.take(n)).into_owned()
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        let n = self.int();
        (n >= 0).then(|| self.take(n as usize).to_vec())
    }
    /// A type: its id, and what a custom, collection, UDT or tuple id carries.
    fn option(&mut self) {
        match self.short() {
            0x0000 => drop(self.string()),
            0x0020 | 0x0022 => self.option(),
            0x0021 => (0..2).for_each(|_| self.option()),
            0x0030 => {
                self.string();
                self.string();
                for _ in 0..self.short() {
                    self.string();
                    self.option();
                }
            }
            0x0031 => (0..self.short()).for_each(|_| self.option()),
            _ => {}
        }
    }
}

/// CQL's serialization of a value the test expects: `[bytes]` (an i32 length, then the bytes), as
/// inside a tuple, a UDT or a map.
pub fn sized(b: &[u8]) -> Vec<u8> {
    let mut v = (b.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(b);
    v
}

/// A duration cell: (months, days, nanoseconds), each a zigzag-encoded variable-length integer.
pub fn duration(b: &[u8]) -> (i64, i64, i64) {
    let mut at = 0;
    let mut next = || {
        let extra = b[at].leading_ones() as usize;
        let mut v = if extra >= 7 { 0 } else { u64::from(b[at] & (0xff >> (extra + 1))) };
        for i in 0..extra {
            v = (v << 8) | u64::from(b[at + 1 + i]);
        }
        at += 1 + extra;
        (v >> 1) as i64 ^ -((v & 1) as i64)
    };
    (next(), next(), next())
}
