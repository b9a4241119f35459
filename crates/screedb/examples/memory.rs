//! Benchmark of the memory component alone (no WAL, no flush), as FloDB's Figure 17: the
//! skiplist memtable vs the FloDB membuffer in front of it.
//!
//! ```sh
//! cargo run --release -p screedb --example memory -- <skiplist|flodb> <insert|skewed> <MiB> <threads> [ranges|hash] [run MiB] [membuffer MiB]
//! ```
//!
//! `insert` fills the component with random 16-byte keys and 100-byte values until it holds
//! `MiB` of data and prints inserts per second. `skewed` first loads `MiB` of data, then runs
//! 50% reads / 50% updates where 2% of the keys take 98% of the operations, and prints
//! operations per second. Writers are serialized by one mutex that also hands out sequence
//! numbers, as the database's write-group leader does; with `flodb` a drain thread runs too.
//! `insert` also prints the writers' CPU time per insert and, with `flodb`, the drain thread's CPU
//! time per drained entry and the share of writes that found no room in the membuffer.
//! With `flodb` the membuffer's neighbourhoods are key ranges (`ranges`, the default: cut at
//! keys of a previous memtable of 65,536 writes of the same kind, as a database's memtable
//! takes them from the one it replaces) or by hash (`hash`: a database's first memtable).
//! The memtable is built as a database builds its first one (`Options::new_memtable`): a key
//! filter and a point index (per run), one skiplist or runs of `run MiB`
//! (`Options::memtable_run_size`, default 0: one skiplist), a membuffer of a quarter of `MiB`
//! (`membuffer MiB` sets it).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use screedb::comparator::{InternalKeyComparator, default_comparator};
use screedb::key::ValueKind;
use screedb::memtable::MemTable;
use screedb::{Memory, Options};

