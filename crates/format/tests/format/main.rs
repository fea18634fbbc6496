//! Integration tests of the capture format: round trips, truncation, corruption, hostile files.
//! One test binary (modules below) so the crate links its tests once.

mod bombs;
mod corruption;
mod drop_procs;
mod encoder;
mod growing;
mod hostile;
mod rollups;
mod roundtrip;
mod size;
mod truncation;
mod unseen;
mod util;
mod versions;
