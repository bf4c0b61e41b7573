//! YCSB's core workloads (A–F): their key generators, faithful to YCSB's own ([`keys`]).

pub mod keys;