fn rand(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// Nanoseconds the calling thread has run on a CPU (Linux `schedstat`; 0 elsewhere). Unlike
/// wall time it does not count time lost to other processes on a shared machine.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: memory <skiplist|flodb> <insert|skewed> <MiB> <threads> [ranges|hash] [run MiB] \
         [membuffer MiB]";
    let (Some(mode), Some(work), Some(mib), Some(threads)) =
        (args.get(1), args.get(2), args.get(3), args.get(4))
    else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let bytes = mib.parse::<usize>().expect("MiB") << 20;
    let threads: u64 = threads.parse().expect("threads");
    let icmp = InternalKeyComparator::new(default_comparator());
    let mut options = Options {
        write_buffer_size: bytes,
        memory: match mode.as_str() {
            "skiplist" => Memory::Skiplist,
            "flodb" => Memory::Flodb,
            _ => panic!("{usage}"),
        },
        ..Options::default()
    };
    if let Some(run) = args.get(6) {
        options.memtable_run_size = run.parse::<usize>().expect("run MiB") << 20;
    }
    if let Some(buffer) = args.get(7) {
        options.membuffer_size = Some(buffer.parse::<usize>().expect("membuffer MiB") << 20);
    }
    let mem = options.new_memtable(icmp.clone(), None);
    let mem = Arc::new(match args.get(5).map_or("ranges", String::as_str) {
        "ranges" => {
            let previous = MemTable::new(icmp);
            let mut r = u64::MAX;
            for i in 1..=65_536 {
                previous.add(i, ValueKind::Value, &key(rand(&mut r)), b"");
            }
            previous.sample_for_successor();
            mem.with_neighbourhoods_from(&previous)
        }
        "hash" => mem,
        _ => panic!("{usage}"),
    });
    let seq = Arc::new(Mutex::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    // Drain statistics: entries moved, calls that moved something, nanoseconds spent in them.
    let drained = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
    let drainer = (mode == "flodb").then(|| {
        let (mem, stop, drained) = (mem.clone(), stop.clone(), drained.clone());
        std::thread::spawn(move || {
            let mut cursor = 0;
            while !stop.load(Ordering::Relaxed) {
                let t = thread_cpu_ns();
                let n = mem.drain_some(&mut cursor);
                if n == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(500));
                } else {
                    drained[0].fetch_add(n as u64, Ordering::Relaxed);
                    drained[1].fetch_add(1, Ordering::Relaxed);
                    drained[2].fetch_add(thread_cpu_ns() - t, Ordering::Relaxed);
                }
            }
        })
    });
    let put = |mem: &MemTable, k: &[u8], v: &[u8]| {
        let mut s = seq.lock().unwrap_or_else(|e| e.into_inner());
        *s += 1;
        mem.put(*s, ValueKind::Value, k, v, || None);
    };
    let value = [7u8; 100];
    let entry = 16 + 100 + 40;
    let total = (bytes / entry) as u64;
    let ops = AtomicU64::new(0);
    let writer_cpu = AtomicU64::new(0);
    let start = Instant::now();
    match work.as_str() {
        "insert" => std::thread::scope(|s| {
            for t in 0..threads {
                let (mem, ops, writer_cpu) = (&mem, &ops, &writer_cpu);
                s.spawn(move || {
                    let mut r = t + 1;
                    let cpu = thread_cpu_ns();
                    for _ in 0..total / threads {
                        put(mem, &key(rand(&mut r)), &value);
                    }
                    ops.fetch_add(total / threads, Ordering::Relaxed);
                    writer_cpu.fetch_add(thread_cpu_ns() - cpu, Ordering::Relaxed);
                });
            }
        }),
        "skewed" => {
            let mut r = 99;
            for _ in 0..total {
                put(&mem, &key(rand(&mut r) % total), &value);
            }
            let load = start.elapsed();
            let start = Instant::now();
            let per = 2_000_000 / threads;
            std::thread::scope(|s| {
                for t in 0..threads {
                    let (mem, ops) = (&mem, &ops);
                    s.spawn(move || {
                        let mut r = t + 7;
                        let hot = (total / 50).max(1);
                        for _ in 0..per {
                            let x = rand(&mut r);
                            let k = if x % 100 < 98 { x % hot } else { x % total };
                            if (x >> 32).is_multiple_of(2) {
                                std::hint::black_box(mem.get(&key(k), u64::MAX >> 8));
                            } else {
                                put(mem, &key(k), &value);
                            }
                        }
                        ops.fetch_add(per, Ordering::Relaxed);
                    });
                }
            });
            let secs = start.elapsed().as_secs_f64();
            let n = ops.load(Ordering::Relaxed);
            println!(
                "{mode} skewed {mib}MiB {threads}t: {:.0} ops/s (load {:.1}s)",
                n as f64 / secs,
                load.as_secs_f64()
            );
            stop.store(true, Ordering::Relaxed);
            drainer.map(|d| d.join());
            return;
        }
        _ => panic!("{usage}"),
    }
    let secs = start.elapsed().as_secs_f64();
    let (buffered, direct) = (mem.buffered_len(), mem.membuffer_fallbacks());
    stop.store(true, Ordering::Relaxed);
    drainer.map(|d| d.join());
    let n = ops.load(Ordering::Relaxed);
    println!(
        "{mode} insert {mib}MiB {threads}t: {:.0} inserts/s ({} entries in {} runs, {:.1}s; writers' CPU {:.0} ns/insert)",
        n as f64 / secs,
        mem.len(),
        mem.runs(),
        secs,
        writer_cpu.load(Ordering::Relaxed) as f64 / n as f64,
    );
    if mode == "flodb" {
        let [moved, calls, nanos] = drained
            .as_ref()
            .each_ref()
            .map(|a| a.load(Ordering::Relaxed));
        println!(
            "  neighbourhoods by {}; at writers' stop: {buffered} buffered, {direct} writes ({:.1}%) \
             had gone to the skiplist for want of room; drain: {moved} entries in {calls} calls, \
             CPU {:.0} ns/entry",
            if mem.membuffer_by_range() {
                "key range"
            } else {
                "hash"
            },
            direct as f64 * 100.0 / n as f64,
            nanos as f64 / moved.max(1) as f64,
        );
    }
}
