//! Benchmark harness for ScreeDB.
