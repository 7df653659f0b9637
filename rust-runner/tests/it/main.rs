//! The runner's integration tests, as one test binary (`cargo test --test it`): each file of the former
//! seven binaries is a module here, so a test is now `robustness::legal_nesting_still_runs` and one file's
//! tests are `cargo test --test it robustness::`. One binary because each test binary is a link of its own
//! (thin LTO): seven of them cost more CPU than the tests' own code. For the same reason the binary links
//! no driver: the Cassandra test reads rows back over its own few lines of CQL protocol (cql.rs).
//!
//! One binary also means that tests of different files run at the same time (the harness's threads),
//! which they never did as separate binaries: the few that must not share the machine with another
//! runner take `common::alone()`, every other test that starts the runner `common::shared()`.

mod common;

mod api;
mod cassandra;
mod cql;
mod interrupt;
mod modules;
mod placement;
mod resources;
mod robustness;
