//! How a command fails: `Fail` carries the exit code and the one line printed.

/// A failure with the exit code the lab's sweep engine understands: 2 = bad input, 1 = failed
/// (130 = interrupted, a partial report saved).
pub struct Fail(pub u8, pub String);

pub fn input(msg: impl Into<String>) -> Fail {
    Fail(2, msg.into())
}
pub fn failed(msg: impl std::fmt::Display) -> Fail {
    Fail(1, msg.to_string())
}
